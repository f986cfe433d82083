"""Gaussian-DP μ ↔ (ε, δ) (Dong, Roth & Su 2022, Cor. 2.13; formulas.md §3)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpaudit.conversions._gdp import gdp_delta, gdp_epsilon, gdp_mu


def _delta_mp(eps: float, mu: float) -> mpmath.mpf:
    """High-precision oracle: δ(ε; μ) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    mpmath.mp.dps = 60
    e, m = mpmath.mpf(eps), mpmath.mpf(mu)
    return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def test_reference_values_formulas_md():
    # formulas.md §3: ε(μ = 1, δ = 1e-5) = 4.377178, ε(μ = 0.5, δ = 1e-5) = 1.993091.
    assert gdp_epsilon(1.0, 1e-5) == pytest.approx(4.377178, abs=5e-7)
    assert gdp_epsilon(0.5, 1e-5) == pytest.approx(1.993091, abs=5e-7)
    # and μ* = 0.786812 → ε = 3.323300 (the f-DP reference of §3)
    assert gdp_epsilon(0.786812, 1e-5) == pytest.approx(3.3233, abs=2e-6)


@pytest.mark.parametrize(
    ("eps", "mu"), [(0.0, 0.3), (1.0, 1.0), (4.0, 0.5), (20.0, 1.0), (50.0, 3.0), (3.0, 10.0)]
)
def test_delta_matches_mpmath(eps, mu):
    ref = float(_delta_mp(eps, mu))
    assert gdp_delta(eps, mu) == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 8.0, 25.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.01, 0.3])
def test_epsilon_inverts_delta_and_matches_dp_accounting(mu, delta):
    dp_accounting = pytest.importorskip("dp_accounting")
    eps = gdp_epsilon(mu, delta)
    if eps > 0:
        assert float(_delta_mp(eps, mu)) == pytest.approx(delta, rel=1e-8)
    else:
        assert float(_delta_mp(0.0, mu)) <= delta * (1 + 1e-12)
    assert eps == pytest.approx(dp_accounting.get_epsilon_gaussian(1.0 / mu, delta), abs=1e-7)


@pytest.mark.parametrize(
    ("eps", "delta"), [(0.5, 1e-5), (4.377178, 1e-5), (2.0, 1e-10), (10.0, 0.1)]
)
def test_mu_inverts_epsilon(eps, delta):
    mu = gdp_mu(eps, delta)
    assert gdp_epsilon(mu, delta) == pytest.approx(eps, abs=1e-8)
    assert float(_delta_mp(eps, mu)) == pytest.approx(delta, rel=1e-8)


def test_monotonicity():
    mus = np.linspace(0.1, 5, 25)
    eps = [gdp_epsilon(m, 1e-5) for m in mus]
    assert np.all(np.diff(eps) > 0)
    deltas = [gdp_delta(e, 1.0) for e in np.linspace(0, 8, 20)]
    assert np.all(np.diff(deltas) < 0)


def test_edge_cases():
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_delta(1.0, 0.0) == 0.0
    assert gdp_delta(1.0, math.inf) == 1.0
    # δ(0; μ) = 2Φ(μ/2) − 1 ≤ δ → ε = 0
    assert gdp_epsilon(1e-6, 1e-5) == 0.0
    assert gdp_delta(0.0, 1.0) == pytest.approx(2 * float(mpmath.ncdf(0.5)) - 1, rel=1e-12)


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="mu"):
        gdp_epsilon(-1.0, 1e-5)
    with pytest.raises(ValueError, match="mu"):
        gdp_epsilon(math.inf, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gdp_epsilon(1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        gdp_mu(1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gdp_delta(-0.5, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gdp_mu(-0.5, 1e-5)
    with pytest.raises(TypeError, match="mu"):
        gdp_delta(1.0, "x")
    with pytest.raises(ValueError, match="mu"):
        gdp_delta(1.0, math.nan)
