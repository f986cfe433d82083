"""Chunks and groups of the engine's task API (dpaudit.engine.run_tasks, issue 30).

* chunks of tasks packed into one int64 array round-trip exactly (shapes, NaN, ±inf);
* the same seed gives bit-identical results for every executor (serial, processes, joblib,
  Ray), 1 and 2 workers and every chunking (fixed sizes, or the measured cost model), for
  plain task functions and for grouped ones (``group_size`` + ``run_group``);
* a group is always computed whole, also on resume;
* the cost model: one unit before a measurement and with one worker; ⌈o / (0.05 t)⌉ after,
  capped so that every worker keeps busy;
* the process pool receives the task function once per worker, not once per task;
* a two-node Ray cluster (``ray.cluster_utils.Cluster``): both nodes work, same results
  (~15 s; like the local-instance test with 1 and 2 workers it needs ``DPAUDIT_TEST_RAY=1``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpaudit._rng import child_seed
from dpaudit.engine import SerialExecutor, run_tasks
from dpaudit.engine._tasks import _ChunkPlan, _decode, _encode, _unit_count, _units

EXECUTORS = [("serial", 1), ("processes", 1), ("processes", 2), ("joblib", 1), ("joblib", 2)]
RAY = os.environ.get("DPAUDIT_TEST_RAY") == "1"  # a local Ray instance takes ~10 s to start


@pytest.fixture(scope="module", autouse=True)
def _fresh_joblib_pool_afterwards():
    """Shut joblib's reusable loky pool down after this module: in the full suite a later
    joblib test deadlocked on the pool these tests left behind (a worker gone while holding
    the call-queue lock); a fresh pool per module avoids it."""
    yield
    try:
        from joblib.externals.loky import get_reusable_executor
    except ImportError:
        return
    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)


def ragged(index, seed):
    """Results of different shapes, NaN and ±inf included (module level: picklable)."""
    g = np.random.default_rng(seed)
    out = g.normal(size=(index % 3 + 1, 2))
    out[0, 0] = [np.nan, np.inf, -np.inf][index % 3]
    return out


@dataclasses.dataclass(frozen=True)
class Grouped:
    """Tasks computed ``group_size`` at a time; a result also depends on its group's members,
    so a group handed over partially would show."""

    group_size: int = 3

    def run_group(self, indices, seeds):
        return [ragged(i, s) + sum(indices) for i, s in zip(indices, seeds, strict=True)]

    def __call__(self, index, seed):  # pragma: no cover - the engine calls run_group
        raise AssertionError("a grouped function is called by groups")


def _grouped_oracle(n, seed, size=3):
    root = np.random.SeedSequence(seed)
    out = []
    for i in range(n):
        a = (i // size) * size
        group = range(a, min(a + size, n))
        out.append(ragged(i, child_seed(root, i)) + sum(group))
    return out


def _same(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))
        for x, y in zip(a, b, strict=True)
    )


def test_chunk_encoding_round_trips_exactly():
    values = [(4, np.array([np.nan, -0.0, np.inf])), (0, np.zeros((0, 3))), (9, np.array(2.5)),
              (2, np.arange(6.0).reshape(2, 3))]  # fmt: skip
    back, seconds = _decode(_encode(values, 1.25))
    assert seconds == pytest.approx(1.25)
    assert [i for i, _ in back] == [4, 0, 9, 2]
    assert _same([v for _, v in back], [v for _, v in values])


@pytest.mark.parametrize(("executor", "workers"), EXECUTORS)
def test_bit_identical_for_every_executor_workers_and_chunking(executor, workers):
    _check_executor(executor, workers)


@pytest.mark.skipif(not RAY, reason="set DPAUDIT_TEST_RAY=1 to start a local Ray instance")
def test_bit_identical_on_ray_with_1_and_2_workers():
    ray = _ray_by_value()
    try:
        for workers in (1, 2):
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            _check_executor("ray", workers)
            ray.shutdown()
    finally:
        ray.shutdown()


def _check_executor(executor, workers):
    ref = run_tasks(ragged, 23, rng=5).results
    gref = _grouped_oracle(23, 5)
    for chunk in (None, 4):
        got = run_tasks(ragged, 23, rng=5, executor=executor, workers=workers, chunk_size=chunk)
        assert _same(got.results, ref), (executor, workers, chunk)
        assert got.chunks == (-(-23 // chunk) if chunk else got.chunks)
        grouped = run_tasks(Grouped(), 23, rng=5, executor=executor, workers=workers,
                            chunk_size=chunk)  # fmt: skip
        assert _same(grouped.results, gref), (executor, workers, chunk)


class StopAfter:
    """Serial executor that raises KeyboardInterrupt after ``after`` chunks."""

    name, workers = "stop-after", 1

    def __init__(self, after):
        self.after = after

    def map(self, fn, tasks):
        for i, item in enumerate(SerialExecutor().map(fn, tasks)):
            if i == self.after:
                raise KeyboardInterrupt
            yield item


def test_groups_are_computed_whole_on_resume(tmp_path):
    ck = tmp_path / "g.tasks"
    with pytest.raises(KeyboardInterrupt):
        run_tasks(Grouped(), 10, rng=2, executor=StopAfter(2), checkpoint=ck)
    run = run_tasks(Grouped(), 10, rng=2, checkpoint=ck)
    assert run.resumed_tasks == 6 and run.computed_tasks == 4
    assert _same(run.results, _grouped_oracle(10, 2))
    assert _units(10, 3, {0: 0, 1: 0, 4: 0}) == [(0, 1, 2), (3, 4, 5), (6, 7, 8), (9,)]
    assert _units(4, None, {1: 0}) == [(0,), (2,), (3,)]


def test_cost_model(monkeypatch):
    clock, cpu = [100.0], [5.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(time, "process_time", lambda: cpu[0])
    plan = _ChunkPlan(list(range(1000)), workers=2, fixed=None)
    assert plan.size(1000) == 1  # nothing measured yet
    plan.record(1, 0.5)  # the first result starts the clock (start-up is not dispatch)
    assert plan.size(1000) == 1
    clock[0] += 1.0  # 1 s of wall on 2 workers, 1.8 s computed over 9 units in 9 chunks
    for _ in range(9):
        plan.record(1, 0.2)
    # overhead per chunk o = (2·1 − 1.8)/9, per unit t = 0.2: ⌈o / (0.05 t)⌉ = 3
    assert plan.size(1000) == 3
    assert plan.size(10) == 2  # capped at remaining / (2 · workers)
    cpu[0] += 0.18  # this process's own CPU (dispatch, decoding) counts as overhead too
    # o = (2·1 − 1.8 + 0.18)/9, t = 0.2: ⌈o / (0.05 t)⌉ = 5
    assert plan.size(1000) == 5
    plan.max_seconds = 0.45
    assert plan.size(1000) == 2  # capped at max_seconds / t
    local = _ChunkPlan([], workers=1, fixed=None, remote=False)
    local.record(1, 0.5)
    clock[0] += 1.0
    local.record(1, 0.01)
    assert local.size(1000) == 1  # in this process: nothing to dispatch
    assert _ChunkPlan([], workers=2, fixed=7).size(1000) == 7
    with pytest.raises(ValueError, match="chunk_size"):
        run_tasks(ragged, 3, chunk_size=0)


def test_a_group_is_one_unit_of_the_cost_model():
    """A chunk of 2 groups of 64 tasks is 2 units: per-unit time is per group, so the
    ~5 s cap on a chunk's compute holds for grouped functions too (it once let a chunk
    of a LiDP gain run grow to 1,300 groups, 40 minutes without a journal entry)."""
    values = [(i, np.zeros(1)) for i in range(128, 256)]
    assert _unit_count(values, 64) == 2
    assert _unit_count(values, None) == 128
    assert _unit_count(values[:10], 64) == 1


@dataclasses.dataclass(frozen=True)
class CountsPickles:
    """A task function that records every time it is pickled (in the parent process)."""

    log: str

    def __reduce__(self):
        with open(self.log, "a") as fh:
            fh.write("x")
        return (CountsPickles, (self.log,))

    def __call__(self, index, seed):
        return ragged(index, seed)


def test_process_pool_sends_the_function_once_per_worker(tmp_path):
    log = tmp_path / "pickles"
    log.write_text("")
    run = run_tasks(CountsPickles(str(log)), 40, rng=1, executor="processes", workers=2,
                    chunk_size=1)  # fmt: skip
    assert run.chunks == 40 and len(log.read_text()) <= 2 + 1  # + 1: the fingerprint
    assert _same(run.results, run_tasks(ragged, 40, rng=1).results)
    assert run.compute_seconds >= 0.0 and np.isfinite(run.overhead_fraction)


def node_of(index, seed):
    """A slow task that reports the Ray node it ran on (48 bits of the node id)."""
    import ray

    time.sleep(0.05)
    node = int(ray.get_runtime_context().get_node_id()[:12], 16)
    return np.append(ragged(index, seed).ravel(), float(node))


def _ray_by_value():
    """Ray, with this module's functions pickled by value (Ray's workers cannot import it)."""
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return ray


@pytest.mark.skipif(not RAY, reason="set DPAUDIT_TEST_RAY=1 to start a Ray cluster")
def test_two_node_ray_cluster():
    """~15 s on 2 cores and many processes, so, like the local-instance test, it runs with
    DPAUDIT_TEST_RAY=1. The engine on the cluster
    (both nodes work, same results), then a LiDP audit whose ``[execution] address`` (the
    CLI's ``--executor ray --address``) names the cluster: the same statistics as serial."""
    ray = _ray_by_value()
    from ray.cluster_utils import Cluster

    from dpaudit.experiments.lidp_dpsgd import (
        ExecutionSettings,
        GaussianSumQueryRuns,
        LiDPAuditSettings,
        LiDPDPSGDSettings,
        audit_canary_runs,
        resolve_executor,
    )

    settings = LiDPAuditSettings(num_runs=12, num_tuning_runs=6, methods=("clopper-pearson",),
                                 curve_method="wilson1")  # fmt: skip
    audit = {"counts": (1, 4), "settings": settings, "delta": 1e-5, "rng": 3}
    runs = GaussianSumQueryRuns(1.0, 1000)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        execution = ExecutionSettings(executor="ray", workers=2, address=cluster.address)
        runner = resolve_executor(LiDPDPSGDSettings(execution=execution))
        assert runner.address == cluster.address
        run = run_tasks(node_of, 40, rng=4, executor=runner)
        lidp = audit_canary_runs(runs, executor=runner, **audit)
    finally:
        ray.shutdown()
        cluster.shutdown()
    ref = run_tasks(ragged, 40, rng=4).results
    assert _same([r[:-1] for r in run.results], [r.ravel() for r in ref])
    assert len({float(r[-1]) for r in run.results}) == 2, "both nodes ran tasks"
    serial = audit_canary_runs(runs, **audit)
    for k in (1, 4):
        np.testing.assert_array_equal(lidp.audit(k).alternative, serial.audit(k).alternative)
        np.testing.assert_array_equal(lidp.audit(k).null, serial.audit(k).null)
    assert lidp.executor == "ray" and lidp.workers == 2


def test_module_examples():
    from doctest_support import module_examples

    assert module_examples("dpaudit.engine._tasks").failed == 0
    assert Path(__file__).parent.name == "engine"
