"""The run store: records, references, failures, interrupted and resumed runs, concurrent
writers of two processes, a crash in the middle of a write, comparisons."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from dpaudit._results import AuditEntry, AuditResult, Claim, LowerBound, SelectionRecord
from dpaudit.store import (
    RunNotFoundError,
    RunStore,
    compare_runs,
    default_store_path,
)


def _result(lower=0.5, claim=2.0, seed=1, sigma=2.0) -> AuditResult:
    entry = AuditEntry(
        "toy", "adv", LowerBound("CP", 0.95, epsilon=lower),
        claims=(Claim("di", "Mironov 2017", epsilon=claim),),
        selections=(SelectionRecord("threshold", "split"),),
    )  # fmt: skip
    return AuditResult("toy", (entry,), {"sigma": sigma}, seed, {"attack": 0.1}, {"numpy": "x"})


def _child(store: str, body: str) -> subprocess.Popen:
    code = "from dpaudit.store import RunStore\n" + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", code, store])


def test_record_get_list_remove(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{}")
    (out / "checkpoints").mkdir()
    (out / "checkpoints" / "block.npz").write_bytes(b"x")
    with RunStore(tmp_path / "runs.sqlite") as store:
        rid = store.start(
            "toy", {"seed": 1, "name": "n"}, seed=1, command=["dpaudit", "x"],
            resume_command="dpaudit x", out_dir=out,
        )  # fmt: skip
        assert store.get(rid).status == "running"
        store.finish(rid, _result(), out_dir=out)
        rec = store.get(rid)
        assert (rec.status, rec.seed, rec.command, rec.workflow) == (
            "finished",
            1,
            "dpaudit x",
            "toy",
        )
        assert rec.result["entries"][0]["lower_bound"]["epsilon"] == 0.5
        assert rec.timings["attack"] == 0.1 and rec.timings["total"] >= 0
        assert rec.versions == {"numpy": "x"} and rec.wall_seconds >= 0
        assert [a.path.endswith("results.json") for a in rec.artefacts] == [True]
        assert len(rec.artefacts[0].sha256) == 64 and rec.artefacts[0].size == 2
        assert not rec.resumable
        assert store.get(rid[:15]).id == rid and store.get(rid[-6:]).id == rid
        assert [r.id for r in store.list()] == [rid] and store.list()[0].result is None
        assert store.list(status="failed") == [] and store.list(workflow="other") == []
        assert json.loads(rec.to_json())["id"] == rid
        store.remove(rid[-6:])
        with pytest.raises(RunNotFoundError, match="no run"):
            store.get(rid)
        with pytest.raises(ValueError, match="status must be"):
            store.list(status="done")


def test_ambiguous_and_bad_references(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        a = store.start("w", {})
        b = store.start("w", {})
        common = 0
        while a[common] == b[common]:
            common += 1
        with pytest.raises(RunNotFoundError, match="ambiguous"):
            store.get(a[:common])
        with pytest.raises(RunNotFoundError, match="non-empty"):
            store.get("")
        with pytest.raises(RunNotFoundError, match="no run"):
            store.get("zzz%")


def test_record_marks_failures_and_interruptions(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(RuntimeError), store.record("w", {"seed": 3}) as run:
            raise RuntimeError("boom")
        assert store.get(run.id).status == "failed" and "boom" in store.get(run.id).error
        with pytest.raises(KeyboardInterrupt), store.record("w", {}) as run2:
            raise KeyboardInterrupt
        assert store.get(run2.id).status == "interrupted"
        with store.record("w", {}) as run3:
            pass
        assert store.get(run3.id).status == "failed"
        with store.record("w", {}) as run4:
            run4.finish(_result())
        assert store.get(run4.id).status == "finished"


def test_a_dead_process_is_interrupted_and_resumes(tmp_path):
    path = str(tmp_path / "runs.sqlite")
    child = _child(
        path,
        """
        import sys, os
        s = RunStore(sys.argv[1])
        s.start("w", {"seed": 5}, resume_command="dpaudit audit w")
        os._exit(0)  # dies without finishing
        """,
    )
    assert child.wait(60) == 0
    with RunStore(path) as store:
        (rec,) = store.list()
        assert rec.status == "interrupted" and rec.resumable
        assert rec.resume_command == f"dpaudit audit w --resume {rec.id}"
        assert store.list(status="interrupted")[0].id == rec.id
        again = store.resume(rec.id)
        assert again.status == "running" and again.attempts == 2
        with pytest.raises(ValueError, match="only interrupted or failed"):
            store.resume(rec.id)
        store.finish(rec.id, _result())
        assert store.get(rec.id).status == "finished"


def test_two_processes_write_at_once(tmp_path):
    path = str(tmp_path / "runs.sqlite")
    RunStore(path).close()
    body = """
        import sys
        from dpaudit._results import AuditResult
        s = RunStore(sys.argv[1])
        for i in range(25):
            rid = s.start("w", {"i": i})
            s.finish(rid, AuditResult("w", (), {"i": i}, i, {}, {}))
        """
    children = [_child(path, body) for _ in range(2)]
    assert [c.wait(120) for c in children] == [0, 0]
    with RunStore(path) as store:
        runs = store.list()
        assert len(runs) == 50 and {r.status for r in runs} == {"finished"}
        assert len({r.id for r in runs}) == 50


def test_a_crash_in_the_middle_of_a_write_leaves_the_store_whole(tmp_path):
    path = str(tmp_path / "runs.sqlite")
    with RunStore(path) as store:
        keep = store.start("w", {"seed": 0})
        store.finish(keep, _result())
    body = """
        import sys
        s = RunStore(sys.argv[1])
        rid = s.start("w", {"seed": 1})
        print(rid, flush=True)
        big = {"workflow": "w", "entries": [], "detail": ["x" * 1000] * 60000}
        while True:  # killed while writing ~60 MB results
            s.finish(rid, big)
        """
    code = "from dpaudit.store import RunStore\n" + textwrap.dedent(body)
    child = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, text=True)
    rid = child.stdout.readline().strip()
    time.sleep(2.0)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    child.stdout.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    with RunStore(path) as store:
        assert store.get(keep).status == "finished"
        rec = store.get(rid)
        assert rec.status in ("interrupted", "finished")  # never half-written
        if rec.status == "finished":
            assert len(rec.result["detail"]) == 60000


def test_compare_runs(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        a = store.start("toy", {"sigma": 2.0, "system": {"m": 30}}, seed=1)
        store.finish(a, _result(lower=0.5, claim=2.0, seed=1))
        b = store.start("toy", {"sigma": 4.0, "system": {"m": 30}}, seed=2)
        store.finish(b, _result(lower=0.25, claim=1.0, seed=2))
        cmp = compare_runs(store.get(a), store.get(b))
    assert [(d.path, d.a, d.b) for d in cmp.settings] == [("sigma", 2.0, 4.0)]
    (e,) = cmp.entries
    assert (e.lower_a, e.lower_b, e.claim_a, e.claim_b) == (0.5, 0.25, 2.0, 1.0)
    assert (e.ratio_a, e.ratio_b) == (4.0, 4.0) and (cmp.seed_a, cmp.seed_b) == (1, 2)


def test_default_store_path(monkeypatch, tmp_path):
    monkeypatch.setenv("DPAUDIT_STORE", str(tmp_path / "x.sqlite"))
    assert default_store_path() == tmp_path / "x.sqlite"
    monkeypatch.setenv("DPAUDIT_STORE", "off")
    assert default_store_path() is None
    monkeypatch.delenv("DPAUDIT_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "dpaudit" / "runs.sqlite"


def test_store_path_errors(tmp_path):
    with pytest.raises(ValueError, match="directory"):
        RunStore(tmp_path)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('format', 'something/9')")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"not a dpaudit\.store/1"):
        RunStore(other)
