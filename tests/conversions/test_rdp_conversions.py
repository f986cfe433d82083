"""RDP ↔ (ε, δ) conversions (formulas.md §1.7): the KL rule applied before the order filter,
agreement with dp_accounting's ``compute_epsilon`` / ``compute_delta``, and ``dp_to_delta`` as
the exact inverse of ``rdp_to_dp`` over random curves, tiny ρ included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpaudit.conversions import dp_to_delta, rdp_to_dp
from dpaudit.conversions._rdp import MIN_CLOSED_FORM_ORDER

CONVERSIONS = ("standard", "balle2020")


def _random_curve(
    rng: np.random.Generator, min_scale: float = 1e-15
) -> tuple[np.ndarray, np.ndarray]:
    """Orders in (1, 300] (some ≤ 1.01), ρ non-decreasing at a log-uniform scale
    ``min_scale``..10, sometimes with ρ = 0 at the start or ρ = ∞ at the end."""
    k = int(rng.integers(1, 12))
    lam = np.unique(1.0 + np.exp(rng.uniform(math.log(1e-3), math.log(300.0), size=k)))
    if rng.random() < 0.2:
        lam = np.unique(np.append(lam, rng.uniform(1.0005, MIN_CLOSED_FORM_ORDER)))
    scale = math.exp(rng.uniform(math.log(min_scale), math.log(10.0)))
    rho = scale * np.cumsum(rng.exponential(1.0, lam.size))
    if rng.random() < 0.1:
        rho[0] = 0.0
    if rng.random() < 0.1:
        rho[-1] = math.inf
    return lam, rho


def _check_inverse(lam, rho, epsilon, conversion):
    """δ* = dp_to_delta(ε) is the infimum of the δ for which rdp_to_dp(δ) ≤ ε."""
    back = dp_to_delta(lam, rho, epsilon, conversion=conversion)
    d = back.delta
    assert 0.0 <= d <= 1.0 and back.epsilon == epsilon
    if d == 0.0:  # some ρ = 0 (or an underflow of e^{-huge}): every δ > 0 is enough
        if np.any(rho == 0.0) and conversion == "balle2020":
            assert rdp_to_dp(lam, rho, 1e-300, conversion=conversion).epsilon == 0.0
        return
    if d == 1.0:  # no δ < 1 gives ε
        assert rdp_to_dp(lam, rho, 0.5, conversion=conversion).epsilon > epsilon
        return
    if d < 1e-290:  # too close to the underflow to perturb δ
        return
    hi = d * (1 + 1e-6)
    if hi < 1.0:
        assert rdp_to_dp(lam, rho, hi, conversion=conversion).epsilon <= epsilon
    lo = rdp_to_dp(lam, rho, d * (1 - 1e-6), conversion=conversion)
    assert lo.epsilon > epsilon


def _check_forward(lam, rho, delta, conversion):
    """dp_to_delta(rdp_to_dp(δ).ε) ≤ δ, with equality when ε came from the closed form."""
    conv = rdp_to_dp(lam, rho, delta, conversion=conversion)
    if not math.isfinite(conv.epsilon):  # only when no order has a finite ρ
        assert np.all(~np.isfinite(rho))
        assert conv.order == math.inf
        return
    back = dp_to_delta(lam, rho, conv.epsilon, conversion=conversion)
    assert back.delta <= delta * (1 + 1e-9)
    if conv.epsilon > 0.0:  # the closed form, not the clip or the KL rule, gave ε
        assert back.delta == pytest.approx(delta, rel=1e-7)
        # the same order, or one a rounding error away that gives the same ε (orders such
        # as 500 and 499.99999999999994 tie: either is the optimum)
        assert back.order == pytest.approx(conv.order, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_dp_to_delta_inverts_rdp_to_dp_on_random_curves(seed, conversion):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(150):
        lam, rho = _random_curve(rng)
        for epsilon in (0.0, float(rng.exponential(0.5)), float(rng.uniform(0, 15))):
            _check_inverse(lam, rho, epsilon, conversion)
        for delta in (1e-12, float(np.exp(rng.uniform(-30, -0.1))), 0.3):
            _check_forward(lam, rho, delta, conversion)


@settings(max_examples=150, deadline=None, database=None)
@given(
    orders=st.lists(st.floats(1.0001, 500.0, allow_nan=False), min_size=1, max_size=8, unique=True),
    log_scale=st.floats(-35.0, 3.0),
    epsilon=st.floats(0.0, 30.0),
    conversion=st.sampled_from(CONVERSIONS),
)
@example(orders=[500.0, 499.99999999999994], log_scale=0.0, epsilon=0.0, conversion="standard")
def test_round_trip_property(orders, log_scale, epsilon, conversion):
    lam = np.sort(np.array(orders))
    rho = math.exp(log_scale) * (lam - 1) / lam  # Gaussian-like, tiny ρ included
    _check_inverse(lam, rho, epsilon, conversion)
    _check_forward(lam, rho, 1e-5, conversion)


def test_reviewer_cases_small_rho():
    # ρ ≡ 0: δ(0) = 0 and ε(δ) = 0 for any δ (the zero curve).
    lam = np.array([1.1, 2.0, 10.0])
    assert dp_to_delta(lam, np.zeros(3), 0.0).delta == 0.0
    assert rdp_to_dp(lam, np.zeros(3), 1e-5).epsilon == 0.0
    # ρ = 1e-12, 2e-12: ε(1e-5) = 0 (KL), and δ(0) = √(1 − e^{−1e-12}) ≈ 1e-6, not 0.105.
    lam, rho = np.array([2.0, 3.0]), np.array([1e-12, 2e-12])
    assert rdp_to_dp(lam, rho, 1e-5).epsilon == 0.0
    back = dp_to_delta(lam, rho, 0.0)
    assert back.delta == pytest.approx(math.sqrt(-math.expm1(-1e-12)), rel=1e-12)
    assert back.order == 2.0
    assert rdp_to_dp(lam, rho, back.delta * 1.001).epsilon == 0.0
    assert rdp_to_dp(lam, rho, back.delta * 0.999).epsilon > 0.0


def _closed_form_mp(lam: float, rho: float, delta: float, conversion: str) -> float:
    """ε of one order by the closed form, in 60-digit arithmetic (Mironov 2017,
    arXiv:1702.07476, Prop. 3; Balle et al. 2020, arXiv:1905.09982, Thm 20)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        a, r, d = mpmath.mpf(lam), mpmath.mpf(rho), mpmath.mpf(delta)
        if conversion == "standard":
            return float(r - mpmath.log(d) / (a - 1))
        return float(r + mpmath.log((a - 1) / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1))


