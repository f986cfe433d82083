"""Samplers: agreement with Q(H), chunking invariance, exact sampler, the engine's kernels,
bad input."""

from __future__ import annotations

import contextlib
import signal

import numpy as np
import pytest
from scipy import stats

from dpaudit._rng import block_seeds
from dpaudit.engine import run_blocks
from dpaudit.mechanisms import (
    ArgmaxBlock,
    NoisyArgmaxBlock,
    argmax_probabilities,
    sample_argmax_block,
    sample_argmax_counts,
    sample_argmax_counts_exact,
    sample_argmax_counts_from,
)
from stats_support import chi2_pvalue

HISTS = [
    ([4, 7, 6, 8, 4, 2, 0, 214, 4, 1], 40.0),  # high consensus: thinning path
    ([19, 7, 31, 7, 78, 4, 90, 10, 3, 1], 40.0),  # low consensus: explicit path
    ([100, 0, 0], 20.0),
    ([14, 12, 10, 8, 6], 2.0),
]


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


def test_device_is_for_the_torch_backend_only():
    with pytest.raises(ValueError, match="device"):
        sample_argmax_counts([3, 2, 1], 1.0, 10, rng=0, device="cuda")
    with pytest.raises(TypeError, match="device"):
        sample_argmax_counts([3, 2, 1], 1.0, 10, rng=0, backend="torch", device=0)


def test_samplers_are_the_engine_with_a_kernel():
    """One sampling path: the samplers are run_blocks over the mechanisms' kernels, so the
    kernels through a parallel executor give the samplers' counts."""
    votes, sigma = [[4, 7, 214], [19, 31, 90]], 40.0
    run = run_blocks(ArgmaxBlock(votes, sigma), 30_001, rng=5, block_size=4096,
                     executor="joblib", workers=2)  # fmt: skip
    np.testing.assert_array_equal(
        run.counts, sample_argmax_counts(votes, sigma, 30_001, rng=5, block_size=4096)
    )

    def flips(gen, size):
        h = np.tile([30.0, 25.0, 10.0], (size, 1))
        h[gen.random(size) < 0.5, :2] += [-1, 1]
        return h

    counts = sample_argmax_counts_from(flips, 6.0, 30_001, rng=2, block_size=4096)
    run = run_blocks(NoisyArgmaxBlock(flips, 6.0, chunk=4096), 30_001, rng=2, block_size=4096)
    np.testing.assert_array_equal(run.counts, counts)


def test_bad_histogram_sampler():
    with pytest.raises(TypeError, match="histogram_sampler"):
        sample_argmax_counts_from("nope", 1.0, 10)
    with pytest.raises(ValueError, match="histogram_sampler"):
        sample_argmax_counts_from(lambda g, s: np.zeros((s, 1)), 1.0, 10)
    with pytest.raises(ValueError, match="non-finite"):
        sample_argmax_counts_from(lambda g, s: np.full((s, 2), np.inf), 1.0, 10)
    with pytest.raises(ValueError, match="sigma"):
        sample_argmax_counts_from(lambda g, s: np.zeros((s, 2)), -1.0, 10)
    with pytest.raises(ValueError, match="n"):
        sample_argmax_counts_exact([1, 2], 1.0, -5)


# Small σ and (near-)unanimous votes: the thinned classes have exceedance probabilities far
# below 1e-18, where numpy's geometric draws saturate at INT64_MAX. Before the gaps were
# capped their cumulative sum overflowed to negative positions (IndexError, or an endless
# refill loop). Each case below finishes in well under a second.
EXTREME = [
    ([250] + [0] * 9, 20.0),  # unanimous, C = 10: thinned p = Φ̄(12.5 − gap) ≈ 1e-20
    ([30, 29, 28, 27, 26, 25, 24, 23, 22, 0], 2.0),  # one class 15 s.d. below the others
    ([250, 0, 0, 0], 1.0),  # p underflows to exactly 0 for the thinned classes
    ([20, 19, 0, 0, 0, 0], 1.0),  # two contenders, the rest ≈ 20 s.d. below
    ([200] + [190] * 3 + [0] * 96, 3.0),  # C = 100, high consensus
]


