"""Executors of the sampling engine: where blocks run (engine, layer 1).

:data:`EXECUTORS` maps a name to a factory ``f(workers) -> Executor``; the engine never
branches on a name. The parallel executors take their tasks lazily and keep a bounded number
of blocks in flight, so a run of any number of blocks needs memory for a few blocks only.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._registry import Registry
from dpaudit._typing import ArrayLike, IntArray
from dpaudit._validate import check_positive_int
from dpaudit.errors import require

__all__ = [
    "EXECUTORS",
    "BlockFunction",
    "Executor",
    "JoblibExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "Task",
    "process_pool_context",
    "resolve_executor",
]

#: ``f(size, seed) -> counts``: the counts of ``size`` experiments drawn from ``seed`` only.
BlockFunction = Callable[[int, np.random.SeedSequence], ArrayLike]
#: One unit of work: ``(block index, block size, block seed)``.
Task = tuple[int, int, np.random.SeedSequence]


def _run_block(fn: BlockFunction, index: int, size: int, seed: np.random.SeedSequence):
    """One block (module level so that worker processes can unpickle it)."""
    return index, np.asarray(fn(size, seed), dtype=np.int64)


#: The block function of this worker process, sent once when the pool starts.
_INSTALLED: list[BlockFunction] = []


def _install(fn: BlockFunction) -> None:
    """Pool initialiser: keep ``fn`` in the worker, so tasks travel without it."""
    _INSTALLED[:] = [fn]


def _run_installed(index: int, size: int, seed: np.random.SeedSequence):
    """One block of the installed function (see :func:`_install`)."""
    return _run_block(_INSTALLED[0], index, size, seed)


@runtime_checkable
class Executor(Protocol):
    """Runs blocks somewhere and yields ``(index, counts)`` as they finish (any order).

    ``map`` must consume ``tasks`` lazily (a run may have millions of blocks) and stop its
    workers when the returned iterator is closed.

    Attributes:
        name: recorded in :class:`EngineRun`.
        workers: workers it uses (1 for serial).

    An executor may also say ``remote = False`` when it computes in the calling process
    (:func:`dpaudit.engine.run_tasks` then sends one task per chunk); without the attribute
    an executor of more than one worker is taken to be remote.
    """

    name: str
    workers: int

    def map(self, fn: BlockFunction, tasks: Iterable[Task]) -> Iterator[tuple[int, IntArray]]:
        """Yield ``(index, int64 counts)`` for every task, in any order."""
        ...


class SerialExecutor:
    """Runs every block in this process, in order (``workers`` is ignored)."""

    name = "serial"
    remote = False  # computes in this process: nothing for the engine's chunks to amortise

    def __init__(self, workers: int = 1) -> None:
        check_positive_int("workers", workers)
        self.workers = 1

    def map(self, fn: BlockFunction, tasks: Iterable[Task]) -> Iterator[tuple[int, IntArray]]:
        """Compute the blocks one after another."""
        for index, size, seed in tasks:
            yield _run_block(fn, index, size, seed)


def _windowed(submit: Callable[[Task], Any], wait, tasks: Iterable[Task], window: int):
    """Keep at most ``window`` tasks in flight; ``wait(pending) -> (done, pending)``."""
    it = iter(tasks)
    pending: set = set()
    for task in it:
        pending.add(submit(task))
        if len(pending) >= window:
            break
    while pending:
        done, pending = wait(pending)
        for item in done:
            yield item
            task = next(it, None)
            if task is not None:
                pending.add(submit(task))


#: Heavy modules the fork server of :func:`process_pool_context` imports once, when this
#: process has imported them itself.
_PRELOAD = ("numpy", "scipy.stats", "sklearn", "torch", "opacus", "dpaudit.experiments")


def process_pool_context():
    """The ``multiprocessing`` context of dpaudit's process pools: ``"forkserver"`` where the
    platform has it (Linux, macOS), else ``"spawn"``.

    Workers are never forked from this process: forking a process that already runs BLAS or
    OpenMP threads may deadlock (Python 3.12+ warns about it). A fork server is a clean,
    single-threaded process started once per process; it imports the heavy modules this
    process has imported (:data:`_PRELOAD`: NumPy, SciPy, scikit-learn, PyTorch, Opacus,
    dpaudit's experiments) once, and every worker of every later pool is forked from it
    instead of starting an interpreter and importing them again (PyTorch alone ~2 CPU-s; a
    small DP-SGD audit on 2 spawned workers took 23.3 CPU-s against 0.6 from the server,
    benchmarks/bench_process_pools.py). Workers receive the same preparation as spawned ones
    (``sys.path``, working directory, the main module), so results do not depend on the start
    method; the tests check that every executor gives the same numbers. The preload is fixed
    when the server starts (the first pool), and so is its environment.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([m for m in _PRELOAD if m in sys.modules])
    return ctx


class ProcessExecutor:
    """``concurrent.futures`` with local worker processes (serial when ``workers == 1``).

    Workers start from a fork server, not forked from this process (see
    :func:`process_pool_context`). The block function is sent once per worker (the pool's
    initialiser), then only ``(index, size, seed)`` per block. At most ``2·workers`` blocks
    are in flight.
    """

    name = "processes"

    def __init__(self, workers: int = 1) -> None:
        self.workers = check_positive_int("workers", workers)
        self.remote = self.workers > 1  # one worker runs in this process

    def map(self, fn: BlockFunction, tasks: Iterable[Task]) -> Iterator[tuple[int, IntArray]]:
        """Compute the blocks in worker processes, yielding them as they finish."""
        if self.workers == 1:
            yield from SerialExecutor().map(fn, tasks)
            return
        with cf.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=process_pool_context(),
            initializer=_install,
            initargs=(fn,),
        ) as pool:
            futures: set = set()

            def submit(task: Task):
                fut = pool.submit(_run_installed, *task)
                futures.add(fut)
                return fut

            def wait(pending):
                return cf.wait(pending, return_when=cf.FIRST_COMPLETED)

            try:
                for fut in _windowed(submit, wait, tasks, 2 * self.workers):
                    futures.discard(fut)
                    yield fut.result()
            finally:
                for fut in futures:
                    fut.cancel()