def test_kl_rule_is_applied_before_the_closed_form():
    # dp_accounting gives ε = 0 here (the KL rule), whatever the order.
    conv = rdp_to_dp([1.005], [0.0], 1e-5)
    assert conv.epsilon == 0.0 and conv.order == 1.005
    conv = rdp_to_dp([1.005, 2.0], [1e-11, 5.0], 1e-5)
    assert conv.epsilon == 0.0 and conv.order == 1.005
    # No KL rule for ρ = 0.1 at δ = 1e-5: the closed form at λ = 1.005, finite (dp_accounting
    # skips λ ≤ 1.01 and says ∞).
    conv = rdp_to_dp([1.005], [0.1], 1e-5)
    ref = _closed_form_mp(1.005, 0.1, 1e-5, "balle2020")
    assert conv.epsilon == pytest.approx(ref, rel=1e-12) and conv.order == 1.005
    # The standard conversion (Mironov Prop. 3 alone) has no KL rule: log(1/δ)/(λ − 1).
    conv = rdp_to_dp([1.005], [0.0], 1e-5, conversion="standard")
    assert conv.epsilon == pytest.approx(math.log(1e5) / 0.005, rel=1e-12)
    back = dp_to_delta([1.005], [0.0], 1.0, conversion="standard")  # log δ = (λ − 1)(ρ − ε)
    assert back.delta == pytest.approx(math.exp(-0.005), rel=1e-12)
    # ... while δ(ε) at λ ≤ 1.01 is the KL bound √(1 − e^{−ρ}) for balle2020.
    back = dp_to_delta([1.005], [0.1], 1.0)
    assert back.delta == pytest.approx(math.sqrt(-math.expm1(-0.1)), rel=1e-14)
    assert back.order == 1.005


@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_dp_accounting(seed):
    """Same values and orders as dp_accounting 0.4 (ρ ≥ 1e-6: below that its KL term
    ``log1p(−exp(−ρ))`` loses ~1e-16/ρ relative precision; ours uses expm1, see the mpmath
    test below)."""
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    rng = np.random.default_rng(seed)
    for _ in range(200):
        lam, rho = _random_curve(rng, min_scale=1e-6)
        delta = float(np.exp(rng.uniform(-30, -0.5)))
        # dp_accounting skips λ ≤ 1.01 in its closed forms; dpaudit uses them (never worse)
        full = rdp_to_dp(lam, rho, delta)
        assert full.epsilon <= rdp_acc.compute_epsilon(lam, rho, delta)[0] * (1 + 1e-12)
        eps_full = float(rng.uniform(0, 10))
        full_delta = dp_to_delta(lam, rho, eps_full).delta
        assert full_delta <= rdp_acc.compute_delta(lam, rho, eps_full)[0] * (1 + 1e-9)
        keep = (lam > MIN_CLOSED_FORM_ORDER) | (rho == 0)
        if not np.any(keep):
            continue
        lam, rho = lam[keep], rho[keep]
        ref_eps, ref_order = rdp_acc.compute_epsilon(lam, rho, delta)
        ours = rdp_to_dp(lam, rho, delta)
        if math.isinf(ref_eps):
            assert math.isinf(ours.epsilon)
        else:
            assert ours.epsilon == pytest.approx(ref_eps, rel=1e-12, abs=1e-300)
            assert ours.order == ref_order
        epsilon = float(rng.uniform(0, 10))
        ref_delta, ref_order = rdp_acc.compute_delta(lam, rho, epsilon)
        back = dp_to_delta(lam, rho, epsilon)
        assert back.delta == pytest.approx(ref_delta, rel=1e-9, abs=1e-300)
        if 0.0 < ref_delta < 1.0:
            assert back.order == ref_order


