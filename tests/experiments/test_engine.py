"""The sampling engine: determinism across executors and workers, checkpoints, blocks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dpaudit._rng import block_seeds
from dpaudit.errors import MissingDependencyError
from dpaudit.experiments.engine import (
    EngineRun,
    MultinomialBlock,
    NoisyArgmaxBlock,
    block_sizes,
    probabilities_key,
    run_blocks,
)
from dpaudit.mechanisms import argmax_probabilities

P = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])


@dataclasses.dataclass(frozen=True)
class CountingBlock:
    """Records each call in a list (serial executor only) and can fail at one block size."""

    calls: list
    fail_after: int | None = None

    def __call__(self, size, seed):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("interrupted")
        self.calls.append(size)
        return np.random.Generator(np.random.PCG64(seed)).multinomial(size, [0.25] * 4)


def _manual(n: int, block_size: int, seed: int) -> np.ndarray:
    """Naive oracle: the documented definition, block by block."""
    sizes = block_sizes(n, block_size)
    seeds = block_seeds(seed, len(sizes))
    total = 0
    for s, ss in zip(sizes, seeds, strict=True):
        total = total + np.random.Generator(np.random.PCG64(ss)).multinomial(s, P)
    return total


def test_block_sizes():
    assert block_sizes(10, 4) == [4, 4, 2]
    assert block_sizes(8, 4) == [4, 4]
    assert block_sizes(0, 3) == []
    with pytest.raises(ValueError, match="block_size"):
        block_sizes(5, 0)
    with pytest.raises(ValueError, match="n"):
        block_sizes(-1, 3)


def test_serial_matches_the_definition():
    run = run_blocks(MultinomialBlock(P), 10_001, rng=7, block_size=1000)
    assert isinstance(run, EngineRun)
    np.testing.assert_array_equal(run.counts, _manual(10_001, 1000, 7))
    assert run.num_blocks == 11 and run.computed_blocks == 11 and run.resumed_blocks == 0
    assert run.counts.sum(axis=-1).tolist() == [10_001, 10_001]
    assert run.seed == 7
    assert run.experiments_per_second > 0


@pytest.mark.parametrize(
    ("executor", "workers"), [("serial", 1), ("processes", 1), ("processes", 2), ("joblib", 2)]
)
def test_same_seed_same_counts_whatever_the_executor(executor, workers):
    ref = _manual(50_000, 4096, 3)
    run = run_blocks(MultinomialBlock(P), 50_000, rng=3, block_size=4096, executor=executor,
                     workers=workers)  # fmt: skip
    np.testing.assert_array_equal(run.counts, ref)
    assert run.executor == executor


def test_different_seed_or_block_size_changes_counts():
    a = run_blocks(MultinomialBlock(P), 20_000, rng=1, block_size=1000).counts
    b = run_blocks(MultinomialBlock(P), 20_000, rng=2, block_size=1000).counts
    c = run_blocks(MultinomialBlock(P), 20_000, rng=1, block_size=999).counts
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_checkpoint_resume_neither_loses_nor_double_counts(tmp_path):
    path = tmp_path / "ck.npz"
    ref = run_blocks(CountingBlock([]), 10_500, rng=5, block_size=1000).counts
    calls: list = []
    with pytest.raises(RuntimeError, match="interrupted"):
        run_blocks(CountingBlock(calls, fail_after=4), 10_500, rng=5, block_size=1000,
                   checkpoint=path, checkpoint_interval=1e9)  # fmt: skip
    assert len(calls) == 4 and path.exists()
    calls2: list = []
    run = run_blocks(CountingBlock(calls2), 10_500, rng=5, block_size=1000, checkpoint=path)
    np.testing.assert_array_equal(run.counts, ref)
    assert run.resumed_blocks == 4 and run.computed_blocks == 7
    assert len(calls2) == 7 and sum(calls) + sum(calls2) == 10_500
    # A finished checkpoint resumes to the same counts with nothing left to do.
    again = run_blocks(CountingBlock([]), 10_500, rng=5, block_size=1000, checkpoint=path)
    np.testing.assert_array_equal(again.counts, ref)
    assert again.computed_blocks == 0 and again.resumed_blocks == 11


def test_checkpoint_of_another_run_is_refused(tmp_path):
    path = tmp_path / "ck.npz"
    run_blocks(MultinomialBlock(P), 5000, rng=1, block_size=1000, checkpoint=path, key="a")
    with pytest.raises(ValueError, match="checkpoint"):
        run_blocks(MultinomialBlock(P), 5000, rng=2, block_size=1000, checkpoint=path, key="a")
    with pytest.raises(ValueError, match="key"):
        run_blocks(MultinomialBlock(P), 5000, rng=1, block_size=1000, checkpoint=path, key="b")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not an npz file")
    with pytest.raises(ValueError, match="checkpoint"):
        run_blocks(MultinomialBlock(P), 5000, rng=1, block_size=1000, checkpoint=bad)


def test_multinomial_block_is_exact_in_mean_and_validates():
    blk = MultinomialBlock(P)
    assert blk.shape == (2, 3)
    counts = run_blocks(blk, 2_000_000, rng=0, block_size=2**18).counts
    # Binomial 5-sigma band around the expected counts.
    n = 2_000_000
    np.testing.assert_array_less(np.abs(counts - n * P), 5 * np.sqrt(n * P * (1 - P)) + 1)
    with pytest.raises(ValueError, match="probabilities"):
        MultinomialBlock([0.5, 0.6])
    with pytest.raises(ValueError, match="probabilities"):
        MultinomialBlock([1.0])
    with pytest.raises(ValueError, match="probabilities"):
        MultinomialBlock([-0.5, 1.5])


def test_noisy_argmax_block_matches_exact_probabilities():
    votes = np.array([6.0, 4.0, 1.0])

    def sampler(gen, size):
        return np.tile(votes, (size, 1))

    blk = NoisyArgmaxBlock(sampler, 2.0, chunk=10_000)
    n = 300_000
    counts = run_blocks(blk, n, rng=11, block_size=65_536).counts
    q = argmax_probabilities(votes, 2.0)
    chi2 = float(np.sum((counts - n * q) ** 2 / (n * q)))
    assert stats.chi2.sf(chi2, 2) > 1e-4
    assert blk(0, np.random.SeedSequence(0)).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="sigma"):
        NoisyArgmaxBlock(sampler, 0.0)
    with pytest.raises(TypeError, match="histogram_sampler"):
        NoisyArgmaxBlock("not callable", 1.0)
    with pytest.raises(ValueError, match="histogram_sampler"):
        NoisyArgmaxBlock(lambda gen, size: np.zeros((size + 1, 3)), 1.0)(
            5, np.random.SeedSequence(0)
        )


def test_noisy_argmax_block_torch_backend():
    """torch noise (CPU here; CUDA with device="cuda"): exact in law, seeded, process-safe."""
    pytest.importorskip("torch")
    from dpaudit.attacks.parametric import PATEHistogramModel

    model = PATEHistogramModel([0.6, 0.3, 0.1], [0.2, 0.7, 0.1], 12, 12)
    pbar = model.output_distributions(3.0)
    n = 200_000
    for side in (0, 1):
        blk = NoisyArgmaxBlock(model.sampler(neighbour=bool(side)), 3.0, backend="torch")
        counts = run_blocks(blk, n, rng=side, block_size=65_536).counts
        expected = n * pbar[side]
        chi2 = float(np.sum((counts - expected) ** 2 / expected))
        assert stats.chi2.sf(chi2, 2) > 1e-4, (side, counts, expected)
    blk = NoisyArgmaxBlock(model.sampler(), 3.0, chunk=5000, backend="torch", device="cpu")
    a = run_blocks(blk, 30_000, rng=4, block_size=8192).counts
    b = run_blocks(blk, 30_000, rng=4, block_size=8192, executor="joblib", workers=2).counts
    np.testing.assert_array_equal(a, b)
    assert a.sum() == 30_000
    numpy_counts = run_blocks(NoisyArgmaxBlock(model.sampler(), 3.0, chunk=5000), 30_000, rng=4,
                              block_size=8192).counts  # fmt: skip
    assert not np.array_equal(a, numpy_counts)  # another generator: same law, other values
    assert blk(0, np.random.SeedSequence(0)).tolist() == [0, 0, 0]


def test_noisy_argmax_block_backend_validation():
    def sampler(gen, size):
        return np.zeros((size, 2))

    with pytest.raises(ValueError, match="backend"):
        NoisyArgmaxBlock(sampler, 1.0, backend="jax")
    with pytest.raises(ValueError, match="device"):
        NoisyArgmaxBlock(sampler, 1.0, device="cuda")
    with pytest.raises(TypeError, match="device"):
        NoisyArgmaxBlock(sampler, 1.0, backend="torch", device=0)


def test_run_blocks_validation():
    blk = MultinomialBlock(P)
    with pytest.raises(TypeError, match="block_fn"):
        run_blocks(42, 10)
    with pytest.raises(ValueError, match="n"):
        run_blocks(blk, 0)
    with pytest.raises(ValueError, match="executor"):
        run_blocks(blk, 10, executor="threads")
    with pytest.raises(ValueError, match="workers"):
        run_blocks(blk, 10, workers=0)
    with pytest.raises(ValueError, match="checkpoint_interval"):
        run_blocks(blk, 10, checkpoint_interval=-1)
    with pytest.raises(TypeError, match="key"):
        run_blocks(blk, 10, key=3)
    with pytest.raises(ValueError, match="shape"):
        run_blocks(lambda size, seed: np.zeros(size, dtype=np.int64), 10, block_size=3)


def test_ray_executor_needs_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="ray"):
            run_blocks(MultinomialBlock(P), 10, executor="ray")
    else:  # pragma: no cover - ray is not installed in CI
        run = run_blocks(MultinomialBlock(P), 10_000, rng=3, block_size=4096, executor="ray",
                         workers=2)  # fmt: skip
        np.testing.assert_array_equal(run.counts, _manual(10_000, 4096, 3))


def test_progress_bar_and_key():
    run = run_blocks(MultinomialBlock(P), 5000, rng=0, block_size=1000, progress=True)
    assert run.counts.sum() == 10_000
    assert probabilities_key(P) == probabilities_key(P.copy())
    assert probabilities_key(P) != probabilities_key(P[::-1])
