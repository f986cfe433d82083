"""The Gaussian-pair ε estimate (Agrawal et al. 2026): the pooled μ by hand, the closed-form
GDP ε of it, scale invariance, and bad input."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from dpaudit.bounds import gaussian_pair_epsilon
from dpaudit.conversions import gdp_epsilon


def test_matches_the_pooled_mu_computed_by_hand():
    g = np.random.default_rng(3)
    a, b = g.normal(0.8, 1.2, 700), g.normal(-0.1, 0.9, 500)
    s1, s2 = statistics.stdev(a.tolist()), statistics.stdev(b.tolist())
    pooled = math.sqrt((699 * s1**2 + 499 * s2**2) / 1198)
    mu = (statistics.fmean(a.tolist()) - statistics.fmean(b.tolist())) / pooled
    est = gaussian_pair_epsilon(a, b, 1e-5)
    assert est.mu == pytest.approx(mu, rel=1e-12)
    assert est.epsilon == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-12)
    assert (est.sd_in, est.sd_out) == pytest.approx((s1, s2), rel=1e-12)
    assert "NOT a finite-sample lower bound" in est.assumption


def test_invariant_to_shift_and_scale_and_to_the_order_of_the_groups_sign():
    g = np.random.default_rng(4)
    a, b = g.normal(1, 1, 300), g.normal(0, 1, 300)
    base = gaussian_pair_epsilon(a, b, 1e-6)
    moved = gaussian_pair_epsilon(1e6 * a + 5, 1e6 * b + 5, 1e-6)
    assert moved.epsilon == pytest.approx(base.epsilon, rel=1e-9)
    swapped = gaussian_pair_epsilon(b, a, 1e-6)  # |Δmean|: the same pair of Gaussians
    assert swapped.epsilon == pytest.approx(base.epsilon, rel=1e-12)
    same = gaussian_pair_epsilon(a, a.copy(), 1e-6)
    assert same.epsilon == 0.0 and same.mu == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="in_scores needs at least 2"):
        gaussian_pair_epsilon([1.0], [0.0, 1.0], 1e-5)
    with pytest.raises(ValueError, match="spread"):
        gaussian_pair_epsilon([1.0, 1.0], [2.0, 2.0], 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gaussian_pair_epsilon([1.0, 2.0], [0.0, 1.0], 0.0)