class JoblibExecutor:
    """joblib's loky processes (the ``ml`` extra); joblib dispatches ``2·workers`` ahead."""

    name = "joblib"

    def __init__(self, workers: int = 1) -> None:
        self.workers = check_positive_int("workers", workers)
        self.remote = self.workers > 1  # joblib runs n_jobs = 1 in this process
        self._joblib = require("joblib", "ml")

    def map(self, fn: BlockFunction, tasks: Iterable[Task]) -> Iterator[tuple[int, IntArray]]:
        """Compute the blocks with ``joblib.Parallel``, yielding them as they finish."""
        joblib = self._joblib
        parallel = joblib.Parallel(n_jobs=self.workers, return_as="generator_unordered")
        yield from parallel(joblib.delayed(_run_block)(fn, *task) for task in tasks)


class RayExecutor:
    """A Ray cluster (the ``ray`` extra): ``address``, else ``RAY_ADDRESS`` if set, else a
    local instance with ``workers`` CPUs and no dashboard (started on first use; an instance
    this process already started or joined is reused).

    At most ``2·workers`` blocks are in flight; unfinished ones are cancelled on close.

    Args:
        workers: blocks run at once (in flight: twice as many), ≥ 1.
        address: a Ray cluster address (``"ray://host:10001"``, ``"host:6379"``, ``"auto"``).
    """

    name = "ray"
    remote = True  # even one worker is another process: chunks amortise the dispatch

    def __init__(self, workers: int = 1, *, address: str | None = None) -> None:
        self.workers = check_positive_int("workers", workers)
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ValueError(f"address must be a non-empty string, got {address!r}")
        self.address = address
        self._ray = require("ray", "ray")

    def _init(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        if self.address is not None or os.environ.get("RAY_ADDRESS"):
            ray.init(address=self.address, log_to_driver=False)
        else:
            ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)

    def map(self, fn: BlockFunction, tasks: Iterable[Task]) -> Iterator[tuple[int, IntArray]]:
        """Compute the blocks as Ray tasks, yielding them as they finish."""
        ray = self._ray
        self._init()
        remote = ray.remote(_run_block)
        fn_ref = ray.put(fn)
        refs: set = set()

        def submit(task: Task):
            ref = remote.remote(fn_ref, *task)
            refs.add(ref)
            return ref

        def wait(pending):
            done, rest = ray.wait(list(pending), num_returns=1)
            return done, set(rest)

        try:
            for ref in _windowed(submit, wait, tasks, 2 * self.workers):
                refs.discard(ref)
                yield ray.get(ref)
        finally:
            for ref in refs:
                ray.cancel(ref)


#: Executor factories by name: ``EXECUTORS.get(name)(workers) -> Executor``.
EXECUTORS: Registry[Callable[[int], Executor]] = Registry("executor")
EXECUTORS.register("serial", SerialExecutor)
EXECUTORS.register("processes", ProcessExecutor)
EXECUTORS.register("joblib", JoblibExecutor)
EXECUTORS.register("ray", RayExecutor)


def resolve_executor(executor: str | Executor, workers: int = 1) -> Executor:
    """An :class:`Executor` from a registered name (built with ``workers``) or an executor.

    Raises:
        ValueError: unknown name (the message lists :data:`EXECUTORS`) or bad ``workers``.
        TypeError: neither a name nor an object with ``map``, ``name`` and ``workers``.
        MissingDependencyError: the executor's library is not installed.

    Example:
        >>> resolve_executor("processes", 1).name
        'processes'
    """
    workers = check_positive_int("workers", workers)
    if isinstance(executor, str):
        return EXECUTORS.get(executor)(workers)
    if isinstance(executor, Executor) and callable(executor.map):
        return executor
    raise TypeError(
        f"executor must be one of {EXECUTORS.names()} or an Executor (name, workers, map), "
        f"got {type(executor).__name__}"
    )