@contextlib.contextmanager
def time_limit(seconds: float):
    """Fail instead of hanging (the refill loop of the old sampler never ended)."""

    def expire(signum, frame):
        raise TimeoutError(f"did not finish within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize(("votes", "sigma"), EXTREME)
def test_monte_carlo_small_sigma_high_consensus(votes, sigma):
    n = 200_000
    with time_limit(30):
        counts = sample_argmax_counts(votes, sigma, n, rng=1, block_size=70_000)
    assert counts.sum() == n
    q = argmax_probabilities(votes, sigma)
    # Binomial tolerance per class: 5 s.d. plus one count (seeded, so deterministic).
    tol = 5 * np.sqrt(n * q * (1 - q)) + 1
    assert np.all(np.abs(counts - n * q) <= tol), (counts, n * q)
    if np.sum(n * q >= 5) >= 2:  # a χ² test needs two cells with enough expected counts
        assert chi2_pvalue(counts, q) > 1e-4


def test_bernoulli_positions_tiny_probabilities():
    """Success indices stay in range and keep their law when gaps exceed the int64 range."""
    from dpaudit.mechanisms.noisy_argmax import _bernoulli_positions

    gen = np.random.default_rng(0)
    for p in (1e-15, 1e-18, 1e-19, 1e-30, 1e-300, 5e-324):
        for size in (1, 1000, 10**6):
            pos = _bernoulli_positions(gen, size, p)
            assert pos.dtype == np.int64 and np.all((pos >= 0) & (pos < size))
    # A moderate p for the law: the number of successes is Binomial(size, p).
    size, p = 10**5, 3e-3
    hits = [_bernoulli_positions(gen, size, p).size for _ in range(400)]
    assert abs(np.mean(hits) - size * p) <= 5 * np.sqrt(size * p * (1 - p) / 400)
    pos = _bernoulli_positions(gen, size, p)
    assert np.all(np.diff(pos) > 0)


def _forced_plans(v):
    """Thinning plans covering every branch of the Monte-Carlo kernel for standardised v:
    all explicit; one or two explicit classes with a single high threshold (fill-in in ~30%
    of draws), a single low one, and a bucket grid starting above most draws."""
    from dpaudit.mechanisms.noisy_argmax import _BUCKET_WIDTH, _Plan

    order = np.argsort(-v, kind="stable")
    yield _Plan(order, order[:0], np.empty(0), np.empty((0, 0)), np.empty(0))
    for m in (1, 2):
        e, r = order[:m], np.sort(order[m:])
        for taus in (
            np.array([v.max() - 0.5]),
            np.array([v.max() - 3.0]),
            v.max() - 1.0 + _BUCKET_WIDTH * np.arange(12),
        ):
            p_cross = stats.norm.cdf(v[r] - taus[:, None])
            yield _Plan(e, r, taus, p_cross, stats.norm.cdf(taus[0] - v[r]))


@pytest.mark.parametrize(("votes", "sigma"), [HISTS[1], HISTS[3], ([3, 3, 2, 0], 1.0)])
def test_every_thinning_plan_has_the_exact_law(votes, sigma, monkeypatch):
    """The plan (explicit set, thresholds) changes the cost only: each forced plan must
    reproduce Q(H) (the cost model would rarely choose the costly ones)."""
    from dpaudit.mechanisms import noisy_argmax

    v = np.asarray(votes, float) / sigma
    v = v - v.max()
    q = argmax_probabilities(votes, sigma)
    for k, plan in enumerate(_forced_plans(v)):
        monkeypatch.setattr(noisy_argmax, "_thinning_plan", lambda v, size, plan=plan: plan)
        counts = sample_argmax_counts(votes, sigma, 300_000, rng=20 + k, block_size=100_000)
        assert counts.sum() == 300_000
        assert chi2_pvalue(counts, q) > 1e-4, (k, plan.explicit, plan.taus)


# ------------------------------------------------------------------------- work caps


def test_issue28_huge_n_is_refused_before_any_draw():
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"n=1125899906842624 .*MAX_SAMPLE_DRAWS"):
        sample_argmax_counts([200, 30, 20], 40.0, 2**50, rng=0)
    with pytest.raises(ValueError, match=r"n=1125899906842624 .*MAX_SAMPLE_DRAWS"):
        sample_argmax_counts_from(lambda g, s: np.tile([3.0, 0.0], (s, 1)), 1.0, 2**50, rng=0)
    assert time.perf_counter() - start < 2.0
    # the exact sampler is O(C) whatever n: the suggested way out
    assert sample_argmax_counts_exact([200, 30, 20], 40.0, 2**50, rng=0).sum() == 2**50


def test_issue28_draw_cap_counts_histograms_and_classes_and_can_be_raised(monkeypatch):
    from dpaudit.mechanisms import noisy_argmax

    monkeypatch.setattr(noisy_argmax, "MAX_SAMPLE_DRAWS", 600)
    assert sample_argmax_counts([200, 30, 20], 40.0, 200, rng=0).sum() == 200
    with pytest.raises(ValueError, match=r"about 1.2e\+03 class draws.*cap of 600"):
        sample_argmax_counts([[200, 30, 20], [1, 1, 1]], 40.0, 200, rng=0)
    monkeypatch.setattr(noisy_argmax, "MAX_SAMPLE_DRAWS", 1200)
    assert sample_argmax_counts([[200, 30, 20], [1, 1, 1]], 40.0, 200, rng=0).sum() == 400
