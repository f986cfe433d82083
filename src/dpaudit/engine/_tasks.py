"""The task API of the engine: independent seeded tasks returning float arrays (layer 1).

:func:`dpaudit.engine.run_blocks` sums integer counts of many tiny blocks. Some workloads are
instead a list of *independent* expensive tasks whose results are kept one by one — e.g.
one DP-SGD training run per task, returning its canaries' statistics. :func:`run_tasks` runs
``fn(index, seed) -> array`` for ``index = 0 … n−1`` with ``seed = SeedSequence(root).spawn(n)
[index]`` (derived lazily by :func:`dpaudit._rng.child_seed`), over the same executors
(:data:`dpaudit.engine.EXECUTORS`), and returns every result in index order. A result
depends only on its index and seed, so **the same seed gives bit-identical results whatever
the executor, the number of workers or the order in which tasks finish**.

**Chunks.** The executors speak the block protocol (``(index, int64 counts)``); tasks travel
through it in *chunks*: the executor's size slot carries a chunk (a tuple of units of task
indices), the seed slot the root seed, and the chunk's float64 results come back packed as
one int64 array (bit patterns: exact for every value, NaN included) with the time spent
computing them. A chunk holds ``⌈o / (0.05 · t)⌉`` units, where the per-chunk overhead o
(``workers · wall − Σ compute`` over the chunks so far, plus this process's own CPU time,
which competes with the workers when they fill the cores) and the compute time per unit t are
measured as the run goes, so scheduling and transfer stay within about 5 % of the work,
capped at ``remaining / (2 · workers)`` units so that every worker keeps busy and at about
5 s of compute so that finished results reach the journal soon. An executor
that computes in this process (``remote = False``: serial, one process) gets one unit per
chunk — there is nothing to dispatch. The results are put back in index order, so the
chunking changes the speed, never a result.

**Groups.** A task function with ``group_size`` and ``run_group(indices, seeds) -> list of
arrays`` (e.g. a trainer of many small models at once,
:class:`dpaudit.experiments.lidp_dpsgd.batched.BatchedDPSGDCanaryRuns`) gets tasks
``[g·size, (g+1)·size)`` together, always the whole group — also when some of its tasks are
already in the journal (their recomputed results are dropped) — so the arithmetic of a task
never depends on the chunking, the executor or a resume.

With ``checkpoint=path`` every finished task is appended to a journal
(:mod:`dpaudit.engine._task_checkpoint`) before the next result is taken; a run interrupted
at any point (Ctrl-C, ``kill -9``) resumes from it and never reruns a recorded task.
"""

from __future__ import annotations

import dataclasses
import math
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


def _encode(results: list[tuple[int, np.ndarray]], seconds: float) -> np.ndarray:
    """A chunk's results as one int64 array: ``[count, (index, ndim, *shape)…, ns, bits…]``."""
    head: list[int] = [len(results)]
    for index, value in results:
        head += [index, value.ndim, *value.shape]
    head.append(int(seconds * 1e9))
    bits = [
        np.ascontiguousarray(v, dtype=np.float64).reshape(-1).view(np.int64) for _, v in results
    ]
    return np.concatenate([np.asarray(head, dtype=np.int64), *bits])


def _decode(packed: np.ndarray) -> tuple[list[tuple[int, np.ndarray]], float]:
    """The inverse of :func:`_encode`: ``[(index, float64 result)…]`` and compute seconds."""
    packed = np.asarray(packed, dtype=np.int64)
    count, pos, shapes = int(packed[0]), 1, []
    for _ in range(count):
        index, ndim = int(packed[pos]), int(packed[pos + 1])
        shapes.append((index, tuple(int(x) for x in packed[pos + 2 : pos + 2 + ndim])))
        pos += 2 + ndim
    seconds = int(packed[pos]) / 1e9
    pos += 1
    out = []
    for index, shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append((index, packed[pos : pos + size].view(np.float64).reshape(shape).copy()))
        pos += size
    return out, seconds


@dataclasses.dataclass(frozen=True)
class _AsChunk:
    """A task function dressed as a block function over chunks (module notes).

    The executor's size slot carries the chunk: a tuple of *units*, each a tuple of task
    indices computed together (one task, or a whole group of a grouped function); the seed
    slot carries the root seed, from which task i's seed ``child_seed(root, i)`` is derived.
    Picklable if ``fn`` is.
    """

    fn: TaskFunction

    def __call__(self, units, root: np.random.SeedSequence) -> np.ndarray:
        start = time.perf_counter()
        out: list[tuple[int, np.ndarray]] = []
        for unit in units:
            seeds = [child_seed(root, i) for i in unit]
            if len(unit) == 1 and not _grouped(self.fn):
                values = [self.fn(int(unit[0]), seeds[0])]
            else:
                values = list(self.fn.run_group(list(unit), seeds))  # type: ignore[attr-defined]
            out += [
                (int(i), np.asarray(v, dtype=np.float64)) for i, v in zip(unit, values, strict=True)
            ]
        return _encode(out, time.perf_counter() - start)


def _grouped(fn: object) -> int | None:
    """``fn.group_size`` when ``fn`` trains groups of tasks at once (``run_group``), else None."""
    size = getattr(fn, "group_size", None)
    if size is None or not callable(getattr(fn, "run_group", None)):
        return None
    return check_positive_int("group_size", size)


def _units(n: int, group: int | None, done: dict) -> list[tuple[int, ...]]:
    """Units of work in index order: every unfinished task alone, or every group with an
    unfinished task, whole (a group is always computed whole, so its arithmetic is fixed)."""
    if group is None:
        return [(i,) for i in range(n) if i not in done]
    out = []
    for a in range(0, n, group):
        unit = tuple(range(a, min(a + group, n)))
        if any(i not in done for i in unit):
            out.append(unit)
    return out


