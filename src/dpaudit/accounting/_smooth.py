"""Smooth sensitivity of PATE's data-dependent RDP and its private release (GNSS).

The data-dependent cost of Thm 6 depends on the votes, so publishing it leaks. Papernot et
al. 2018, App. B (Algorithms 3–5, Prop. 13, Thm 23), bound its local sensitivity at every
distance d, smooth it (Nissim, Raskhodnikova, Smith 2007) and release it with the Gaussian
noise of the GNSS mechanism at a fixed order λ (arXiv:1802.08908).

q, q0, q1, B_L(q) and B_U(q) stay in log space end to end (``log B_L`` through
:func:`scipy.special.ndtri_exp` and ``log_ndtr``): for small σ or large λ the plateau points lie
far below the smallest float64 (``log q1 = −2500.9`` at σ = 1, λ = 50), where computing them
as probabilities underflowed to 0 and silently zeroed or inflated the sensitivity (issue 13).

The functions here are scalar-oriented (one query at a time, O(N_T·m) each), like the
reference implementation; they are not on any hot path.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, special

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_array,
    check_delta,
    check_memory,
    check_positive,
    check_positive_int,
    check_real,
    check_votes,
    check_work,
)
from dpaudit.accounting._confident import check_threshold
from dpaudit.accounting._gnmax import dd_terms, log_q_union_flat, raw_dd, rdp_gn_flat

__all__ = [
    "GNMaxPlateau",
    "GNSSRelease",
    "SmoothSensitivityConditions",
    "gnmax_local_sensitivity",
    "gnmax_plateau",
    "gnss_rdp",
    "gnss_release",
    "pate_local_sensitivity",
    "smooth_sensitivity",
    "smooth_sensitivity_conditions",
    "threshold_local_sensitivity",
]

#: Largest ``num_teachers`` of the local-sensitivity functions: their output holds one float64
#: per teacher, and GNMax's walk may take one Python step per teacher (~20 µs each). Raise
#: ``dpaudit.accounting._smooth.MAX_TEACHERS`` for larger ensembles.
MAX_TEACHERS = 10**6
#: Largest ``rows × num_teachers`` of :func:`pate_local_sensitivity` (each row costs
#: O(num_teachers) work); raise ``dpaudit.accounting._smooth.MAX_LS_WORK`` to allow more.
MAX_LS_WORK = 3 * 10**7

_LOG_Q0_FLOOR = -1e4  # the reference aborts the bracket search below this
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)


def _check_order(order: object) -> float:
    lam = check_real("order", order)
    if lam <= 1:
        raise ValueError(f"order must be > 1, got {lam}")
    return lam


def _data_independent(sigma: float, lam: float, what: str = "sigma") -> float:
    """``λ/σ²``, or a ValueError when float64 cannot hold it (σ extremely small or large)."""
    sq = sigma * sigma
    ind = lam / sq if 0.0 < sq < math.inf else math.nan
    if not (math.isfinite(ind) and ind > 0.0):
        if sq == 0.0 or sq == math.inf:
            reason = "σ² underflows to 0" if sq == 0.0 else "σ² overflows"
        else:
            reason = f"λ/σ² = {ind!r}"
        raise ValueError(
            f"{what}={sigma!r} at order={lam!r}: {reason} in float64; the smooth-sensitivity "
            "bounds cannot be computed for it"
        )
    return ind


def _dd(log_q: float, sigma: float, lam: float) -> float:
    """Thm 6's DD at one (log q, σ, λ), no validity check (used where validity is known)."""
    t = dd_terms(np.array([log_q]), sigma)
    return float(raw_dd(t, np.array([lam]))[0, 0])


