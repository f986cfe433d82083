"""The sampling engine: many Monte-Carlo experiments, split into seeded blocks (layer 1).

Auditing private prediction needs about 10^8 experiments per query and 10^3 queries
(Chadha et al. 2024, arXiv:2402.09403, §5). The engine runs a *block function*
``f(size, seed) -> counts`` over fixed-size blocks and sums the counts. It holds no maths:
block planning, seeding, executors, checkpoints and progress. The block functions (the
*kernels*) live with the mechanisms they sample, e.g. :class:`dpaudit.mechanisms.MultinomialBlock`,
:class:`dpaudit.mechanisms.NoisyArgmaxBlock` and :class:`dpaudit.mechanisms.ArgmaxBlock`.

* **Blocks and seeds.** ``n`` experiments are cut into ``⌈n / block_size⌉`` blocks of
  ``block_size`` (the last one shorter). Block ``b`` receives :func:`block_seed` ``(root, b)``,
  which equals ``SeedSequence(seed).spawn(num_blocks)[b]`` but is derived on demand, so memory
  does not grow with the number of blocks. A block's counts depend only on its size and its
  seed, and integer sums do not depend on the order of addition, so the **same seed gives the
  same counts whatever the executor, the number of workers or the order in which blocks
  finish**.
* **Executors** (:data:`EXECUTORS`, a :class:`~dpaudit._registry.Registry` of factories
  ``f(workers) -> Executor``): ``"serial"`` (this process), ``"processes"``
  (``concurrent.futures`` with local processes started from a fork server:
  :func:`process_pool_context`), ``"joblib"`` (loky local processes)
  and ``"ray"`` (a Ray cluster; imported lazily). Any object with a ``name``, ``workers`` and
  ``map(fn, tasks)`` (the :class:`Executor` protocol) can be passed instead of a name. Block
  functions must be picklable for the parallel executors: use module-level callables.
* **Checkpoints.** With ``checkpoint=path`` every finished block's counts, the running sum and
  the run's identity are written together, atomically (temporary file + ``os.replace``), with
  a SHA-256 checksum over the content. A run interrupted at any point resumes from it: blocks
  recorded as finished are never recomputed and never counted twice; blocks finished after
  the last write, or running when the run stopped, are run again. On resume the file must be
  readable, its checksum must match, its per-block counts must add up to its sum, and it must
  belong to the same run (same block function and parameters — see :func:`fingerprint` —,
  ``n``, ``block_size``, seed and ``key``); otherwise :func:`run_blocks` raises ``ValueError``
  and never mixes the file's counts into the new run. A checkpoint holds
  ``num_blocks × counts-size`` integers, so choose ``block_size`` accordingly.
* A rich progress bar over blocks is optional (``progress=True``; the ``cli`` extra).
* **Tasks.** :func:`run_tasks` is the engine's second API, for a few hundred or thousand
  *independent, expensive* tasks whose results are kept one by one (e.g. one DP-SGD training
  run per task): ``fn(index, seed) -> float array`` with ``seed = SeedSequence(root).spawn(n)
  [index]`` derived lazily, the same executors, and a checkpoint that is an append-only
  journal of every finished task's result (verified on resume, refused if it belongs to
  another run; see :mod:`dpaudit.engine._tasks`). Tasks travel in chunks sized by a measured
  cost model (scheduling and transfer ≤ about 5 % of the work), and a task function may ask
  for groups of tasks computed together (``group_size``, ``run_group``: many small models
  trained at once); results are assembled in index order, so neither changes a result. The
  block API above is unchanged by it.

Example:
    >>> def coin(size, seed):
    ...     gen = np.random.Generator(np.random.PCG64(seed))
    ...     return gen.multinomial(size, [0.5, 0.5])
    >>> run = run_blocks(coin, 10**6, rng=0, block_size=2**18)
    >>> int(run.counts.sum()), run.num_blocks
    (1000000, 4)
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, child_seed
from dpaudit._typing import IntArray, RngLike
from dpaudit._validate import check_nonneg_int, check_positive_int, check_real
from dpaudit.engine._checkpoint import CHECKPOINT_VERSION, _identity, _State
from dpaudit.engine._executors import (
    EXECUTORS,
    BlockFunction,
    Executor,
    JoblibExecutor,
    ProcessExecutor,
    RayExecutor,
    SerialExecutor,
    Task,
    process_pool_context,
    resolve_executor,
)
from dpaudit.engine._fingerprint import fingerprint, probabilities_key
from dpaudit.engine._task_checkpoint import TASK_CHECKPOINT_VERSION, read_task_checkpoint
from dpaudit.engine._tasks import TaskFunction, TaskRun, journal_in, run_tasks
from dpaudit.errors import require

__all__ = [
    "CHECKPOINT_VERSION",
    "DEFAULT_ENGINE_BLOCK_SIZE",
    "EXECUTORS",
    "TASK_CHECKPOINT_VERSION",
    "BlockFunction",
    "EngineRun",
    "Executor",
    "JoblibExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "Task",
    "TaskFunction",
    "TaskRun",
    "block_seed",
    "block_sizes",
    "fingerprint",
    "journal_in",
    "probabilities_key",
    "process_pool_context",
    "read_task_checkpoint",
    "resolve_executor",
    "run_blocks",
    "run_tasks",
]

#: Experiments per block unless told otherwise (2^20).
DEFAULT_ENGINE_BLOCK_SIZE = 2**20


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


def block_seed(root: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """The seed of block ``index``: ``SeedSequence(root.entropy, spawn_key=(*key, index))``.

    That is :func:`dpaudit._rng.child_seed` ``(root, index)``, and it equals
    ``SeedSequence(root.entropy, spawn_key=root.spawn_key).spawn(m)[index]`` for any
    ``m > index`` (what :func:`dpaudit._rng.block_seeds` returns), derived without building
    the other ``m − 1`` children.

    Args:
        root: the run's root seed.
        index: block index, ≥ 0.

    Returns:
        The block's ``SeedSequence``.

    Example:
        >>> root = np.random.SeedSequence(7)
        >>> block_seed(root, 3).generate_state(1) == root.spawn(5)[3].generate_state(1)
        array([ True])
    """
    return child_seed(root, index)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """``n`` experiments in blocks of ``block_size``; tasks are generated lazily."""

    n: int
    block_size: int

    @property
    def num_blocks(self) -> int:
        return -(-self.n // self.block_size)

    def size(self, index: int) -> int:
        return min(self.block_size, self.n - index * self.block_size)

    def tasks(self, root: np.random.SeedSequence, done: np.ndarray | None) -> Iterator[Task]:
        for b in range(self.num_blocks):
            if done is None or not done[b]:
                yield b, self.size(b), block_seed(root, b)


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
        executor: the executor's name (``"serial"``, ``"processes"``, ``"joblib"``, ``"ray"``).
        workers: workers used (1 for serial).
        computed_blocks: blocks computed in this call.
        resumed_blocks: blocks taken from the checkpoint (finished by an earlier call).
        wall_seconds: wall time of this call.
        checkpoint: the checkpoint file, if any.
        run_key: with a checkpoint, the digest identifying the run (block function, ``n``,
            ``block_size``, seed, ``key``) that the checkpoint stores; ``None`` without one.
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
    run_key: str | None = None

    @property
    def experiments_per_second(self) -> float:
        """Experiments computed in this call per second of wall time (inf if instantaneous)."""
        done = self.n * self.computed_blocks / max(self.num_blocks, 1)
        return float(done / self.wall_seconds) if self.wall_seconds > 0 else float("inf")


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


def _validated(block_fn, n, block_size, checkpoint_interval, key) -> tuple[_Plan, float]:
    if not callable(block_fn):
        raise TypeError(f"block_fn must be callable, got {type(block_fn).__name__}")
    plan = _Plan(check_positive_int("n", n), check_positive_int("block_size", block_size))
    interval = check_real("checkpoint_interval", checkpoint_interval)
    if interval < 0:
        raise ValueError(f"checkpoint_interval must be non-negative, got {interval}")
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    return plan, interval


def _drain(stream, state: _State, interval: float, bar, task) -> None:
    """Add every block of ``stream`` to ``state``, writing the checkpoint every ``interval``."""
    last_write = time.perf_counter()
    try:
        for index, counts in stream:
            state.add(index, counts)
            if bar is not None:
                bar.advance(task)
            now = time.perf_counter()
            if state.path is not None and now - last_write >= interval:
                state.save()
                last_write = now
    finally:
        state.save()
        if bar is not None:
            bar.stop()
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def run_blocks(
    block_fn: BlockFunction,
    n: int,
    *,
    rng: RngLike = None,
    block_size: int = DEFAULT_ENGINE_BLOCK_SIZE,
    executor: str | Executor = "serial",
    workers: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    checkpoint_interval: float = 10.0,
    key: str = "",
    progress: bool = False,
    description: str = "sampling",
) -> EngineRun:
    """Run ``n`` experiments as seeded blocks over an executor and sum their counts.

    Block ``b`` (of size ``block_sizes(n, block_size)[b]``) is computed as
    ``block_fn(size_b, block_seed(root, b))`` with ``root = as_seed_sequence(rng)``, so the
    result is a function of ``(block_fn, n, block_size, rng)`` only. Memory does not grow
    with the number of blocks, except for a checkpoint's record of finished blocks.

    Args:
        block_fn: ``f(size, seed_sequence) -> counts`` (int array of a fixed shape);
            picklable for the parallel executors.
        n: number of experiments, ≥ 1.
        rng: root seed (an int or ``SeedSequence`` to be able to resume from a checkpoint;
            a ``Generator`` contributes a fresh draw).
        block_size: experiments per block, ≥ 1.
        executor: a name registered in :data:`EXECUTORS` (``"serial"``, ``"processes"``,
            ``"joblib"``, ``"ray"``) or an :class:`Executor`.
        workers: workers for a named parallel executor, ≥ 1.
        checkpoint: ``.npz`` file to resume from and write to (``None``: no checkpoint).
        checkpoint_interval: seconds between checkpoint writes (≥ 0; the file is always
            written at the end and when the run stops on an exception).
        key: an extra label of the job, stored in the checkpoint and compared on resume. The
            run is always identified by :func:`fingerprint` of ``block_fn`` too; ``key`` is
            required with a checkpoint only when ``block_fn`` cannot be fingerprinted.
        progress: show a rich progress bar over blocks.
        description: label of the progress bar.

    Returns:
        :class:`EngineRun` with the summed ``counts``.

    Raises:
        ValueError, TypeError: bad sizes, executor, workers, or a checkpoint that is
            unreadable, damaged, edited or written by another run.
        MissingDependencyError: ``executor="ray"`` without Ray installed.

    Example:
        >>> def coin(size, seed):
        ...     return np.random.Generator(np.random.PCG64(seed)).multinomial(size, [.5, .5])
        >>> a = run_blocks(coin, 1000, rng=1, block_size=100)
        >>> b = run_blocks(coin, 1000, rng=1, block_size=100, executor="processes")
        >>> bool(np.array_equal(a.counts, b.counts))
        True
    """
    plan, interval = _validated(block_fn, n, block_size, checkpoint_interval, key)
    runner = resolve_executor(executor, workers)
    root = as_seed_sequence(rng)
    path = Path(checkpoint) if checkpoint is not None else None
    ident = None
    if path is not None:  # identify the run only when a checkpoint must be matched
        ident = _identity(block_fn, plan.n, plan.block_size, root, key)
        if ident["block_function"] is None and not key:
            raise ValueError(
                f"block_fn ({type(block_fn).__name__}) cannot be fingerprinted, so a "
                "checkpoint could not tell this run from another: pass key= naming the job"
            )
    state = _State(path, ident, plan.num_blocks)
    start = time.perf_counter()
    bar, task = _progress_bar(progress, plan.num_blocks, state.resumed, description)
    _drain(runner.map(block_fn, plan.tasks(root, state.done)), state, interval, bar, task)
    if state.total is None:  # pragma: no cover - n >= 1 guarantees at least one block
        raise RuntimeError("no block was run")
    return EngineRun(
        counts=state.total,
        n=plan.n,
        block_size=plan.block_size,
        num_blocks=plan.num_blocks,
        seed=int(root.entropy) if isinstance(root.entropy, (int, np.integer)) else None,
        executor=runner.name,
        workers=runner.workers,
        computed_blocks=state.computed,
        resumed_blocks=state.resumed,
        wall_seconds=time.perf_counter() - start,
        checkpoint=str(path) if path is not None else None,
        run_key=ident["run_key"] if ident is not None else None,
    )
