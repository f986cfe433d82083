"""Gaussian-DP μ from bounds on a test's error rates.

A μ-GDP mechanism's tests satisfy ``TPR ≤ Φ(Φ⁻¹(FPR) + μ)`` at every FPR (Dong, Roth & Su
2022, *Gaussian Differential Privacy*, JRSS-B, arXiv:1905.02383, Def. 2.6 with the trade-off
curve ``G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)``). Given a lower bound on the TPR and an upper bound on
the FPR of one rejection set, both holding jointly at some confidence, the smallest μ
compatible with them is a lower bound at that same confidence (both sides are monotone); its
ε at δ follows from their Cor. 2.13. This is the GDP audit of Nasr et al. 2023
(arXiv:2302.07956) for mechanisms whose trade-off curve is Gaussian.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._validate import check_delta, check_in_range
from dpaudit.conversions import gdp_epsilon

__all__ = ["GDPBound", "gdp_from_error_rates"]


@dataclasses.dataclass(frozen=True)
class GDPBound(ResultMixin):
    """Gaussian-DP μ (and ε at δ) implied by Clopper–Pearson error-rate bounds.

    Attributes:
        mu: the μ lower bound ``max(0, Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi))``.
        epsilon: ε at ``delta`` of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13).
        delta: δ.
        tpr_lower: the TPR lower bound used.
        fpr_upper: the FPR upper bound used.
    """

    mu: float
    epsilon: float
    delta: float
    tpr_lower: float
    fpr_upper: float


def gdp_from_error_rates(tpr_lower: float, fpr_upper: float, delta: float) -> GDPBound:
    """μ ≥ Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi) for a μ-GDP mechanism, and its ε at δ.

    A μ-GDP mechanism's tests satisfy ``TPR ≤ Φ(Φ⁻¹(FPR) + μ)`` (Dong, Roth & Su 2022,
    arXiv:1905.02383); with ``TPR ≥ TPR_lo`` and ``FPR ≤ FPR_hi`` (both monotone) the bound
    follows. ε from :func:`dpaudit.conversions.gdp_epsilon` (Cor. 2.13). A pure function of
    bounds already obtained at some confidence (e.g. the ``tpr_lower`` and ``fpr_upper`` of
    :func:`~dpaudit.bounds.epsilon_from_scores`): the result holds at that same confidence.

    Args:
        tpr_lower: lower bound on the true-positive rate, in [0, 1].
        fpr_upper: upper bound on the false-positive rate, in [0, 1].
        delta: δ in (0, 1) of the ε reported.

    Returns:
        :class:`GDPBound` (μ = ``inf`` when TPR_lo = 1 or FPR_hi = 0, unless TPR_lo = 0 or
        FPR_hi = 1; μ = 0 when the bounds show no separation).

    Raises:
        ValueError: a rate outside [0, 1] or δ ∉ (0, 1).

    Example:
        >>> b = gdp_from_error_rates(0.8413447460685429, 0.5, 1e-5)
        >>> round(b.mu, 6), round(b.epsilon, 6)
        (1.0, 4.377178)
    """
    tpr = check_in_range("tpr_lower", tpr_lower, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
    fpr = check_in_range("fpr_upper", fpr_upper, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
    d = check_delta(delta, allow_zero=False)
    with np.errstate(divide="ignore"):
        mu = float(special.ndtri(tpr) - special.ndtri(fpr))
    if not math.isfinite(mu):
        # TPR_lo = 0 or FPR_hi = 1 is no evidence at all, even when the other end is
        # degenerate too; otherwise TPR_lo = 1 or FPR_hi = 0 separates the two exactly.
        no_evidence = tpr == 0.0 or fpr == 1.0
        mu = math.inf if (tpr == 1.0 or fpr == 0.0) and not no_evidence else 0.0
    mu = max(0.0, mu)
    eps = math.inf if math.isinf(mu) else gdp_epsilon(mu, d)
    return GDPBound(mu, eps, d, tpr, fpr)