def _log_q0(sigma: float, lam: float, ind: float) -> float:
    """log q0, where DD crosses λ/σ² (Papernot et al. 2018 App. B.4, Alg. 3 step 1)."""
    a, b = 1.0 + 1.0 / sigma, (lam - 0.99) / sigma
    ub = min(-(a * a), -(b * b), -1.0 / (sigma * sigma))
    if not math.isfinite(ub):
        raise ValueError(
            f"sigma={sigma!r}, order={lam!r}: the starting bound log q = {ub!r} of the "
            "crossing search is outside float64's range"
        )

    def g(x: float) -> float:
        return _dd(x, sigma, lam) - ind

    if g(ub) < 0:
        return ub
    lb = 2.0 * ub
    while g(lb) > 0:
        lb *= 1.5
        if lb < _LOG_Q0_FLOOR:
            raise ValueError(
                f"no crossing of the data-dependent bound above log q = {_LOG_Q0_FLOOR} for "
                f"sigma={sigma}, order={lam}; the smooth-sensitivity analysis does not apply"
            )
    return float(optimize.brentq(g, lb, ub, xtol=1e-14, rtol=4 * np.finfo(float).eps))


def _log_sf_inverse(log_p: np.ndarray) -> np.ndarray:
    """``w`` with ``log Φ̄(w) = log_p`` for ``log_p ≤ 0``, in log space (no underflow).

    :func:`scipy.special.ndtri_exp` gives ``z = Φ⁻¹(e^{log_p})`` (so ``w = −z``) to ~1e-13
    relative deep in the tail; two Newton steps on ``log Φ(z) = log_p`` (derivative
    ``φ(z)/Φ(z)``, computed as one exponential of a log-ratio) bring it to rounding.
    """
    log_p = np.asarray(log_p, dtype=np.float64)
    z = special.ndtri_exp(log_p)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for _ in range(2):
            lz = special.log_ndtr(z)
            slope = np.exp(-0.5 * z * z - _HALF_LOG_2PI - lz)
            step = (lz - log_p) / slope
            ok = np.isfinite(step) & np.isfinite(z)
            z = np.where(ok, z - np.where(ok, step, 0.0), z)
    return -z


def _log_b_l(log_q: np.ndarray, sigma: float, m: int) -> np.ndarray:
    """``log B_L(q)`` of Papernot et al. 2018 Prop. 13, in log space.

    ``B_L(q) = (m−1)·Φ̄(w + √2/σ)`` with ``Φ̄(w) = q/(m−1)``: the smallest q̃ one teacher away
    (the erfc form ``(m−1)/2·erfc(erfc⁻¹(2q/(m−1)) + 1/σ)`` with ``w = √2·erfc⁻¹(·)``).
    """
    log_m1 = math.log(m - 1)
    w = _log_sf_inverse(np.asarray(log_q, dtype=np.float64) - log_m1)
    return log_m1 + special.log_ndtr(-(w + _SQRT2 / sigma))


def _log_b_u(log_q: np.ndarray, sigma: float, m: int) -> np.ndarray:
    """``log B_U(q) = min(0, log((m−1)·Φ̄(w − √2/σ)))`` (Prop. 13): the largest q̃ one away."""
    log_m1 = math.log(m - 1)
    w = _log_sf_inverse(np.asarray(log_q, dtype=np.float64) - log_m1)
    return np.minimum(0.0, log_m1 + special.log_ndtr(-(w - _SQRT2 / sigma)))


@dataclasses.dataclass(frozen=True)
class GNMaxPlateau(ResultMixin):
    """The two points of the GNMax β-function (Papernot et al. 2018 App. B.4, Alg. 3).

    Attributes:
        log_q0: below it the data-dependent bound DD is used, above it λ/σ².
        log_q1: ``log B_L(q0)``; for ``q1 ≤ q ≤ q0`` the local sensitivity is at its plateau.
        sigma, order, num_classes: the inputs.
    """

    log_q0: float
    log_q1: float
    sigma: float
    order: float
    num_classes: int


def _plateau(sigma: float, lam: float, m: int) -> GNMaxPlateau:
    ind = _data_independent(sigma, lam)
    lq0 = _log_q0(sigma, lam, ind)
    lq1 = float(_log_b_l(np.array(lq0), sigma, m))
    if not math.isfinite(lq1):
        raise ValueError(
            f"sigma={sigma!r}, order={lam!r}: log q1 = log B_L(q0) is {lq1!r}, outside "
            "float64's range; the smooth-sensitivity bounds cannot be computed for it"
        )
    return GNMaxPlateau(lq0, lq1, sigma, lam, m)


