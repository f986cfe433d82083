"""The Gaussian-pair estimate of ε from canary score sums (an estimate, not a valid bound).

In the white-box DP-SGD setting, a canary's score is a sum over T steps of per-step signals,
so by the central limit theorem the scores of the included and of the excluded canaries are
close to two Gaussians when T is large. Agrawal, Wei, Singh, Magdon-Ismail & Zikas 2026
("Let's Ask Gauss: Improved One-Run Privacy Auditing", arXiv:2606.12733) fit one Gaussian to
each group and report the ε at δ of that Gaussian pair. With a common (pooled) standard
deviation s the pair is μ-GDP with ``μ = |mean_in − mean_out| / s``, whose hockey-stick
divergence has the closed form of Dong, Roth & Su 2022 (arXiv:1905.02383, Cor. 2.13):
``ε(μ, δ)`` solves ``δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``
(:func:`dpaudit.conversions.gdp_epsilon`). dpaudit uses the pooled standard deviation: a pair
with unequal variances has a privacy-loss distribution with unbounded tails, whose ε at a
small δ is set by the fitted variances' sampling noise rather than by the signal.

It uses the whole score distribution instead of a thresholded guess, which is why it is
tighter than the one-run bounds; but its validity rests on the Gaussian approximation of the
score sums and on plug-in means and standard deviations: it is **not** a finite-sample lower
bound with a stated confidence, and dpaudit reports it as such.

Example:
    >>> g = np.random.default_rng(0)
    >>> est = gaussian_pair_epsilon(g.normal(1, 1, 20000), g.normal(0, 1, 20000), 1e-5)
    >>> round(est.mu, 2), round(est.epsilon, 2)  # the 1-GDP ε at δ = 1e-5 is 4.38
    (1.0, 4.39)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import check_array, check_delta
from dpaudit.conversions import gdp_epsilon

__all__ = ["GaussianPairEstimate", "gaussian_pair_epsilon"]


@dataclasses.dataclass(frozen=True)
class GaussianPairEstimate(ResultMixin):
    """ε of the two Gaussians fitted to the included and excluded canaries' scores.

    Attributes:
        epsilon: ε at ``delta`` of the fitted pair; an estimate.
        delta: δ.
        mu: ``|mean_in − mean_out|`` over the pooled standard deviation.
        mean_in, sd_in: the included canaries' fitted Gaussian.
        mean_out, sd_out: the excluded canaries' fitted Gaussian.
        num_in, num_out: the scores fitted.
        assumption: what the estimate's validity rests on.
    """

    epsilon: float
    delta: float
    mu: float
    mean_in: float
    sd_in: float
    mean_out: float
    sd_out: float
    num_in: int
    num_out: int
    assumption: str = (
        "the score sums are Gaussian (a central-limit approximation over the steps; Agrawal "
        "et al. 2026, arXiv:2606.12733) with the plug-in means and standard deviations: an "
        "estimate, NOT a finite-sample lower bound"
    )


def gaussian_pair_epsilon(
    in_scores: ArrayLike, out_scores: ArrayLike, delta: float
) -> GaussianPairEstimate:
    """The Gaussian-pair ε estimate of Agrawal et al. 2026 (module notes).

    Args:
        in_scores: scores of the included canaries (at least 2).
        out_scores: scores of the excluded canaries (at least 2).
        delta: δ in (0, 1).

    Returns:
        :class:`GaussianPairEstimate` (an estimate: see its ``assumption``).

    Raises:
        ValueError: fewer than 2 scores in a group, NaN/inf scores, a group with zero spread,
            δ outside (0, 1).
    """
    pos = check_array("in_scores", in_scores, ndim=1)
    neg = check_array("out_scores", out_scores, ndim=1)
    d = check_delta(delta, allow_zero=False)
    for name, x in (("in_scores", pos), ("out_scores", neg)):
        if x.size < 2:
            raise ValueError(f"{name} needs at least 2 scores, got {x.size}")
    scale = max(float(np.abs(pos).max()), float(np.abs(neg).max()), 1e-300)
    p, n = pos / scale, neg / scale  # μ is scale-free; this keeps the squares finite
    a, s1 = float(p.mean()), float(p.std(ddof=1))
    b, s2 = float(n.mean()), float(n.std(ddof=1))
    if not min(s1, s2) > 1e-12:
        raise ValueError(
            f"in_scores and out_scores must both spread at the scale of the largest score "
            f"({scale:.3g}): standard deviations {s1 * scale:.3g} and {s2 * scale:.3g}"
        )
    pooled = math.sqrt(((pos.size - 1) * s1 * s1 + (neg.size - 1) * s2 * s2)
                       / (pos.size + neg.size - 2))  # fmt: skip
    mu = abs(a - b) / pooled
    eps = gdp_epsilon(mu, d) if mu > 0 else 0.0
    return GaussianPairEstimate(eps, d, mu, a * scale, s1 * scale, b * scale, s2 * scale,
                                int(pos.size), int(neg.size))  # fmt: skip
