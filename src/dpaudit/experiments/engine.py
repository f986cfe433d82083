"""The sampling engine: many Monte-Carlo experiments, split into seeded blocks (layer 7).

Auditing private prediction needs about 10^8 experiments per query and 10^3 queries (paper
000 §5). The engine runs a *block function* ``f(size, seed) -> counts`` over fixed-size
blocks and sums the counts:

* ``n`` experiments are cut into ``⌈n / block_size⌉`` blocks of ``block_size`` (the last one
  shorter); block ``b`` receives the ``b``-th child of ``SeedSequence(seed).spawn`` through
  :func:`dpaudit._rng.block_seeds`. A block's counts depend only on its size and its seed,
  and integer sums do not depend on the order of addition, so the **same seed gives the same
  counts whatever the executor, the number of workers or the order in which blocks finish**
  (design.md, "The sampling engine").
* Executors: ``"serial"`` (this process), ``"processes"`` (``concurrent.futures`` with
  spawned local processes), ``"joblib"`` (loky local processes) and ``"ray"`` (a Ray
  cluster; install Ray, imported lazily). Block functions must be picklable for the last
  three: use module-level callables such as :class:`MultinomialBlock` or
  :class:`NoisyArgmaxBlock`.
* Checkpoints: with ``checkpoint=path`` the running sum and the set of finished blocks are
  written together, atomically (temporary file + ``os.replace``), to an ``.npz`` file. A run
  interrupted at any point resumes from it: finished blocks are never recomputed and never
  counted twice; a block that was running when the run stopped is simply run again.
* A rich progress bar over blocks is optional (``progress=True``; the ``cli`` extra).

Two ready-made block functions cover the private-prediction audit:

* :class:`MultinomialBlock` — experiments whose single output has a *known* distribution
  ``p`` (a batch of them): counts ``~ Multinomial(size, p)``, exact in distribution and O(C)
  per block whatever its size. This is the exact shortcut of design.md for the noisy argmax,
  with ``p = Q(H)`` for a fixed histogram or ``p = E_H[Q(H)]`` for the parametric histogram
  models of paper 000 §5.1–5.2 (each experiment draws a fresh histogram, so its output is
  one draw from the mixture ``E_H[Q(H)]``).
* :class:`NoisyArgmaxBlock` — the direct simulation: a fresh histogram per experiment from a
  ``histogram_sampler(gen, size)`` plus Gaussian noise, then the argmax; the noise and the
  argmax run in numpy (default) or, with ``backend="torch"``, on a torch device (CPU or CUDA).

Example:
    >>> run = run_blocks(MultinomialBlock([0.5, 0.3, 0.2]), 10**6, rng=0, block_size=2**18)
    >>> int(run.counts.sum()), run.num_blocks
    (1000000, 4)
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, block_seeds
from dpaudit._typing import ArrayLike, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.errors import require

__all__ = [
    "BACKENDS",
    "DEFAULT_ENGINE_BLOCK_SIZE",
    "EXECUTORS",
    "EngineRun",
    "MultinomialBlock",
    "NoisyArgmaxBlock",
    "block_sizes",
    "probabilities_key",
    "run_blocks",
]

#: Experiments per block unless told otherwise (2^20: ≈ 92 MB of noise for C = 10 in the
#: direct simulation; nothing for the multinomial shortcut).
DEFAULT_ENGINE_BLOCK_SIZE = 2**20
EXECUTORS: tuple[str, ...] = ("serial", "processes", "joblib", "ray")
#: Backends of :class:`NoisyArgmaxBlock` (torch: CPU or CUDA, the ``torch`` extra).
BACKENDS: tuple[str, ...] = ("numpy", "torch")
_CHECKPOINT_VERSION = 1

BlockFunction = Callable[[int, np.random.SeedSequence], ArrayLike]


# ------------------------------------------------------------------------------ block functions


def _generator(seed: np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


@dataclasses.dataclass(frozen=True, eq=False)
class MultinomialBlock:
    """Counts of ``size`` experiments whose output has a known distribution: Multinomial.

    If every experiment independently outputs class ``c`` with probability ``p_c``, the
    counts of ``size`` experiments are exactly ``Multinomial(size, p)``. For a batch
    ``p`` of shape ``(..., C)`` each row is sampled independently (one generator per block).

    Attributes:
        probabilities: ``(..., C)`` non-negative rows, renormalised to sum to 1 (they must
            already sum to 1 within 1e-9).

    Example:
        >>> blk = MultinomialBlock([[0.9, 0.1], [0.5, 0.5]])
        >>> blk(1000, np.random.SeedSequence(0)).sum(axis=-1).tolist()
        [1000, 1000]
    """

    probabilities: np.ndarray

    def __post_init__(self) -> None:
        p = check_array("probabilities", self.probabilities, ndim_min=1, nonneg=True)
        if p.shape[-1] < 2:
            raise ValueError(f"probabilities must have at least 2 classes, got shape {p.shape}")
        total = p.sum(axis=-1, keepdims=True)
        if np.any(np.abs(total - 1.0) > 1e-9):
            raise ValueError("probabilities must sum to 1 along the last axis (within 1e-9)")
        p = p / total
        p.setflags(write=False)
        object.__setattr__(self, "probabilities", p)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the counts a block returns."""
        return tuple(self.probabilities.shape)

    def __call__(self, size: int, seed: np.random.SeedSequence) -> IntArray:
        return _generator(seed).multinomial(int(size), self.probabilities).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class NoisyArgmaxBlock:
    """Direct simulation: per experiment a fresh histogram, Gaussian noise, the argmax.

    Experiment ``t`` draws ``H_t`` from ``histogram_sampler(gen, ·)`` and outputs
    ``argmax_c (H_t,c + N(0, σ²))`` (paper 000 Eq. 2 with the parametric histogram models of
    §5.1–5.2). Work is done in chunks of ``chunk`` experiments so a block of any size needs
    ``8·chunk·C`` bytes of noise.

    Backends: ``"numpy"`` (default) draws the noise from the block's numpy generator;
    ``"torch"`` (the ``torch`` extra; CPU or CUDA with ``device="cuda"``) draws the histograms
    with the same numpy generator, then the noise, the argmax and the counting on the torch
    device with a ``torch.Generator`` seeded from the block's seed (child key ``(1,)``). Both
    are exact in distribution and reproducible per seed; they differ in value, not in law.

    Attributes:
        histogram_sampler: ``f(gen, size) -> (size, C)`` histograms, using only ``gen``
            (picklable for the process executors, e.g. the samplers of
            :mod:`dpaudit.attacks.parametric`).
        sigma: noise standard deviation σ > 0.
        chunk: experiments per chunk inside a block.
        backend: ``"numpy"`` or ``"torch"``.
        device: torch device string (e.g. ``"cuda"``; default CPU); torch backend only.

    Example:
        >>> def fixed(gen, size):
        ...     return np.tile([10.0, 0.0], (size, 1))
        >>> NoisyArgmaxBlock(fixed, 1.0)(1000, np.random.SeedSequence(0)).tolist()
        [1000, 0]
    """

    histogram_sampler: Callable[[np.random.Generator, int], ArrayLike]
    sigma: float
    chunk: int = 2**16
    backend: str = "numpy"
    device: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.histogram_sampler):
            raise TypeError(
                f"histogram_sampler must be callable, got {type(self.histogram_sampler).__name__}"
            )
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "chunk", check_positive_int("chunk", self.chunk))
        check_choice("backend", self.backend, BACKENDS)
        if self.device is not None:
            if self.backend != "torch":
                raise ValueError(f"device is for backend='torch' only, got device={self.device!r}")
            if not isinstance(self.device, str):
                raise TypeError(f"device must be a torch device string, got {self.device!r}")

    def __call__(self, size: int, seed: np.random.SeedSequence) -> IntArray:
        gen = _generator(seed)
        chunks = [self.chunk] * (size // self.chunk)
        if size % self.chunk or not chunks:
            chunks.append(size % self.chunk)
        noise = _TorchNoise(seed, self.device) if self.backend == "torch" else None
        total: np.ndarray | None = None
        for m in chunks:
            hists = np.asarray(self.histogram_sampler(gen, m), dtype=np.float64)
            if hists.ndim != 2 or hists.shape[0] != m or hists.shape[1] < 2:
                raise ValueError(
                    f"histogram_sampler must return an array of shape ({m}, C) with C >= 2, "
                    f"got {hists.shape}"
                )
            if noise is not None:
                counts = noise.argmax_counts(hists, self.sigma)
            else:
                noisy = gen.standard_normal(hists.shape)
                noisy *= self.sigma
                noisy += hists
                counts = np.bincount(noisy.argmax(axis=1), minlength=hists.shape[1])
            total = counts if total is None else total + counts
        return np.asarray(total, dtype=np.int64)


class _TorchNoise:
    """Gaussian noise + argmax + counts on a torch device, seeded from a block's seed."""

    def __init__(self, seed: np.random.SeedSequence, device: str | None) -> None:
        self.torch = require("torch", "torch")
        self.device = self.torch.device(device) if device is not None else self.torch.device("cpu")
        child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, 1))
        self.gen = self.torch.Generator(device=self.device)
        self.gen.manual_seed(int(child.generate_state(1, dtype=np.uint64)[0] % (2**63)))

    def argmax_counts(self, hists: np.ndarray, sigma: float) -> np.ndarray:
        torch = self.torch
        h = torch.as_tensor(hists, dtype=torch.float64, device=self.device)
        z = torch.randn(h.shape, generator=self.gen, dtype=torch.float64, device=self.device)
        z.mul_(sigma).add_(h)
        counts = torch.bincount(z.argmax(dim=1), minlength=h.shape[1])
        return counts.cpu().numpy().astype(np.int64)


