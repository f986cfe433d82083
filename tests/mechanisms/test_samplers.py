"""Samplers: agreement with Q(H), chunking invariance, exact sampler, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit._rng import block_seeds
from dpaudit.mechanisms import (
    argmax_probabilities,
    sample_argmax_block,
    sample_argmax_counts,
    sample_argmax_counts_exact,
    sample_argmax_counts_from,
)

HISTS = [
    ([4, 7, 6, 8, 4, 2, 0, 214, 4, 1], 40.0),  # high consensus: thinning path
    ([19, 7, 31, 7, 78, 4, 90, 10, 3, 1], 40.0),  # low consensus: explicit path
    ([100, 0, 0], 20.0),
    ([14, 12, 10, 8, 6], 2.0),
]


def chi2_pvalue(counts, probs):
    n = counts.sum()
    e = n * probs
    keep = e >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    exp = np.r_[e[keep], e[~keep].sum()]
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize(("votes", "sigma"), HISTS)
def test_monte_carlo_agrees_with_exact_probabilities(votes, sigma):
    counts = sample_argmax_counts(votes, sigma, 400_000, rng=11, block_size=100_000)
    assert counts.sum() == 400_000
    assert chi2_pvalue(counts, argmax_probabilities(votes, sigma)) > 1e-4


@pytest.mark.parametrize(("votes", "sigma"), HISTS)
def test_exact_sampler_agrees_with_monte_carlo(votes, sigma):
    exact = sample_argmax_counts_exact(votes, sigma, 400_000, rng=3)
    mc = sample_argmax_counts(votes, sigma, 400_000, rng=4)
    table = np.stack([exact, mc])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > 1e-4


def test_same_seed_same_counts_whatever_the_block_schedule():
    votes, sigma = [4, 7, 6, 8, 4, 2, 0, 214, 4, 1], 40.0
    block = 50_000
    whole = sample_argmax_counts(votes, sigma, 4 * block + 123, rng=7, block_size=block)
    seeds = block_seeds(7, 5)
    v = (np.asarray(votes, float) / sigma)[None, :]
    v = v - v.max()
    parts = [sample_argmax_block(v, block, seeds[b]) for b in (3, 0, 2, 1)]
    parts.append(sample_argmax_block(v, 123, seeds[4]))
    np.testing.assert_array_equal(whole, np.sum(parts, axis=0)[0])
    again = sample_argmax_counts(votes, sigma, 4 * block + 123, rng=7, block_size=block)
    np.testing.assert_array_equal(whole, again)


def test_batch_rows_do_not_depend_on_each_other():
    a = sample_argmax_counts([[4, 7, 214], [19, 31, 90]], 40.0, 20_000, rng=3)
    b = sample_argmax_counts([[4, 7, 214], [1, 1, 1]], 40.0, 20_000, rng=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert a.shape == (2, 3) and np.all(a.sum(axis=1) == 20_000)


def test_histogram_sampler_variant():
    fixed = np.array([30.0, 25.0, 10.0])

    def constant(gen, size):
        return np.broadcast_to(fixed, (size, 3))

    counts = sample_argmax_counts_from(constant, 6.0, 200_000, rng=1, block_size=30_000)
    assert chi2_pvalue(counts, argmax_probabilities(fixed, 6.0)) > 1e-4

    def binomial(gen, size):  # one teacher of 31 flips between classes 0 and 1
        h = np.tile([30.0, 25.0, 10.0], (size, 1))
        flip = gen.random(size) < 0.5
        h[flip, 0] -= 1
        h[flip, 1] += 1
        return h

    counts = sample_argmax_counts_from(binomial, 6.0, 200_000, rng=2)
    mix = 0.5 * argmax_probabilities([30, 25, 10], 6.0) + 0.5 * argmax_probabilities(
        [29, 26, 10], 6.0
    )
    assert chi2_pvalue(counts, mix) > 1e-4
    again = sample_argmax_counts_from(binomial, 6.0, 200_000, rng=2)
    np.testing.assert_array_equal(counts, again)


def test_exact_sampler_sums_and_is_seeded():
    a = sample_argmax_counts_exact([200, 30, 20], 40.0, 10**8, rng=0)
    b = sample_argmax_counts_exact([200, 30, 20], 40.0, 10**8, rng=0)
    assert a.sum() == 10**8
    np.testing.assert_array_equal(a, b)
    batch = sample_argmax_counts_exact([[200, 30, 20], [1, 1, 1]], 40.0, 1000, rng=0)
    assert batch.shape == (2, 3)


def test_torch_backend_agrees_in_distribution():
    pytest.importorskip("torch")
    counts = sample_argmax_counts([19, 7, 31, 7, 78], 20.0, 200_000, rng=5, backend="torch")
    assert counts.sum() == 200_000
    assert chi2_pvalue(counts, argmax_probabilities([19, 7, 31, 7, 78], 20.0)) > 1e-4


@pytest.mark.gpu
def test_torch_cuda_backend():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    counts = sample_argmax_counts([19, 7, 31], 20.0, 10**6, rng=5, backend="torch", device="cuda")
    assert chi2_pvalue(counts, argmax_probabilities([19, 7, 31], 20.0)) > 1e-4


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n": -1}, ValueError, "n"),
        ({"n": 2.5}, TypeError, "n"),
        ({"sigma": 0.0}, ValueError, "sigma"),
        ({"backend": "jax"}, ValueError, "backend"),
        ({"block_size": 0}, ValueError, "block_size"),
        ({"votes": [1, float("nan")]}, ValueError, "votes"),
        ({"rng": -3}, ValueError, "rng"),
        ({"rng": "seed"}, TypeError, "rng"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = {"votes": [3, 2, 1], "sigma": 1.0, "n": 10, "rng": 0}
    args.update(kwargs)
    votes, sigma, n = args.pop("votes"), args.pop("sigma"), args.pop("n")
    with pytest.raises(exc, match=match):
        sample_argmax_counts(votes, sigma, n, **args)


def test_bad_histogram_sampler():
    with pytest.raises(TypeError, match="histogram_sampler"):
        sample_argmax_counts_from("nope", 1.0, 10)
    with pytest.raises(ValueError, match="histogram_sampler"):
        sample_argmax_counts_from(lambda g, s: np.zeros((s, 1)), 1.0, 10)
    with pytest.raises(ValueError, match="n"):
        sample_argmax_counts_exact([1, 2], 1.0, -5)
