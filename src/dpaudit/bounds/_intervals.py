"""Confidence intervals for proportions.

Exact Clopper–Pearson intervals (Clopper & Pearson 1934), as used by Chadha et al. 2024
(*Auditing Private Prediction*, arXiv:2402.09403, §3 Eq. 1 and App. B) and Pillutla et al.
2023 (arXiv:2305.18447, step 3) to turn Monte-Carlo counts into valid bounds; and simultaneous
multinomial intervals (Goodman 1965; Sison & Glaz 1995) for the k-cut audit of Chadha et al.
2024 App. B. The bootstrap for functionals of counts is :mod:`dpaudit.bounds._bootstrap`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special, stats

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    MAX_COUNT,
    check_at_most,
    check_choice,
    check_confidence_level,
    check_count,
    check_counts,
    check_in_range,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds._beta import beta_isf, beta_ppf
from dpaudit.errors import require

__all__ = [
    "SimultaneousIntervals",
    "clopper_pearson",
    "clopper_pearson_arrays",
    "clopper_pearson_real",
    "multinomial_intervals",
]

_ALTERNATIVES = ("two-sided", "greater", "less")
_TINY = float(np.finfo(np.float64).tiny)


def clopper_pearson_arrays(
    k, n, *, confidence_level: float = 0.95, alternative: str = "two-sided"
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Clopper–Pearson bounds for arrays of counts ``k`` out of ``n``.

    Same conventions as :func:`clopper_pearson`. Returns ``(low, high)`` arrays broadcast
    from ``k`` and ``n``. The bounds are the Beta quantiles of Clopper & Pearson (1934):
    ``low = Beta⁻¹(a; k, n−k+1)``, ``high = Beta⁻¹(1−a; k+1, n−k)`` with ``a = 1−level`` for a
    one-sided and ``(1−level)/2`` for a two-sided interval; ``low = 0`` at ``k = 0`` and
    ``high = 1`` at ``k = n``.

    Args:
        k: successes, non-negative integers, broadcastable with ``n``.
        n: trials, integers in ``[1, 2**63)``, with ``k <= n`` elementwise.
        confidence_level: in (0, 1).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.

    Raises:
        TypeError: non-numeric counts (strings, bools, complex, None).
        ValueError: non-integer or negative counts, ``n < 1``, ``k > n``, shapes that do not
            broadcast, a level outside (0, 1), an unknown alternative.

    Example:
        >>> low, high = clopper_pearson_arrays([0, 5], [10, 10], confidence_level=0.9)
        >>> low.round(4).tolist(), high.round(4).tolist()
        ([0.0, 0.2224], [0.2589, 0.7776])
    """
    ka = check_counts("k", k, ndim_min=0)
    na = check_counts("n", n, ndim_min=0)
    try:
        ka, na = np.broadcast_arrays(ka, na)
    except ValueError as exc:
        raise ValueError(f"k and n must broadcast, got shapes {ka.shape} and {na.shape}") from exc
    if np.any(na < 1):
        raise ValueError(f"n must contain counts >= 1, got {n!r}")
    if np.any(ka > na):
        raise ValueError(f"k must be <= n elementwise, got k={k!r}, n={n!r}")
    level = check_confidence_level(confidence_level)
    check_choice("alternative", alternative, _ALTERNATIVES)
    return _clopper_pearson_arrays(ka, na, level, alternative)