# ------------------------------------------------------------------------------ results


@dataclasses.dataclass(frozen=True)
class EngineRun(ResultMixin):
    """The summed counts of a sampling run and how they were produced.

    Attributes:
        counts: int64 sum of every block's counts (shape set by the block function).
        n: number of experiments.
        block_size: experiments per block (the last block may be shorter).
        num_blocks: number of blocks.
        seed: integer entropy of the root seed (``None`` if it had none to record).
        executor: ``"serial"``, ``"processes"``, ``"joblib"`` or ``"ray"``.
        workers: worker processes used (1 for serial).
        computed_blocks: blocks computed in this call.
        resumed_blocks: blocks taken from the checkpoint (finished by an earlier call).
        wall_seconds: wall time of this call.
        checkpoint: the checkpoint file, if any.
    """

    counts: IntArray
    n: int
    block_size: int
    num_blocks: int
    seed: int | None
    executor: str
    workers: int
    computed_blocks: int
    resumed_blocks: int
    wall_seconds: float
    checkpoint: str | None = None

    @property
    def experiments_per_second(self) -> float:
        """Experiments computed in this call per second of wall time (inf if instantaneous)."""
        done = self.n * self.computed_blocks / max(self.num_blocks, 1)
        return float(done / self.wall_seconds) if self.wall_seconds > 0 else float("inf")


