"""The engine's task API (dpaudit.engine.run_tasks): seeds, executors, the task journal."""

from __future__ import annotations

import dataclasses
import os
import struct

import numpy as np
import pytest

from doctest_support import module_examples
from dpaudit._rng import block_seeds
from dpaudit.engine import SerialExecutor, read_task_checkpoint, run_tasks


def draw(index, seed):
    """A task: three normals shifted by the index (module level: picklable)."""
    return np.random.default_rng(seed).normal(size=3) + index


def ragged(index, seed):
    """Results of different shapes, NaN and ±inf included."""
    g = np.random.default_rng(seed)
    out = g.normal(size=(index % 3 + 1, 2))
    out[0, 0] = [np.nan, np.inf, -np.inf][index % 3]
    return out


@dataclasses.dataclass(frozen=True)
class Logged:
    """Appends each task index to a file once the task is finished."""

    path: str

    def __call__(self, index, seed):
        with open(self.path, "a") as fh:
            fh.write(f"{index}\n")
        return draw(index, seed)


class StopAfter:
    """Serial executor that raises KeyboardInterrupt after ``after`` tasks."""

    name, workers = "stop-after", 1

    def __init__(self, after):
        self.after = after

    def map(self, fn, tasks):
        for i, item in enumerate(SerialExecutor().map(fn, tasks)):
            if i == self.after:
                raise KeyboardInterrupt
            yield item


def _oracle(n, seed):
    """The documented definition: task i gets SeedSequence(seed).spawn(n)[i]."""
    return [draw(i, s) for i, s in enumerate(block_seeds(seed, n))]


def _same(a, b):
    return len(a) == len(b) and all(
        np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True)
    )


def test_task_i_gets_child_i_of_the_root_seed():
    run = run_tasks(draw, 7, rng=11)
    assert _same(run.results, _oracle(7, 11))
    assert run.num_tasks == 7 and run.computed_tasks == 7 and run.resumed_tasks == 0
    assert run.seed == 11 and run.executor == "serial" and run.stacked().shape == (7, 3)
    assert run.tasks_per_minute > 0


def test_same_results_whatever_the_executor_and_workers():
    ref = run_tasks(ragged, 9, rng=3).results
    for executor, workers in (("processes", 1), ("processes", 2)):
        got = run_tasks(ragged, 9, rng=3, executor=executor, workers=workers)
        assert _same(got.results, ref), executor
    assert [r.shape for r in ref] == [(1, 2), (2, 2), (3, 2)] * 3
    assert np.isnan(ref[0][0, 0]) and ref[1][0, 0] == np.inf and ref[2][0, 0] == -np.inf
    with pytest.raises(ValueError, match="different shapes"):
        run_tasks(ragged, 3, rng=3).stacked()


def test_progress_counts_resumed_tasks(tmp_path):
    ck = tmp_path / "t.tasks"
    with pytest.raises(KeyboardInterrupt):
        run_tasks(draw, 6, rng=1, executor=StopAfter(2), checkpoint=ck)
    seen = []
    run_tasks(draw, 6, rng=1, checkpoint=ck, progress=lambda d, t, w: seen.append((d, t, w)))
    assert seen == [(2, 6, "tasks"), (3, 6, "tasks"), (4, 6, "tasks"), (5, 6, "tasks"),
                    (6, 6, "tasks")]  # fmt: skip


def test_interrupted_run_resumes_without_rerunning_a_finished_task(tmp_path):
    ck, log = tmp_path / "t.tasks", tmp_path / "log"
    fn = Logged(str(log))
    with pytest.raises(KeyboardInterrupt):
        run_tasks(fn, 10, rng=5, executor=StopAfter(4), checkpoint=ck)
    first = log.read_text().split()
    assert sorted(read_task_checkpoint(ck)) == [0, 1, 2, 3]
    run = run_tasks(fn, 10, rng=5, checkpoint=ck)
    second = log.read_text().split()[len(first) :]
    assert run.resumed_tasks == 4 and run.computed_tasks == 6
    # task 4 was running when the run stopped: it is run again, but no recorded task is
    assert set(second) == {str(i) for i in range(4, 10)} and len(second) == 6
    assert _same(run.results, _oracle(10, 5))
    again = run_tasks(fn, 10, rng=5, checkpoint=ck)
    assert again.computed_tasks == 0 and _same(again.results, run.results)