@pytest.mark.parametrize("rho", [1e-300, 1e-30, 5e-16, 1e-12, 1e-6, 0.3, 20.0])
def test_kl_delta_matches_mpmath(rho):
    """δ(ε) on a one-order curve where the KL bound √(1 − e^{−ρ}) is the minimum."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        ref = float(mpmath.sqrt(-mpmath.expm1(-mpmath.mpf(rho))))
    back = dp_to_delta([1.005], [rho], 0.0)
    assert back.delta == pytest.approx(min(ref, 1.0), rel=1e-14)
    if ref < 0.5:  # and ε = 0 holds from just above that δ; below, the closed form
        assert rdp_to_dp([1.005], [rho], ref * (1 + 1e-12)).epsilon == 0.0
        below = ref * (1 - 1e-12)
        expected = _closed_form_mp(1.005, rho, below, "balle2020")
        assert rdp_to_dp([1.005], [rho], below).epsilon == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("gap", [1e-15, 1e-12, 1e-6, 1e-3, 0.01, 0.5])
def test_orders_near_one_give_the_finite_closed_form(conversion, gap):
    """Issue 45: ``rdp_to_dp([1 + 1e-12], [0.1], 1e-5)`` was ∞ (order ∞); the closed form is
    finite at every λ > 1 and computed without cancellation (reference: 60-digit mpmath at
    the same float λ), and dp_to_delta inverts it there."""
    lam = 1.0 + gap
    conv = rdp_to_dp([lam], [0.1], 1e-5, conversion=conversion)
    assert conv.order == lam and math.isfinite(conv.epsilon)
    assert conv.epsilon == pytest.approx(_closed_form_mp(lam, 0.1, 1e-5, conversion), rel=1e-9)
    back = dp_to_delta([lam], [0.1], conv.epsilon, conversion=conversion)
    if conversion == "standard" or back.delta < math.sqrt(-math.expm1(-0.1)):
        assert back.delta == pytest.approx(1e-5, rel=1e-6)


def test_order_near_one_is_the_issue_value_and_pate_accounting_passes_it_on():
    conv = rdp_to_dp([1 + 1e-12], [0.1], 1e-5)
    assert conv.epsilon == pytest.approx(1.1512925e13, rel=1e-4)
    from dpaudit.accounting import rdp_to_dp as accounting_rdp_to_dp

    assert accounting_rdp_to_dp is rdp_to_dp  # the accounting layer re-exports this one


def test_infinite_rho_and_no_usable_order():
    conv = rdp_to_dp([2.0, 3.0], [math.inf, math.inf], 1e-5)
    assert conv.epsilon == math.inf and conv.order == math.inf
    for conversion in CONVERSIONS:
        back = dp_to_delta([2.0, 3.0], [math.inf, math.inf], 1.0, conversion=conversion)
        assert back.delta == 1.0
    back = dp_to_delta([2.0, 3.0], [math.inf, 0.5], 3.0)
    assert back.order == 3.0 and 0.0 < back.delta < 1.0


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(epsilon=math.inf), ValueError, "epsilon"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(epsilon=1.0, conversion="rdp"), ValueError, "conversion"),
        (dict(epsilon=1.0, orders=[0.5, 2.0]), ValueError, "orders"),
        (dict(epsilon=1.0, rdp=[0.1]), ValueError, "rdp"),
        (dict(epsilon=1.0, rdp=[0.1, -0.1]), ValueError, "rdp"),
    ],
)
def test_dp_to_delta_bad_input(kwargs, exc, match):
    args = {"orders": [2.0, 3.0], "rdp": [0.1, 0.2], **kwargs}
    with pytest.raises(exc, match=match):
        dp_to_delta(args.pop("orders"), args.pop("rdp"), args.pop("epsilon"), **args)


def test_issue28_no_usable_order_gives_order_inf_not_nan():
    for conversion in CONVERSIONS:
        conv = rdp_to_dp([2.0, 3.0], [math.inf, math.inf], 1e-5, conversion=conversion)
        assert (conv.epsilon, conv.order) == (math.inf, math.inf)
        back = dp_to_delta([2.0, 3.0], [math.inf, math.inf], 1.0, conversion=conversion)
        assert back.delta == 1.0 and not math.isnan(back.order)
    # the standard conversion has no KL rule: no order gives a bound at all
    back = dp_to_delta([2.0, 3.0], [math.inf, math.inf], 1.0, conversion="standard")
    assert (back.delta, back.order) == (1.0, math.inf)