def gnmax_plateau(sigma: float, order: float, num_classes: int) -> GNMaxPlateau:
    """``log q0`` and ``log q1`` of the GNMax β-function (Papernot et al. 2018 App. B.4).

    Computed in log space throughout: ``q0`` and ``q1`` may lie far below the smallest
    float64 (``log q1 = −2500.92`` at σ = 1, λ = 50, m = 2).

    Args:
        sigma: GNMax noise σ > 0.
        order: the fixed Rényi order λ > 1 of the release.
        num_classes: m ≥ 2.

    Returns:
        :class:`GNMaxPlateau`.

    Raises:
        ValueError: bad arguments, no crossing above ``log q = −10⁴``, or σ so extreme that
            ``λ/σ²``, ``log q0`` or ``log q1`` leave float64's range.

    Example:
        >>> round(gnmax_plateau(40, 20, 10).log_q0, 6)
        -3.156873
        >>> round(gnmax_plateau(1.0, 50.0, 2).log_q1, 2)  # q1 = e^-2500.92 underflows
        -2500.92
    """
    s = check_positive("sigma", sigma)
    lam = _check_order(order)
    m = check_positive_int("num_classes", num_classes)
    if m < 2:
        raise ValueError(f"num_classes must be at least 2, got {m}")
    return _plateau(s, lam, m)


class _Beta:
    """β(q) and LS(q) for fixed (σ, λ, m), all in log q (Papernot et al. 2018 Alg. 3)."""

    def __init__(self, sigma: float, lam: float, m: int) -> None:
        self.sigma, self.lam, self.m = sigma, lam, m
        p = _plateau(sigma, lam, m)
        self.log_q0, self.log_q1 = p.log_q0, p.log_q1
        self.ind = _data_independent(sigma, lam)

    def beta(self, log_q: float) -> float:
        if log_q == -math.inf:
            return 0.0  # q̃ = 0: the output is constant, 0-RDP
        if log_q >= self.log_q0:
            return self.ind
        return _dd(log_q, self.sigma, self.lam)

    def ls(self, log_q: float) -> float:
        if self.log_q1 <= log_q <= self.log_q0:
            # the plateau: LS(q1), where B_U(q1) = B_U(B_L(q0)) = q0 exactly (Prop. 13), so
            # β(B_U(q1)) = λ/σ²; computing B_U(q1) could land an ulp below q0 and read DD.
            b = self.beta(self.log_q1)
            down = self.beta(float(_log_b_l(np.array(self.log_q1), self.sigma, self.m)))
            return max(self.ind - b, b - down)
        b = self.beta(log_q)
        up = self.beta(float(_log_b_u(np.array(log_q), self.sigma, self.m)))
        down = self.beta(float(_log_b_l(np.array(log_q), self.sigma, self.m)))
        return max(up - b, b - down)


def _check_teachers(num_teachers: object, what: str) -> int:
    n_t = check_positive_int("num_teachers", num_teachers)
    check_work(
        n_t,
        MAX_TEACHERS,
        f"{what} with num_teachers={n_t}",
        "output entries",
        "raise dpaudit.accounting._smooth.MAX_TEACHERS",
    )
    return n_t


def _check_vote_total(votes: np.ndarray, n_t: int) -> None:
    """Every histogram (last axis) sums to at most ``num_teachers`` (one vote per teacher)."""
    totals = votes.sum(axis=-1)
    if votes.size and float(np.max(totals)) > n_t * (1.0 + 1e-12) + 1e-9:
        raise ValueError(
            f"votes must sum to at most num_teachers={n_t} (one vote per teacher), got a "
            f"histogram summing to {float(np.max(totals)):g}"
        )


def _log_q_one(votes: np.ndarray, sigma: float) -> float:
    with np.errstate(over="ignore"):  # gap/σ → ∞: q̃ = 0, the correct limit
        return float(log_q_union_flat(votes[None, :], sigma)[0])


