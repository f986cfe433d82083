"""Confident GNMax (threshold step, expected cost, answered probability) and LNMax:
formulas.md §1.8 items 2–3, mpmath oracles, properties, bad input."""

from __future__ import annotations

import json
import math

import mpmath as mp
import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    answer_log_probability,
    answer_probability,
    confident_gnmax_cost,
    gnmax_rdp,
    gnmax_rdp_from_log_q,
    lnmax_log_q,
    lnmax_rdp,
    threshold_rdp,
)

# Not yet re-exported by dpaudit.accounting's __init__ (owned elsewhere): import the module.
from dpaudit.accounting._lnmax import LNMaxRDP, lnmax_rdp_details

VOTES = [230, 15, 5] + [0] * 7


def test_reference_values_item3():
    assert float(answer_log_probability(VOTES, 150, 20)) == pytest.approx(-3.167174338e-5, rel=1e-9)
    # log(1 − p) through the threshold RDP's q̃₁ = min(p, 1 − p)
    z = (230 - 150) / 20
    assert math.log(0.5 * math.erfc(z / math.sqrt(2))) == pytest.approx(-10.36010149, rel=1e-9)
    c = confident_gnmax_cost(VOTES, threshold=150, sigma1=20, sigma2=40, orders=[10.0, 20.0])
    np.testing.assert_allclose(c.threshold_rdp, [3.212133164e-5, 1.351090023e-4], rtol=1e-9)
    np.testing.assert_allclose(c.argmax_rdp, [1.227587674e-4, 2.490515378e-4], rtol=1e-9)
    np.testing.assert_allclose(c.expected_rdp, [1.548762112e-4, 3.841526523e-4], rtol=1e-9)
    c50 = confident_gnmax_cost(VOTES, threshold=150, sigma1=50, sigma2=40, orders=[10.0])
    assert c50.threshold_rdp[0] == pytest.approx(10 / (2 * 50**2), rel=1e-14)


def test_threshold_step_matches_mpmath():
    """Step 1 via mpmath: q̃₁ = min(p, 1−p) with p = Φ̄((T − max)/σ1), Thm 6 at √2·σ1."""
    votes, t, s1 = [140.0, 80.0, 30.0], 120.0, 15.0
    with mp.workdps(40):
        p = mp.ncdf((140 - t) / mp.mpf(s1))
        lq = float(mp.log(min(p, 1 - p)))
    orders = [2.0, 5.0, 20.0, 60.0]
    want = gnmax_rdp_from_log_q(lq, math.sqrt(2) * s1, orders)
    np.testing.assert_allclose(threshold_rdp(votes, t, s1, orders), want, rtol=1e-12)
    assert float(answer_probability(votes, t, s1)) == pytest.approx(float(p), rel=1e-14)
    ind = threshold_rdp(votes, t, s1, orders, analysis="data-independent")
    np.testing.assert_allclose(ind, np.array(orders) / (2 * s1**2), rtol=1e-15)
    assert np.all(threshold_rdp(votes, t, s1, orders) <= ind)


def test_threshold_is_symmetric_about_t_and_rounds_the_max():
    # q̃₁ = min(p, 1−p) is symmetric in max − T; the max count is rounded (reference code)
    a = threshold_rdp([120.0, 3.0], 100.0, 10.0, [5.0])
    b = threshold_rdp([80.0, 3.0], 100.0, 10.0, [5.0])
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert float(answer_probability([99.6, 0.0], 100.0, 10.0)) == 0.5
    assert float(answer_probability([100.4, 0.0], 100.0, 10.0)) == 0.5


