"""Canary clients in federated learning and the one-shot ε estimate of Andrew et al.

Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar 2024 ("One-shot Empirical Privacy
Estimation for Federated Learning", ICLR, arXiv:2302.03098) insert k canary clients into
one training run. Canary j's update is a fixed unit direction ``c_j`` drawn uniformly on
the sphere (a normalised standard Gaussian vector); the test statistic is the cosine between
``c_j`` and what the adversary sees:

* **final model** — ``cos(c_j, θ_T − θ_0)``;
* **all iterates** — the cosines with every round's model delta ``Δ_t``, summed over the
  rounds (``"sum"``: with a canary in every round this is the sufficient statistic of the
  composed Gaussian mechanism, ``Σ_t cos(c_j, Δ_t) = ⟨c_j, Σ_t Δ_t/‖Δ_t‖⟩``) or their
  maximum (``"max"``, the statistic of the authors' federated experiments, where a sampled
  canary appears in few rounds).

Null distribution: a canary that was never inserted is independent of the deltas, and the
cosine of a uniform unit vector with any fixed vector ``v`` has density ∝ (1 − t²)^((d−3)/2),
which is N(0, 1/d) up to O(1/d) in dimension d (Andrew et al. 2024, §3); so a statistic
``⟨c, v⟩`` with ``v`` a function of the run has the **closed-form null** N(0, ‖v‖²/d):
``v = (θ_T − θ_0)/‖θ_T − θ_0‖`` (‖v‖ = 1) for the final model and ``v = Σ_t Δ_t/‖Δ_t‖`` for the
all-iterates sum. The maximum has no such form; its null is **fitted** to the canaries that
were not inserted (the authors' "unseen canaries").

The estimate (their Algorithm 1; :func:`andrew_estimate`): fit N(μ̂, σ̂²) to the inserted
canaries' statistics and report the ε at δ that separates the null N(μ₀, σ₀²) from it — the
hockey-stick divergence of two Gaussians (:func:`two_gaussian_delta`, after Steinke 2022,
arXiv:2210.00597, §3 on privacy-loss distributions). For the Gaussian mechanism the inserted
canaries' statistic tends to N(μ, σ₀²) in high dimension (their Theorem 3.2), so the estimate
is consistent there; beside it the result carries the same estimate with the null's variance
(only the mean fitted), which is the high-dimensional limit and has no variance-fit noise.
Both rest on that Gaussian approximation: they are **estimates, not lower bounds**. The
valid bounds of the same run come from the one-run games of :mod:`dpaudit.bounds` with the
canaries' inclusion randomised.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, special

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_delta,
    check_memory,
    check_positive_int,
    check_probability,
    check_real,
)

__all__ = [
    "FL_STATISTICS",
    "AndrewEstimate",
    "CanaryClients",
    "CanaryCosines",
    "andrew_estimate",
    "canary_cosines",
    "draw_canary_clients",
    "two_gaussian_delta",
    "two_gaussian_epsilon",
]

#: Canary statistics: the final model's cosine, the sum and the maximum of the per-round cosines.
FL_STATISTICS: tuple[str, ...] = ("final", "sum", "max")

_ASSUMPTION = (
    "the statistics of the inserted canaries are Gaussian and the null is {null}; exact for "
    "the Gaussian mechanism as the dimension grows (Andrew et al. 2024, arXiv:2302.03098, "
    "Thm 3.2): an estimate, NOT a lower bound"
)


@dataclasses.dataclass(frozen=True)
class CanaryClients(ResultMixin):
    """k canary clients: their update directions and which were inserted.

    Attributes:
        directions: ``(k, d)`` float32 unit rows (uniform on the sphere).
        included: ``(k,)`` whether each canary client was inserted.
        inclusion: the probability each was inserted with (½ for the one-run games).
    """

    directions: np.ndarray
    included: np.ndarray
    inclusion: float

    @property
    def count(self) -> int:
        """k."""
        return int(self.included.size)


def draw_canary_clients(
    num_canaries: int, dimension: int, *, inclusion: float = 0.5, rng: RngLike = None
) -> CanaryClients:
    """k directions uniform on the unit sphere of R^d, each inserted with probability p.

    Args:
        num_canaries: k ≥ 1.
        dimension: d ≥ 2.
        inclusion: p ∈ [0, 1] (½: the one-run games' premise; 1: every canary inserted).
        rng: seed.

    Raises:
        ValueError: k < 1, d < 2, p outside [0, 1], or k·d floats over the memory cap.

    Example:
        >>> c = draw_canary_clients(3, 5, rng=0)
        >>> np.round(np.linalg.norm(c.directions, axis=1), 6).tolist()
        [1.0, 1.0, 1.0]
    """
    k = check_positive_int("num_canaries", num_canaries)
    d = check_positive_int("dimension", dimension)
    if d < 2:
        raise ValueError(f"dimension must be at least 2, got {d}")
    p = check_probability("inclusion", inclusion)
    check_memory(4.0 * k * d, f"num_canaries={k} directions of dimension={d}")
    g = as_generator(rng)
    rows = np.empty((k, d), dtype=np.float32)
    # blocks of rows drawn and normalised while they are in cache: the generator fills them in
    # the order one (k, d) draw would, so the directions are the same numbers
    step = max(1, _BLOCK_FLOATS // d)
    for i in range(0, k, step):
        part = rows[i : i + step]
        g.standard_normal(part.shape, dtype=np.float32, out=part)
        norms = np.sqrt(np.einsum("ij,ij->i", part, part, dtype=np.float64))
        part /= norms.astype(np.float32)[:, None]
    return CanaryClients(rows, g.random(k) < p, p)


#: Floats per block of the canary draw (1 MiB of float32: in a core's L2 cache).
_BLOCK_FLOATS = 1 << 18


@dataclasses.dataclass(frozen=True)
class CanaryCosines(ResultMixin):
    """Every canary's statistics in one run, and their closed-form nulls.

    Attributes:
        per_round: ``(k, T)`` cosine of each canary with each round's model delta.
        final: ``(k,)`` cosine with the final model delta.
        sum: ``(k,)`` sum over the rounds.
        max: ``(k,)`` maximum over the rounds.
        null_sd_final: 1/√d.
        null_sd_sum: ‖Σ_t Δ_t/‖Δ_t‖‖/√d.
        dimension: d.
    """

    per_round: np.ndarray
    final: np.ndarray
    sum: np.ndarray
    max: np.ndarray
    null_sd_final: float
    null_sd_sum: float
    dimension: int

    def statistic(self, name: str) -> np.ndarray:
        """The ``(k,)`` statistic ``"final"``, ``"sum"`` or ``"max"``."""
        return getattr(self, check_choice("statistic", name, FL_STATISTICS))

    def null_sd(self, name: str) -> float | None:
        """The closed-form null's standard deviation of a statistic (None for ``"max"``)."""
        return {"final": self.null_sd_final, "sum": self.null_sd_sum}.get(name)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    top = np.max(np.abs(x), axis=-1, keepdims=True)  # scaled first: no overflow in the norm
    x = np.divide(x, top, out=np.zeros_like(x), where=top > 0)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _check_directions(directions: ArrayLike) -> np.ndarray:
    """``(k, d)`` float32 unit rows (float arrays are checked without a float64 copy)."""
    if isinstance(directions, np.ndarray) and directions.dtype in (np.float32, np.float64):
        g = directions
    else:
        g = check_array("directions", directions, ndim=2)
    if g.ndim != 2 or g.shape[0] < 1 or g.shape[1] < 1:
        raise ValueError(f"directions must be a non-empty (k, d) array, got shape {g.shape}")
    # rows of norm 1 (± 1e-4) have finite entries in [-1 - 1e-4, 1 + 1e-4]; a NaN or inf
    # entry makes its row's norm NaN or inf: one pass checks all three
    norms = np.sqrt(np.einsum("ij,ij->i", g, g, dtype=np.float64))
    if not np.allclose(norms, 1.0, atol=1e-4):
        raise ValueError("directions must be unit vectors (rows of L2 norm 1, finite)")
    return np.asarray(g, dtype=np.float32)


def _check_deltas(deltas: ArrayLike) -> np.ndarray:
    """``(T, d)`` deltas: a float32 array as it is (a NaN or inf shows in its row norms,
    checked by the caller), anything else through :func:`check_array` (float64)."""
    if isinstance(deltas, np.ndarray) and deltas.dtype == np.float32 and deltas.ndim == 2:
        if deltas.size == 0:
            raise ValueError(f"deltas must not be empty, got shape {deltas.shape}")
        return deltas
    return check_array("deltas", deltas, ndim=2)


def canary_cosines(directions: ArrayLike, deltas: ArrayLike, final: ArrayLike) -> CanaryCosines:
    """Cosines of k canary directions with T model deltas and the final model delta.

    A delta of norm 0 gives cosines 0 (as the authors' code does).

    Raises:
        ValueError: shapes that disagree on d, or NaN/inf values.
    """
    g = _check_directions(directions)
    dl = _check_deltas(deltas)
    fin = check_array("final", final, ndim=1)
    if g.shape[1] != dl.shape[1] or fin.size != dl.shape[1]:
        raise ValueError(
            f"directions (k, d), deltas (T, d) and final (d,) must share d, got {g.shape}, "
            f"{dl.shape} and {fin.shape}"
        )
    t, d = dl.shape
    # the T unit deltas and the unit final delta as float32 rows of one (T + 1, d) matrix: one
    # (k, d) @ (d, T + 1) product gives every cosine (the k canary rows are read once)
    u = np.empty((t + 1, d), dtype=np.float32)
    if dl.dtype == np.float32:
        # float32 squares cannot overflow a float64 sum: the norms need no rescaling
        norms = np.sqrt(np.einsum("ij,ij->i", dl, dl, dtype=np.float64))
        if not np.all(np.isfinite(norms)):
            raise ValueError("deltas must contain only finite values (no NaN/inf)")
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        np.multiply(dl, inv[:, None], out=u[:t], casting="unsafe")
    else:
        u[:t] = _unit_rows(dl)
    u[t] = _unit_rows(fin)
    cos = (g @ u.T).astype(np.float64)
    per_round = np.ascontiguousarray(cos[:, :t])
    null_sum = float(np.linalg.norm(u[:t].sum(axis=0, dtype=np.float64))) / math.sqrt(d)
    return CanaryCosines(per_round, cos[:, t].copy(), per_round.sum(axis=1),
                         per_round.max(axis=1), 1.0 / math.sqrt(d), null_sum,
                         int(d))  # fmt: skip


# ----------------------------------------------------------------- two Gaussians' hockey stick


def _mass(lo: float, hi: float, mean: float, sd: float) -> float:
    """P(lo < Y < hi) for Y ~ N(mean, sd²), from the tail the interval lies in."""
    a, b = (lo - mean) / sd, (hi - mean) / sd
    if a > 0:
        return float(special.ndtr(-a) - special.ndtr(-b))
    return float(special.ndtr(b) - special.ndtr(a))


def _region(m1: float, s1: float, m2: float, s2: float, eps: float) -> list[tuple[float, float]]:
    """Where ``log p(y) − log q(y) > ε`` for p = N(m1, s1²), q = N(m2, s2²): the roots of
    ``A y² + B y + c`` with ``A = 1/(2s2²) − 1/(2s1²)``, ``B = m1/s1² − m2/s2²``,
    ``c = m2²/(2s2²) − m1²/(2s1²) + log(s2/s1) − ε``."""
    a = 0.5 / s2**2 - 0.5 / s1**2
    b = m1 / s1**2 - m2 / s2**2
    c = 0.5 * (m2 / s2) ** 2 - 0.5 * (m1 / s1) ** 2 + math.log(s2 / s1) - eps
    if abs(a) <= 1e-12 * max(1 / s1**2, 1 / s2**2):
        if b == 0:
            return [(-math.inf, math.inf)] if c > 0 else []
        root = -c / b
        return [(root, math.inf)] if b > 0 else [(-math.inf, root)]
    disc = b * b - 4 * a * c
    if disc <= 0:
        return [(-math.inf, math.inf)] if a > 0 else []
    r1, r2 = sorted(((-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)))
    return [(-math.inf, r1), (r2, math.inf)] if a > 0 else [(r1, r2)]


def _one_way(m1: float, s1: float, m2: float, s2: float, eps: float) -> float:
    region = _region(m1, s1, m2, s2, eps)
    p = sum(_mass(lo, hi, m1, s1) for lo, hi in region)
    q = sum(_mass(lo, hi, m2, s2) for lo, hi in region)
    if p <= 0:
        return 0.0
    if q <= 0:
        return p
    log_q = eps + math.log(q)  # e^ε q in logs: no overflow at large ε
    return 0.0 if log_q >= math.log(p) else p - math.exp(log_q)


#: Largest standardised mean gap and sd ratio (either way) the hockey stick is computed for.
MAX_STANDARDISED = 1e6


def _standardise(mean0: object, sd0: object, mean1: object, sd1: object) -> tuple[float, float]:
    """``((mean1 − mean0)/sd0, sd1/sd0)``: ε is invariant under a common affine map.

    Raises:
        ValueError: NaN, a non-positive sd, or a pair beyond :data:`MAX_STANDARDISED`.
    """
    m0, m1 = check_real("mean0", mean0), check_real("mean1", mean1)
    s0, s1 = _check_sd("sd0", sd0), _check_sd("sd1", sd1)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        gap = float(np.float64(m1) / s0 - np.float64(m0) / s0)
        ratio = float(np.float64(s1) / s0)
    if not (abs(gap) <= MAX_STANDARDISED and 1 / MAX_STANDARDISED <= ratio <= MAX_STANDARDISED):
        raise ValueError(
            f"mean0, sd0, mean1, sd1 = {m0!r}, {s0!r}, {m1!r}, {s1!r}: the gap over sd0 "
            f"({gap:.3g}) and sd1/sd0 ({ratio:.3g}) must be within {MAX_STANDARDISED:g}"
        )
    return gap, ratio


def two_gaussian_delta(mean0: float, sd0: float, mean1: float, sd1: float, epsilon: float) -> float:
    """δ(ε) of the pair N(mean0, sd0²), N(mean1, sd1²): the larger hockey-stick divergence
    ``sup_S P(S) − e^ε Q(S)`` of the two orders, attained at ``S = {log p/q > ε}``, a
    quadratic region (Steinke 2022, arXiv:2210.00597, §3; Balle & Wang 2018,
    arXiv:1805.06530, Thm 8, for equal variances).

    Raises:
        ValueError: a non-positive standard deviation or ε < 0.

    Example:
        >>> round(two_gaussian_delta(0.0, 1.0, 1.0, 1.0, 0.0), 6)  # 2Φ(1/2) − 1
        0.382925
    """
    gap, ratio = _standardise(mean0, sd0, mean1, sd1)
    eps = check_real("epsilon", epsilon)
    if not eps >= 0:
        raise ValueError(f"epsilon must be >= 0, got {eps}")
    if math.isinf(eps):
        return 0.0
    return max(_one_way(0.0, 1.0, gap, ratio, eps), _one_way(gap, ratio, 0.0, 1.0, eps))


def _check_sd(name: str, value: object) -> float:
    s = check_real(name, value)
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"{name} must be a positive finite standard deviation, got {value!r}")
    return s