def gnmax_local_sensitivity(
    votes: ArrayLike, num_teachers: int, sigma: float, order: float
) -> FloatArray:
    """Upper bounds on the local sensitivity of GNMax's data-dependent RDP at distance d.

    Papernot et al. 2018 (arXiv:1802.08908) App. B, Algorithms 3–5: start from the plateau
    value everywhere, then walk the histogram towards the plateau (moving votes between the
    two largest classes), recording LS at each distance. q̃ is the union bound (Prop. 7).

    Args:
        votes: one histogram ``(m,)``, m ≥ 2, non-negative.
        num_teachers: N_T ≥ 1 (the length of the output).
        sigma: GNMax noise σ > 0.
        order: fixed Rényi order λ > 1.

    Returns:
        ``ls`` of shape ``(num_teachers,)``: ``ls[d]`` bounds the local sensitivity at distance d.

    Raises:
        ValueError: bad votes (not 1-d, negative, summing above N_T), N_T < 1 or above
            :data:`MAX_TEACHERS`, σ ≤ 0, λ ≤ 1.

    Example:
        >>> ls = gnmax_local_sensitivity([10, 0, 0], 10, 0.5, 1.5)
        >>> round(float(ls[3]), 6)
        5.999813
    """
    v = check_votes("votes", votes, min_classes=2, nonneg=True)
    if v.ndim != 1:
        raise ValueError(f"votes must be one histogram (1-d), got shape {v.shape}")
    n_t = _check_teachers(num_teachers, "gnmax_local_sensitivity")
    _check_vote_total(v, n_t)
    check_memory(8.0 * n_t, f"gnmax_local_sensitivity with num_teachers={n_t}")
    s = check_positive("sigma", sigma)
    lam = _check_order(order)
    bf = _Beta(s, lam, v.size)
    res = np.full(n_t, bf.ls(bf.log_q1))
    log_q = _log_q_one(v, s)
    if bf.log_q1 <= log_q <= bf.log_q0:
        return res
    cur = np.sort(v)[::-1].copy()
    res[0] = bf.ls(log_q)
    d = 0
    if log_q > bf.log_q0:  # "go left": make the histogram more unanimous
        while log_q > bf.log_q0 and cur[1] > 0 and d + 1 < n_t:
            d += 1
            cur[0] += 1
            cur[1] -= 1
            cur = np.sort(cur)[::-1].copy()
            log_q = _log_q_one(cur, s)
            res[d] = bf.ls(log_q)
    else:  # "go right": make the top two classes closer
        while log_q < bf.log_q1 and d + 1 < n_t:
            d += 1
            cur[0] -= 1
            cur[1] += 1
            cur = np.sort(cur)[::-1].copy()
            log_q = _log_q_one(cur, s)
            res[d] = bf.ls(log_q)
    return res


