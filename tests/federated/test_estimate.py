"""The canary-client statistics and Andrew et al.'s one-shot estimate (attacks._federated).

Reference values:
* equal variances: the μ-GDP ε of Dong, Roth & Su 2022 (arXiv:1905.02383, Cor. 2.13), via
  :func:`dpaudit.conversions.gdp_epsilon` (itself tested against mpmath);
* 2.317789 at μ = 1, δ = 1e-2: the regression value of the authors' code
  (google-research/federated, ``one_shot_epe/empirical_privacy_estimation_test.py``,
  ``test_closed_form_null_gaussian_alt_regression``, high_dim);
* unequal variances: a naive oracle, the integral of max(0, p − e^ε q) by scipy's quad.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from dpaudit.attacks import (
    andrew_estimate,
    canary_cosines,
    draw_canary_clients,
    two_gaussian_delta,
    two_gaussian_epsilon,
)
from dpaudit.conversions import gdp_epsilon


def _naive_delta(m0, s0, m1, s1, eps):
    """max over both orders of ∫ max(0, p − e^ε q) dy (slow oracle)."""

    def one(ma, sa, mb, sb):
        def pdf(y, m, s):  # the normal density written out (scipy.stats' costs ~50 µs a call)
            return math.exp(-0.5 * ((y - m) / s) ** 2) / (s * math.sqrt(2.0 * math.pi))

        def f(y):
            return max(0.0, pdf(y, ma, sa) - math.exp(eps) * pdf(y, mb, sb))

        lo = min(ma - 40 * sa, mb - 40 * sb)
        hi = max(ma + 40 * sa, mb + 40 * sb)
        pts = np.linspace(lo, hi, 81)
        return sum(
            integrate.quad(f, a, b, epsabs=1e-14, limit=200)[0] for a, b in itertools.pairwise(pts)
        )

    return max(one(m0, s0, m1, s1), one(m1, s1, m0, s0))


@pytest.mark.parametrize(
    ("m1", "s1", "eps"),
    [(1.0, 1.0, 0.5), (1.0, 1.3, 1.0), (2.0, 0.8, 2.0), (0.5, 1.05, 0.2), (3.0, 1.5, 4.0)],
)
def test_two_gaussian_delta_matches_the_integral(m1, s1, eps):
    np.testing.assert_allclose(
        two_gaussian_delta(0.0, 1.0, m1, s1, eps), _naive_delta(0.0, 1.0, m1, s1, eps),
        rtol=1e-6, atol=1e-12,
    )  # fmt: skip


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5, 4.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
def test_equal_variances_are_gaussian_dp(mu, delta):
    np.testing.assert_allclose(
        two_gaussian_epsilon(0.0, 1.0, mu, 1.0, delta), gdp_epsilon(mu, delta), atol=1e-8
    )
    # scale-free: the cosine scale 1/√d
    sd = 2000**-0.5
    np.testing.assert_allclose(
        two_gaussian_epsilon(0.0, sd, mu * sd, sd, delta), gdp_epsilon(mu, delta), atol=1e-7
    )


def test_authors_regression_value():
    sd = 2000**-0.5
    np.testing.assert_allclose(two_gaussian_epsilon(0.0, sd, sd, sd, 1e-2), 2.317789, atol=1e-6)


def test_unequal_variances_cost_more_at_small_delta():
    base = two_gaussian_epsilon(0.0, 1.0, 1.0, 1.0, 1e-5)
    assert two_gaussian_epsilon(0.0, 1.0, 1.0, 1.05, 1e-5) > base
    assert two_gaussian_epsilon(0.0, 1.0, 1.0, 0.95, 1e-5) > base
    assert two_gaussian_epsilon(0.0, 1.0, 0.0, 1.0, 1e-5) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sd0": 0.0}, "sd0"),
        ({"sd1": -1.0}, "sd1"),
        ({"epsilon": -0.1}, "epsilon"),
        ({"mean0": float("nan")}, "mean0"),
    ],
)
def test_two_gaussian_delta_refuses_bad_input(kwargs, name):
    args = {"mean0": 0.0, "sd0": 1.0, "mean1": 1.0, "sd1": 1.0, "epsilon": 1.0} | kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        two_gaussian_delta(**args)


def test_andrew_estimate_of_gaussian_scores():
    g = np.random.default_rng(0)
    est = andrew_estimate(g.normal(2.0, 1.0, 20000), delta=1e-5, null_sd=1.0)
    np.testing.assert_allclose(est.epsilon_null_variance, gdp_epsilon(2.0, 1e-5), rtol=0.02)
    np.testing.assert_allclose(est.epsilon, gdp_epsilon(2.0, 1e-5), rtol=0.05)
    assert est.null == "closed-form" and est.num_canaries == 20000
    assert "NOT a lower bound" in est.assumption
    emp = andrew_estimate(g.normal(2.0, 1.0, 20000), delta=1e-5, unseen=g.normal(0, 1, 20000))
    assert emp.null == "unseen" and emp.num_unseen == 20000
    np.testing.assert_allclose(emp.epsilon, gdp_epsilon(2.0, 1e-5), rtol=0.05)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({}, "null_sd"),
        ({"null_sd": 1.0, "unseen": [0.0, 1.0]}, "null_sd"),
        ({"null_sd": 0.0}, "null_sd"),
        ({"unseen": [0.0]}, "unseen"),
        ({"null_sd": 1.0, "delta": 0.0}, "delta"),
    ],
)
def test_andrew_estimate_refuses_bad_input(kwargs, name):
    args = {"delta": 1e-5} | kwargs
    with pytest.raises(ValueError, match=name):
        andrew_estimate([0.1, 0.2, 0.3], **args)
    with pytest.raises(ValueError, match="scores"):
        andrew_estimate([0.1], delta=1e-5, null_sd=1.0)


def test_canary_directions_are_unit_and_included_at_the_rate():
    c = draw_canary_clients(2000, 50, rng=1)
    np.testing.assert_allclose(np.linalg.norm(c.directions, axis=1), 1.0, rtol=1e-6)
    assert abs(c.included.mean() - 0.5) < 0.05  # 2000 Bernoulli(½): sd 0.011
    assert draw_canary_clients(10, 5, inclusion=1.0, rng=0).included.all()
    np.testing.assert_array_equal(c.directions, draw_canary_clients(2000, 50, rng=1).directions)
    for kwargs, name in [({"num_canaries": 0}, "num_canaries"), ({"dimension": 1}, "dimension"),
                         ({"inclusion": 1.5}, "inclusion")]:  # fmt: skip
        args = {"num_canaries": 3, "dimension": 4} | kwargs
        with pytest.raises(ValueError, match=name):
            draw_canary_clients(**args, rng=0)


def test_canary_cosines_match_a_naive_loop():
    g = np.random.default_rng(3)
    can = draw_canary_clients(7, 30, rng=4).directions
    deltas = g.normal(size=(5, 30))
    deltas[2] = 0.0  # a zero delta gives cosine 0
    final = deltas.sum(axis=0)
    cos = canary_cosines(can, deltas, final)
    for j in range(7):
        c = can[j].astype(np.float64)
        per = [0.0 if not np.any(dl) else c @ dl / np.linalg.norm(dl) for dl in deltas]
        np.testing.assert_allclose(cos.per_round[j], per, atol=1e-6)
        np.testing.assert_allclose(cos.sum[j], sum(per), atol=1e-6)
        np.testing.assert_allclose(cos.max[j], max(per), atol=1e-6)
        np.testing.assert_allclose(cos.final[j], c @ final / np.linalg.norm(final), atol=1e-6)
    units = [dl / np.linalg.norm(dl) for dl in deltas if np.any(dl)]
    np.testing.assert_allclose(cos.null_sd_sum, np.linalg.norm(sum(units)) / math.sqrt(30))
    assert cos.null_sd("max") is None and cos.null_sd("final") == 1 / math.sqrt(30)
    with pytest.raises(ValueError, match="statistic"):
        cos.statistic("mean")
    with pytest.raises(ValueError, match="share d"):
        canary_cosines(can, deltas[:, :10], final)


def test_closed_form_null_of_never_inserted_canaries():
    """Canaries independent of correlated deltas: the sum statistic's spread is ‖Σu_t‖/√d
    (seeded; 4,000 canaries give the sd to about 1.1 %)."""
    g = np.random.default_rng(5)
    common = g.normal(size=400)
    deltas = common + 0.7 * g.normal(size=(6, 400))  # strongly correlated rounds
    cos = canary_cosines(draw_canary_clients(4000, 400, rng=6).directions, deltas, deltas[-1])
    assert cos.null_sd_sum > 2.0 / math.sqrt(400)  # far from the independent-rounds √T/√d
    np.testing.assert_allclose(cos.sum.std(), cos.null_sd_sum, rtol=0.05)
    np.testing.assert_allclose(cos.final.std(), cos.null_sd_final, rtol=0.05)