def test_expected_cost_and_second_moment_on_a_batch():
    rng = np.random.default_rng(3)
    votes = np.array([rng.multinomial(100, rng.dirichlet(np.full(5, 0.4))) for _ in range(12)])
    c = confident_gnmax_cost(votes, threshold=60, sigma1=12, sigma2=8)
    p = answer_probability(votes, 60, 12)[:, None]
    r1 = threshold_rdp(votes, 60, 12, DEFAULT_ORDERS)
    r2 = gnmax_rdp(votes, 8, DEFAULT_ORDERS)
    np.testing.assert_allclose(c.threshold_rdp, r1, rtol=0)
    np.testing.assert_allclose(c.argmax_rdp, r2, rtol=0)
    np.testing.assert_allclose(c.expected_rdp, r1 + p * r2, rtol=1e-15)
    # E[ρ²] for ρ = ρ1 + B·ρ2, B ~ Bernoulli(p)
    np.testing.assert_allclose(c.second_moment, (1 - p) * r1**2 + p * (r1 + r2) ** 2, rtol=1e-12)
    answered = rng.random(12) < 0.5
    real = c.realised(answered)
    np.testing.assert_allclose(real.epsilons, r1.sum(axis=0) + r2[answered].sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(c.expected().epsilons, (r1 + p * r2).sum(axis=0), rtol=1e-12)
    assert c.threshold_fallback.shape == c.argmax_fallback.shape == (12, DEFAULT_ORDERS.size)
    with pytest.raises(ValueError, match="answered"):
        c.realised(answered[:5])
    with pytest.raises(ValueError, match="answered"):
        c.realised(np.full(12, 0.5))


def test_reference_values_lnmax_item2():
    assert float(lnmax_log_q(VOTES, 20)) == pytest.approx(-7.955387307, abs=5e-10)
    np.testing.assert_allclose(
        lnmax_rdp(VOTES, 20, [2.0, 10.0, 20.0]),
        [7.3779693e-5, 9.3744572e-5, 1.4168307e-4],
        rtol=1e-7,
    )


def test_lnmax_matches_mpmath_and_bounds():
    votes, b = [40.0, 25.0, 5.0, 0.0], 4.0
    eps = 2 / b
    with mp.workdps(40):
        deltas = [mp.mpf(40 - x) / b for x in votes[1:]]
        q = min(mp.fsum((2 + d) * mp.e ** (-d) / 4 for d in deltas), 1 - mp.mpf(1) / 4)
        orders = [1.5, 2.0, 8.0, 30.0]
        want = []
        for lam in orders:
            lam = mp.mpf(lam)
            dd = mp.log(
                (1 - q) * ((1 - q) / (1 - mp.e**eps * q)) ** (lam - 1)
                + q * mp.e ** (eps * (lam - 1))
            ) / (lam - 1)
            assert q <= 1 / (mp.e**eps + 1)
            want.append(float(min(lam * eps**2 / 2, eps, dd)))
    assert float(lnmax_log_q(votes, b)) == pytest.approx(float(mp.log(q)), rel=1e-13)
    np.testing.assert_allclose(lnmax_rdp(votes, b, orders), want, rtol=1e-10)
    ind = lnmax_rdp(votes, b, orders, analysis="data-independent")
    np.testing.assert_allclose(ind, np.minimum(np.array(orders) * eps**2 / 2, eps), rtol=1e-15)
    # q̃ too large for the data-dependent term: data-independent only
    np.testing.assert_array_equal(
        lnmax_rdp([10.0, 9.0], 1.0, orders),
        lnmax_rdp([10.0, 9.0], 1.0, orders, analysis="data-independent"),
    )
    # one class: the output is constant, q̃ = 0 and the data-dependent RDP is 0
    assert np.all(lnmax_rdp([5.0], 1.0, orders) == 0.0)


def test_lnmax_details_report_the_fallback():
    """Like gnmax_rdp_details: same values as lnmax_rdp, and ``fallback`` exactly where the
    data-dependent condition q̃ ≤ 1/(e^ε + 1) fails (PATE 2017 Thm 3), never silently."""
    rng = np.random.default_rng(4)
    votes = rng.multinomial(30, rng.dirichlet(np.full(6, 0.5), size=(40,)).mean(0), size=(4, 10))
    votes[0, 0] = [30, 0, 0, 0, 0, 0]
    votes[0, 1] = [30] * 6  # ties: q̃ capped at 1 − 1/m, a fallback at every order
    orders = np.array([1.5, 2.0, 8.0, 30.0, 256.0])
    for b in (0.5, 2.0, 8.0):
        det = lnmax_rdp_details(votes, b, orders)
        assert isinstance(det, LNMaxRDP) and det.rdp.shape == (4, 10, 5)
        np.testing.assert_array_equal(det.rdp, lnmax_rdp(votes, b, orders))
        eps = 2.0 / b
        cond = lnmax_log_q(votes, b) <= -math.log1p(math.exp(eps))
        assert cond.any() and not cond.all()  # both branches exercised
        np.testing.assert_array_equal(det.q_condition, cond)
        np.testing.assert_array_equal(det.fallback, np.broadcast_to(~cond[..., None], (4, 10, 5)))
        base = np.minimum(orders * eps**2 / 2, eps)
        np.testing.assert_array_equal(det.rdp[~cond], np.broadcast_to(base, det.rdp[~cond].shape))
        assert not np.any(det.improved & det.fallback)
        np.testing.assert_array_equal(det.improved, ~det.fallback & (det.rdp < base))
        assert det.any_fallback == bool(np.any(~cond)) and det.epsilon == eps and det.b == b
        np.testing.assert_allclose(det.curve().epsilons, det.rdp.reshape(-1, 5).sum(0), rtol=1e-12)
        assert json.loads(det.to_json())["analysis"] == "data-dependent"
    assert lnmax_rdp_details([30, 30], 2.0, orders).fallback.all()
    assert not lnmax_rdp_details([30, 0], 2.0, orders).any_fallback
    ind = lnmax_rdp_details(votes, 2.0, orders, analysis="data-independent")
    assert not ind.any_fallback and not ind.improved.any() and not ind.q_condition.any()
    np.testing.assert_array_equal(ind.log_q, lnmax_log_q(votes, 2.0))  # reported, not NaN
    np.testing.assert_array_equal(
        ind.rdp, lnmax_rdp(votes, 2.0, orders, analysis="data-independent")
    )


def test_lnmax_large_epsilon_does_not_overflow():
    # ε = 2/b = 2000: log(1 + e^ε) used to overflow in math.exp.
    det = lnmax_rdp_details([500, 1], 1e-3, [2.0, 1e4])
    assert np.all(np.isfinite(det.rdp)) and not det.any_fallback
    assert det.rdp[0] == pytest.approx(0.0, abs=1e-300)
    assert det.rdp[1] <= 2000.0
    assert lnmax_rdp_details([500, 500], 1e-3, [2.0]).fallback.all()
    assert lnmax_rdp([500, 500], 1e-3, [2.0])[0] == 2000.0


def test_bad_input():
    with pytest.raises(ValueError, match="threshold"):
        threshold_rdp(VOTES, -1.0, 10.0, [2.0])
    with pytest.raises(ValueError, match="threshold"):
        confident_gnmax_cost(VOTES, threshold=-0.5, sigma1=1.0, sigma2=1.0)
    with pytest.raises(ValueError, match="sigma1"):
        answer_probability(VOTES, 10.0, 0.0)
    with pytest.raises(ValueError, match="sigma2"):
        confident_gnmax_cost(VOTES, threshold=5.0, sigma1=1.0, sigma2=-1.0)
    with pytest.raises(ValueError, match="votes"):
        threshold_rdp([5.0, -1.0], 1.0, 1.0, [2.0])
    with pytest.raises(ValueError, match="orders"):
        threshold_rdp(VOTES, 1.0, 1.0, [])
    with pytest.raises(ValueError, match="analysis"):
        threshold_rdp(VOTES, 1.0, 1.0, [2.0], analysis="x")
    with pytest.raises(ValueError, match="q"):
        confident_gnmax_cost(VOTES, threshold=5.0, sigma1=1.0, sigma2=1.0, q="x")
    with pytest.raises(ValueError, match="b"):
        lnmax_rdp(VOTES, 0.0, [2.0])
    with pytest.raises(ValueError, match="votes"):
        lnmax_log_q([1.0, -2.0], 1.0)
    with pytest.raises(ValueError, match="analysis"):
        lnmax_rdp(VOTES, 1.0, [2.0], analysis="x")
    with pytest.raises(ValueError, match="analysis"):
        lnmax_rdp_details(VOTES, 1.0, [2.0], analysis="x")
    with pytest.raises(ValueError, match="b"):
        lnmax_rdp_details(VOTES, -1.0, [2.0])