def threshold_local_sensitivity(
    votes: ArrayLike, num_teachers: int, threshold: float, sigma1: float, order: float
) -> FloatArray:
    """Local sensitivity at distance d of the threshold step's data-dependent RDP.

    Tabulate ``R[v] = RDP_GN(log min(p_v, 1−p_v), √2·σ1, λ)`` with ``p_v = Φ̄((T − v)/σ1)`` for
    every max count v = 0..N_T, then ``LS(v) = max(|R[v−1]−R[v]|, |R[v+1]−R[v]|)`` and
    ``ls[d] = max(LS(c+d), LS(c−d))`` for ``c = round(max n)`` (Papernot et al. 2018 App. B;
    Papernot et al. 2018 App. B). Entries ``d ≥ max(c, N_T − c)`` are 0.

    Args:
        votes: one histogram ``(m,)``, non-negative.
        num_teachers: N_T ≥ 1.
        threshold: T ≥ 0.
        sigma1: threshold noise σ1 > 0.
        order: fixed Rényi order λ > 1.

    Returns:
        ``ls`` of shape ``(num_teachers,)``.

    Raises:
        ValueError: bad votes, N_T < 1, T < 0, σ1 ≤ 0, λ ≤ 1, or ``round(max n) > N_T``.

    Example:
        >>> ls = threshold_local_sensitivity([20, 10, 0], 30, 16, 2, 10)
        >>> round(float(ls[3]), 10)
        0.0001484541
    """
    v = check_votes("votes", votes, min_classes=1, nonneg=True)
    if v.ndim != 1:
        raise ValueError(f"votes must be one histogram (1-d), got shape {v.shape}")
    n_t = _check_teachers(num_teachers, "threshold_local_sensitivity")
    t = check_threshold(threshold)
    s1 = check_positive("sigma1", sigma1)
    lam = _check_order(order)
    _data_independent(math.sqrt(2.0) * s1, lam, "sigma1")  # λ/(2σ1²) must be a float64
    top = float(np.round(v.max()))
    if top > n_t:
        raise ValueError(
            f"num_teachers must be at least the max count of votes ({top:g}), got {n_t}"
        )
    c = int(top)
    check_memory(48.0 * (n_t + 1), f"threshold_local_sensitivity with num_teachers={n_t}")
    counts = np.arange(n_t + 1, dtype=np.float64)
    z = (counts - t) / s1
    log_q = np.minimum(special.log_ndtr(z), special.log_ndtr(-z))
    r = rdp_gn_flat(log_q, math.sqrt(2.0) * s1, np.array([lam]), with_masks=False).rdp[:, 0]
    step = np.abs(np.diff(r))  # |R[v+1] − R[v]|, v = 0..N_T−1
    ls_v = np.zeros(n_t + 1)
    ls_v[:-1] = step
    ls_v[1:] = np.maximum(ls_v[1:], step)
    out = np.zeros(n_t)
    # out[d] = max(0, LS(c + d), LS(c − d)) over the terms that exist, for d < max(c, N_T − c),
    # with Python's max semantics (a later value replaces only when strictly larger).
    d = np.arange(max(c, n_t - c))
    best = np.zeros(d.size)
    up = ls_v[np.minimum(c + d, n_t)]
    best = np.where((c + d <= n_t) & (up > best), up, best)
    down = ls_v[np.maximum(c - d, 0)]
    best = np.where((c - d >= 0) & (down > best), down, best)
    out[: d.size] = best
    return out


def pate_local_sensitivity(
    votes: ArrayLike,
    *,
    num_teachers: int,
    sigma: float,
    order: float,
    threshold: float | None = None,
    sigma1: float | None = None,
    weights: ArrayLike | None = None,
) -> FloatArray:
    """Total local sensitivity ``ls_tot(d) = Σ_i [ls1_i(d) + w_i·ls2_i(d)]`` of a batch of queries.

    Papernot et al. 2018 App. B (the reference scripts' total): ``ls1`` is the threshold
    step's (only when a threshold is given), ``ls2`` GNMax's; ``w_i = 1{answered_i}`` for a
    real release (the reference scripts plan with ``w_i = p_i``).

    Args:
        votes: batch ``(n, m)`` of histograms.
        num_teachers: N_T.
        sigma: GNMax noise σ (σ2 of Confident GNMax).
        order: fixed Rényi order λ.
        threshold: T for Confident GNMax, or None.
        sigma1: threshold noise σ1 (required with ``threshold``).
        weights: ``(n,)`` weights in [0, 1] of the GNMax step; default all ones.

    Returns:
        ``(num_teachers,)`` array.

    Raises:
        ValueError: bad shapes, ``threshold`` without ``sigma1`` (or vice versa), weights ∉ [0, 1],
            a histogram summing above N_T, N_T above :data:`MAX_TEACHERS` or rows × N_T
            above :data:`MAX_LS_WORK`.

    Example:
        >>> three = [[230, 15, 5] + [0] * 7, [150, 60, 40] + [0] * 7, [120, 110, 20] + [0] * 7]
        >>> ls = pate_local_sensitivity(three, num_teachers=250, sigma=40, order=20)
        >>> round(smooth_sensitivity(ls, 0.02), 10)  # PATE scripts' value: 8.6821206e-4
        0.0008682121
    """
    batch = check_votes("votes", votes, min_classes=2, nonneg=True)
    if batch.ndim != 2:
        raise ValueError(f"votes must be a batch of shape (n, m), got shape {batch.shape}")
    if threshold is not None:
        check_threshold(threshold)
    if sigma1 is not None:
        check_positive("sigma1", sigma1)
    if (threshold is None) != (sigma1 is None):
        raise ValueError(
            "threshold and sigma1 must be given together, got "
            f"threshold={threshold!r}, sigma1={sigma1!r}"
        )
    n_t = _check_teachers(num_teachers, "pate_local_sensitivity")
    check_work(
        float(batch.shape[0]) * n_t,
        MAX_LS_WORK,
        f"pate_local_sensitivity of votes with {batch.shape[0]} rows and num_teachers={n_t}",
        "teacher-steps",
        "raise dpaudit.accounting._smooth.MAX_LS_WORK",
    )
    _check_vote_total(batch, n_t)
    check_memory(16.0 * n_t, f"pate_local_sensitivity with num_teachers={n_t}")
    if weights is None:
        w = np.ones(batch.shape[0])
    else:
        w = check_array("weights", weights, ndim=1, allow_empty=True)
        if w.shape[0] != batch.shape[0] or np.any((w < 0) | (w > 1)):
            raise ValueError(f"weights must be {batch.shape[0]} values in [0, 1], got {weights!r}")
    total = np.zeros(n_t)
    for i, row in enumerate(batch):
        if threshold is not None:
            total += threshold_local_sensitivity(row, n_t, threshold, sigma1, order)
        if w[i] > 0:
            total += w[i] * gnmax_local_sensitivity(row, n_t, sigma, order)
    return total