def test_checkpoint_refuses_another_run(tmp_path):
    ck = tmp_path / "t.tasks"
    run_tasks(draw, 4, rng=1, checkpoint=ck)
    with pytest.raises(ValueError, match=r"another run .*differs in seed"):
        run_tasks(draw, 4, rng=2, checkpoint=ck)
    with pytest.raises(ValueError, match="differs in num_tasks"):
        run_tasks(draw, 5, rng=1, checkpoint=ck)
    with pytest.raises(ValueError, match="differs in task_function"):
        run_tasks(ragged, 4, rng=1, checkpoint=ck)
    with pytest.raises(ValueError, match="differs in key"):
        run_tasks(draw, 4, rng=1, checkpoint=ck, key="other")
    (tmp_path / "x.npz").write_bytes(b"PK\x03\x04 not a journal")
    with pytest.raises(ValueError, match="not a readable task journal"):
        run_tasks(draw, 4, rng=1, checkpoint=tmp_path / "x.npz")


def _record_offsets(path):
    """Start offset of every record (header length from the file itself)."""
    data = path.read_bytes()
    pos = 14
    _, length = struct.unpack("<IQ", data[pos : pos + 12])
    pos += 12 + length + 32
    offsets = []
    while pos < len(data):
        offsets.append(pos)
        _, ndim = struct.unpack("<QI", data[pos : pos + 12])
        dims = struct.unpack(f"<{ndim}Q", data[pos + 12 : pos + 12 + 8 * ndim])
        pos += 12 + 8 * ndim + 8 * int(np.prod(dims)) + 32
    return data, offsets


def test_torn_tail_is_dropped_and_damage_is_refused(tmp_path):
    ck = tmp_path / "t.tasks"
    run_tasks(draw, 5, rng=9, checkpoint=ck)
    data, offsets = _record_offsets(ck)
    assert len(offsets) == 5
    ck.write_bytes(data[: offsets[4] + 20])  # the last write cut short
    assert sorted(read_task_checkpoint(ck)) == [0, 1, 2, 3]
    run = run_tasks(draw, 5, rng=9, checkpoint=ck)
    assert run.resumed_tasks == 4 and run.computed_tasks == 1
    assert _same(run.results, _oracle(5, 9))
    assert ck.read_bytes() == data  # the torn record was truncated, the new one appended
    # a flipped byte inside an earlier record: damage, refused, file untouched
    bad = bytearray(data)
    bad[offsets[1] + 30] ^= 0xFF
    ck.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="record 1 is damaged"):
        run_tasks(draw, 5, rng=9, checkpoint=ck)
    assert ck.read_bytes() == bytes(bad)
    # a flipped byte in the header
    bad = bytearray(data)
    bad[40] ^= 0xFF
    ck.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="header"):
        run_tasks(draw, 5, rng=9, checkpoint=ck)
    # a record duplicated (rewritten consistently) is refused
    dup = data + data[offsets[0] : offsets[1]]
    ck.write_bytes(dup)
    with pytest.raises(ValueError, match="two records of task 0"):
        run_tasks(draw, 5, rng=9, checkpoint=ck)


def test_a_journal_in_use_is_refused(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    ck = tmp_path / "t.tasks"
    run_tasks(draw, 2, rng=1, checkpoint=ck)
    with open(ck, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        with pytest.raises(ValueError, match="in use by another process"):
            run_tasks(draw, 2, rng=1, checkpoint=ck)


def test_bad_arguments():
    with pytest.raises(TypeError, match="fn must be callable"):
        run_tasks(3, 2)
    with pytest.raises(ValueError, match="num_tasks"):
        run_tasks(draw, 0)
    with pytest.raises(ValueError, match="workers"):
        run_tasks(draw, 2, executor="processes", workers=0)
    with pytest.raises(ValueError, match="unknown executor"):
        run_tasks(draw, 2, executor="threads")
    with pytest.raises(TypeError, match="key"):
        run_tasks(draw, 2, key=3)
    with pytest.raises(TypeError, match="progress"):
        run_tasks(draw, 2, progress=3)


def test_unfingerprintable_function_needs_a_key(tmp_path):
    lock = __import__("threading").Lock()

    def fn(index, seed, _lock=lock):
        return draw(index, seed)

    with pytest.raises(ValueError, match="pass key="):
        run_tasks(fn, 2, rng=1, checkpoint=tmp_path / "t.tasks")
    run = run_tasks(fn, 2, rng=1, checkpoint=tmp_path / "t.tasks", key="job")
    assert _same(run.results, _oracle(2, 1))


def test_ray_executor_same_results_local_instance():
    ray = pytest.importorskip("ray")
    if os.environ.get("DPAUDIT_TEST_RAY") != "1":
        pytest.skip("set DPAUDIT_TEST_RAY=1 (the DP-SGD Ray test starts an instance already)")
    try:
        run = run_tasks(ragged, 6, rng=3, executor="ray", workers=2)
    finally:
        ray.shutdown()
    assert _same(run.results, run_tasks(ragged, 6, rng=3).results)


def test_module_examples():
    assert module_examples("dpaudit.engine._tasks").failed == 0
