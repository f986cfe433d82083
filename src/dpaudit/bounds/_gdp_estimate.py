"""The Gaussian-DP ε *estimate* of many-run black-box audits (NOT a valid lower bound).

Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis 2023 (arXiv:2302.07956,
§3) turn a membership test's error rates into an estimate of the Gaussian-DP parameter μ;
Annamalai & De Cristofaro 2024 (arXiv:2405.14106, §3 and their released code) report their
ε_emp this way: for **every** threshold t on the scores of the runs with and without the
target, the one-sided Clopper–Pearson upper bounds at level ``1 − 2α`` on the
false-positive rate ``FPR(t)`` and the false-negative rate ``FNR(t)`` give
``μ(t) = Φ⁻¹(1 − FPR_u(t)) − Φ⁻¹(FNR_u(t))`` (Dong, Roth & Su 2022, arXiv:1905.02383,
Def. 2.6); the largest ``μ(t)`` is converted to ε at δ (their Cor. 2.13). The maximum over
thresholds is not paid for and the conversion assumes a Gaussian trade-off curve, so the
number is a point estimate to compare with the papers, not a lower bound; a valid bound of
the same runs comes from :func:`dpaudit.bounds.epsilon_from_scores` with the threshold
chosen on a held-out split.

Two versions of the authors' released code (github.com/spalabucr/bb-audit-dpsgd,
``utils/audit.py``) differ in one detail, selected here by ``interval``: one takes the upper
ends of **two-sided** ``1 − 2α`` Clopper–Pearson intervals (scipy's ``binomtest(k,
n).proportion_ci(1 − 2α)``, i.e. one-sided ``1 − α`` bounds), the other, marked as a
correction, **one-sided** ``1 − 2α`` upper bounds (``alternative="less"``). The first is the
more conservative (its bounds are one-sided at ``1 − α``), so its estimate is the smaller.

Example:
    >>> est = gdp_estimate_from_scores([3.0, 2.5, 2.0], [0.0, 0.5, 1.0], delta=1e-5)
    >>> est.mu, round(est.fpr_upper, 4)  # 3 + 3 runs cannot show anything at 90 %
    (0.0, 1.0)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import check_array, check_choice, check_delta, check_in_range
from dpaudit.bounds._gdp_rates import gdp_from_error_rates
from dpaudit.bounds._intervals import clopper_pearson_arrays

__all__ = ["INTERVALS", "GDPEstimate", "gdp_estimate_from_scores"]


@dataclasses.dataclass(frozen=True)
class GDPEstimate(ResultMixin):
    """The papers' Gaussian-DP estimate: the best threshold's μ and its ε (not valid).

    Attributes:
        mu: ``max_t Φ⁻¹(1 − FPR_u(t)) − Φ⁻¹(FNR_u(t))`` (0 when no threshold separates).
        epsilon: ε at ``delta`` of μ-GDP.
        delta: δ.
        alpha: the significance level α.
        interval: ``"one-sided"`` (each rate bound one-sided at ``1 − 2α``) or
            ``"two-sided"`` (the upper end of a two-sided ``1 − 2α`` interval).
        threshold: the threshold that gave ``mu`` (rejection set ``score ≥ threshold``).
        fpr_upper: FPR upper bound at that threshold.
        fnr_upper: FNR upper bound at that threshold.
        num_positive: runs with the target.
        num_negative: runs without it.
        num_thresholds: thresholds tried (the unique scores): the unpaid-for choice.
    """

    mu: float
    epsilon: float
    delta: float
    alpha: float
    threshold: float
    fpr_upper: float
    fnr_upper: float
    num_positive: int
    num_negative: int
    num_thresholds: int
    interval: str = "one-sided"


#: How each error-rate bound is taken (module docstring: the two released versions).
INTERVALS: tuple[str, ...] = ("one-sided", "two-sided")


def gdp_estimate_from_scores(
    positive_scores: ArrayLike,
    negative_scores: ArrayLike,
    *,
    delta: float,
    alpha: float = 0.05,
    interval: str = "one-sided",
) -> GDPEstimate:
    """The Gaussian-DP ε estimate of Nasr et al. 2023 (arXiv:2302.07956) as Annamalai & De
    Cristofaro 2024 (arXiv:2405.14106) compute it: the best μ over all score thresholds.

    Rejection sets ``{score ≥ t}`` for every unique score t; at each, Clopper–Pearson upper
    bounds on FPR (negatives above t) and FNR (positives below t) — one-sided at ``1 − 2α``,
    or with ``interval="two-sided"`` the upper end of the two-sided ``1 − 2α`` interval —
    give ``μ(t) = Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u)``, and the largest μ's ε at δ
    (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13). NOT a valid lower bound: the
    threshold is chosen on the same scores, unpaid for, and the conversion assumes a
    Gaussian trade-off curve.

    Args:
        positive_scores: one score per run with the target (larger: "target in").
        negative_scores: one score per run without it.
        delta: δ in (0, 1) of the ε reported.
        alpha: significance level in (0, 0.5) (the papers' 0.05).
        interval: ``"one-sided"`` (default; the version marked as a correction) or
            ``"two-sided"`` (the other version): how each rate bound is taken (module
            docstring).

    Returns:
        :class:`GDPEstimate`.

    Raises:
        ValueError: empty or non-finite scores, δ ∉ (0, 1), α ∉ (0, 0.5), an unknown
            ``interval``.

    Example:
        >>> g = np.random.default_rng(0)
        >>> est = gdp_estimate_from_scores(g.normal(2, 1, 100), g.normal(0, 1, 100), delta=1e-5)
        >>> round(est.mu, 3), round(est.epsilon, 2), est.num_thresholds
        (2.048, 10.3, 200)
    """
    pos = check_array("positive_scores", positive_scores, ndim=1)
    neg = check_array("negative_scores", negative_scores, ndim=1)
    d = check_delta(delta, allow_zero=False)
    a = check_in_range("alpha", alpha, 0.0, 0.5)
    check_choice("interval", interval, INTERVALS)
    thresholds = np.unique(np.concatenate([pos, neg]))
    tp = pos.size - np.searchsorted(np.sort(pos), thresholds, side="left")
    fp = neg.size - np.searchsorted(np.sort(neg), thresholds, side="left")
    if 1.0 - 2.0 * a >= 1.0:
        raise ValueError(f"alpha={alpha!r} is too small: 1 - 2·alpha rounds to 1")
    # a two-sided 1 − 2α interval's upper end is the one-sided 1 − α upper bound
    level = 1.0 - a if interval == "two-sided" else 1.0 - 2.0 * a
    _, fpr_u = clopper_pearson_arrays(fp, neg.size, confidence_level=level, alternative="less")
    _, fnr_u = clopper_pearson_arrays(
        pos.size - tp, pos.size, confidence_level=level, alternative="less"
    )
    mus = [gdp_from_error_rates(1.0 - f, p, d).mu for f, p in zip(fnr_u, fpr_u, strict=True)]
    best = int(np.argmax(mus))
    b = gdp_from_error_rates(1.0 - fnr_u[best], fpr_u[best], d)
    return GDPEstimate(
        mu=b.mu,
        epsilon=b.epsilon if math.isfinite(b.mu) else math.inf,
        delta=d,
        alpha=a,
        threshold=float(thresholds[best]),
        fpr_upper=float(fpr_u[best]),
        fnr_upper=float(fnr_u[best]),
        num_positive=int(pos.size),
        num_negative=int(neg.size),
        num_thresholds=int(thresholds.size),
        interval=interval,
    )