def smooth_sensitivity(local_sensitivity: ArrayLike, beta: float) -> float:
    """β-smooth sensitivity ``SS_β = max_{d ≥ 0} e^{−β·d}·ls(d)`` (Nissim et al. 2007).

    Nissim, Raskhodnikova, Smith 2007 (STOC), Def. 2.1; Papernot et al. 2018 App. B.

    Args:
        local_sensitivity: ``ls(d)`` for d = 0, 1, … (non-negative, 1-d).
        beta: smoothing parameter β > 0.

    Returns:
        SS_β.

    Raises:
        ValueError: negative or non-1-d ``local_sensitivity``, β ≤ 0.

    Example:
        >>> smooth_sensitivity([0.0, 1.0], 1.0) == math.exp(-1.0)
        True
    """
    ls = check_array("local_sensitivity", local_sensitivity, ndim=1, nonneg=True)
    b = check_positive("beta", beta)
    with np.errstate(over="ignore", under="ignore"):  # e^{−βd} → 0 for a huge β: the limit
        return float(np.max(np.exp(-b * np.arange(ls.size)) * ls))


def gnss_rdp(beta: float, sigma_s: float, order: float) -> float:
    """RDP cost of the GNSS release at order λ (Papernot et al. 2018 Thm 23).

    ``λ·e^{2β}/σ_s² + (β·λ − ½·log(1 − 2λβ))/(λ − 1)``, valid only for ``1 < λ < 1/(2β)``.

    Args:
        beta: smoothing β > 0.
        sigma_s: noise multiplier σ_s > 0 of the release (``inf`` allowed: no noise needed).
        order: λ > 1.

    Returns:
        The RDP cost.

    Raises:
        ValueError: β ≤ 0, σ_s ≤ 0, λ ≤ 1, or λ ≥ 1/(2β).

    Example:
        >>> round(gnss_rdp(0.02, 10.0, 20.0), 10)
        0.2715684157
    """
    b = check_positive("beta", beta)
    s = check_positive("sigma_s", sigma_s, allow_inf=True)
    lam = _check_order(order)
    if lam * b >= 0.5:
        raise ValueError(f"order must be < 1/(2·beta) = {0.5 / b} for GNSS, got {lam}")
    noise = lam * math.exp(2 * b) / (s * s) if s * s > 0 else math.inf
    if not math.isfinite(noise):
        raise ValueError(
            f"sigma_s={s!r} is too small for float64: the GNSS cost λ·e^(2β)/σ_s² overflows"
        )
    return noise + (b * lam - 0.5 * math.log1p(-2 * lam * b)) / (lam - 1)