def two_gaussian_epsilon(mean0: float, sd0: float, mean1: float, sd1: float, delta: float) -> float:
    """The smallest ε ≥ 0 with ``two_gaussian_delta(...) ≤ δ`` (Brent's method; absolute
    tolerance 1e-10).

    Raises:
        ValueError: as :func:`two_gaussian_delta`, or δ outside (0, 1).

    Example:
        >>> round(two_gaussian_epsilon(0.0, 1.0, 1.0, 1.0, 1e-5), 6)  # 1-GDP
        4.377178
    """
    gap, ratio = _standardise(mean0, sd0, mean1, sd1)
    d = check_delta(delta, allow_zero=False)

    def excess(eps: float) -> float:
        return max(_one_way(0.0, 1.0, gap, ratio, eps), _one_way(gap, ratio, 0.0, 1.0, eps)) - d

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(excess, hi / 2 if hi > 1 else 0.0, hi, xtol=1e-10))


# ---------------------------------------------------------------------------- the estimate


@dataclasses.dataclass(frozen=True)
class AndrewEstimate(ResultMixin):
    """The one-shot ε estimate of Andrew et al. 2024 (arXiv:2302.03098, Alg. 1).

    Attributes:
        epsilon: ε at ``delta`` between the null and N(mean, sd²) (mean and sd fitted).
        epsilon_null_variance: the same with the null's variance (only the mean fitted).
        delta: δ.
        mean, sd: fitted to the inserted canaries' statistics.
        null_mean, null_sd: the null (closed form, or fitted to the canaries not inserted).
        null: ``"closed-form"`` or ``"unseen"``.
        num_canaries: inserted canaries fitted.
        num_unseen: canaries the null was fitted to (0 for the closed form).
        statistic: the statistic (``"final"``, ``"sum"``, ``"max"``).
        assumption: what the estimate rests on.
    """

    epsilon: float
    epsilon_null_variance: float
    delta: float
    mean: float
    sd: float
    null_mean: float
    null_sd: float
    null: str
    num_canaries: int
    num_unseen: int
    statistic: str
    assumption: str