# ------------------------------------------------------------------------------ planning


def block_sizes(n: int, block_size: int) -> list[int]:
    """Sizes of the blocks that ``n`` experiments are cut into (the last one may be shorter).

    Args:
        n: number of experiments, ≥ 0.
        block_size: experiments per block, ≥ 1.

    Returns:
        List of block sizes summing to ``n`` (empty for ``n = 0``).

    Raises:
        ValueError, TypeError: negative ``n`` or non-positive ``block_size``.

    Example:
        >>> block_sizes(10, 4)
        [4, 4, 2]
    """
    n = check_nonneg_int("n", n)
    block_size = check_positive_int("block_size", block_size)
    full, rest = divmod(n, block_size)
    return [block_size] * full + ([rest] if rest else [])


def _run_block(fn: BlockFunction, index: int, size: int, seed: np.random.SeedSequence):
    """One block (module level so that worker processes can unpickle it)."""
    return index, np.asarray(fn(size, seed), dtype=np.int64)


def _serial(fn, tasks) -> Iterator[tuple[int, np.ndarray]]:
    for index, size, seed in tasks:
        yield _run_block(fn, index, size, seed)


def _processes(fn, tasks, workers: int) -> Iterator[tuple[int, np.ndarray]]:
    import concurrent.futures as cf
    import multiprocessing

    # Spawned (not forked) workers: forking a process that already runs BLAS threads may
    # deadlock, and Python 3.12+ warns about it.
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_run_block, fn, i, s, seed) for i, s, seed in tasks]
        try:
            for fut in cf.as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()


