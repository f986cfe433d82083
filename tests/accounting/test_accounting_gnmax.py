"""GNMax RDP: formulas.md §1.8 reference values, an mpmath oracle of Thm 6, cross-checks,
the fallback cases of Thm 6, batching and bad input."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    gnmax_log_q,
    gnmax_rdp,
    gnmax_rdp_details,
    gnmax_rdp_from_log_q,
)
from dpaudit.mechanisms import argmax_probabilities

VOTES_230 = [230, 15, 5] + [0] * 7
UNANIMOUS = [250] + [0] * 9


# ---------------------------------------------------------------------------------------
# mpmath oracle: Papernot et al. 2018 Prop. 7 (union bound) and Thm 6 + Prop. 10 + Lemma 9,
# written from the paper's statement in linear space at 50 digits.
# ---------------------------------------------------------------------------------------
def mp_union_q(votes, sigma):
    with mp.workdps(50):
        v = [mp.mpf(x) for x in votes]
        i = max(range(len(v)), key=lambda j: (v[j], -j))
        q = mp.fsum(
            mp.erfc((v[i] - v[j]) / (2 * mp.mpf(sigma))) / 2 for j in range(len(v)) if j != i
        )
        return min(q, 1 - mp.mpf(1) / len(v))


def mp_rdp_gn(q, sigma, lam):
    """Returns (rdp, valid) with everything in 50-digit arithmetic."""
    with mp.workdps(50):
        q, sigma, lam = mp.mpf(q), mp.mpf(sigma), mp.mpf(lam)
        ind = lam / sigma**2
        if q == 0:
            return mp.mpf(0), True
        mu2 = sigma * mp.sqrt(mp.log(1 / q))
        mu1 = mu2 + 1
        eps1, eps2 = mu1 / sigma**2, mu2 / sigma**2
        if not (mu2 > 1 and mu1 > lam and q * mp.e**eps2 < 1):
            return ind, False
        lemma9 = (mu2 - 1) * eps2 - mu2 * (mp.log(mu1 / (mu1 - 1)) + mp.log(mu2 / (mu2 - 1)))
        if not mp.log(q) <= lemma9:
            return ind, False
        a = (1 - q) / (1 - (q * mp.e**eps2) ** ((mu2 - 1) / mu2))
        b = mp.e**eps1 / q ** (1 / (mu1 - 1))
        dd = mp.log((1 - q) * a ** (lam - 1) + q * b ** (lam - 1)) / (lam - 1)
        return min(ind, dd), True


# ---------------------------------------------------------------------------------------
# Reference values (formulas.md §1.8 items 1 and 7)
# ---------------------------------------------------------------------------------------
def test_reference_values_item1():
    np.testing.assert_allclose(gnmax_log_q(VOTES_230, 40), -8.200699289, rtol=0, atol=5e-10)
    np.testing.assert_allclose(
        gnmax_rdp(VOTES_230, 40, [2, 5, 10, 20]),
        [8.45009089e-5, 9.539168281e-5, 1.227587674e-4, 2.490515378e-4],
        rtol=1e-8,
    )
    np.testing.assert_allclose(
        gnmax_rdp(VOTES_230, 40, [2, 5, 10, 20], analysis="data-independent"),
        [0.00125, 0.003125, 0.00625, 0.0125],
        rtol=1e-14,
    )
    np.testing.assert_allclose(gnmax_log_q(VOTES_230, 20), -31.70411113, atol=5e-9)
    np.testing.assert_allclose(gnmax_rdp(VOTES_230, 20, [20]), [4.161554376e-11], rtol=1e-8)
    np.testing.assert_allclose(gnmax_log_q(UNANIMOUS, 40), -10.01922829, atol=5e-9)
    np.testing.assert_allclose(
        gnmax_rdp(UNANIMOUS, 40, [10, 100]), [2.3331779e-5, 0.0577198944], rtol=1e-7
    )
    assert gnmax_rdp(UNANIMOUS, 40, [100], analysis="data-independent")[0] == pytest.approx(0.0625)


def test_worked_example_item7():
    votes = [200, 30, 20]
    assert math.exp(gnmax_log_q(votes, 40)) == pytest.approx(0.0020583729730817473, rel=1e-13)
    exact_q = math.exp(gnmax_log_q(votes, 40, q="exact"))
    # the exact q carries a certified relative slack of 1e-9 (the stated error of Q(H))
    assert exact_q == pytest.approx(0.0020056117005131657 * (1 + 1e-9), rel=1e-11)
    assert exact_q >= 0.0020056117005131657
    np.testing.assert_allclose(
        gnmax_rdp(votes, 40, [5, 20]), [6.043317325144442e-4, 1.3113537270363913e-3], rtol=1e-12
    )


# ---------------------------------------------------------------------------------------
# mpmath agreement
# ---------------------------------------------------------------------------------------
MP_CASES = [
    ([200, 30, 20], 40),
    (VOTES_230, 40),
    (VOTES_230, 20),
    (UNANIMOUS, 40),
    ([150, 60, 40] + [0] * 7, 40),
    ([120, 110, 20] + [0] * 7, 40),
    ([90, 80, 50, 30], 10),
    ([1000, 500, 300, 200, 0], 250),
    ([60.5, 10.25, 3.0], 7.5),
]
MP_ORDERS = [1.1, 1.5, 2.0, 3.7, 10.0, 32.0, 64.0, 128.0, 512.0]


@pytest.mark.parametrize(("votes", "sigma"), MP_CASES)
def test_union_bound_and_thm6_match_mpmath(votes, sigma):
    lq = gnmax_log_q(votes, sigma)
    q_ref = mp_union_q(votes, sigma)
    assert float(lq) == pytest.approx(float(mp.log(q_ref)), rel=1e-12, abs=1e-13)
    det = gnmax_rdp_details(votes, sigma, MP_ORDERS)
    for k, lam in enumerate(MP_ORDERS):
        ref, valid = mp_rdp_gn(q_ref, sigma, lam)
        assert det.rdp[k] == pytest.approx(float(ref), rel=1e-9, abs=1e-300), (lam, valid)
        assert bool(det.fallback[k]) == (not valid)


def test_exact_q_matches_mpmath_integral():
    """q = 1 − Q(H)_{i*} with Q from paper 000 Eq. 4 integrated by mpmath."""
    votes, sigma = [200.0, 30.0, 20.0], 40.0
    with mp.workdps(30):
        v = [mp.mpf(x) / sigma for x in votes]

        def q_of(c):
            def f(x):
                others = (mp.ncdf(x - v[j]) for j in range(3) if j != c)
                return mp.npdf(x - v[c]) * mp.fprod(others)

            return mp.quad(f, [-mp.inf, v[c] - 5, v[c], v[c] + 5, mp.inf])

        ref = q_of(1) + q_of(2)
    got = math.exp(float(gnmax_log_q(votes, sigma, q="exact")))
    assert got == pytest.approx(float(ref) * (1 + 1e-9), rel=1e-9)


# ---------------------------------------------------------------------------------------
# Cross-checks: exact ≤ union ≤ data-independent, and a naive per-query oracle
# ---------------------------------------------------------------------------------------
def _random_votes(rng, n, c, teachers=250):
    alphas = rng.choice([0.05, 0.3, 1.0, 5.0], size=n)
    return np.array([rng.multinomial(teachers, rng.dirichlet(np.full(c, a))) for a in alphas])


@pytest.mark.parametrize("c", [2, 3, 10, 50])
@pytest.mark.parametrize("sigma", [0.7, 5.0, 40.0, 150.0])
def test_exact_le_union_le_independent_at_every_order(c, sigma):
    rng = np.random.default_rng(1000 * c + int(sigma * 10))
    votes = _random_votes(rng, 60, c)
    exact = gnmax_rdp(votes, sigma, DEFAULT_ORDERS, q="exact")
    union = gnmax_rdp(votes, sigma, DEFAULT_ORDERS, q="union")
    indep = gnmax_rdp(votes, sigma, DEFAULT_ORDERS, analysis="data-independent")
    assert np.all(exact <= union)
    assert np.all(union <= indep)
    assert np.all(exact >= 0)
    np.testing.assert_array_equal(indep, np.broadcast_to(DEFAULT_ORDERS / sigma**2, indep.shape))
    assert np.all(gnmax_log_q(votes, sigma, q="exact") <= gnmax_log_q(votes, sigma))


def _naive_rdp_gn(log_q, sigma, lam):
    """formulas.md §1.4 step by step with the math module, one (query, order) at a time."""
    ind = lam / sigma**2
    if log_q == -math.inf:
        return 0.0
    mu2 = sigma * math.sqrt(-log_q)
    mu1 = mu2 + 1
    e1, e2 = mu1 / sigma**2, mu2 / sigma**2
    if not (mu2 > 1 and mu1 > lam and log_q + e2 < 0):
        return ind
    if log_q > (mu2 - 1) * e2 - mu2 * (math.log(mu1 / (mu1 - 1)) + math.log(mu2 / (mu2 - 1))):
        return ind

    def l1m(x):
        return math.log1p(-math.exp(x)) if x < -1 else math.log(-math.expm1(x))

    log_a = l1m(log_q) - l1m((log_q + e2) * (1 - 1 / mu2))
    log_b = e1 - log_q / (mu1 - 1)
    dd = np.logaddexp(l1m(log_q) + (lam - 1) * log_a, log_q + (lam - 1) * log_b) / (lam - 1)
    return min(ind, max(dd, 0.0))


def test_vectorised_matches_naive_loop_on_a_batch():
    rng = np.random.default_rng(7)
    votes = _random_votes(rng, 40, 10).reshape(4, 10, 10)  # a (4, 10) batch of histograms
    orders = DEFAULT_ORDERS[::7]
    got = gnmax_rdp(votes, 30.0, orders)
    assert got.shape == (4, 10, orders.size)
    lq = gnmax_log_q(votes, 30.0)
    for idx in np.ndindex(4, 10):
        want = [_naive_rdp_gn(float(lq[idx]), 30.0, lam) for lam in orders]
        np.testing.assert_allclose(got[idx], want, rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------
# Thm 6 validity conditions and fallback (formulas.md §1.4)
# ---------------------------------------------------------------------------------------
def test_v1_and_v3_fail_together_for_small_sigma():
    # σ = 0.5, gap 1: q̃ = Φ̄(1.414) ≈ 0.079, μ2 = σ√log(1/q̃) ≈ 0.80 ≤ 1
    det = gnmax_rdp_details([10.0, 9.0], 0.5, [1.5, 2.0, 10.0])
    assert not det.v1 and not det.v3  # V3 ⇔ √log(1/q) > 1/σ ⇔ V1
    assert det.fallback.all() and det.any_fallback and not det.improved.any()
    np.testing.assert_array_equal(det.rdp, np.array([1.5, 2.0, 10.0]) / 0.25)


def test_v4_fails_alone_just_above_mu2_equal_one():
    # σ = 1, log q̃ ≈ −1.21: μ2 ≈ 1.1 > 1 (V1, V3 hold), Lemma 9 fails
    votes = [10.75, 10.0]
    det = gnmax_rdp_details(votes, 1.0, [1.5, 2.0])
    mu2 = math.sqrt(-float(det.log_q))
    assert 1.0 < mu2 < 1.2
    assert det.v1 and det.v3 and not det.v4
    assert det.fallback.all()
    np.testing.assert_array_equal(det.rdp, [1.5, 2.0])
    ref, valid = mp_rdp_gn(mp.e ** mp.mpf(float(det.log_q)), 1.0, 1.5)
    assert not valid and float(ref) == 1.5


def test_v2_is_per_order_and_strict():
    det = gnmax_rdp_details([200, 30, 20], 40, [5.0, 50.0, 100.0, 101.0, 200.0])
    mu1 = 40 * math.sqrt(-float(det.log_q)) + 1  # ≈ 100.5
    assert 100 < mu1 < 101
    np.testing.assert_array_equal(det.v2, [True, True, True, False, False])
    np.testing.assert_array_equal(det.fallback, [False, False, False, True, True])
    assert det.rdp[3] == 101 / 1600 and det.rdp[4] == 200 / 1600
    # exactly at λ = μ1 the strict inequality fails
    lq = float(det.log_q)
    at_mu1 = gnmax_rdp_from_log_q(lq, 40, [mu1])
    assert at_mu1[0] == mu1 / 1600


def test_valid_but_not_better_is_not_a_fallback():
    # large σ, unanimous: valid, but DD ≥ λ/σ² at λ = 100 only just below
    det = gnmax_rdp_details(UNANIMOUS, 40, [10.0, 100.0])
    assert not det.fallback.any()
    assert det.improved.all()
    # Confident-GNMax step 1 with σ1 = 50 (formulas.md §1.8 item 3): valid but DD > λ/σ²
    lq = math.log(0.5 * math.erfc((230 - 150) / 50 / math.sqrt(2)))
    assert gnmax_rdp_from_log_q(lq, math.sqrt(2) * 50, [10.0])[0] == pytest.approx(0.002, rel=1e-14)


def test_constant_output_and_single_class():
    assert np.all(gnmax_rdp([7.0], 1.0, [2.0, 5.0]) == 0)
    assert np.all(gnmax_rdp([7.0], 1.0, [2.0, 5.0], q="exact") == 0)
    assert gnmax_log_q([7.0], 1.0) == -math.inf
    np.testing.assert_array_equal(gnmax_rdp_from_log_q(-math.inf, 3.0, [2.0, 9.0]), [0.0, 0.0])
    # q̃ underflows to 0 for a huge gap: RDP 0, reported as valid (no fallback)
    det = gnmax_rdp_details([1e6, 0.0], 1.0, [2.0])
    assert det.rdp[0] == 0.0 and not det.fallback[0]


def test_ties_use_first_index_and_cap():
    # all equal: q̃ = 1 − 1/m exactly (capped union bound), the exact q too
    for q in ("union", "exact"):
        lq = gnmax_log_q([5.0, 5.0, 5.0, 5.0], 2.0, q=q)
        assert lq == pytest.approx(math.log(0.75), rel=1e-9)
    assert gnmax_rdp([5.0, 5.0], 2.0, [2.0])[0] == 2.0 / 4.0


def test_curve_of_details_composes_the_batch():
    batch = np.array([[200, 30, 20], [150, 90, 10], [80, 80, 90]])
    det = gnmax_rdp_details(batch, 40.0)
    curve = det.curve()
    np.testing.assert_allclose(curve.epsilons, det.rdp.sum(axis=0), rtol=1e-15)
    np.testing.assert_array_equal(curve.orders, DEFAULT_ORDERS)
    assert det.to_dict()["analysis"] == "data-dependent"


def test_exact_uses_argmax_probabilities():
    votes = np.array([[120.0, 100.0, 90.0, 10.0], [60.0, 55.0, 0.0, 0.0]])
    probs = argmax_probabilities(votes, 12.0)
    lq = gnmax_log_q(votes, 12.0, q="exact")
    want = np.log((1 - probs[:, 0]) * (1 + 1e-9))
    np.testing.assert_allclose(lq, want, rtol=1e-9)


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        gnmax_rdp([10, 5], sigma, [2.0])


def test_bad_votes_orders_choices():
    with pytest.raises(ValueError, match="votes"):
        gnmax_rdp([10, -1], 1.0, [2.0])
    with pytest.raises(ValueError, match="votes"):
        gnmax_rdp([10, float("nan")], 1.0, [2.0])
    with pytest.raises(ValueError, match="votes"):
        gnmax_rdp([], 1.0, [2.0])
    with pytest.raises(ValueError, match="orders"):
        gnmax_rdp([10, 5], 1.0, [])
    with pytest.raises(ValueError, match="orders"):
        gnmax_rdp([10, 5], 1.0, [1.0, 2.0])
    with pytest.raises(ValueError, match="analysis"):
        gnmax_rdp([10, 5], 1.0, [2.0], analysis="dependent")
    with pytest.raises(ValueError, match="q"):
        gnmax_rdp([10, 5], 1.0, [2.0], q="tight")
    with pytest.raises(ValueError, match="q"):
        gnmax_log_q([10, 5], 1.0, q="tight")
    with pytest.raises(ValueError, match="log_q"):
        gnmax_rdp_from_log_q(0.1, 1.0, [2.0])
    with pytest.raises(ValueError, match="log_q"):
        gnmax_rdp_from_log_q(float("nan"), 1.0, [2.0])
    with pytest.raises(TypeError, match="votes"):
        gnmax_rdp("10,5", 1.0, [2.0])


# ---------------------------------------------------------------------------------------
# The claim dominates the truth: exact D_λ(M(D)‖M(D')) over every neighbour ≤ bound
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("votes", "sigma"),
    [([200, 30, 20], 40.0), (VOTES_230, 20.0), ([120, 110, 20], 15.0), ([9, 1, 0, 0], 2.0)],
)
def test_exact_divergence_never_exceeds_the_bounds(votes, sigma):
    from dpaudit.divergence import exact_renyi, neighbouring_histograms

    orders = np.array([1.5, 2.0, 5.0, 10.0, 20.0, 50.0])
    neigh = neighbouring_histograms(votes, "replace")
    truth = exact_renyi(np.broadcast_to(votes, neigh.shape), neigh, sigma, orders).max(axis=0)
    exact = gnmax_rdp(votes, sigma, orders, q="exact")
    assert np.all(truth <= exact * (1 + 1e-9))
    assert np.all(exact <= gnmax_rdp(votes, sigma, orders, q="union"))