@dataclasses.dataclass(frozen=True)
class GNSSRelease(ResultMixin):
    """A privately released data-dependent ε (GNSS mechanism, Papernot et al. 2018 Thm 23).

    Attributes:
        epsilon_released: ``ε̃ + GNSS + log(1/δ)/(λ−1)`` with ``ε̃ = ρ_total + SS_β·σ_s·Z``.
        epsilon_expected: its expectation ``ρ_total + GNSS + log(1/δ)/(λ−1)``.
        epsilon_data_dependent: the non-private ``ρ_total + log(1/δ)/(λ−1)`` ("before SS").
        noise_std: ``SS_β·σ_s``.
        rho_total: the data-dependent RDP at ``order``.
        smooth_sensitivity: SS_β.
        gnss_cost: RDP of the release at ``order``.
        beta, sigma_s, order, delta: parameters.
        selection: ``"explicit"`` (β, σ_s given) or ``"none"`` (chosen on the data by the
            reference scripts' rule, which is not itself private; uncorrected).
        seed: the integer seed used, if any.
        method: the source.
    """

    epsilon_released: float
    epsilon_expected: float
    epsilon_data_dependent: float
    noise_std: float
    rho_total: float
    smooth_sensitivity: float
    gnss_cost: float
    beta: float
    sigma_s: float
    order: float
    delta: float
    selection: str
    seed: int | None
    method: str = "Papernot et al. 2018 Thm 23 (GNSS), standard RDP→DP conversion"


def _sigma_s_for(beta: float, lam: float, ss: float) -> float:
    # Reference scripts: σ_s = (λ·e^{2β}/SS_β)^{1/3}; with SS = 0 no noise is needed.
    return math.inf if ss == 0 else (lam * math.exp(2 * beta) / ss) ** (1.0 / 3.0)


def gnss_release(
    rho_total: float,
    local_sensitivity: ArrayLike,
    order: float,
    delta: float,
    *,
    beta: float | None = None,
    sigma_s: float | None = None,
    rng: RngLike = None,
) -> GNSSRelease:
    """Release the data-dependent ε with the GNSS mechanism (Papernot et al. 2018 Thm 23).

    With ``beta=None`` the reference scripts' rule is used: β ∈ {0.30/λ, 0.31/λ, …, 0.49/λ},
    ``σ_s = (λ·e^{2β}/SS_β)^{1/3}``, keeping the β that minimises
    ``ρ_total + GNSS(β, σ_s, λ) + 2·SS_β·σ_s`` (Papernot et al. 2018 scripts). That choice looks
    at the data and is not itself accounted for (``selection="none"``); pass β (and optionally
    σ_s) to fix it in advance (``selection="explicit"``).

    Args:
        rho_total: the data-dependent RDP ρ_total(λ) ≥ 0 of all queries at ``order``.
        local_sensitivity: ``ls_tot(d)``, e.g. from :func:`pate_local_sensitivity`.
        order: the fixed Rényi order λ > 1 (chosen independently of the data).
        delta: δ ∈ (0, 1) for the final conversion.
        beta: smoothing β ∈ (0, 1/(2λ)), or None for the reference rule.
        sigma_s: noise multiplier σ_s > 0, or None for ``(λ·e^{2β}/SS_β)^{1/3}``.
        rng: randomness for the released noise.

    Returns:
        :class:`GNSSRelease`.

    Raises:
        ValueError: ρ_total < 0, bad ls, λ ≤ 1, δ ∉ (0, 1), β out of range, σ_s ≤ 0,
            ``sigma_s`` given without ``beta``.

    Example:
        >>> r = gnss_release(0.025, [1e-3, 5e-4], 20, 1e-8, beta=0.02, rng=0)
        >>> round(r.epsilon_expected - r.epsilon_data_dependent, 6) == round(r.gnss_cost, 6)
        True
    """
    rho = check_real("rho_total", rho_total)
    if rho < 0:
        raise ValueError(f"rho_total must be non-negative, got {rho}")
    ls = check_array("local_sensitivity", local_sensitivity, ndim=1, nonneg=True)
    lam = _check_order(order)
    d = check_delta(delta, allow_zero=False)
    if sigma_s is not None and beta is None:
        raise ValueError(f"sigma_s={sigma_s!r} needs an explicit beta")
    if beta is None:
        best = None
        for k in range(30, 50):
            b = k / 100.0 / lam
            ss = smooth_sensitivity(ls, b)
            s = _sigma_s_for(b, lam, ss)
            cost = gnss_rdp(b, s, lam)
            noise = 0.0 if ss == 0 else ss * s
            score = rho + cost + 2.0 * noise
            if best is None or score < best[0]:
                best = (score, b, s, ss, cost)
        assert best is not None
        _, b, s, ss, cost = best
        selection = "none"
    else:
        b = check_positive("beta", beta)
        if lam * b >= 0.5:
            raise ValueError(f"order must be < 1/(2·beta) = {0.5 / b} for GNSS, got {lam}")
        ss = smooth_sensitivity(ls, b)
        s = _sigma_s_for(b, lam, ss) if sigma_s is None else check_positive("sigma_s", sigma_s)
        cost = gnss_rdp(b, s, lam)
        selection = "explicit"
    noise_std = 0.0 if ss == 0 else ss * s
    conv = math.log(1.0 / d) / (lam - 1.0)
    z = float(as_generator(rng).standard_normal())
    return GNSSRelease(
        epsilon_released=rho + noise_std * z + cost + conv,
        epsilon_expected=rho + cost + conv,
        epsilon_data_dependent=rho + conv,
        noise_std=noise_std,
        rho_total=rho,
        smooth_sensitivity=ss,
        gnss_cost=cost,
        beta=b,
        sigma_s=s,
        order=lam,
        delta=d,
        selection=selection,
        seed=seed_entropy(rng),
    )