def _clopper_pearson_arrays(
    k: np.ndarray, n: np.ndarray, confidence_level: float, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clopper_pearson_arrays` on validated, broadcast counts."""
    k = k.astype(np.float64)
    n = n.astype(np.float64)
    a = 1.0 - confidence_level
    tail = a / 2 if alternative == "two-sided" else a
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta_ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, beta_ppf(1 - tail, k + 1, np.maximum(n - k, 1)), 1.0)
    if alternative == "greater":
        high = np.ones_like(high)
    elif alternative == "less":
        low = np.zeros_like(low)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


#: Arrays longer than this are reduced to their distinct (k, n, tail) triples first.
_DEDUPLICATE_FROM = 256


def cp_one_sided(k, n, tail) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds with tail probability ``tail`` each (vectorised).

    ``low = Beta⁻¹(tail; k, n−k+1)`` (0 at k = 0) and ``high = Beta⁻¹(1−tail; k+1, n−k)``
    (1 at k = n), the latter through the inverse survival function so that tails far below
    1e-16 (p-values) keep their precision. Each bound alone holds with probability ≥ 1 − tail.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    tail = np.asarray(tail, dtype=np.float64)
    k, n, tail = np.broadcast_arrays(k, n, tail)
    if k.size > _DEDUPLICATE_FROM:
        # Audits ask for the same (k, n, tail) many times over (cuts with equal counts): each
        # distinct triple is solved once, and the bits are those of solving it alone.
        triples = np.stack([k.ravel(), n.ravel(), tail.ravel()], axis=1)
        distinct, inverse = np.unique(triples, axis=0, return_inverse=True)
        if distinct.shape[0] < 0.8 * triples.shape[0]:
            low, high = cp_one_sided(*distinct.T)
            inverse = inverse.reshape(k.shape)
            return low[inverse], high[inverse]
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta_ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, beta_isf(tail, k + 1, np.maximum(n - k, 1)), 1.0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def clopper_pearson(
    k: int, n: int, *, confidence_level: float = 0.95, alternative: str = "two-sided"
) -> ConfidenceInterval:
    """Exact Clopper–Pearson interval for a binomial proportion.

    Args:
        k: number of successes, ``0 <= k <= n``.
        n: number of trials, ``1 <= n < 2**63``.
        confidence_level: coverage of the interval, in (0, 1).
        alternative: ``"two-sided"`` (``(1−level)/2`` in each tail), ``"greater"`` (a lower
            bound: interval ``[low, 1]``) or ``"less"`` (an upper bound: ``[0, high]``).

    Returns:
        ``ConfidenceInterval(low, high)``; agrees with
        ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``.

    Raises:
        TypeError, ValueError: bad counts, level or alternative.

    Example:
        >>> ci = clopper_pearson(400, 500, confidence_level=0.95, alternative="greater")
        >>> round(ci.low, 4)
        0.7683
    """
    n = check_positive_int("n", n, maximum=MAX_COUNT)
    k = check_at_most("k", check_count("k", k), n, "n")
    level = check_confidence_level(confidence_level)
    check_choice("alternative", alternative, _ALTERNATIVES)
    low, high = _clopper_pearson_arrays(np.array(k), np.array(n), level, alternative)
    return ConfidenceInterval(float(low), float(high))


def clopper_pearson_real(
    x: float, n: float, *, confidence_level: float = 0.95
) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval at a real-valued count ``x`` out of ``n``.

    The Beta quantiles of Clopper & Pearson (1934), ``low = Beta⁻¹(β/2; x, n−x+1)`` (0 at
    x = 0) and ``high = Beta⁻¹(1−β/2; x+1, n−x)`` (1 at x = n), evaluated at real ``x`` and
    ``n``: equal to :func:`clopper_pearson` at integers, and monotone in between. Used to
    project the interval of a proportion to more trials at the same estimate (a planning
    number, not an interval with exact coverage at non-integer counts).

    Args:
        x: the (real) number of successes, in ``[0, n]`` (the lower end is 0 for ``x``, the
            upper end 1 for ``n − x``, below the smallest normal float).
        n: the (real) number of trials, in ``(0, 2**63)``.
        confidence_level: two-sided coverage, in (0, 1).

    Returns:
        ``(low, high)``.

    Raises:
        TypeError, ValueError: non-real or non-finite ``x``/``n``, ``n ≤ 0``, ``x`` outside
            ``[0, n]``, a level outside (0, 1).

    Example:
        >>> [round(v, 4) for v in clopper_pearson_real(3, 10, confidence_level=0.95)]
        [0.0667, 0.6525]
    """
    n = check_positive("n", n)
    if n > MAX_COUNT:
        raise ValueError(f"n must be at most {MAX_COUNT} (2**63 - 1), got {n}")
    x = check_in_range("x", x, 0.0, n, low_inclusive=True, high_inclusive=True)
    level = check_confidence_level(confidence_level)
    tail = (1.0 - level) / 2.0
    # within the smallest normal float of 0 (of n) the quantile is 0 (1); scipy raises there
    lo = 0.0 if x < _TINY else float(beta_ppf(tail, x, n - x + 1))
    hi = 1.0 if n - x < _TINY else float(beta_ppf(1 - tail, x + 1, n - x))
    return lo, hi


# ---------------------------------------------------------------------------------------------
# Simultaneous intervals for multinomial proportions
# ---------------------------------------------------------------------------------------------

_MULTINOMIAL_METHODS = ("goodman", "sison-glaz")
_MULTINOMIAL_ENGINES = ("dpaudit", "statsmodels")


@dataclasses.dataclass(frozen=True)
class SimultaneousIntervals(ResultMixin):
    """Simultaneous confidence intervals for the cell probabilities of a multinomial.

    Attributes:
        low: lower bounds, shape ``counts.shape`` (``(..., K)``).
        high: upper bounds, same shape.
        counts: the observed counts (int64), one multinomial per row.
        confidence_level: the joint (simultaneous) coverage aimed at for each row.
        method: ``"goodman"`` or ``"sison-glaz"``.
        engine: ``"dpaudit"`` (vectorised implementation) or ``"statsmodels"``.
        asymptotic: always True: both methods rest on large-sample approximations
            (Chadha et al. 2024 App. B, Table 2: the k-cut CI audit is "not always valid").
    """

    low: FloatArray
    high: FloatArray
    counts: np.ndarray
    confidence_level: float
    method: str
    engine: str
    asymptotic: bool = True


def goodman_rows(counts: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Goodman (1965) intervals, vectorised over rows (the formula of statsmodels).

    With ``K`` cells, ``n`` trials, ``p̂ = counts/n`` and ``χ² = χ²₁⁻¹(1 − β/K)`` (a Bonferroni
    split of β over the cells), each interval is the set of ``p`` with
    ``n(p̂ − p)² ≤ χ² p(1 − p)``: ``(2np̂ + χ² ∓ √(χ²(χ² + 4np̂(1−p̂)))) / (2(χ² + n))``.
    """
    k = counts.shape[-1]
    n = counts.sum(axis=-1, keepdims=True).astype(np.float64)
    p = counts / n
    tail = beta / k
    # isf keeps the precision of tails below 1e-10, where 1 − tail rounds (to 1 below 1e-16);
    # ppf above, as statsmodels does.
    chi2 = stats.chi2.ppf(1.0 - tail, 1) if tail > 1e-10 else stats.chi2.isf(tail, 1)
    root = np.sqrt(chi2 * (chi2 + 4.0 * n * p * (1.0 - p)))
    denom = 2.0 * (chi2 + n)
    low = (2.0 * n * p + chi2 - root) / denom
    high = (2.0 * n * p + chi2 + root) / denom
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _sison_glaz_nu(c: int, counts: np.ndarray, n: int) -> float:
    """Sison & Glaz (1995) Eq. (1)/(7): approximate coverage ν(c) of the box ``count ± c``.

    Levin's (1981) representation: ``P(|N_i − count_i| ≤ c ∀i) =
    (n!/(nⁿe⁻ⁿ))·Πᵢ P(b_i ≤ X_i ≤ a_i)·P(ΣW_i = n)`` with ``X_i ~ Poisson(count_i)`` and W_i
    the X_i truncated to the box; ``P(ΣW = n)`` is approximated by an Edgeworth expansion
    with the skewness and kurtosis of the truncated variables.

    The truncated moments are computed here by direct summation of the normalised Poisson
    weights over the box, centred at the truncated mean. statsmodels (0.15) derives the
    central moments from raw factorial moments (``μ₂ = m₂ + μ − μ²`` etc.): with counts of
    10⁵–10⁷ that cancels 10–23 significant digits, ν(c) comes out above 1 for small c and the
    first crossing of 1 − β is found at a far too small c (intervals a tenth of the right
    width at n = 10⁷). Both agree where statsmodels is accurate (n ≲ 10⁴).
    """
    lam = counts.astype(np.float64)
    offsets = np.arange(-c, c + 1, dtype=np.float64)
    j = lam[:, None] + offsets[None, :]  # (K, 2c+1)
    inside = (j >= 0) & (j <= n)
    jj = np.where(inside, j, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logpmf = np.where(inside, stats.poisson.logpmf(jj, lam[:, None]), -np.inf)
        top = logpmf.max(axis=1, keepdims=True)
        w = np.exp(logpmf - top)
        z = w.sum(axis=1)
        log_box = np.log(z) + top[:, 0]  # log P(b ≤ X ≤ a)
        w = w / z[:, None]
        mu = (w * jj).sum(axis=1)
        d = np.where(inside, jj - mu[:, None], 0.0)
        mu2 = (w * d**2).sum(axis=1)
        mu3 = (w * d**3).sum(axis=1)
        mu4 = (w * d**4).sum(axis=1)
        s2 = mu2.sum()
        if s2 <= 0:
            return 0.0
        g1 = mu3.sum() / s2**1.5
        g2 = (mu4.sum() - 3 * (mu2**2).sum()) / s2**2
        x = (n - mu.sum()) / math.sqrt(s2)
        phi = math.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
        h3 = x**3 - 3 * x
        h4 = x**4 - 6 * x**2 + 3
        h6 = x**6 - 15 * x**4 + 45 * x**2 - 15
        edge = phi * (1 + g1 * h3 / 6 + g2 * h4 / 24 + g1**2 * h6 / 72) / math.sqrt(s2)
        if not edge > 0:
            return 0.0
        return float(np.exp(log_box.sum() + math.log(edge) - stats.poisson.logpmf(n, n)))


def _sison_glaz_nu_upto(
    counts: np.ndarray, n: int, cmax: int, log_factorial: np.ndarray | None = None
) -> np.ndarray:
    """ν(c) of :func:`_sison_glaz_nu` for every ``c = 0, 1, …, cmax`` at once.

    Same quantity as :func:`_sison_glaz_nu` (Sison & Glaz 1995, Eq. 1/7 with Levin's
    representation and the Edgeworth term), computed for all half-widths in one pass: with
    ``d = j − count_i`` and the Poisson weights ``w_i(d)`` normalised at the mode, the box
    sums ``S_r,i(c) = Σ_{|d|≤c} w_i(d) d^r`` (r = 0..4) are cumulative sums over the rings
    ``d = ±c``, accumulated from the centre outwards (no cancellation). The truncated mean
    is ``count_i + m_i`` with ``m_i = S_1/S_0`` and the central moments follow from the raw
    moments about ``count_i`` (``μ₂ = e₂ − m²`` etc., all O(σ²) or smaller, unlike
    statsmodels' factorial moments about 0). Costs O(K·cmax) instead of O(K·c) per c.

    Conventions of statsmodels / R's MultinomialCI: ``ν(0) := 0`` and ``ν(c) := 1`` for
    ``c ≥ n``; a non-positive Edgeworth term gives ν = 0.

    Args:
        counts: int64 counts of one multinomial, shape ``(K,)``, total ``n``.
        n: the total.
        cmax: largest half-width evaluated.
        log_factorial: optional table ``log(j!)`` for ``j = 0..n`` (``gammaln(j + 1)``),
            shared between rows with the same total; computed on the fly when ``None``.

    Returns:
        ν, shape ``(cmax + 1,)``.
    """
    lam = counts.astype(np.float64)[:, None]  # (K, 1)
    d = np.arange(cmax + 1, dtype=np.float64)
    jp = lam + d  # j = count + d
    jm = lam - d  # j = count - d
    in_p = jp <= n
    in_m = jm >= 0
    jp = np.where(in_p, jp, 0.0)
    jm = np.where(in_m, jm, 0.0)
    if log_factorial is None:
        lgp, lgm = special.gammaln(jp + 1.0), special.gammaln(jm + 1.0)
    else:
        lgp, lgm = log_factorial[jp.astype(np.int64)], log_factorial[jm.astype(np.int64)]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Poisson log-pmf log P(j) = j·log λ − log j! − λ; the mode is at λ, and relative to
        # it log w(j) = (j − λ)·log λ − log j! + log λ! = ±d·log λ − log j! + log λ!: one
        # multiplication per term instead of a logarithm (λ = 0: only j = 0 has weight).
        top = special.xlogy(lam, lam) - special.gammaln(lam + 1.0) - lam
        pos = lam > 0
        log_lam = np.log(np.where(pos, lam, 1.0))
        lg_lam = special.gammaln(lam + 1.0)
        wp = np.where(in_p & (pos | (d == 0)), np.exp(d * log_lam - lgp + lg_lam), 0.0)
        wm = np.where(in_m, np.exp(-d * log_lam - lgm + lg_lam), 0.0)
        wp[:, 0] = 1.0  # d = 0 counted once
        wm[:, 0] = 0.0
        even = wp + wm  # ring weight times d^r for even r
        odd = (wp - wm) * d  # and for odd r (d^1 factored in)
        d2 = d * d
        s0 = np.cumsum(even, axis=1)
        m = np.cumsum(odd, axis=1) / s0
        e2 = np.cumsum(even * d2, axis=1) / s0
        e3 = np.cumsum(odd * d2, axis=1) / s0
        e4 = np.cumsum(even * (d2 * d2), axis=1) / s0
        mm = m * m
        mu2 = e2 - mm
        mu3 = e3 - 3.0 * m * e2 + 2.0 * mm * m
        mu4 = e4 - 4.0 * m * e3 + 6.0 * mm * e2 - 3.0 * mm * mm
        s2 = mu2.sum(axis=0)
        g1 = mu3.sum(axis=0) / s2**1.5
        g2 = (mu4.sum(axis=0) - 3.0 * (mu2 * mu2).sum(axis=0)) / s2**2
        # n − Σ truncated means; Σ counts = n exactly, so only the offsets m remain.
        x = (float(n - int(counts.sum())) - m.sum(axis=0)) / np.sqrt(s2)
        x2 = x * x
        phi = np.exp(-x2 / 2.0) / math.sqrt(2.0 * math.pi)
        h3 = x * (x2 - 3.0)
        h4 = x2 * (x2 - 6.0) + 3.0
        h6 = x2 * (x2 * (x2 - 15.0) + 45.0) - 15.0
        edge = phi * (1.0 + g1 * h3 / 6.0 + g2 * h4 / 24.0 + g1**2 * h6 / 72.0) / np.sqrt(s2)
        log_box = (np.log(s0) + top).sum(axis=0)  # Σᵢ log P(bᵢ ≤ Xᵢ ≤ aᵢ)
        # − log P(Poisson(n) = n), scipy's formula without its per-call overhead
        nu = np.exp(log_box + np.log(edge) - (special.xlogy(n, n) - special.gammaln(n + 1.0) - n))
    nu = np.where((s2 > 0) & (edge > 0), nu, 0.0)
    nu[0] = 0.0
    nu[min(n, cmax + 1) :] = 1.0
    return nu


def _sison_glaz_cmax_guess(counts: np.ndarray, beta: float) -> int:
    """A half-width above Sison–Glaz's ``c`` in most cases (a starting point, not a bound).

    Bonferroni under the normal approximation of the multinomial margins: the ``c`` with
    ``Σᵢ 2Φ(−c/σᵢ) = β``, ``σᵢ² = n p̂ᵢ(1 − p̂ᵢ)``, padded by 5 % + 3. Its only role is the
    length of the first scan in :func:`_sison_glaz_row`, which doubles it when too short.
    """
    return int(_sison_glaz_cmax_guesses(np.asarray(counts)[None, :], beta)[0])


def _sison_glaz_cmax_guesses(rows: np.ndarray, beta: float) -> np.ndarray:
    """:func:`_sison_glaz_cmax_guess` for every row of ``rows`` (R, K) at once (the same
    bisection, elementwise)."""
    rows = np.asarray(rows, dtype=np.int64)
    n = rows.sum(axis=1)
    p = rows / n[:, None]
    sd = np.sqrt(n[:, None] * p * (1.0 - p))
    live = sd > 0
    k = live.sum(axis=1)
    sd_max = sd.max(axis=1)
    # −Φ⁻¹(t) rather than Φ⁻¹(1 − t): 1 − t rounds to 1 (Φ⁻¹ = ∞) for t below ~1e-16
    lo = -float(special.ndtri(beta / 2.0)) * sd_max
    hi = -special.ndtri(beta / (2.0 * np.maximum(k, 1))) * sd_max
    sd_live = np.where(live, sd, 1.0)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(live, special.ndtr(-mid[:, None] / sd_live), 0.0).sum(axis=1)
        above = 2.0 * tail > beta
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    # clipped to [1, n] before the cast: a non-finite guess must not wrap to a negative int
    guess = np.clip(np.ceil(1.05 * hi) + 3.0, 1.0, n.astype(np.float64)).astype(np.int64)
    return np.where(k == 0, n, guess)


def _sison_glaz_row(
    counts: np.ndarray,
    beta: float,
    log_factorial: np.ndarray | None = None,
    cmax: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sison–Glaz intervals for one multinomial.

    The rule of Sison & Glaz (1995) as implemented in R's MultinomialCI and statsmodels: the
    first integer ``c ≥ 0`` with ``ν(c) ≤ 1 − β < ν(c+1)`` (``ν(0) := 0``, ``ν(c) := 1`` for
    ``c ≥ n``), then ``γ = (1−β−ν(c))/(ν(c+1)−ν(c))`` and intervals
    ``[p̂ − c/n, p̂ + (c + 2γ)/n]`` clipped to [0, 1]. statsmodels scans c = 0, 1, 2, … with
    one O(K·c) evaluation each; here ν is evaluated for all c up to a guess at once
    (:func:`_sison_glaz_nu_upto`, O(K·c_max) in total) and the first crossing is read off,
    doubling the guess until a crossing is inside. Same first crossing as statsmodels' scan,
    so no monotonicity of the Edgeworth approximation is assumed.
    """
    n = int(counts.sum())
    target = 1.0 - beta
    if cmax is None:
        cmax = _sison_glaz_cmax_guess(counts, beta)
    while True:
        nu = _sison_glaz_nu_upto(counts, n, cmax, log_factorial)
        above = np.flatnonzero(nu[1:] > target)  # c with ν(c + 1) > 1 − β
        if above.size:
            break
        cmax = min(2 * cmax, n)  # ν(n) = 1: the loop ends by cmax = n
    c = int(above[0])  # first crossing, so ν(c) ≤ 1 − β (ν(0) = 0)
    g = (target - nu[c]) / (nu[c + 1] - nu[c])
    p = counts / n
    low = np.maximum(p - c / n, 0.0)
    high = np.minimum(p + (c + 2 * g) / n, 1.0)
    return low, high


#: Largest total for which :func:`sison_glaz_rows` tabulates ``log j!`` once for all rows.
_LOG_FACTORIAL_TABLE_MAX = 10**7


def sison_glaz_rows(rows: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Sison–Glaz intervals for every row of ``rows`` (shape ``(R, K)``, positive totals).

    Identical rows are computed once. When several rows are left and the largest total is
    at most :data:`_LOG_FACTORIAL_TABLE_MAX`, ``log j!`` is tabulated once and shared (the
    same ``gammaln`` values, so the same result as row by row).
    """
    rows = np.asarray(rows, dtype=np.int64)
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_max = int(uniq.sum(axis=1).max())
    table = None
    if uniq.shape[0] > 1 and n_max <= _LOG_FACTORIAL_TABLE_MAX:
        table = special.gammaln(np.arange(n_max + 1, dtype=np.float64) + 1.0)
    guesses = _sison_glaz_cmax_guesses(uniq, beta)
    low = np.empty(uniq.shape)
    high = np.empty(uniq.shape)
    for i, row in enumerate(uniq):
        low[i], high[i] = _sison_glaz_row(row, beta, table, int(guesses[i]))
    return low[inverse], high[inverse]


def multinomial_intervals(
    counts: ArrayLike,
    *,
    confidence_level: float = 0.95,
    method: str = "goodman",
    engine: str = "dpaudit",
) -> SimultaneousIntervals:
    """Simultaneous confidence intervals for multinomial cell probabilities.

    Used by the k-cut RDP audit (Chadha et al. 2024 App. B, "Auditing with the k-cut"), which needs
    intervals that hold for all cells at once. Two methods, both asymptotic:

    * ``"goodman"`` — Goodman (1965): a χ² (Wilson-type) interval per cell with the level
      Bonferroni-split over the K cells; computed here in closed form, vectorised over rows.
    * ``"sison-glaz"`` — Sison & Glaz (1995): equal-width intervals from an Edgeworth
      approximation of the multinomial box probability (recommended for K ≥ 7 cells with
      counts ≥ 5). Same rule as R's MultinomialCI / statsmodels, with the truncated-Poisson
      moments computed stably (statsmodels' are wrong for counts ≳ 10⁵, see
      ``_sison_glaz_nu``), the coverage ν(c) evaluated for all half-widths c in one
      cumulative pass and the first crossing of 1 − β read off (statsmodels' rule), identical
      rows computed once.

    ``engine="statsmodels"`` calls ``statsmodels.stats.proportion.
    multinomial_proportions_confint`` row by row instead (install the ``stats`` extra); it is
    the reference the ``"dpaudit"`` engine is tested against for moderate n. Do not use it
    for Sison–Glaz with large counts.

    Args:
        counts: non-negative integer counts, shape ``(K,)`` or ``(..., K)`` with ``K ≥ 2``;
            each row must have a positive total.
        confidence_level: simultaneous coverage per row, in (0, 1).
        method: ``"goodman"`` or ``"sison-glaz"``.
        engine: ``"dpaudit"`` or ``"statsmodels"``.

    Returns:
        :class:`SimultaneousIntervals` with ``low``/``high`` of the shape of ``counts``.

    Raises:
        ValueError: negative or non-integer counts, fewer than two cells, a row with total 0,
            level outside (0, 1), unknown method or engine.
        MissingDependencyError: ``engine="statsmodels"`` without statsmodels installed.

    Example:
        >>> ci = multinomial_intervals([40, 35, 25], confidence_level=0.95)
        >>> [round(float(x), 4) for x in ci.low]
        [0.2912, 0.2468, 0.1618]
    """
    arr = check_counts("counts", counts)
    if arr.shape[-1] < 2:
        raise ValueError(
            f"counts must have at least 2 cells in its last axis, got shape {arr.shape}"
        )
    if np.any(arr.sum(axis=-1) == 0):
        raise ValueError(f"counts must have a positive total in every row, got {arr.tolist()!r}")
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _MULTINOMIAL_METHODS)
    check_choice("engine", engine, _MULTINOMIAL_ENGINES)
    beta = 1.0 - level
    rows = arr.reshape(-1, arr.shape[-1])
    if engine == "statsmodels":
        prop = require("statsmodels.stats.proportion", "stats")
        low = np.empty(rows.shape)
        high = np.empty(rows.shape)
        for i, row in enumerate(rows):
            with np.errstate(all="ignore"):
                region = prop.multinomial_proportions_confint(row, alpha=beta, method=method)
            low[i], high[i] = np.clip(region[:, 0], 0, 1), np.clip(region[:, 1], 0, 1)
    elif method == "goodman":
        low, high = goodman_rows(rows, beta)
    else:
        low, high = sison_glaz_rows(rows, beta)
    return SimultaneousIntervals(
        low=low.reshape(arr.shape),
        high=high.reshape(arr.shape),
        counts=arr,
        confidence_level=level,
        method=method,
        engine=engine,
    )
