"""The process pools' start method (:func:`dpaudit.engine.process_pool_context`): workers come
from a fork server that imported the heavy modules once, never forked from the test process;
that the results do not depend on it is checked by every executor-equality test."""

from __future__ import annotations

import multiprocessing
import sys

from dpaudit.engine import ProcessExecutor, process_pool_context


def _square(size, seed):
    return [size * size, len(sys.modules) > 0]


def test_pools_start_from_a_fork_server_preloading_only_what_this_process_imported():
    ctx = process_pool_context()
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        assert ctx.get_start_method() == "spawn"
        return
    assert ctx.get_start_method() == "forkserver"
    from multiprocessing import forkserver

    preload = forkserver._forkserver._preload_modules
    assert "numpy" in preload
    assert all(m in sys.modules for m in preload)  # nothing this process did not need


def test_a_fork_server_pool_runs_blocks_and_a_second_pool_reuses_the_server():
    from multiprocessing import forkserver

    ex = ProcessExecutor(2)
    tasks = [(i, i + 1, None) for i in range(4)]
    first = sorted((i, c.tolist()) for i, c in ex.map(_square, tasks))
    pid = forkserver._forkserver._forkserver_pid
    second = sorted((i, c.tolist()) for i, c in ex.map(_square, tasks))
    assert first == second == [(i, [(i + 1) ** 2, 1]) for i in range(4)]
    assert forkserver._forkserver._forkserver_pid == pid  # one server per process
