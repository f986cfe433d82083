"""The privacy profile δ(ε) of one step of the Poisson-subsampled Gaussian mechanism.

One DP-SGD step on a neighbouring pair differing in one example (a canary gradient at the
clipping norm), projected on that example's direction and in units of the clipping norm, is
``P = (1 − q)·N(0, σ²) + q·N(1, σ²)`` with the example and ``Q = N(0, σ²)`` without it. The
likelihood ratio ``L(y) = (1 − q) + q·exp((2y − 1)/(2σ²))`` is increasing in ``y``, so the
hockey-stick divergence ``δ(ε) = sup_S P(S) − e^ε Q(S)`` is attained on ``S = {y ≥ y*}`` with
``L(y*) = e^ε`` (Neyman–Pearson), in closed form with normal tails (Balle & Wang 2018,
arXiv:1805.06530, Thm. 8, for the Gaussian; Zhu, Dong & Wang 2022, arXiv:2106.08567, §5, the
dominating pair of the Poisson-subsampled Gaussian). The *remove* direction
``sup_S Q(S) − e^ε P(S)`` is attained on ``{y ≤ y_*}`` with ``L(y_*) = e^{−ε}``. A claimed
noise multiplier σ implies both inequalities at every ε, for every event.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpaudit._validate import check_choice, check_in_range, check_scale

__all__ = ["PROFILE_DIRECTIONS", "subsampled_gaussian_delta"]

PROFILE_DIRECTIONS = ("add", "remove", "both")
_EPS_UNDERFLOW = 700.0


def _sf(x: float) -> float:
    return float(special.ndtr(-x))


def subsampled_gaussian_delta(
    epsilon: float, *, sampling_rate: float, noise_multiplier: float, direction: str = "both"
) -> float:
    """δ(ε) of one Poisson-subsampled Gaussian step (module notes).

    Args:
        epsilon: ε ≥ 0.
        sampling_rate: q in (0, 1].
        noise_multiplier: σ > 0 (noise std over the sensitivity).
        direction: ``"add"`` (``sup P(S) − e^ε Q(S)``, the step with the example against
            without), ``"remove"`` (the reverse) or ``"both"`` (the larger).

    Returns:
        δ in [0, 1].

    Example:
        >>> round(subsampled_gaussian_delta(1.0, sampling_rate=1.0, noise_multiplier=1.0), 6)
        0.126936
    """
    eps = check_in_range("epsilon", epsilon, 0.0, math.inf, low_inclusive=True)
    q = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    sigma = check_scale("noise_multiplier", noise_multiplier)
    direction = check_choice("direction", direction, PROFILE_DIRECTIONS)
    if eps > _EPS_UNDERFLOW:  # e^ε overflows; δ(ε) < e^{−ε}·… underflows to 0 long before
        return 0.0
    out = []
    if direction in ("add", "both"):
        ratio = (math.exp(eps) - (1.0 - q)) / q
        if ratio <= 0:  # e^ε ≤ 1 − q: L ≥ e^ε everywhere, the whole line is the event
            out.append(max(0.0, 1.0 - math.exp(eps)))
        else:
            y = sigma * sigma * math.log(ratio) + 0.5
            p = (1.0 - q) * _sf(y / sigma) + q * _sf((y - 1.0) / sigma)
            out.append(max(0.0, p - math.exp(eps) * _sf(y / sigma)))
    if direction in ("remove", "both"):
        ratio = (math.exp(-eps) - (1.0 - q)) / q
        if ratio <= 0:  # L > e^{−ε} everywhere: no event helps Q against P
            out.append(0.0)
        else:
            y = sigma * sigma * math.log(ratio) + 0.5
            qy = _sf(-y / sigma)  # Q(y ≤ y_*)
            py = (1.0 - q) * qy + q * _sf(-(y - 1.0) / sigma)
            out.append(max(0.0, qy - math.exp(eps) * py))
    return float(np.clip(max(out), 0.0, 1.0))
