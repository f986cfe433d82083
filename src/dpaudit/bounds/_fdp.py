"""f-DP audit in one run (Mahloujifar, Melis & Chaudhuri 2024, arXiv:2410.22235).

Reconstruction game (Mahloujifar et al. 2024; Algorithm 2 of Liu, Boglioni, Fu, Hu, Thaker &
Wu, *Enhancing One-run Privacy Auditing with Quantile Regression-Based Membership
Inference*): m slots, each a set of K ≥ 2 candidate
canaries of which one, chosen uniformly, is inserted; one training run; the adversary names
the inserted candidate in ``n_g`` slots (abstaining on the others) and is right ``n_c``
times. K = 2 is the membership game.

**Rejection test** of the claim "the mechanism is f-DP" at significance τ (the
``audit_rh_with_cap`` recursion of Mahloujifar et al. 2024):

1. ``r ← τ·n_c/m``, ``h ← τ·(n_g − n_c)/m``;
2. for i = n_c − 1 down to 0: ``h' ← max(h, (K−1)·B⁻¹(r))``;
   ``r ← min(1, r + i/(n_g − i)·(h' − h))``; ``h ← h'``; stop when h did not change;
3. reject iff ``r + h > n_g/m``.

Here f is the Gaussian-DP trade-off ``f_μ``, ``B⁻¹_μ(y) = Φ(Φ⁻¹(y) − μ)``. Smaller μ is a
stronger claim, the rejected set is ``[0, μ*)``, and μ* is found by a continuous bracketing
root search (no grid). Two exact facts make it fast:

* ``μ* ≤ μ₀ = Φ⁻¹(r₀) − Φ⁻¹(h₀/(K−1))``: for μ ≥ μ₀ the recursion stops at once with
  ``r + h = τ·n_g/m < n_g/m``. The function ``g(μ) = r + h − n_g/m`` is a step function near
  μ* (the recursion either settles or runs away to the cap), so the search bisects on the sign
  of g inside ``[0, μ₀]`` down to :data:`MU_TOLERANCE` and reports a μ verified to be
  rejected, within the tolerance below μ*.
* The recursion can stop early with the same verdict: ``r + h`` never decreases (so once it
  exceeds ``n_g/m`` the claim is rejected), and once the increments shrink geometrically their
  remaining sum is bounded (``B⁻¹`` is convex and ``i/(n_g − i)`` decreases), which proves
  non-rejection — see :func:`_rejection_margin`.

**μ → ε.** For δ > 0, ε is that of the μ*-GDP curve, ``gdp_epsilon(μ*, δ)`` (Dong, Roth & Su
2022, Cor. 2.13): a lower bound on ε *for mechanisms whose trade-off curve is Gaussian* (as
DP-SGD's nearly is) — (ε, δ)-DP with δ > 0 implies no GDP bound in general. For δ = 0 the bound
needs no such premise: ε-DP implies μ_ε-GDP with ``μ_ε = 2·Φ⁻¹(e^ε/(1+e^ε))`` (the piecewise
linear ``f_{ε,0}`` and the convex ``G_{μ_ε}`` meet at (0,1), (1,0) and the symmetric point
``1/(1+e^ε)``), so rejecting μ*-GDP rejects ε-DP for every ε with ``μ_ε < μ*``:
``ε_lb = log(Φ(μ*/2)/Φ(−μ*/2))``.

:func:`fdp_one_run_sweep` runs the bound over a grid of guess counts with the choice paid for
(:mod:`dpaudit.bounds._sweep`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable

import numpy as np
from scipy import special

from dpaudit._results import ConfidenceInterval
from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_at_most,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_real,
    track,
)
from dpaudit.bounds._fdp_kernel import Margin, compiled_margin
from dpaudit.bounds._one_run import GameResult, check_game_counts, game_fields
from dpaudit.bounds._selection import DEFAULT_BONFERRONI, Explicit, Selection
from dpaudit.bounds._sweep import (
    GuessCountData,
    Outcome,
    SweepResult,
    max_by_upper_bound,
    run_sweep,
)
from dpaudit.conversions import gdp_epsilon

__all__ = [
    "MU_TOLERANCE",
    "FDPOneRunResult",
    "fdp_one_run_epsilon",
    "fdp_one_run_epsilon_from_scores",
    "fdp_one_run_sweep",
    "fdp_rejects",
]

#: Absolute tolerance of the root search in μ (the reported μ is within this below μ*).
MU_TOLERANCE = 1e-9
_METHOD = "f-DP one-run, Gaussian-DP family (Mahloujifar et al. 2024)"
_SQRT_HALF = math.sqrt(0.5)
_MU_MAX = 40.0  # B⁻¹_μ(y) underflows to 0 for every y < 1 well before μ = 40
#: Φ⁻¹ of one float in (0, 1) (Wichura's AS 241, as scipy's ``ndtri``; they agree to 2e-15).
_NDTRI = statistics.NormalDist().inv_cdf


@dataclasses.dataclass(frozen=True, kw_only=True)
class FDPOneRunResult(GameResult):
    """ε and Gaussian-DP μ lower bounds of an f-DP one-run audit (and the :class:`GameResult`).

    Attributes:
        epsilon: ε lower bound at ``delta`` (see the module docstring for the premise at δ > 0).
        mu: the largest rejected Gaussian-DP μ (within ``tolerance`` below μ*); 0 if none.
        mu_interval: ``[mu, inf)``.
        num_canaries: m, the number of slots (canary sets; Liu et al.'s M = m/K).
        set_size: K ≥ 2 candidates per slot.
        conversion: ``"pure-dp"`` (δ = 0: ε = logit Φ(μ/2), no premise) or
            ``"gaussian-profile"`` (δ > 0: Dong–Roth–Su Cor. 2.13).
        tolerance: absolute tolerance in μ.
    """

    mu: float
    mu_interval: ConfidenceInterval
    set_size: int
    conversion: str


def _check_set_size(set_size: object) -> int:
    k = check_nonneg_int("set_size", set_size)
    if k < 2:
        raise ValueError(f"set_size must be at least 2, got {k}")
    return k


def _margin_loop(
    ndtri: Callable[[float], float], erfc: Callable[[float], float], exp: Callable[[float], float]
) -> Margin:
    """The rejection margin (:func:`_rejection_margin`) over the given Φ⁻¹, erfc and exp.

    Written once, run as Python (the standard library's functions) or compiled by numba
    (:mod:`dpaudit.bounds._fdp_kernel`; SciPy's ``ndtri``): so it uses only what numba
    compiles.
    """
    sqrt_half = _SQRT_HALF

    def margin(mu: float, m: int, ng: int, nc: int, tau: float, k: int) -> float:
        target = ng / m
        r = tau * nc / m
        h = tau * (ng - nc) / m
        km1 = float(k - 1)
        half_km1 = km1 * 0.5  # (K−1)·½ as the product is evaluated left to right
        half_mu2 = 0.5 * mu * mu
        for steps, i in enumerate(range(nc - 1, -1, -1)):  # numba: no start= keyword
            binv = half_km1 * erfc((mu - ndtri(r)) * sqrt_half) if r < 1.0 else km1
            if binv <= h:
                break
            c = i / (ng - i)
            dr = c * (binv - h)
            r += dr
            if r > 1.0:
                r = 1.0
            h = binv
            if r + h > target:
                return r + h - target
            if steps % 8 == 7 and r < 1.0:  # every eighth step
                big_r = r + 64.0 * dr + 1e-12
                if big_r < 1.0:
                    a = ndtri(big_r)
                    rho = c * km1 * exp(mu * a - half_mu2)
                    if rho < 1.0 and r + dr * rho / (1.0 - rho) <= big_r:
                        upper = big_r + half_km1 * erfc((mu - a) * sqrt_half)
                        if upper < target:
                            return upper - target
        return r + h - target

    return margin


#: The margin as a Python loop (Φ⁻¹: the standard library's C routine, ~2× scipy's ufunc on
#: one float); the reference the compiled loop is tested against.
_python_margin = _margin_loop(_NDTRI, math.erfc, math.exp)


def _rejection_margin(mu: float, m: int, ng: int, nc: int, tau: float, k: int) -> float:
    """Sign-exact ``r + h − n_g/m`` of the rejection recursion (module docstring) at μ.

    Positive means "reject μ-GDP". The magnitude is exact when the recursion runs to its end;
    the two early exits keep the sign exact:

    * reject: r and h never decrease, so ``r + h > n_g/m`` at any step is final;
    * accept: take R slightly above r. While r ≤ R, each later increment of r is at most
      ``ρ = c_i·(K−1)·B⁻¹'(R)`` times the previous one (convexity of ``B⁻¹`` and decreasing
      ``c_i = i/(n_g − i)``), so if ``ρ < 1`` and ``r + Δr·ρ/(1−ρ) ≤ R`` then r stays ≤ R for
      ever (induction) and ``r + h ≤ R + (K−1)·B⁻¹(R)``; when that is below ``n_g/m`` the
      claim is not rejected and the bound is returned. ``B⁻¹'_μ(y) = exp(μ·Φ⁻¹(y) − μ²/2)``.

    Runs compiled (numba, :func:`dpaudit.bounds._fdp_kernel.compiled_margin`) when numba is
    installed, as the Python loop otherwise.
    """
    return (compiled_margin(_margin_loop) or _python_margin)(mu, m, ng, nc, tau, k)


def _largest_rejected_mu(
    m: int,
    ng: int,
    nc: int,
    tau: float,
    k: int,
    *,
    hint_gap: float | None = None,
    rejected_at: float | None = None,
) -> float:
    """Largest μ verified to be rejected, within :data:`MU_TOLERANCE` below μ* (0 if none).

    Bisection on the sign of the rejection margin inside ``[0, μ₀]`` (μ₀ as in the module
    docstring). Two optional hints only narrow the first bracket, never the answer:
    ``hint_gap`` — the gap ``μ₀ − μ*`` of a neighbouring sweep point (the gap varies slowly
    along a sweep) — and ``rejected_at`` — a μ already verified to be rejected.
    """
    if ng == 0 or nc == 0:
        return 0.0

    def rejects(mu: float) -> bool:
        return _rejection_margin(mu, m, ng, nc, tau, k) > 0.0

    if rejected_at is None and not rejects(0.0):
        return 0.0
    r0 = tau * nc / m
    h0 = tau * (ng - nc) / m
    hi = float(special.ndtri(r0) - special.ndtri(h0 / (k - 1))) if h0 > 0.0 else _MU_MAX
    hi = min(hi, _MU_MAX)
    lo = 0.0 if rejected_at is None else rejected_at
    if hi <= lo:
        return lo
    # Just below μ0 first (the usual "step" case): invariant lo rejected, hi not rejected.
    top = hi - MU_TOLERANCE
    if top > lo:
        if rejects(top):
            return top
        hi = top
    if hint_gap is not None and hint_gap > 0.0:
        centre = hi - hint_gap
        width = max(64.0 * MU_TOLERANCE, 0.25 * hint_gap)
        while centre - width > lo:  # a rejected point at or below the centre
            a = centre - width
            if rejects(a):
                lo = a
                break
            hi = a
            width *= 4.0
        width = max(64.0 * MU_TOLERANCE, 0.25 * hint_gap)
        while lo < centre + width < hi:  # a non-rejected point above the centre
            b = centre + width
            if not rejects(b):
                hi = b
                break
            lo = b
            width *= 4.0
    while hi - lo > MU_TOLERANCE:
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _mu_to_epsilon(mu: float, delta: float) -> float:
    """ε at δ from the largest rejected μ (module docstring): pure-DP map or Cor. 2.13."""
    if mu <= 0.0:
        return 0.0
    if delta == 0.0:
        half = 0.5 * mu
        return float(special.log_ndtr(half) - special.log_ndtr(-half))
    return gdp_epsilon(mu, delta)


def fdp_rejects(
    num_canaries: int,
    num_guesses: int,
    num_correct: int,
    mu: float,
    *,
    set_size: int = 2,
    confidence_level: float = 0.95,
) -> bool:
    """Whether the f-DP one-run test rejects the claim "μ-GDP" at significance 1 − level.

    The rejection recursion of Mahloujifar, Melis & Chaudhuri (2024) with the Gaussian
    trade-off ``B⁻¹_μ(y) = Φ(Φ⁻¹(y) − μ)`` (arXiv:2410.22235).

    Args:
        num_canaries: m ≥ 1 slots.
        num_guesses: n_g ≤ m.
        num_correct: n_c ≤ n_g.
        mu: the claimed μ ≥ 0.
        set_size: K ≥ 2.
        confidence_level: 1 − τ in (0, 1).

    Returns:
        True when the claim is rejected.

    Raises:
        TypeError, ValueError: bad counts, μ < 0, K < 2, level outside (0, 1).

    Example:
        >>> fdp_rejects(1000, 100, 95, 0.78), fdp_rejects(1000, 100, 95, 0.79)
        (True, False)
    """
    m, ng, nc = check_game_counts(num_canaries, num_guesses, num_correct)
    mu = check_real("mu", mu)
    if mu < 0:
        raise ValueError(f"mu must be non-negative, got {mu}")
    k = _check_set_size(set_size)
    tau = 1.0 - check_confidence_level(confidence_level)
    if ng == 0:
        return False
    return _rejection_margin(mu, m, ng, nc, tau, k) > 0.0


def _result(
    m: int, ng: int, nc: int, k: int, delta: float, level: float, mu: float
) -> FDPOneRunResult:
    eps = _mu_to_epsilon(mu, delta)
    return FDPOneRunResult(
        **game_fields(eps, level, _METHOD, (m, ng, nc), delta),
        tolerance=MU_TOLERANCE,
        mu=mu,
        mu_interval=ConfidenceInterval(mu, math.inf),
        set_size=k,
        conversion="pure-dp" if delta == 0.0 else "gaussian-profile",
    )


def fdp_one_run_epsilon(
    num_canaries: int,
    num_guesses: int,
    num_correct: int,
    *,
    set_size: int = 2,
    delta: float = 0.0,
    confidence_level: float = 0.95,
) -> FDPOneRunResult:
    """ε and μ lower bounds of the f-DP one-run audit (Gaussian-DP family).

    Finds the largest μ whose μ-GDP claim the rejection test of Mahloujifar, Melis &
    Chaudhuri (2024, arXiv:2410.22235) rejects at τ = 1 − confidence_level by a continuous
    bracketing search on μ (no grid), then
    reports ε at δ: ``log(Φ(μ/2)/Φ(−μ/2))`` for δ = 0 (valid for any ε-DP mechanism) or
    ``gdp_epsilon(μ, δ)`` for δ > 0 (valid for mechanisms with a Gaussian trade-off curve).

    Args:
        num_canaries: m ≥ 1, the number of slots (canary sets).
        num_guesses: n_g ≤ m, slots where a guess was made.
        num_correct: n_c ≤ n_g.
        set_size: K ≥ 2 candidates per slot (2 = membership).
        delta: δ in [0, 1) at which ε is reported.
        confidence_level: 1 − τ in (0, 1).

    Returns:
        :class:`FDPOneRunResult` with ``.epsilon`` and ``.mu``.

    Raises:
        TypeError, ValueError: bad counts (n_g > m, n_c > n_g), K < 2, δ or level out of range.

    Example:
        >>> res = fdp_one_run_epsilon(1000, 100, 95, delta=1e-5)
        >>> round(res.mu, 6), round(res.epsilon, 4)
        (0.786812, 3.3233)
    """
    m, ng, nc = check_game_counts(num_canaries, num_guesses, num_correct)
    k = _check_set_size(set_size)
    delta = check_delta(delta)
    level = check_confidence_level(confidence_level)
    mu = _largest_rejected_mu(m, ng, nc, 1.0 - level, k)
    return _result(m, ng, nc, k, delta, level, mu)


def _check_slot_scores(scores: ArrayLike, inserted: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    s = check_array("scores", scores, ndim=2)
    if s.shape[1] < 2:
        raise ValueError(
            f"scores must have at least 2 columns (candidates per slot), got {s.shape}"
        )
    ins = check_array("inserted", inserted, ndim=1)
    if ins.shape[0] != s.shape[0]:
        raise ValueError(f"inserted must have one entry per slot ({s.shape[0]}), got {ins.shape}")
    if not np.all((ins == np.round(ins)) & (ins >= 0) & (ins < s.shape[1])):
        raise ValueError(f"inserted must hold candidate indices in [0, {s.shape[1] - 1}]")
    return s, ins.astype(np.int64)


def _ranked_slot_correct(scores: np.ndarray, inserted: np.ndarray) -> np.ndarray:
    """Per slot, whether argmax is the inserted candidate, ordered by decreasing confidence.

    Guess = highest-scoring candidate; confidence = its margin over the runner-up (the usual
    score-ranking attack of Mahloujifar et al. 2024); ties in the margin keep slot order.
    """
    part = np.sort(scores, axis=1)
    margin = part[:, -1] - part[:, -2]
    guess = np.argmax(scores, axis=1)
    order = np.argsort(-margin, kind="stable")
    return (guess == inserted)[order]


def fdp_one_run_epsilon_from_scores(
    scores: ArrayLike,
    inserted: ArrayLike,
    *,
    num_guesses: int,
    delta: float = 0.0,
    confidence_level: float = 0.95,
) -> FDPOneRunResult:
    """f-DP one-run bound from raw scores of the K candidates of each slot.

    In each slot the adversary names the candidate with the highest score; it guesses in the
    ``num_guesses`` slots with the largest margin between the best and second-best score and
    abstains elsewhere (Mahloujifar et al. 2024). Then :func:`fdp_one_run_epsilon` with
    m = number of slots and K = number of columns.

    Args:
        scores: (m, K) scores, larger = more likely inserted; K ≥ 2.
        inserted: (m,) index in [0, K) of the inserted candidate per slot.
        num_guesses: number of slots to guess on, ≤ m (fixed in advance).
        delta: δ in [0, 1).
        confidence_level: 1 − τ in (0, 1).

    Returns:
        :class:`FDPOneRunResult`.

    Raises:
        TypeError, ValueError: bad shapes or indices, num_guesses > m, bad δ/level.

    Example:
        >>> res = fdp_one_run_epsilon_from_scores([[2.0, 0.0], [0.0, 1.0]], [0, 1],
        ...                                       num_guesses=2)
        >>> res.num_correct
        2
    """
    s, ins = _check_slot_scores(scores, inserted)
    ng = check_nonneg_int("num_guesses", num_guesses)
    check_at_most("num_guesses", ng, s.shape[0], "the number of slots")
    ranked = _ranked_slot_correct(s, ins)
    nc = int(np.count_nonzero(ranked[:ng]))
    res = fdp_one_run_epsilon(
        s.shape[0], ng, nc, set_size=s.shape[1], delta=delta, confidence_level=confidence_level
    )
    return dataclasses.replace(res, selection=Explicit(ng).record("number of guesses"))


# ---------------------------------------------------------------------------------------------
# Sweep over the number of guesses
# ---------------------------------------------------------------------------------------------


def _mu_upper(m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int) -> np.ndarray:
    """μ₀ per point: no μ ≥ μ₀ is rejected (module docstring)."""
    r0 = tau * nc / m
    h0 = tau * (ng - nc) / m
    with np.errstate(divide="ignore", invalid="ignore"):
        mu0 = special.ndtri(r0) - special.ndtri(h0 / (k - 1))
    mu0 = np.where(nc == 0, 0.0, np.where(h0 <= 0, np.inf, mu0))
    return np.maximum(mu0, 0.0)


def _mu_all(
    m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int, report: Progress
) -> np.ndarray:
    """The largest rejected μ at every sweep point (neighbouring gaps narrow the search)."""
    upper = np.minimum(_mu_upper(m, ng, nc, tau, k), _MU_MAX)
    out = np.zeros(ng.size)
    gap = None
    for j in track(range(ng.size), ng.size, "f-DP one-run sweep", report):
        if ng[j] == 0:
            continue
        mu = _largest_rejected_mu(m, int(ng[j]), int(nc[j]), tau, k, hint_gap=gap)
        out[j] = mu
        if mu > 0:
            gap = float(upper[j]) - mu
    return out


def _mu_max(m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int) -> tuple[float, int]:
    """Largest rejected μ over the points, pruned by μ₀."""

    def evaluate(j: int, best: float) -> float:
        a, b = int(ng[j]), int(nc[j])
        # One evaluation decides whether this point can beat the best so far.
        if best > 0.0 and _rejection_margin(best + MU_TOLERANCE, m, a, b, tau, k) <= 0.0:
            return 0.0
        return _largest_rejected_mu(
            m, a, b, tau, k, rejected_at=best + MU_TOLERANCE if best > 0.0 else None
        )

    return max_by_upper_bound(_mu_upper(m, ng, nc, tau, k), evaluate)


@dataclasses.dataclass
class _Game(GuessCountData):
    """Name the top candidate; guess in the ``n_g`` slots with the largest margins."""

    set_size: int = 2
    mus: np.ndarray | None = None

    @property
    def method(self) -> str:
        return f"f-DP one-run, Gaussian-DP family, K={self.set_size} (Mahloujifar et al. 2024)"

    def counts(self, idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cum = np.concatenate(
            ([0], np.cumsum(_ranked_slot_correct(*self.part(idx)), dtype=np.int64))
        )
        return vals.astype(np.int64), cum[vals].astype(np.int64)

    def all_eps(
        self, idx: np.ndarray | None, vals: np.ndarray, n: int, report: Progress
    ) -> np.ndarray:
        ng, nc = self.counts(idx, vals)
        mus = _mu_all(n, ng, nc, 1.0 - self.level, self.set_size, report)
        if idx is None:
            self.mus = mus
        return np.array([_mu_to_epsilon(float(x), self.delta) for x in mus])

    def outcome(self, idx: np.ndarray | None, vals: np.ndarray, tau: float, n: int) -> Outcome:
        ng, nc = self.counts(idx, vals)
        mu, j = _mu_max(n, ng, nc, tau, self.set_size)
        return Outcome(_mu_to_epsilon(mu, self.delta), j, int(ng[j]), int(nc[j]), mu=mu)


def fdp_one_run_sweep(
    scores: ArrayLike,
    inserted: ArrayLike,
    *,
    guess_counts: ArrayLike | None = None,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    selection: Selection | str = DEFAULT_BONFERRONI,
    rng: RngLike = None,
    progress: ProgressLike = None,
    refine: bool = False,
) -> SweepResult:
    """f-DP one-run bound over a guess-count sweep, with the choice of guess count paid for.

    In each slot the adversary names the highest-scoring candidate and guesses in the n_g
    slots with the largest margin over the runner-up; for each n_g in the sweep (default
    10, 20, …, m) the largest rejected Gaussian-DP μ is found as in
    :func:`fdp_one_run_epsilon` and turned into ε at δ. The uncorrected maximum over the
    sweep is reported apart from the valid bound (:mod:`dpaudit.bounds._sweep`).

    Args:
        scores: (m, K) candidate scores per slot, K ≥ 2.
        inserted: (m,) index of the inserted candidate per slot.
        guess_counts: numbers of guesses per sweep point (integers in [1, m]); or give them
            as ``Bonferroni(candidates)``.
        delta: δ in [0, 1).
        confidence_level: 1 − τ in (0, 1).
        selection: :class:`~dpaudit.bounds.Bonferroni` (default), :class:`~dpaudit.bounds.Split`
            (choose on a random part of the slots) or :class:`~dpaudit.bounds.Explicit`.
        rng: randomness of the split (keyword-only; recorded as ``seed``).
        refine: also evaluate every guess count between the neighbours of the best grid
            point (at most 256, :func:`dpaudit.bounds._sweep.refine_values`), on all
            canaries for the uncorrected maximum and on the selection part for the valid
            bound; needs a :class:`~dpaudit.bounds.Split` or
            :class:`~dpaudit.bounds.MultiSplit` selection (the split pays for both stages).
        progress: a :class:`~dpaudit._typing.Progress` callback over sweep points, ``True``
            for a rich bar, or None.

    Returns:
        :class:`~dpaudit.bounds.SweepResult` (with ``mus`` and ``mu``).

    Raises:
        TypeError, ValueError: bad shapes or indices, guess counts out of range, bad δ, level
            or selection, a split leaving an empty part.

    Example:
        >>> import numpy as np
        >>> g = np.random.default_rng(0)
        >>> ins = g.integers(0, 2, 500)
        >>> sc = g.normal(size=(500, 2)); sc[np.arange(500), ins] += 2.0
        >>> res = fdp_one_run_sweep(sc, ins, guess_counts=[50, 100, 250, 500], delta=1e-5)
        >>> res.mu > 0, res.epsilon <= res.uncorrected_max_epsilon
        (True, True)
    """
    s, ins = _check_slot_scores(scores, inserted)
    level = check_confidence_level(confidence_level)
    game = _Game(s, ins, check_delta(delta), level, s.shape[1])
    result = run_sweep(
        game, guess_counts, selection=selection, rng=rng, progress=progress, refine=refine
    )
    return dataclasses.replace(result, mus=game.mus)