def andrew_estimate(
    scores: ArrayLike,
    *,
    delta: float,
    null_sd: float | None = None,
    unseen: ArrayLike | None = None,
    statistic: str = "final",
) -> AndrewEstimate:
    """Andrew et al.'s ε estimate from the inserted canaries' statistics (module notes).

    Args:
        scores: the inserted canaries' statistics (at least 2).
        delta: δ in (0, 1).
        null_sd: the closed-form null N(0, null_sd²) (the cosine statistics of
            :class:`CanaryCosines`); or
        unseen: the statistics of canaries never inserted, to fit the null to (at least 2).
        statistic: which statistic the scores are (:data:`FL_STATISTICS`), recorded.

    Raises:
        ValueError: neither or both of ``null_sd`` and ``unseen``, fewer than 2 scores, NaN
            scores, zero spread, δ outside (0, 1).

    Example:
        >>> g = np.random.default_rng(0)
        >>> est = andrew_estimate(g.normal(1.0, 1.0, 5000), delta=1e-5, null_sd=1.0)
        >>> round(est.epsilon_null_variance, 1)  # the 1-GDP ε is 4.38
        4.4
    """
    s = check_array("scores", scores, ndim=1)
    u = None if unseen is None else check_array("unseen", unseen, ndim=1)
    dl = check_delta(delta, allow_zero=False)
    stat = check_choice("statistic", statistic, FL_STATISTICS)
    if (null_sd is None) == (u is None):
        raise ValueError("pass exactly one of null_sd (closed-form null) and unseen")
    if s.size < 2:
        raise ValueError(f"scores needs at least 2 inserted canaries, got {s.size}")
    mean, sd = _moments(s)
    if u is None:
        m0, s0, null, n0 = 0.0, _check_sd("null_sd", null_sd), "closed-form", 0
        what = "the closed-form cosine null N(0, ‖v‖²/d)"
        names = "scores and null_sd"
    else:
        if u.size < 2:
            raise ValueError(f"unseen needs at least 2 canaries, got {u.size}")
        (m0, s0), null, n0 = _moments(u), "unseen", int(u.size)
        what = f"the Gaussian fitted to {n0} canaries never inserted"
        names = "scores and unseen"
    if not (sd > 0 and s0 > 0):
        raise ValueError(f"{names} must spread: fitted standard deviations {sd} and {s0}")
    try:
        gap, ratio = _standardise(m0, s0, mean, sd)
    except ValueError:
        raise ValueError(
            f"{names} are too far apart to compare: means {m0:.3g} and {mean:.3g}, standard "
            f"deviations {s0:.3g} and {sd:.3g}"
        ) from None
    fitted = two_gaussian_epsilon(0.0, 1.0, gap, ratio, dl)
    null_variance = two_gaussian_epsilon(0.0, 1.0, gap, 1.0, dl)
    return AndrewEstimate(fitted, null_variance, dl, mean, sd, m0, s0, null, int(s.size), n0,
                          stat, _ASSUMPTION.format(null=what))  # fmt: skip


def _moments(x: np.ndarray) -> tuple[float, float]:
    """Mean and sample standard deviation, computed on ``x / max|x|`` (no overflow)."""
    top = float(np.max(np.abs(x)))
    if top == 0:
        return 0.0, 0.0
    z = x / top
    return float(z.mean()) * top, float(z.std(ddof=1)) * top
