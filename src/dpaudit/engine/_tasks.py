"""The task API of the engine: independent seeded tasks returning float arrays (layer 1).

:func:`dpaudit.engine.run_blocks` sums integer counts of many tiny blocks. Some workloads are
instead a list of *independent* expensive tasks whose results are kept one by one — e.g.
one DP-SGD training run per task, returning its canaries' statistics. :func:`run_tasks` runs
``fn(index, seed) -> array`` for ``index = 0 … n−1`` with ``seed = SeedSequence(root).spawn(n)
[index]`` (derived lazily by :func:`dpaudit._rng.child_seed`), over the same executors
(:data:`dpaudit.engine.EXECUTORS`), and returns every result in index order. A result
depends only on its index and seed, so **the same seed gives bit-identical results whatever
the executor, the number of workers or the order in which tasks finish**.

The executors speak the block protocol (``(index, int64 counts)``); a task travels through it
unchanged: the executor's size slot carries the task index, and the float64 result travels
as its int64 bit pattern (a view, exact for every value, NaN included).

With ``checkpoint=path`` every finished task is appended to a journal
(:mod:`dpaudit.engine._task_checkpoint`) before the next result is taken; a run interrupted
at any point (Ctrl-C, ``kill -9``) resumes from it and never reruns a recorded task.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, child_seed
from dpaudit._typing import ArrayLike, ProgressLike, RngLike
from dpaudit._validate import check_positive_int, check_progress
from dpaudit.engine._executors import Executor, Task, resolve_executor
from dpaudit.engine._task_checkpoint import TaskCheckpoint, task_identity

__all__ = ["TaskFunction", "TaskRun", "run_tasks"]

#: ``fn(index, seed) -> array``: task ``index``'s float result from its seed only.
TaskFunction = Callable[[int, np.random.SeedSequence], ArrayLike]


@dataclasses.dataclass(frozen=True)
class _AsBlock:
    """A task function dressed as a block function (module notes); picklable if ``fn`` is."""

    fn: TaskFunction

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        out = np.ascontiguousarray(self.fn(int(index), seed), dtype=np.float64)
        return out.view(np.int64)


@dataclasses.dataclass(frozen=True)
class TaskRun(ResultMixin):
    """The results of :func:`run_tasks` and how they were produced.

    Attributes:
        results: one float64 array per task, in index order (shapes may differ per task).
        num_tasks: n.
        seed: integer entropy of the root seed (None if it had none to record).
        executor: the executor's name.
        workers: workers used.
        computed_tasks: tasks run in this call.
        resumed_tasks: tasks taken from the checkpoint (finished by an earlier call).
        wall_seconds: wall time of this call.
        checkpoint: the journal file, if any.
        run_key: with a checkpoint, the digest identifying the run; None without one.
    """

    results: tuple[np.ndarray, ...]
    num_tasks: int
    seed: int | None
    executor: str
    workers: int
    computed_tasks: int
    resumed_tasks: int
    wall_seconds: float
    checkpoint: str | None = None
    run_key: str | None = None

    @property
    def tasks_per_minute(self) -> float:
        """Tasks computed in this call per minute of wall time (inf if instantaneous)."""
        if self.wall_seconds <= 0:
            return float("inf")
        return 60.0 * self.computed_tasks / self.wall_seconds

    def stacked(self) -> np.ndarray:
        """The results as one array ``(n, *shape)`` (they must share a shape).

        Raises:
            ValueError: results of different shapes.
        """
        shapes = {r.shape for r in self.results}
        if len(shapes) > 1:
            raise ValueError(f"the task results have different shapes: {sorted(shapes)}")
        return np.stack(self.results)


def _tasks(n: int, root: np.random.SeedSequence, done: dict) -> Iterator[Task]:
    for i in range(n):
        if i not in done:
            yield i, i, child_seed(root, i)


def run_tasks(
    fn: TaskFunction,
    num_tasks: int,
    *,
    rng: RngLike = None,
    executor: str | Executor = "serial",
    workers: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    key: str = "",
    progress: ProgressLike = None,
    description: str = "tasks",
) -> TaskRun:
    """Run ``num_tasks`` independent seeded tasks over an executor; keep every result.

    Task ``i`` is ``fn(i, child_seed(root, i))`` with ``root = as_seed_sequence(rng)``, i.e.
    the ``SeedSequence(seed).spawn(num_tasks)[i]`` stream, derived without building the
    others. Its result is converted to a float64 array.

    Args:
        fn: ``f(index, seed_sequence) -> array``; picklable (a module-level function or a
            dataclass instance) for the parallel executors.
        num_tasks: n ≥ 1.
        rng: root seed (an int or ``SeedSequence`` to be able to resume from a checkpoint).
        executor: a name in :data:`~dpaudit.engine.EXECUTORS` or an
            :class:`~dpaudit.engine.Executor`.
        workers: workers for a named parallel executor, ≥ 1.
        checkpoint: journal file to resume from and append to (None: no checkpoint).
        key: an extra label of the job, stored in the journal and compared on resume; the
            run is always identified by :func:`~dpaudit.engine.fingerprint` of ``fn`` too,
            and ``key`` is required with a checkpoint only when ``fn`` cannot be
            fingerprinted.
        progress: a callback ``progress(done, total, description)`` called after each task
            (resumed tasks count as done), ``True`` for a rich bar, or None.
        description: the progress label.

    Returns:
        :class:`TaskRun` with ``results[i]`` of task ``i``.

    Raises:
        TypeError, ValueError: a non-callable ``fn``, bad ``num_tasks``/``workers``/executor,
            or a checkpoint that is unreadable, damaged, another run's or in use.
        MissingDependencyError: ``executor="ray"`` without Ray installed.

    Example:
        >>> def draw(index, seed):
        ...     return np.random.default_rng(seed).normal(size=2) + index
        >>> run = run_tasks(draw, 4, rng=1)
        >>> children = np.random.SeedSequence(1).spawn(4)
        >>> bool(np.array_equal(run.results[2], draw(2, children[2])))
        True
        >>> run.stacked().shape, run.computed_tasks
        ((4, 2), 4)
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    n = check_positive_int("num_tasks", num_tasks)
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    report = check_progress(progress)
    runner = resolve_executor(executor, workers)
    root = as_seed_sequence(rng)
    journal = None
    done: dict[int, np.ndarray] = {}
    if checkpoint is not None:
        ident = task_identity(fn, n, root, key)
        if ident["task_function"] is None and not key:
            raise ValueError(
                f"fn ({type(fn).__name__}) cannot be fingerprinted, so a checkpoint could not "
                "tell this run from another: pass key= naming the job"
            )
        journal = TaskCheckpoint(Path(checkpoint), ident)
        done = dict(journal.results)
    resumed = len(done)
    start = time.perf_counter()
    try:
        report(resumed, n, description)
        stream = runner.map(_AsBlock(fn), _tasks(n, root, done))
        try:
            for index, bits in stream:
                value = np.asarray(bits, dtype=np.int64).view(np.float64)
                if journal is not None:
                    journal.append(index, value)
                done[index] = value
                report(len(done), n, description)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
    finally:
        if journal is not None:
            journal.close()
    missing = [i for i in range(n) if i not in done]
    if missing:  # pragma: no cover - an executor that drops tasks
        raise RuntimeError(f"the executor returned no result for tasks {missing[:5]}")
    return TaskRun(
        results=tuple(done[i] for i in range(n)),
        num_tasks=n,
        seed=int(root.entropy) if isinstance(root.entropy, (int, np.integer)) else None,
        executor=runner.name,
        workers=runner.workers,
        computed_tasks=n - resumed,
        resumed_tasks=resumed,
        wall_seconds=time.perf_counter() - start,
        checkpoint=str(checkpoint) if checkpoint is not None else None,
        run_key=journal.ident["run_key"] if journal is not None else None,
    )
