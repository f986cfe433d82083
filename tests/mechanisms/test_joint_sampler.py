"""The joint-law (ziggurat) noisy-argmax sampler: rigorous envelope, alias table, exact law
(χ² against Q(H)), tails, classes that cannot win, and when the Monte-Carlo kernel uses it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.mechanisms import _joint, argmax_probabilities, sample_argmax_counts
from dpaudit.mechanisms import noisy_argmax as na
from stats_support import chi2_pvalue

LOW = [19, 7, 31, 7, 78, 4, 90, 10, 3, 1]
HIGH = [4, 7, 6, 8, 4, 2, 0, 214, 4, 1]


def standardised(votes, sigma):
    v = np.asarray(votes, dtype=float) / sigma
    return v - v.max()


def density(t, v, j):
    """g_j(t) = φ(t − v_j) ∏_{i≠j} Φ(t − v_i), straight from scipy.stats."""
    others = np.delete(v, j)
    return stats.norm.pdf(t - v[j]) * np.prod(stats.norm.cdf(t[:, None] - others), axis=1)


@pytest.mark.parametrize(
    ("votes", "sigma"), [(LOW, 40.0), (HIGH, 40.0), ([3, 3, 2, 0], 1.0), ([5, 4], 0.5)]
)
def test_envelope_brackets_the_joint_density_on_every_bin(votes, sigma):
    v = standardised(votes, sigma)
    tab = _joint.joint_table(v)
    c = v.size
    lower = tab.lower.reshape(tab.n_bins, c)
    upper = tab.upper.reshape(tab.n_bins, c)
    assert np.all(lower <= upper) and np.all(lower >= 0)
    frac = np.linspace(0.0, 1.0, 9)
    t = tab.lo + _joint.WIDTH * (np.arange(tab.n_bins)[:, None] + frac).ravel()
    for j in range(c):
        g = density(t, v, j).reshape(tab.n_bins, frac.size)
        assert np.all(g <= upper[:, j, None] * (1 + 1e-9)), j
        assert np.all(g >= lower[:, j, None] * (1 - 1e-9)), j
    # The sure mass is below 1, sure + maybe above it; the tails are ≲ 1e-14 each.
    sure, maybe = tab.sure.sum(), tab.cum[-1]
    assert sure < 1.0 < sure + maybe
    assert maybe < 0.02
    assert np.all(np.diff(tab.cum[-2 * c - 1 :]) <= 1e-13)
    # Riemann sums of the bounds bracket Q(H).
    q = argmax_probabilities(votes, sigma)
    assert np.all(tab.sure <= q + 1e-15)
    assert np.all(q <= upper.sum(axis=0) * _joint.WIDTH + 1e-13)


def test_alias_table_reproduces_its_weights():
    rng = np.random.default_rng(0)
    for size in (2, 3, 11, 16, 17):
        p = rng.dirichlet(np.ones(size))
        p[1:][rng.random(size - 1) < 0.2] = 0.0
        p /= p.sum()
        thr, alias = _joint._alias(p)
        k = thr.size
        assert k >= size and k & (k - 1) == 0
        implied = np.bincount(np.arange(k), weights=thr / k, minlength=k)
        implied += np.bincount(alias, weights=(1 - thr) / k, minlength=k)
        np.testing.assert_allclose(implied[:size], p, rtol=0, atol=1e-15)
        assert np.all(implied[size:] <= 1e-15)


CASES = [
    (LOW, 40.0, {}),
    (HIGH, 40.0, {}),
    ([3, 3, 2, 0], 1.0, {}),  # a tie at the top
    ([5, 4], 0.5, {}),  # C = 2
    ([200] + [190] * 3 + [0] * 46, 3.0, {}),  # C = 50
    # Narrow bin ranges put most of the mass in the normal tails (exact all the same).
    (LOW, 40.0, {"lo": -0.5, "hi": 0.5}),
    (HIGH, 40.0, {"lo": -0.25, "hi": 0.25}),
    ([3, 3, 2, 0], 1.0, {"lo": 0.0, "hi": 0.5}),
]


@pytest.mark.parametrize(("votes", "sigma", "rng_kw"), CASES)
def test_joint_sampler_has_the_exact_law(votes, sigma, rng_kw):
    v = standardised(votes, sigma)
    tab = _joint.joint_table(v, **rng_kw)
    gen = np.random.default_rng(5)
    n = 1_000_000
    counts = _joint.sample_joint(tab, n, gen)
    assert counts.sum() == n and counts.dtype == np.int64
    assert chi2_pvalue(counts, argmax_probabilities(votes, sigma)) > 1e-4


@pytest.mark.parametrize("rng_kw", [{}, {"lo": -1.0, "hi": 0.0}])
def test_a_class_at_minus_infinity_never_wins(rng_kw):
    v = np.array([0.0, -np.inf, -1.0, -np.inf])
    tab = _joint.joint_table(v, **rng_kw)
    counts = _joint.sample_joint(tab, 400_000, np.random.default_rng(2))
    assert counts[1] == 0 and counts[3] == 0 and counts.sum() == 400_000
    q = argmax_probabilities([0.0, -1.0], 1.0)
    assert chi2_pvalue(counts[[0, 2]], q) > 1e-4


def test_monte_carlo_kernel_uses_it_where_it_pays_and_keeps_the_law():
    v = standardised(LOW, 40.0)
    assert na._thinning_plan(v, 10**6).joint  # the benchmark's low-consensus case
    assert not na._thinning_plan(v, 10**3).joint  # too few draws to build the table
    assert not na._thinning_plan(standardised(HIGH, 40.0), 10**6).joint
    many = standardised(list(range(2000)), 1.0)
    assert _joint.cells_estimate(many) > _joint.MAX_CELLS
    assert not na._thinning_plan(many, 10**8).joint
    n = 2_000_000
    counts = sample_argmax_counts(LOW, 40.0, n, rng=3, block_size=10**6)
    assert chi2_pvalue(counts, argmax_probabilities(LOW, 40.0)) > 1e-4
    again = sample_argmax_counts(LOW, 40.0, n, rng=3, block_size=10**6)
    np.testing.assert_array_equal(counts, again)
