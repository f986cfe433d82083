"""The privacy profile of one Poisson-subsampled Gaussian step against dp-accounting's PLD
accountant (the library the field trusts) and numerical integration of the hockey-stick
divergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.accounting import subsampled_gaussian_delta

pytest.importorskip("dp_accounting")


@pytest.mark.parametrize(("q", "sigma"), [(1.0, 1.0), (0.068, 1.4), (0.01, 0.8)])
def test_matches_dp_accounting_pld(q, sigma):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)))
    for eps in (0.0, 0.05, 0.5, 1.0):
        ours = subsampled_gaussian_delta(eps, sampling_rate=q, noise_multiplier=sigma)
        np.testing.assert_allclose(ours, acc.get_delta(eps), rtol=2e-3, atol=1e-9)


@pytest.mark.parametrize("direction", ["add", "remove"])
def test_each_direction_is_its_hockey_stick_divergence(direction):
    q, sigma, eps = 0.3, 0.7, 0.2

    def p(y):
        return (1 - q) * stats.norm.pdf(y, 0, sigma) + q * stats.norm.pdf(y, 1, sigma)

    def r(y):
        return stats.norm.pdf(y, 0, sigma)

    a, b = (p, r) if direction == "add" else (r, p)
    ref = integrate.quad(lambda y: max(a(y) - math.exp(eps) * b(y), 0.0), -15, 15,
                         points=[0.0, 1.0], limit=400)[0]  # fmt: skip
    ours = subsampled_gaussian_delta(eps, sampling_rate=q, noise_multiplier=sigma,
                                     direction=direction)  # fmt: skip
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


def test_gaussian_closed_form():
    """q = 1: the Gaussian mechanism, δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) (Balle &
    Wang 2018, arXiv:1805.06530, Thm. 8)."""
    sigma, eps = 2.0, 0.3
    ref = stats.norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * stats.norm.cdf(
        -1 / (2 * sigma) - eps * sigma
    )
    got = subsampled_gaussian_delta(eps, sampling_rate=1.0, noise_multiplier=sigma)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_argument_checks():
    with pytest.raises(ValueError, match="sampling_rate"):
        subsampled_gaussian_delta(1.0, sampling_rate=0.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        subsampled_gaussian_delta(1.0, sampling_rate=0.5, noise_multiplier=-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        subsampled_gaussian_delta(-1.0, sampling_rate=0.5, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="direction"):
        subsampled_gaussian_delta(1.0, sampling_rate=0.5, noise_multiplier=1.0, direction="up")