def _joblib(fn, tasks, workers: int) -> Iterator[tuple[int, np.ndarray]]:
    joblib = require("joblib", "ml")
    parallel = joblib.Parallel(n_jobs=workers, return_as="generator_unordered")
    yield from parallel(joblib.delayed(_run_block)(fn, i, s, seed) for i, s, seed in tasks)


def _ray(fn, tasks, workers: int) -> Iterator[tuple[int, np.ndarray]]:
    ray = require("ray", "ray")
    if not ray.is_initialized():
        # Connects to RAY_ADDRESS when set (a cluster), else starts a local instance.
        ray.init(ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(_run_block)
    fn_ref = ray.put(fn)
    pending = [remote.remote(fn_ref, i, s, seed) for i, s, seed in tasks]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        for ref in pending:
            ray.cancel(ref)


# ------------------------------------------------------------------------------ checkpoints


def _meta(
    n: int, block_size: int, num_blocks: int, root: np.random.SeedSequence, key: str
) -> dict[str, Any]:
    entropy = root.entropy
    return {
        "version": _CHECKPOINT_VERSION,
        "n": n,
        "block_size": block_size,
        "num_blocks": num_blocks,
        "entropy": str(entropy) if entropy is not None else None,
        "spawn_key": [int(k) for k in root.spawn_key],
        "key": key,
    }


def _load_checkpoint(
    path: Path, meta: dict[str, Any]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    if not path.exists():
        return None, None
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = json.loads(str(data["meta"]))
            done = np.array(data["done"], dtype=bool)
            total = np.array(data["total"], dtype=np.int64)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(
            f"checkpoint {str(path)!r} is not a readable engine checkpoint: {exc}"
        ) from exc
    if stored != meta:
        diff = sorted(k for k in set(stored) | set(meta) if stored.get(k) != meta.get(k))
        raise ValueError(
            f"checkpoint {str(path)!r} belongs to another run (differs in {', '.join(diff)}); "
            "use the same n, block_size, seed and key to resume, or another checkpoint path"
        )
    if done.shape != (meta["num_blocks"],):
        raise ValueError(f"checkpoint {str(path)!r} is corrupt: done mask of shape {done.shape}")
    return done, total


def _save_checkpoint(path: Path, meta: dict[str, Any], done: np.ndarray, total) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                meta=np.array(json.dumps(meta, sort_keys=True)),
                done=done,
                total=np.zeros(0, dtype=np.int64) if total is None else total,
            )
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------------------ the engine


def _progress_bar(enabled: bool, total: int, completed: int, description: str):
    if not enabled:
        return None, None
    rp = require("rich.progress", "cli")
    bar = rp.Progress(
        rp.TextColumn("[progress.description]{task.description}"),
        rp.BarColumn(),
        rp.MofNCompleteColumn(),
        rp.TimeElapsedColumn(),
        rp.TimeRemainingColumn(),
    )
    bar.start()
    task = bar.add_task(description, total=total, completed=completed)
    return bar, task


def run_blocks(
    block_fn: BlockFunction,
    n: int,
    *,
    rng: RngLike = None,
    block_size: int = DEFAULT_ENGINE_BLOCK_SIZE,
    executor: str = "serial",
    workers: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    checkpoint_interval: float = 10.0,
    key: str = "",
    progress: bool = False,
    description: str = "sampling",
) -> EngineRun:
    """Run ``n`` experiments as seeded blocks over an executor and sum their counts.

    Block ``b`` (of size ``block_sizes(n, block_size)[b]``) is computed as
    ``block_fn(size_b, seed_b)`` with ``seed_b = block_seeds(rng, num_blocks)[b]``, so the
    result is a function of ``(block_fn, n, block_size, rng)`` only.

    Args:
        block_fn: ``f(size, seed_sequence) -> counts`` (int array of a fixed shape);
            picklable for the process executors.
        n: number of experiments, ≥ 1.
        rng: root seed (an int or ``SeedSequence`` to be able to resume from a checkpoint;
            a ``Generator`` contributes a fresh draw).
        block_size: experiments per block, ≥ 1.
        executor: ``"serial"``, ``"processes"``, ``"joblib"`` or ``"ray"``.
        workers: worker processes for the parallel executors, ≥ 1.
        checkpoint: ``.npz`` file to resume from and write to (``None``: no checkpoint).
        checkpoint_interval: seconds between checkpoint writes (≥ 0; the file is always
            written at the end and when the run stops on an exception).
        key: a string identifying the job (e.g. a hash of the probabilities); stored in the
            checkpoint and compared on resume.
        progress: show a rich progress bar over blocks.
        description: label of the progress bar.

    Returns:
        :class:`EngineRun` with the summed ``counts``.

    Raises:
        ValueError, TypeError: bad sizes, executor, workers, or a checkpoint of another run.
        MissingDependencyError: ``executor="ray"`` without Ray installed.

    Example:
        >>> a = run_blocks(MultinomialBlock([0.5, 0.5]), 1000, rng=1, block_size=100)
        >>> b = run_blocks(MultinomialBlock([0.5, 0.5]), 1000, rng=1, block_size=100,
        ...                executor="joblib", workers=2)
        >>> bool(np.array_equal(a.counts, b.counts))
        True
    """
    if not callable(block_fn):
        raise TypeError(f"block_fn must be callable, got {type(block_fn).__name__}")
    n = check_positive_int("n", n)
    sizes = block_sizes(n, block_size)
    check_choice("executor", executor, EXECUTORS)
    workers = check_positive_int("workers", workers)
    interval = check_real("checkpoint_interval", checkpoint_interval)
    if interval < 0:
        raise ValueError(f"checkpoint_interval must be non-negative, got {interval}")
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    if executor == "ray":
        require("ray", "ray")
    root = as_seed_sequence(rng)
    seeds = block_seeds(root, len(sizes))
    meta = _meta(n, int(block_size), len(sizes), root, key)
    path = Path(checkpoint) if checkpoint is not None else None
    done = np.zeros(len(sizes), dtype=bool)
    total: np.ndarray | None = None
    if path is not None:
        loaded_done, loaded_total = _load_checkpoint(path, meta)
        if loaded_done is not None:
            done = loaded_done
            total = loaded_total if loaded_done.any() else None
    resumed = int(done.sum())
    tasks = [(b, sizes[b], seeds[b]) for b in range(len(sizes)) if not done[b]]
    start = time.perf_counter()
    last_write = start
    computed = 0
    if executor == "serial" or (executor == "processes" and workers == 1):
        stream = _serial(block_fn, tasks)
        used_workers = 1
    elif executor == "processes":
        stream = _processes(block_fn, tasks, workers)
        used_workers = workers
    elif executor == "joblib":
        stream = _joblib(block_fn, tasks, workers)
        used_workers = workers
    else:
        stream = _ray(block_fn, tasks, workers)
        used_workers = workers
    bar, task = _progress_bar(progress, len(sizes), resumed, description)
    try:
        for index, counts in stream:
            if total is None:
                total = np.zeros(counts.shape, dtype=np.int64)
            elif counts.shape != total.shape:
                raise ValueError(
                    f"block_fn returned counts of shape {counts.shape} for block {index}, "
                    f"expected {total.shape}"
                )
            total += counts
            done[index] = True
            computed += 1
            if bar is not None:
                bar.advance(task)
            now = time.perf_counter()
            if path is not None and now - last_write >= interval:
                _save_checkpoint(path, meta, done, total)
                last_write = now
    finally:
        if path is not None and computed:
            _save_checkpoint(path, meta, done, total)
        if bar is not None:
            bar.stop()
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if total is None:  # pragma: no cover - n >= 1 guarantees at least one block
        raise RuntimeError("no block was run")
    return EngineRun(
        counts=total,
        n=n,
        block_size=int(block_size),
        num_blocks=len(sizes),
        seed=int(root.entropy) if isinstance(root.entropy, (int, np.integer)) else None,
        executor=executor,
        workers=used_workers,
        computed_blocks=computed,
        resumed_blocks=resumed,
        wall_seconds=time.perf_counter() - start,
        checkpoint=str(path) if path is not None else None,
    )


def probabilities_key(probabilities: Sequence[float] | np.ndarray) -> str:
    """A short content hash of a probability array, for :func:`run_blocks`'s ``key``."""
    import hashlib

    arr = np.ascontiguousarray(np.asarray(probabilities, dtype=np.float64))
    return hashlib.sha256(arr.tobytes() + str(arr.shape).encode()).hexdigest()[:16]
