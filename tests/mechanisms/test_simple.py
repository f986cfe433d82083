"""Gaussian, Laplace and randomized-response mechanisms: samplers and exact privacy curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.divergence import renyi_divergence
from dpaudit.mechanisms.simple import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_renyi,
    laplace_delta,
    laplace_renyi,
    randomized_response_delta,
    randomized_response_probabilities,
    randomized_response_renyi,
    sample_gaussian_mechanism,
    sample_laplace_mechanism,
    sample_randomized_response,
    sample_randomized_response_counts,
)


def _renyi_quad(logp, logq, alpha, lo, hi, breaks=()):
    """D_α by quadrature of exp(α log p + (1−α) log q) (an oracle)."""
    val, _ = integrate.quad(
        lambda x: math.exp(alpha * logp(x) + (1 - alpha) * logq(x)),
        lo,
        hi,
        points=breaks or None,
        limit=200,
        epsabs=0,
        epsrel=1e-11,
    )
    return math.log(val) / (alpha - 1)


def _hockey_quad(logp, logq, eps, lo, hi, breaks=()):
    """δ(ε) = ∫ max(0, p − e^ε q) by quadrature (an oracle)."""
    val, _ = integrate.quad(
        lambda x: max(0.0, math.exp(logp(x)) - math.exp(eps + logq(x))),
        lo,
        hi,
        points=breaks or None,
        limit=200,
        epsabs=1e-14,
    )
    return val


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0])
def test_gaussian_renyi_matches_quadrature(alpha):
    sigma, d = 1.7, 1.3
    got = float(gaussian_renyi([alpha], sigma=sigma, sensitivity=d)[0])

    def logp(x):
        return stats.norm.logpdf(x, 0, sigma)

    def logq(x):
        return stats.norm.logpdf(x, d, sigma)

    assert got == pytest.approx(_renyi_quad(logp, logq, alpha, -40, 40), rel=1e-8)
    assert got == pytest.approx(alpha * d**2 / (2 * sigma**2), rel=1e-14)


def test_gaussian_renyi_edge_orders():
    out = gaussian_renyi([1.0, np.inf], sigma=2.0)
    assert out[0] == pytest.approx(1 / 8) and np.isinf(out[1])
    np.testing.assert_array_equal(gaussian_renyi([2.0, np.inf], sigma=1.0, sensitivity=0.0), 0.0)


def test_gaussian_delta_reference_and_quadrature():
    # formulas.md §3: ε(μ = 1, δ = 1e-5) = 4.377178; ε(μ = 0.5, δ = 1e-5) = 1.993091.
    assert gaussian_epsilon(1e-5, sigma=1.0) == pytest.approx(4.377178, abs=1e-6)
    assert gaussian_epsilon(1e-5, sigma=2.0) == pytest.approx(1.993091, abs=1e-6)
    assert gaussian_epsilon(1e-5, sigma=4.0, sensitivity=2.0) == pytest.approx(1.993091, abs=1e-6)

    def logp(x):
        return stats.norm.logpdf(x, 0, 1.0)

    def logq(x):
        return stats.norm.logpdf(x, 1.0, 1.0)

    for eps in (0.0, 0.5, 2.0):
        assert gaussian_delta(eps, sigma=1.0) == pytest.approx(
            _hockey_quad(logp, logq, eps, -30, 30), rel=1e-7, abs=1e-13
        )
    assert gaussian_epsilon(0.9, sigma=1.0) == 0.0
    assert gaussian_delta(1.0, sigma=1.0, sensitivity=0.0) == 0.0


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.0])
def test_laplace_renyi_matches_quadrature(alpha):
    b, d = 0.8, 1.0

    def logp(x):
        return stats.laplace.logpdf(x, 0, b)

    def logq(x):
        return stats.laplace.logpdf(x, d, b)

    got = float(laplace_renyi([alpha], scale=b, sensitivity=d)[0])
    assert got == pytest.approx(_renyi_quad(logp, logq, alpha, -60, 60, (0.0, d)), rel=1e-8)


def test_laplace_renyi_limits():
    r = 1.0 / 0.8
    out = laplace_renyi([1.0, np.inf, 1e6], scale=0.8)
    assert out[0] == pytest.approx(r + math.exp(-r) - 1)
    assert out[1] == pytest.approx(r)
    assert out[2] == pytest.approx(r, rel=1e-4)  # D_α → ε as α → ∞
    np.testing.assert_array_equal(laplace_renyi([2.0], scale=1.0, sensitivity=0.0), 0.0)


def test_laplace_delta_matches_quadrature():
    b = 0.5

    def logp(x):
        return stats.laplace.logpdf(x, 0, b)

    def logq(x):
        return stats.laplace.logpdf(x, 1.0, b)

    for eps in (0.0, 0.7, 1.9, 2.0, 3.0):
        assert laplace_delta(eps, scale=b) == pytest.approx(
            _hockey_quad(logp, logq, eps, -40, 40, (0.0, 1.0)), rel=1e-7, abs=1e-12
        )


# --------------------------------------------------------------------------------------------
# Randomized response
# --------------------------------------------------------------------------------------------


def test_rr_probabilities_reference():
    # formulas.md §7: RR C = 10, ε = 2: keep 0.4508530604, other 0.0610163266.
    p = randomized_response_probabilities(0, num_classes=10, epsilon=2.0)
    assert p[0] == pytest.approx(0.4508530604, abs=1e-10)
    np.testing.assert_allclose(p[1:], 0.0610163266, atol=1e-10)
    assert p.sum() == pytest.approx(1.0)
    batch = randomized_response_probabilities([[0, 2]], num_classes=3, epsilon=50.0)
    assert batch.shape == (1, 2, 3)
    np.testing.assert_allclose(batch[0, 1], [0, 0, 1], atol=1e-20)
    np.testing.assert_allclose(
        randomized_response_probabilities(1, num_classes=4, epsilon=0.0), 0.25
    )


@pytest.mark.parametrize("c", [2, 3, 10])
def test_rr_renyi_matches_naive_sum(c):
    orders = np.array([1.0, 1.5, 2.0, 10.0, 100.0, np.inf])
    p = randomized_response_probabilities(0, num_classes=c, epsilon=1.3)
    q = randomized_response_probabilities(1, num_classes=c, epsilon=1.3)
    got = randomized_response_renyi(orders, num_classes=c, epsilon=1.3)
    naive = [float(np.sum(p * np.log(p / q)))]
    naive += [math.log(np.sum(p**a * q ** (1 - a))) / (a - 1) for a in orders[1:-1]]
    naive += [1.3]
    np.testing.assert_allclose(got, naive, rtol=1e-12)
    np.testing.assert_allclose(got, renyi_divergence(p, q, orders), rtol=1e-10)
    np.testing.assert_array_equal(randomized_response_renyi([2.0], num_classes=c, epsilon=0.0), 0)


def test_rr_delta_matches_naive_sum():
    p = randomized_response_probabilities(0, num_classes=5, epsilon=2.0)
    q = randomized_response_probabilities(1, num_classes=5, epsilon=2.0)
    for ep in (0.0, 0.5, 1.99, 2.0, 3.0):
        naive = float(np.sum(np.maximum(p - math.exp(ep) * q, 0.0)))
        assert randomized_response_delta(ep, num_classes=5, epsilon=2.0) == pytest.approx(
            naive, abs=1e-15
        )


def test_rr_samplers_distribution():
    out = sample_randomized_response(2, 40000, num_classes=5, epsilon=1.0, rng=3)
    assert out.dtype == np.int64 and out.min() >= 0 and out.max() < 5
    p = randomized_response_probabilities(2, num_classes=5, epsilon=1.0)
    freq = np.bincount(out, minlength=5)
    assert stats.chisquare(freq, 40000 * p).pvalue > 1e-3
    counts = sample_randomized_response_counts(2, 40000, num_classes=5, epsilon=1.0, rng=4)
    assert counts.sum() == 40000 and stats.chisquare(counts, 40000 * p).pvalue > 1e-3
    np.testing.assert_array_equal(
        sample_randomized_response(2, 10, num_classes=5, epsilon=1.0, rng=9),
        sample_randomized_response(2, 10, num_classes=5, epsilon=1.0, rng=9),
    )
    assert sample_randomized_response(0, 0, num_classes=3, epsilon=1.0, rng=0).shape == (0,)


def test_continuous_samplers_moments_and_shapes():
    g = sample_gaussian_mechanism([1.0, -2.0], 2.0, 50000, rng=1)
    assert g.shape == (50000, 2)
    np.testing.assert_allclose(g.mean(axis=0), [1.0, -2.0], atol=0.04)
    np.testing.assert_allclose(g.std(axis=0), 2.0, rtol=0.02)
    lap = sample_laplace_mechanism(3.0, 0.5, 50000, rng=2)
    assert lap.shape == (50000,)
    assert lap.mean() == pytest.approx(3.0, abs=0.02)
    assert lap.var() == pytest.approx(2 * 0.25, rel=0.05)
    np.testing.assert_array_equal(
        sample_gaussian_mechanism(0.0, 1.0, 5, rng=7), sample_gaussian_mechanism(0.0, 1.0, 5, rng=7)
    )


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: sample_gaussian_mechanism(0.0, 0.0, 3), ValueError, "sigma"),
        (lambda: sample_gaussian_mechanism(np.nan, 1.0, 3), ValueError, "value"),
        (lambda: sample_gaussian_mechanism(0.0, 1.0, -1), ValueError, "n"),
        (lambda: sample_gaussian_mechanism(0.0, 1.0, 2.5), TypeError, "n"),
        (lambda: sample_laplace_mechanism(0.0, -1.0, 3), ValueError, "scale"),
        (lambda: gaussian_renyi([1.0 - 1e-9], sigma=1.0), ValueError, "orders"),
        (lambda: gaussian_renyi([2.0], sigma=-1.0), ValueError, "sigma"),
        (lambda: gaussian_renyi([2.0], sigma=1.0, sensitivity=-1.0), ValueError, "sensitivity"),
        (lambda: gaussian_delta(-0.1, sigma=1.0), ValueError, "epsilon"),
        (lambda: gaussian_epsilon(0.0, sigma=1.0), ValueError, "delta"),
        (lambda: gaussian_epsilon(1.0, sigma=1.0), ValueError, "delta"),
        (lambda: laplace_renyi([np.nan], scale=1.0), ValueError, "orders"),
        (lambda: laplace_delta(1.0, scale=0.0), ValueError, "scale"),
        (
            lambda: randomized_response_probabilities(3, num_classes=3, epsilon=1.0),
            ValueError,
            "label",
        ),
        (
            lambda: randomized_response_probabilities(0.5, num_classes=3, epsilon=1.0),
            ValueError,
            "label",
        ),
        (
            lambda: randomized_response_probabilities(0, num_classes=1, epsilon=1.0),
            ValueError,
            "num_classes",
        ),
        (
            lambda: randomized_response_probabilities(0, num_classes=3, epsilon=-1.0),
            ValueError,
            "epsilon",
        ),
        (
            lambda: randomized_response_renyi([0.5], num_classes=3, epsilon=1.0),
            ValueError,
            "orders",
        ),
        (
            lambda: randomized_response_delta(-1.0, num_classes=3, epsilon=1.0),
            ValueError,
            "epsilon_prime",
        ),
        (lambda: sample_randomized_response(0, -5, num_classes=3, epsilon=1.0), ValueError, "n"),
        (
            lambda: sample_randomized_response_counts(-1, 5, num_classes=3, epsilon=1.0),
            ValueError,
            "label",
        ),
        (
            lambda: sample_randomized_response(0, 5, num_classes=3, epsilon=1.0, rng="x"),
            TypeError,
            "rng",
        ),
        (lambda: gaussian_delta("1", sigma=1.0), TypeError, "epsilon"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------------ issue 28


def test_issue28_label_message_names_num_classes():
    with pytest.raises(ValueError, match=r"label must be in \[0, num_classes=2\), got 3"):
        randomized_response_probabilities(3, num_classes=2, epsilon=1.0)


def test_issue28_randomized_response_order_grid_is_capped():
    with pytest.raises(ValueError, match=r"orders=<200000 orders>.*MAX_RR_ORDERS"):
        randomized_response_renyi(np.linspace(2, 100, 200_000), num_classes=3, epsilon=1.0)


def test_issue28_confident_gnmax_refuses_a_negative_threshold():
    from dpaudit.mechanisms import ConfidentGNMax

    with pytest.raises(ValueError, match=r"threshold must be non-negative, got -1.0"):
        ConfidentGNMax(-1.0, 100.0, 40.0)
    assert ConfidentGNMax(0.0, 100.0, 40.0).threshold == 0.0
