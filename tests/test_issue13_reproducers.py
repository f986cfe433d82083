"""The reproducers of issue 13 ("tried as an adversarial user would"), each kept as a test.

Each gives a correct value or a clear ``ValueError`` / ``TypeError`` naming the argument. The
CLI reproducers (``--sigma 1e300``, ``--out`` naming a file, ``--experiments 1e19``, TOML
strings for numbers, ``extract-histogram`` votes that disagree with ``--teachers``) are in
``tests/cli/test_cli_errors.py``; the contract over every public function is
``tests/test_input_contract.py``.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks import reconstruct_histogram
from dpaudit.bounds import (
    clopper_pearson,
    clopper_pearson_arrays,
    default_guess_counts,
    epsilon_from_confusion,
    one_run_epsilon,
    rdp_audit,
    rdp_k_cut,
)
from dpaudit.divergence import renyi_divergence_from_log, worst_case_neighbour_renyi
from dpaudit.mechanisms import argmax_probabilities, project_to_simplex, sample_argmax_counts

COUNTS = [600, 300, 100]
COUNTS_NB = [500, 350, 150]


@pytest.mark.parametrize("sigma", [5e-324, 1e-300, 1e-20])
def test_argmax_probabilities_at_vanishing_sigma_is_the_indicator(sigma):
    """Used to raise ZeroDivisionError (the quadrature's lattice divided by σ·h = 0)."""
    q = argmax_probabilities([200, 30, 20], sigma)
    np.testing.assert_allclose(q, [1.0, 0.0, 0.0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [1e19, 1e20, 1e300, 2.0**63])
def test_argmax_probabilities_far_above_the_vote_scale_is_uniform(scale):
    """Used to warn 'invalid value in cast' / raise OverflowError (issue 13: σ ≈ 1e19 times
    the vote scale): every class is equally likely in the limit."""
    np.testing.assert_allclose(argmax_probabilities([200, 30, 20], scale), [1 / 3] * 3, atol=1e-12)


def test_argmax_probabilities_on_a_million_classes_is_refused_with_the_estimate():
    """Used to ask for 334 GiB and die with MemoryError; now refused before allocating."""
    with pytest.raises(ValueError, match=r"votes with C=1000000 classes .* TiB of memory"):
        argmax_probabilities(np.arange(10**6), 1.0)


def test_project_to_simplex_of_nothing_is_a_value_error():
    with pytest.raises(ValueError, match="values"):
        project_to_simplex([])


@pytest.mark.parametrize("max_iter", [2**63, 2**62, 10**7])
def test_reconstruct_histogram_refuses_an_iteration_limit_slsqp_cannot_hold(max_iter):
    """max_iter=2**63 used to end in SLSQP's SystemError."""
    with pytest.raises(ValueError, match="max_iter"):
        reconstruct_histogram([700, 200, 100], 20.0, 45, intervals="none", max_iter=max_iter)


def test_epsilon_from_confusion_with_a_huge_count():
    """fn = 10**300 used to give ε = NaN silently: beyond int64 it is refused, and a count of
    2**62 (the non-detections swamp the detections) gives the correct bound 0."""
    with pytest.raises(ValueError, match="fn must be <= "):
        epsilon_from_confusion(400, 10**300, 50, 450)
    res = epsilon_from_confusion(400, 2**62, 50, 450)
    assert res.epsilon == 0.0 and 0 < res.tpr_lower < 1e-15


def test_clopper_pearson_with_a_huge_n():
    """n = 1e300 used to give (NaN, NaN)."""
    with pytest.raises(ValueError, match="n must be <= "):
        clopper_pearson(5, 1e300)
    # k ≪ n: the exact bounds are the Poisson (χ²) limits χ²_{2k}(β/2)/(2n) and
    # χ²_{2k+2}(1 − β/2)/(2n) to relative error ~k/n (scipy's binomtest, whose root search
    # has an absolute tolerance, is off by 50% here)
    for n in (2**40, 2**62):
        got = clopper_pearson(5, n)
        ref = [stats.chi2.ppf(0.025, 10) / (2 * n), stats.chi2.ppf(0.975, 12) / (2 * n)]
        np.testing.assert_allclose([got.low, got.high], ref, rtol=1e-9)


def test_rdp_k_cut_at_a_confidence_level_next_to_one():
    """confidence_level = 1 − 1e-16 used to warn 'invalid value in subtract' (χ² quantile of
    1 − β/K rounded to 1 = inf): the tail quantile is computed directly."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tight = rdp_k_cut(COUNTS, COUNTS_NB, [2.0], confidence_level=1 - 1e-16)
    loose = rdp_k_cut(COUNTS, COUNTS_NB, [2.0], confidence_level=0.95)
    assert np.all(np.isfinite(tight.epsilons)) and np.all(tight.epsilons <= loose.epsilons)


@pytest.mark.parametrize(
    "votes", [["200", "30", "20"], [True, False, True], [200 + 0j, 30, 20]], ids=str
)
def test_strings_bools_and_complex_numbers_are_not_numbers(votes):
    """check_array used to cast them (63 functions accepted them)."""
    with pytest.raises(TypeError, match="votes must contain real numbers"):
        argmax_probabilities(votes, 40.0)


def test_clopper_pearson_arrays_validates():
    """k > n used to give (NaN, 1.0) and alternative='bogus' a two-sided interval."""
    with pytest.raises(ValueError, match="k must be <= n"):
        clopper_pearson_arrays([5], [3])
    with pytest.raises(ValueError, match="alternative"):
        clopper_pearson_arrays([1], [3], alternative="bogus")
    with pytest.raises(ValueError, match="confidence_level"):
        clopper_pearson_arrays([1], [3], confidence_level=1.5)
    low, high = clopper_pearson_arrays([0, 5], [10, 10], confidence_level=0.9)
    ref = stats.binomtest(5, 10).proportion_ci(confidence_level=0.9, method="exact")
    np.testing.assert_allclose([low[1], high[1]], [ref.low, ref.high], rtol=1e-12)


def test_renyi_divergence_needs_normalised_log_probabilities():
    """An unnormalised Q used to give a negative divergence."""
    with pytest.raises(ValueError, match="log_q must be normalised"):
        renyi_divergence_from_log(np.log([0.5, 0.5]), np.log([1.0, 1.0]), [2.0])
    d = renyi_divergence_from_log(np.log([0.5, 0.5]), np.log([0.25, 0.75]), [2.0])
    np.testing.assert_allclose(d, [math.log(0.5**2 / 0.25 + 0.5**2 / 0.75)], rtol=1e-12)


def test_default_guess_counts_of_a_negative_number_is_an_error():
    """default_guess_counts(-1) used to return [-1]."""
    with pytest.raises(ValueError, match="num_canaries"):
        default_guess_counts(-1)
    with pytest.raises(TypeError, match="num_canaries"):
        default_guess_counts(2.5)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_sampling_with_one_draw_per_block_keeps_memory_constant():
    """n = 10**7 with block_size = 1 is 10**7 blocks: the engine derives each block's seed
    lazily, so memory does not grow with the number of blocks (checked on 400 blocks)."""
    peak = _peak_bytes(lambda: sample_argmax_counts([200, 30, 20], 40.0, 400, rng=0, block_size=1))
    assert peak < 1_000_000


def test_one_run_epsilon_with_delta_has_constant_memory_per_guess_count():
    """At δ > 0 it used to hold ~29 bytes per guess (24 GB seen); now O(1) beyond the
    log-factorial table's cap (LGAM_TABLE_MAX = 2**20 guesses, 8 MB)."""
    r = 10**7
    peak = _peak_bytes(lambda: one_run_epsilon(r, r, int(0.6 * r), delta=1e-9))
    assert peak < 16_000_000  # 29 bytes per guess would be 290 MB


def test_worst_case_neighbour_renyi_streams_the_neighbours(monkeypatch):
    """The neighbours are evaluated a chunk at a time (200 classes used to hold 2.8 GB):
    with a chunk of 7 the result is that of one pass over all of them."""
    import dpaudit.divergence as div

    votes, sigma, orders = [9, 7, 5, 3, 1, 0], 2.0, [1.5, 2.0, 20.0, np.inf]
    whole = worst_case_neighbour_renyi(votes, sigma, orders)
    monkeypatch.setattr(div, "NEIGHBOUR_CHUNK", 7)
    chunked = worst_case_neighbour_renyi(votes, sigma, orders)
    np.testing.assert_array_equal(chunked.epsilons, whole.epsilons)
    np.testing.assert_array_equal(chunked.neighbours, whole.neighbours)
    assert chunked.directions == whole.directions
    # brute force over all neighbours and both directions
    neigh = div.neighbouring_histograms(votes)
    lq = np.log(argmax_probabilities(votes, sigma))
    lqn = np.log(argmax_probabilities(neigh, sigma))
    both = np.maximum(
        renyi_divergence_from_log(lq[None, :], lqn, orders),
        renyi_divergence_from_log(lqn, lq[None, :], orders),
    )
    np.testing.assert_allclose(whole.epsilons, both.max(axis=0), rtol=1e-12)


def test_rdp_audit_split_beyond_numpys_hypergeometric_limit():
    """Queries of 10⁹ samples or more used to fail in numpy's multivariate hypergeometric
    sampler ('sum(colors) must be less than 1000000000'); they are split binomially."""
    big = [6 * 10**8, 3 * 10**8, 10**8 + 5]
    big_nb = [5 * 10**8, 35 * 10**7, 15 * 10**7 + 5]
    res = rdp_audit(big, big_nb, [2.0, 8.0], rng=0)
    assert np.all(np.isfinite(res.epsilons)) and np.all(res.epsilons > 0)
    # below the limit the hypergeometric draws, hence the seeded numbers, are unchanged
    small = rdp_audit(COUNTS, COUNTS_NB, [2.0, 8.0], rng=0)
    again = rdp_audit(COUNTS, COUNTS_NB, [2.0, 8.0], rng=0)
    np.testing.assert_array_equal(small.epsilons, again.epsilons)