def _unit_count(values: list[tuple[int, np.ndarray]], group: int | None) -> int:
    """Units in a finished chunk: its tasks, or its groups for a grouped ``fn`` (the cost
    model sizes chunks in units, so counting tasks would make a group look ``group`` times
    cheaper and its chunks that much longer)."""
    return len({i // group for i, _ in values}) if group else len(values)


class _ChunkPlan:
    """Chunks of units sized by a measured cost model (module notes, "Chunks").

    Per-chunk overhead ``o = (workers · wall − Σ compute + c) / chunks``, where c is this
    process's own CPU time (dispatch, decoding, the journal: on a machine with as many cores
    as workers it is taken from the workers), and per-unit compute
    ``t = Σ compute / units`` are measured on the chunks finished so far; the next chunk
    holds ``⌈o / (share · t)⌉`` units, so overhead stays at most ``share`` of the work, but
    no more than ``remaining / (2 · workers)`` (every worker keeps getting work) nor
    ``max_seconds / t`` (a chunk's results reach the journal and the progress report within
    seconds; a worker that is still starting inflates o at first). Before any
    measurement (the first ``2 · workers`` chunks in flight), and on an executor that is not
    ``remote`` (nothing to dispatch), a chunk is one unit. A fixed ``chunk_size`` bypasses
    the model. Only speed depends on the chunking, never a result.
    """

    def __init__(
        self,
        units,
        workers: int,
        fixed: int | None,
        *,
        remote: bool = True,
        share: float = 0.05,
        max_seconds: float = 5.0,
    ) -> None:
        self.units, self.workers, self.fixed, self.share = units, workers, fixed, share
        self.remote, self.max_seconds = remote, max_seconds
        self.compute = 0.0
        self.done_units = 0
        self.done_chunks = 0
        self.chunks = 0
        self.first = True
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()

    def record(self, units: int, seconds: float) -> None:
        if self.first:  # the clock starts at the first result: start-up is not dispatch
            self.first = False
            self.start = time.perf_counter()
            self.cpu_start = time.process_time()
            return
        self.compute += seconds
        self.done_units += units
        self.done_chunks += 1

    def size(self, remaining: int) -> int:
        if self.fixed is not None:
            return self.fixed
        if not self.remote or self.done_chunks == 0 or self.compute <= 0:
            return 1
        wall = time.perf_counter() - self.start
        own = time.process_time() - self.cpu_start
        overhead = (max(0.0, self.workers * wall - self.compute) + own) / self.done_chunks
        per_unit = self.compute / self.done_units
        want = math.ceil(overhead / (self.share * per_unit))
        longest = int(self.max_seconds / per_unit)  # journal and progress stay fine-grained
        return max(1, min(want, longest, remaining // (2 * self.workers)))

    def tasks(self, root: np.random.SeedSequence) -> Iterator[Task]:
        pos = 0
        while pos < len(self.units):
            c = self.size(len(self.units) - pos)
            chunk = tuple(self.units[pos : pos + c])
            yield self.chunks, chunk, root  # type: ignore[misc]
            self.chunks += 1
            pos += c


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
        chunks: chunks dispatched to the executor in this call.
        compute_seconds: time spent inside the task functions (summed over workers).
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
    chunks: int = 0
    compute_seconds: float = 0.0

    @property
    def overhead_fraction(self) -> float:
        """``1 − Σ compute / (workers · wall)``: the share of the workers' time not spent in
        task functions (start-up, scheduling, transfer, idle; NaN if nothing was computed)."""
        if self.wall_seconds <= 0 or self.computed_tasks == 0:
            return float("nan")
        return 1.0 - self.compute_seconds / (self.workers * self.wall_seconds)

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


def journal_in(directory: str | os.PathLike[str] | None, name: str) -> Path | None:
    """The task journal ``name`` inside a checkpoint ``directory`` (created if missing), or
    None without a directory: how a workflow turns its ``checkpoint`` argument into
    :func:`run_tasks`' ``checkpoint``."""
    if directory is None:
        return None
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    return d / name


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
    chunk_size: int | None = None,
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
        chunk_size: units (tasks, or groups of a grouped ``fn``) per executor call; None:
            sized by the measured cost model (module notes). Never changes a result.

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
    if chunk_size is not None:
        chunk_size = check_positive_int("chunk_size", chunk_size)
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
    remote = bool(getattr(runner, "remote", runner.workers > 1))
    group = _grouped(fn)
    plan = _ChunkPlan(_units(n, group, done), runner.workers, chunk_size, remote=remote)
    compute = 0.0
    try:
        report(resumed, n, description)
        stream = runner.map(_AsChunk(fn), plan.tasks(root))
        try:
            for _, packed in stream:
                values, seconds = _decode(packed)
                plan.record(_unit_count(values, group), seconds)
                compute += seconds
                for index, value in values:
                    if index in done:  # a finished task of a group recomputed whole
                        continue
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
    wall = time.perf_counter() - start
    return TaskRun(
        results=tuple(done[i] for i in range(n)),
        num_tasks=n,
        seed=int(root.entropy) if isinstance(root.entropy, (int, np.integer)) else None,
        executor=runner.name,
        workers=runner.workers,
        computed_tasks=n - resumed,
        resumed_tasks=resumed,
        wall_seconds=wall,
        checkpoint=str(checkpoint) if checkpoint is not None else None,
        run_key=journal.ident["run_key"] if journal is not None else None,
        chunks=plan.chunks,
        compute_seconds=compute,
    )
