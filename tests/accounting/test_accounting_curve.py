"""RDPCurve and DEFAULT_ORDERS: immutability, composition, conversions (formulas.md §1.7,
§1.8 item 6), Balle ≤ standard, δ(ε) inverse, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve, rdp_to_dp
from dpaudit.conversions import rdp_to_dp as conversions_rdp_to_dp

PAPERNOT_GRID = np.concatenate(
    [np.arange(2, 100 + 0.5, 0.5), np.logspace(np.log10(100), np.log10(500), num=100)[1:]]
)


def test_rdp_to_dp_is_the_conversions_function():
    assert rdp_to_dp is conversions_rdp_to_dp


def test_default_orders_documented_properties():
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    assert DEFAULT_ORDERS.ndim == 1 and DEFAULT_ORDERS.size == 169
    assert np.all(np.diff(DEFAULT_ORDERS) > 0)
    assert DEFAULT_ORDERS[0] == 1.1 and DEFAULT_ORDERS[-1] == 1024
    assert not DEFAULT_ORDERS.flags.writeable
    # dense at small orders (step 0.1 up to 11), superset of dp-accounting's default grid
    assert np.allclose(np.diff(DEFAULT_ORDERS[DEFAULT_ORDERS < 11]), 0.1)
    assert set(DEFAULT_RDP_ORDERS) <= set(DEFAULT_ORDERS.tolist())
    with pytest.raises(ValueError):
        DEFAULT_ORDERS[0] = 2.0


def test_reference_conversions_item6():
    """1000 data-independent GNMax queries, σ = 40, δ = 1e-5 (formulas.md §1.8 item 6)."""
    curve = 1000 * RDPCurve(PAPERNOT_GRID, PAPERNOT_GRID / 40**2)
    std = curve.to_dp(1e-5, conversion="standard")
    balle = curve.to_dp(1e-5)
    assert std.epsilon == pytest.approx(5.995927881, abs=5e-10) and std.order == 5.5
    assert balle.epsilon == pytest.approx(5.377728337, abs=5e-10) and balle.order == 5.0
    assert balle.conversion == "balle2020" and std.conversion == "standard"


def test_conversions_match_formulas_by_hand():
    lam = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    rho = np.array([0.01, 0.02, 0.05, 0.3, 1.5])
    curve = RDPCurve(lam, rho)
    delta = 1e-6
    std = rho + math.log(1 / delta) / (lam - 1)
    balle = rho + np.log((lam - 1) / lam) - (math.log(delta) + np.log(lam)) / (lam - 1)
    assert curve.to_dp(delta, conversion="standard").epsilon == pytest.approx(std.min(), rel=1e-14)
    assert curve.to_dp(delta).epsilon == pytest.approx(balle.min(), rel=1e-14)
    assert curve.to_dp(delta).order == lam[np.argmin(balle)]


@pytest.mark.parametrize("seed", range(5))
def test_balle_never_above_standard(seed):
    rng = np.random.default_rng(seed)
    rho = np.cumsum(rng.exponential(0.05, DEFAULT_ORDERS.size))  # any non-decreasing curve
    curve = RDPCurve(DEFAULT_ORDERS, rho)
    for delta in (1e-3, 1e-5, 1e-10):
        assert curve.to_dp(delta).epsilon <= curve.to_dp(delta, conversion="standard").epsilon


def test_delta_inverts_epsilon():
    curve = 200 * RDPCurve.gaussian(10.0, sensitivity=math.sqrt(2))
    for conversion in ("standard", "balle2020"):
        conv = curve.to_dp(1e-6, conversion=conversion)
        back = curve.delta(conv.epsilon, conversion=conversion)
        assert back.delta == pytest.approx(1e-6, rel=1e-9)
        assert back.order == conv.order


def test_delta_and_to_dp_agree_for_tiny_rho():
    """δ(ε) is the smallest δ at which to_dp gives ≤ ε, including the KL rule for ρ ≈ 0."""
    zero = RDPCurve.zeros()
    assert zero.to_dp(1e-5).epsilon == 0.0
    assert zero.delta(0.0).delta == 0.0  # was 3.6e-4
    tiny = RDPCurve([2.0, 3.0], [1e-12, 2e-12])
    assert tiny.to_dp(1e-5).epsilon == 0.0
    d = tiny.delta(0.0).delta  # was 0.105; the KL bound √(1 − e^{−1e-12}) ≈ 1e-6
    assert d == pytest.approx(1e-6, rel=1e-9)
    assert tiny.to_dp(d * 1.01).epsilon == 0.0 and tiny.to_dp(d * 0.99).epsilon > 0.0
    rng = np.random.default_rng(7)
    for _ in range(50):
        scale = math.exp(rng.uniform(math.log(1e-14), math.log(1.0)))
        curve = RDPCurve(DEFAULT_ORDERS, scale * DEFAULT_ORDERS)  # Gaussian-shaped
        for conversion in ("standard", "balle2020"):
            for eps in (0.0, 0.1, 1.0):
                d = curve.delta(eps, conversion=conversion).delta
                if 1e-300 < d < 0.99:
                    assert curve.to_dp(d * (1 + 1e-6), conversion=conversion).epsilon <= eps
                    assert curve.to_dp(d * (1 - 1e-6), conversion=conversion).epsilon > eps


def test_composition_and_repetition():
    a = RDPCurve([2.0, 3.0], [0.1, 0.2])
    b = RDPCurve([2.0, 3.0], [0.05, 0.5])
    np.testing.assert_allclose((a + b).epsilons, [0.15, 0.7])
    assert (3 * a) == (a + a + a)
    assert (a * 3) == (3 * a)
    assert sum([a, b, a]) == a + b + a
    assert 0 * RDPCurve([2.0], [math.inf]) == RDPCurve.zeros([2.0])
    assert (2 * RDPCurve([2.0], [math.inf])).epsilons[0] == math.inf
    assert hash(a) == hash(RDPCurve([2.0, 3.0], [0.1, 0.2]))
    assert len(a) == 2
    assert a.to_dict() == {"orders": [2.0, 3.0], "epsilons": [0.1, 0.2]}


def test_curve_is_immutable():
    src = np.array([0.1, 0.2])
    a = RDPCurve([2.0, 3.0], src)
    src[0] = 99.0  # the curve holds its own copy
    assert a.epsilons[0] == 0.1
    with pytest.raises(ValueError):
        a.epsilons[0] = 1.0
    with pytest.raises(AttributeError):
        a.epsilons = np.zeros(2)  # type: ignore[misc]


def test_gaussian_constructor():
    c = RDPCurve.gaussian(2.0, [2.0, 10.0], sensitivity=1.0)
    np.testing.assert_allclose(c.epsilons, [2.0 / 8, 10.0 / 8])


def test_bad_input():
    with pytest.raises(ValueError, match="orders"):
        RDPCurve([2.0, 3.0], [0.1, 0.2]) + RDPCurve([2.0, 4.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="orders"):
        RDPCurve([], [])
    with pytest.raises(ValueError, match="orders"):
        RDPCurve([3.0, 2.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="orders"):
        RDPCurve([1.0, 2.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="epsilons"):
        RDPCurve([2.0, 3.0], [0.1])
    with pytest.raises(ValueError, match="epsilons"):
        RDPCurve([2.0, 3.0], [0.1, -0.2])
    with pytest.raises(ValueError, match="epsilons"):
        RDPCurve([2.0, 3.0], [0.1, float("nan")])
    with pytest.raises(ValueError, match="count"):
        RDPCurve([2.0], [0.1]) * -1
    with pytest.raises(TypeError):
        RDPCurve([2.0], [0.1]) * 1.5
    with pytest.raises(TypeError):
        RDPCurve([2.0], [0.1]) + 1
    with pytest.raises(ValueError, match="delta"):
        RDPCurve([2.0], [0.1]).to_dp(0.0)
    with pytest.raises(ValueError, match="delta"):
        RDPCurve([2.0], [0.1]).to_dp(1.0)
    with pytest.raises(ValueError, match="conversion"):
        RDPCurve([2.0], [0.1]).to_dp(1e-5, conversion="rdp")
    with pytest.raises(ValueError, match="epsilon"):
        RDPCurve([2.0], [0.1]).delta(-1.0)
    with pytest.raises(ValueError, match="sigma"):
        RDPCurve.gaussian(0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        RDPCurve.gaussian(1.0, sensitivity=-1.0)
