"""Confidence intervals for proportions.

Exact Clopper–Pearson intervals (Clopper & Pearson 1934), as used by paper 000 (§3, Eq. 1;
App. B) and paper 002 (step 3) to turn Monte-Carlo counts into valid bounds.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpaudit._results import ConfidenceInterval
from dpaudit._validate import check_choice, check_confidence_level, check_nonneg_int

__all__ = ["clopper_pearson", "clopper_pearson_arrays"]

_ALTERNATIVES = ("two-sided", "greater", "less")


def clopper_pearson_arrays(
    k, n, *, confidence_level: float = 0.95, alternative: str = "two-sided"
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Clopper–Pearson bounds for arrays of counts ``k`` out of ``n``.

    Same conventions as :func:`clopper_pearson`; inputs are assumed validated (non-negative
    integers with ``k <= n``). Returns ``(low, high)`` arrays broadcast from ``k`` and ``n``.
    The bounds are the Beta quantiles of Clopper & Pearson (1934):
    ``low = Beta⁻¹(a; k, n−k+1)``, ``high = Beta⁻¹(1−a; k+1, n−k)`` with ``a = 1−level`` for a
    one-sided and ``(1−level)/2`` for a two-sided interval; ``low = 0`` at ``k = 0`` and
    ``high = 1`` at ``k = n``.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    k, n = np.broadcast_arrays(k, n)
    a = 1.0 - confidence_level
    tail = a / 2 if alternative == "two-sided" else a
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(tail, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.ppf(1 - tail, k + 1, n - k), 1.0)
    if alternative == "greater":
        high = np.ones_like(high)
    elif alternative == "less":
        low = np.zeros_like(low)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def clopper_pearson(
    k: int, n: int, *, confidence_level: float = 0.95, alternative: str = "two-sided"
) -> ConfidenceInterval:
    """Exact Clopper–Pearson interval for a binomial proportion.

    Args:
        k: number of successes, ``0 <= k <= n``.
        n: number of trials, ``n >= 1``.
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
        0.7693
    """
    k = check_nonneg_int("k", k)
    n = check_nonneg_int("n", n)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if k > n:
        raise ValueError(f"k must be <= n, got k={k}, n={n}")
    level = check_confidence_level(confidence_level)
    check_choice("alternative", alternative, _ALTERNATIVES)
    low, high = clopper_pearson_arrays(k, n, confidence_level=level, alternative=alternative)
    return ConfidenceInterval(float(low), float(high))
