"""Lifted-DP audit intervals (Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023).

*Unleashing the Power of Randomization in Auditing Differentially Private ML*, NeurIPS 2023,
arXiv:2305.18447.

Each of n trials trains once with k random canaries and tests k canaries, giving an
(n × k) 0/1 matrix per kind of trial: *alternative* trials test
the k included canaries (TPR), *null* trials test k fresh canaries that were left out (FPR).
Within a row the k outcomes are exchangeable but correlated; rows are independent.

Per-row unbiased moment estimators of ``μ_ℓ = Pr[x_1 = … = x_ℓ = 1]`` (S = row sum):
``m1 = S/k``, ``m2 = m1(k·m1 − 1)/(k − 1)``, ``m3 = m2(k·m1 − 2)/(k − 2)``,
``m4 = m3(k·m1 − 3)/(k − 3)``; ``μ̂_ℓ`` is their mean over rows.

Intervals (z = Φ⁻¹(1 − a) for tail probability a; each quadratic ``A·μ² − B·μ + C ≤ 0`` gives
the roots ``(B ∓ √(B² − 4AC))/(2A)`` clipped to [0, 1], lower root for a lower bound, upper
root for an upper bound; each root is also intersected with the always-valid
"variance ≤ ¼" bound ``μ̂ ∓ z·√(1/(4n))``; a negative discriminant falls back to the
first-order bound):

* ``clopper-pearson`` — the one-canary baseline: exact CP on column 0 only.
* ``wilson1`` — ``n(μ̂ − μ)² ≤ z²μ(1 − μ)``: A = n + z², B = 2nμ̂ + z², C = nμ̂².
* ``wilson2`` — uses ``Var(m1) = μ/k + ((k−1)/k)μ₂ − μ²`` with an upper bound μ₂⁺ (wilson1,
  right tail): A = n + z², B = 2nμ̂₁ + z²/k, C = nμ̂₁² − z²((k−1)/k)μ₂⁺.
* ``wilson4`` — μ₃⁺, μ₄⁺ by wilson1 (right tail); μ₂⁺ from the fourth-order quadratic; then
  μ₁ as in wilson2. Reference form (default, as in the authors' code; K = k² − k):
  A = n + 2z²(1 + 2(k−2))/K, B = 2nμ̂₂ + 2z²/K,
  C = nμ̂₂² − z²[((k−2)(k−3)/K)(μ₄⁺ − (μ₃⁺)²) + (4(k−2)/K)μ₃⁺];
  exact-variance form (``variance="exact"``): ``Var(m2) = [2μ₂ + 4(k−2)μ₃ + (k−2)(k−3)μ₄]/K − μ₂²``,
  i.e. A = n + z², B = 2nμ̂₂ + 2z²/K, C = nμ̂₂² − z²[4(k−2)μ₃⁺ + (k−2)(k−3)μ₄⁺]/K.

β = 1 − confidence_level is split: β/2 to the TPR lower bound and β/2 to the FPR upper bound
(β_s = β/2 each). CP and W1 use a = β_s; W2 spends β_s/2 on μ₂⁺ and β_s/2 on μ₁; W4 spends
β_s/4 on each of μ₃⁺, μ₄⁺, μ₂⁺ and μ₁. Then ``ε = log((TPR_lo − δ)/FPR_hi)`` (Pillutla et al. 2023,
Eq. (1)–(3)), reported as 0 when ``TPR_lo ≤ δ`` or the log is negative.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_mask,
)
from dpaudit.bounds._intervals import clopper_pearson_arrays

__all__ = [
    "LIDP_METHODS",
    "LiDPMoments",
    "LiDPResult",
    "lidp_epsilon",
    "lidp_epsilon_sweep",
    "lidp_moments",
]

LIDP_METHODS = ("clopper-pearson", "wilson1", "wilson2", "wilson4")
_VARIANCES = ("reference", "exact")


@dataclasses.dataclass(frozen=True)
class LiDPMoments(ResultMixin):
    """Empirical moments ``μ̂_ℓ`` (ℓ = 1..4) of an (n × k) outcome matrix.

    Attributes:
        moments: ``(μ̂1, μ̂2, μ̂3, μ̂4)``; entries needing more than k canaries are NaN.
        num_trials: n.
        num_canaries: k.
    """

    moments: tuple[float, float, float, float]
    num_trials: int
    num_canaries: int


@dataclasses.dataclass(frozen=True)
class LiDPResult(ResultMixin):
    """ε lower bound of a Lifted-DP audit.

    Attributes:
        epsilon: ``max(0, log((TPR_lo − δ)/FPR_hi))``.
        confidence_interval: ``[epsilon, inf)``.
        confidence_level: 1 − β (β split β/2 + β/2 over the two rates).
        method: ``clopper-pearson``, ``wilson1``, ``wilson2`` or ``wilson4``.
        variance: ``"reference"`` or ``"exact"`` (fourth-order form; wilson4 only).
        delta: δ.
        tpr_interval: ``[TPR_lo, 1]`` at level 1 − β/2.
        fpr_interval: ``[0, FPR_hi]`` at level 1 − β/2.
        tpr_moments: μ̂1..μ̂4 of the alternative matrix.
        fpr_moments: μ̂1..μ̂4 of the null matrix.
        num_trials_alternative: rows of the alternative matrix.
        num_trials_null: rows of the null matrix.
        num_canaries: k (columns; only column 0 is used by clopper-pearson).
        fallbacks: steps where a negative discriminant forced the first-order bound.
        selection: how the test threshold was chosen: ``"explicit"`` (tuned on separate runs).
    """

    epsilon: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    method: str
    variance: str
    delta: float
    tpr_interval: ConfidenceInterval
    fpr_interval: ConfidenceInterval
    tpr_moments: tuple[float, float, float, float]
    fpr_moments: tuple[float, float, float, float]
    num_trials_alternative: int
    num_trials_null: int
    num_canaries: int
    fallbacks: tuple[str, ...] = ()
    selection: str = "explicit"


def _check_outcomes(name: str, value: ArrayLike) -> np.ndarray:
    """A 2-d matrix of test outcomes: booleans or 0/1 numbers, as float64."""
    arr = check_mask(name, value)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have 2 dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    return arr.astype(np.float64)


def _moments(x: np.ndarray) -> np.ndarray:
    """μ̂1..μ̂4 (module docstring); NaN where k is too small."""
    k = x.shape[1]
    m1 = x.sum(axis=1) / k
    out = np.full(4, np.nan)
    out[0] = m1.mean()
    km = k * m1
    if k > 1:
        m2 = m1 * (km - 1) / (k - 1)
        out[1] = m2.mean()
        if k > 2:
            m3 = m2 * (km - 2) / (k - 2)
            out[2] = m3.mean()
            if k > 3:
                m4 = m3 * (km - 3) / (k - 3)
                out[3] = m4.mean()
    return out


def lidp_moments(outcomes: ArrayLike) -> LiDPMoments:
    """Unbiased moment estimates ``μ̂_ℓ = mean over rows of m_ℓ`` (Pillutla et al. 2023).

    Args:
        outcomes: (n × k) 0/1 matrix.

    Returns:
        :class:`LiDPMoments`.

    Raises:
        ValueError: not a 2-d 0/1 matrix.

    Example:
        >>> lidp_moments([[1, 1, 0, 0], [1, 0, 0, 0]]).moments[:2]
        (0.375, 0.08333333333333333)
    """
    x = _check_outcomes("outcomes", outcomes)
    mom = _moments(x)
    return LiDPMoments(tuple(float(v) for v in mom), x.shape[0], x.shape[1])


def _z(tail: float) -> float:
    return float(-special.ndtri(tail))


def _roots(a: float, b: float, c: float) -> tuple[float, float] | None:
    disc = b * b - 4.0 * a * c
    if disc < 0:
        return None
    s = math.sqrt(disc)
    return (b - s) / (2.0 * a), (b + s) / (2.0 * a)


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def _wilson1(mean: float, n: int, tail: float, upper: bool) -> float:
    """First-order Wilson bound (one-sided, tail probability ``tail``)."""
    z = _z(tail)
    a = n + z * z
    b = 2.0 * n * mean + z * z
    c = n * mean * mean
    roots = _roots(a, b, c)
    quarter = z * math.sqrt(0.25 / n)
    if roots is None:  # pragma: no cover - the first-order discriminant is z²(…) ≥ 0
        return 1.0 if upper else 0.0
    if upper:
        return _clip01(min(roots[1], mean + quarter))
    return _clip01(max(roots[0], mean - quarter))


def _wilson2(
    mean1: float,
    mu2_upper: float,
    n: int,
    k: int,
    tail: float,
    upper: bool,
    fallbacks: list,
    tag: str,
) -> float:
    """Second-order bound on μ1 given μ2⁺ (module docstring, ``wilson2``)."""
    z = _z(tail)
    a = n + z * z
    b = 2.0 * n * mean1 + z * z / k
    c = n * mean1 * mean1 - z * z * ((k - 1) / k) * mu2_upper
    roots = _roots(a, b, c)
    # Defensive: with μ2⁺ ≥ μ̂2 the discriminant is z²·[4n·(sample variance
    # of the row means) + …] ≥ 0; only a μ2⁺ below μ̂2 from the fourth-order step could flip it.
    if roots is None:  # pragma: no cover - not reached on any input found
        fallbacks.append(tag)
        return _wilson1(mean1, n, tail, upper)
    quarter = z * math.sqrt(0.25 / n)
    if upper:
        return _clip01(min(roots[1], mean1 + quarter))
    return _clip01(max(roots[0], mean1 - quarter))


def _mu2_upper_fourth(
    mom: np.ndarray,
    n: int,
    k: int,
    tail: float,
    mu3u: float,
    mu4u: float,
    variance: str,
    fallbacks: list,
    tag: str,
) -> float:
    """Upper bound on μ2 from the fourth-order quadratic (module docstring, ``wilson4``)."""
    z = _z(tail)
    kk = k * k - k
    mean2 = mom[1]
    if variance == "reference":
        a = n + 2.0 * z * z * (1.0 + 2.0 * (k - 2)) / kk
        c = n * mean2 * mean2 - z * z * (
            ((k - 2) * (k - 3) / kk) * (mu4u - mu3u * mu3u) + (4.0 * (k - 2) / kk) * mu3u
        )
    else:
        a = n + z * z
        c = n * mean2 * mean2 - z * z * (4.0 * (k - 2) * mu3u + (k - 2) * (k - 3) * mu4u) / kk
    b = 2.0 * n * mean2 + 2.0 * z * z / kk
    roots = _roots(a, b, c)
    # Defensive: if a discriminant is negative, fall back to the first-order bound.
    if roots is None:  # pragma: no cover - not reached on any input found
        fallbacks.append(tag)
        return _wilson1(mean2, n, tail, True)
    return _clip01(min(roots[1], mean2 + z * math.sqrt(0.25 / n)))


def _bound(
    x: np.ndarray,
    mom: np.ndarray,
    method: str,
    beta_side: float,
    upper: bool,
    variance: str,
    fallbacks: list,
    side: str,
) -> float:
    n, k = x.shape
    if method == "clopper-pearson":
        s = int(x[:, 0].sum())
        level = 1.0 - beta_side
        low, high = clopper_pearson_arrays(
            s, n, confidence_level=level, alternative="less" if upper else "greater"
        )
        return float(high) if upper else float(low)
    if method == "wilson1":
        return _wilson1(mom[0], n, beta_side, upper)
    if method == "wilson2":
        mu2u = _wilson1(mom[1], n, beta_side / 2.0, True)
        return _wilson2(mom[0], mu2u, n, k, beta_side / 2.0, upper, fallbacks, f"{side}:mu1")
    tail = beta_side / 4.0
    mu3u = _wilson1(mom[2], n, tail, True)
    mu4u = _wilson1(mom[3], n, tail, True)
    mu2u = _mu2_upper_fourth(mom, n, k, tail, mu3u, mu4u, variance, fallbacks, f"{side}:mu2")
    return _wilson2(mom[0], mu2u, n, k, tail, upper, fallbacks, f"{side}:mu1")


def lidp_epsilon(
    outcomes_alternative: ArrayLike,
    outcomes_null: ArrayLike,
    *,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    method: str = "wilson4",
    variance: str = "reference",
) -> LiDPResult:
    """ε lower bound from Lifted-DP audit outcomes (Pillutla et al. 2023, arXiv:2305.18447).

    ``ε = log((TPR_lo − δ)/FPR_hi)`` with TPR_lo a lower confidence bound from the alternative
    matrix and FPR_hi an upper bound from the null matrix, each at level 1 − β/2. The Wilson
    methods use all k canaries of every trial and the empirical correlation between them; the
    Clopper–Pearson method is the one-canary-per-run baseline (column 0 only).

    Args:
        outcomes_alternative: (n₁ × k) 0/1 test outcomes of the included canaries.
        outcomes_null: (n₀ × k) 0/1 test outcomes of left-out canaries (same k).
        delta: δ in [0, 1).
        confidence_level: 1 − β in (0, 1).
        method: ``"clopper-pearson"``, ``"wilson1"``, ``"wilson2"`` (k ≥ 2) or
            ``"wilson4"`` (k ≥ 4, default).
        variance: fourth-order variance form for wilson4: ``"reference"`` (default, the
            authors' slightly conservative form) or ``"exact"``.

    Returns:
        :class:`LiDPResult`.

    Raises:
        ValueError: not 0/1 matrices, different k, k too small for the method, bad δ/level.

    Example:
        >>> import numpy as np
        >>> alt = np.ones((200, 8)); null = np.zeros((200, 8))
        >>> round(lidp_epsilon(alt, null, delta=1e-5).epsilon, 3)
        3.44
    """
    xa = _check_outcomes("outcomes_alternative", outcomes_alternative)
    xn = _check_outcomes("outcomes_null", outcomes_null)
    delta, level = _check_options(xa.shape[1], xn.shape[1], delta, confidence_level, method,
                                  variance, "outcomes")  # fmt: skip
    beta_side = (1.0 - level) / 2.0
    mom_a, mom_n = _moments(xa), _moments(xn)
    fallbacks: list[str] = []
    tpr_lo = _bound(xa, mom_a, method, beta_side, False, variance, fallbacks, "tpr")
    fpr_hi = _bound(xn, mom_n, method, beta_side, True, variance, fallbacks, "fpr")
    eps = _epsilon(tpr_lo, fpr_hi, delta)
    return LiDPResult(
        epsilon=eps,
        confidence_interval=ConfidenceInterval(eps, math.inf),
        confidence_level=level,
        method=method,
        variance=variance,
        delta=delta,
        tpr_interval=ConfidenceInterval(tpr_lo, 1.0),
        fpr_interval=ConfidenceInterval(0.0, fpr_hi),
        tpr_moments=tuple(float(v) for v in mom_a),
        fpr_moments=tuple(float(v) for v in mom_n),
        num_trials_alternative=xa.shape[0],
        num_trials_null=xn.shape[0],
        num_canaries=xa.shape[1],
        fallbacks=tuple(fallbacks),
    )


def _check_options(
    k_alt: int, k_null: int, delta, confidence_level, method, variance, what: str
) -> tuple[float, float]:
    """The checks of :func:`lidp_epsilon` beyond its matrices; returns ``(δ, level)``."""
    if k_alt != k_null:
        raise ValueError(
            f"{what}_null must have as many canaries (columns) as {what}_alternative "
            f"({k_alt}), got {k_null}"
        )
    delta = check_delta(delta)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, LIDP_METHODS)
    check_choice("variance", variance, _VARIANCES)
    need = {"wilson2": 2, "wilson4": 4}.get(method, 1)
    if k_alt < need:
        raise ValueError(
            f"method={method!r} needs at least {need} canaries per trial, got k={k_alt}"
        )
    return delta, level


def _epsilon(tpr_lo: float, fpr_hi: float, delta: float) -> float:
    """``log((TPR_lo − δ)/FPR_hi)``, 0 when not positive (FPR_hi > 0 always: every upper
    bound here is a root with B > 0, or a Clopper–Pearson bound)."""
    return 0.0 if tpr_lo <= delta else max(0.0, math.log(tpr_lo - delta) - math.log(fpr_hi))


def lidp_epsilon_sweep(
    statistics_alternative: ArrayLike,
    statistics_null: ArrayLike,
    thresholds: ArrayLike,
    *,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    method: str = "wilson4",
    variance: str = "reference",
) -> np.ndarray:
    """ε of :func:`lidp_epsilon` at every threshold of a sweep (Pillutla et al. 2023,
    arXiv:2305.18447): for each τ, the bound of the outcomes ``1{t ≥ τ}`` of the canaries'
    test statistics ``t``.

    Equal, number for number, to ``[lidp_epsilon(alt >= τ, null >= τ, …).epsilon for τ in
    thresholds]`` (a test checks it exactly), at a fraction of the cost: the inputs are checked
    once, and the Clopper–Pearson bounds of every threshold come from one vectorised call. A
    threshold *chosen* by the sweep must be paid for: choose it on runs that are not the
    audited ones (as :func:`dpaudit.experiments.lidp_gaussian.tune_threshold` does).

    Args:
        statistics_alternative: (n₁ × k) statistics of the included canaries.
        statistics_null: (n₀ × k) statistics of left-out canaries (same k).
        thresholds: 1-d, the τ values.
        delta, confidence_level, method, variance: as for :func:`lidp_epsilon`.

    Returns:
        float64 array of ε lower bounds, one per threshold.

    Raises:
        ValueError: not finite 2-d matrices of the same k, thresholds not finite and 1-d, or
            the options :func:`lidp_epsilon` refuses.

    Example:
        >>> import numpy as np
        >>> g = np.random.default_rng(0)
        >>> alt, null = g.normal(2, 1, (200, 8)), g.normal(0, 1, (200, 8))
        >>> lidp_epsilon_sweep(alt, null, [0.5, 1.5, 2.5], delta=1e-5).round(3).tolist()
        [0.959, 1.823, 1.952]
    """
    sa = check_array("statistics_alternative", statistics_alternative, ndim=2)
    sn = check_array("statistics_null", statistics_null, ndim=2)
    taus = check_array("thresholds", thresholds, ndim=1)
    delta, level = _check_options(sa.shape[1], sn.shape[1], delta, confidence_level, method,
                                  variance, "statistics")  # fmt: skip
    beta_side = (1.0 - level) / 2.0
    if method == "clopper-pearson":  # column 0 only (:func:`_bound`), all thresholds at once
        side = 1.0 - beta_side
        hits_a = (sa[:, 0][None, :] >= taus[:, None]).sum(axis=1)
        hits_n = (sn[:, 0][None, :] >= taus[:, None]).sum(axis=1)
        tpr_lo = clopper_pearson_arrays(hits_a, sa.shape[0], confidence_level=side,
                                        alternative="greater")[0]  # fmt: skip
        fpr_hi = clopper_pearson_arrays(hits_n, sn.shape[0], confidence_level=side,
                                        alternative="less")[1]  # fmt: skip
        bounds = zip(tpr_lo.tolist(), fpr_hi.tolist(), strict=True)
    else:
        bounds = []
        for tau in taus.tolist():
            xa, xn = (sa >= tau).astype(np.float64), (sn >= tau).astype(np.float64)
            fallbacks: list[str] = []
            bounds.append((
                _bound(xa, _moments(xa), method, beta_side, False, variance, fallbacks, "tpr"),
                _bound(xn, _moments(xn), method, beta_side, True, variance, fallbacks, "fpr"),
            ))  # fmt: skip
    return np.array([_epsilon(lo, hi, delta) for lo, hi in bounds], dtype=np.float64)