@dataclasses.dataclass(frozen=True)
class SmoothSensitivityConditions(ResultMixin):
    """Preconditions C5, C6 of Papernot et al. 2018 App. B.4.2 for trusting the GNMax LS.

    Attributes:
        c5: DD(q) non-decreasing on (0, q0).
        c6: DD(B_U(q)) − DD(q) non-decreasing on (0, B_L(q0)).
        log_q0, log_q1: the plateau points.
        sigma, num_classes, order: inputs.
        method: how it was checked.
    """

    c5: bool
    c6: bool
    log_q0: float
    log_q1: float
    sigma: float
    num_classes: int
    order: float
    method: str = "finite differences on 4000 log-spaced points over [log q − 60, log q]"


def smooth_sensitivity_conditions(
    sigma: float, num_classes: int, order: float, *, num_points: int = 4000, span: float = 60.0
) -> SmoothSensitivityConditions:
    """Check C5 and C6 (App. B.4.2) on a dense log grid (Papernot et al. 2018).

    Both grids are in log q (the C6 grid ends at log q1, which may be far below the smallest
    float64), and ``B_U`` is evaluated in log space.

    Args:
        sigma: GNMax noise σ > 0.
        num_classes: m ≥ 2.
        order: λ > 1.
        num_points: grid size (default 4000).
        span: width of the log-q window below log q0 (C5) / log q1 (C6), default 60.

    Returns:
        :class:`SmoothSensitivityConditions`.

    Raises:
        ValueError: bad arguments.

    Example:
        >>> r = smooth_sensitivity_conditions(30, 10, 25)
        >>> (r.c5, r.c6)
        (True, True)
    """
    p = gnmax_plateau(sigma, order, num_classes)
    n = check_positive_int("num_points", num_points)
    check_memory(64.0 * n, f"smooth_sensitivity_conditions with num_points={n}")
    w = check_positive("span", span)
    s, lam, m = p.sigma, p.order, p.num_classes
    lam_arr = np.array([lam])

    def dd_curve(log_q: np.ndarray) -> np.ndarray:
        return raw_dd(dd_terms(log_q, s), lam_arr)[:, 0]

    grid5 = np.linspace(p.log_q0 - w, p.log_q0, n)
    c5 = bool(np.all(np.diff(dd_curve(grid5)) >= 0))
    grid6 = np.linspace(p.log_q1 - w, p.log_q1, n)
    up = _log_b_u(grid6, s, m)  # log space: q1 may be far below the smallest float64
    c6 = bool(np.all(np.diff(dd_curve(up) - dd_curve(grid6)) >= 0))
    return SmoothSensitivityConditions(c5, c6, p.log_q0, p.log_q1, s, m, lam)
