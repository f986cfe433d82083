"""Audit commands record their runs; ``dpaudit runs …`` and ``dpaudit report`` read them;
an interrupted run resumes with ``--resume``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app
from dpaudit.store import RunStore

TINY = [
    "audit", "private-prediction", "--system", "capc", "--dataset", "digits",
    "--teachers", "8", "--sigma", "2", "--adversary", "pois-advq", "--queries", "3",
    "--experiments", "1e5", "--instantiations", "1", "--retrainings", "1", "--no-progress",
]  # fmt: skip


def _run(*args):
    return CliRunner().invoke(build_app(), [*args])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two tiny recorded audits (σ = 2 and σ = 3) in a fresh store."""
    tmp = tmp_path_factory.mktemp("runs")
    store = str(tmp / "runs.sqlite")
    ids = []
    for sigma, out in (("2", "a"), ("3", "b")):
        args = [*TINY, "--sigma", sigma, "--store", store, "--out", str(tmp / out), "--json"]
        res = _run(*args)
        assert res.exit_code == 0, res.output
        ids.append(json.loads(_run("runs", "list", "--store", store, "--json").stdout)[0]["id"])
    return store, ids, tmp


def test_audit_commands_record_their_runs(recorded):
    store, (a, b), _ = recorded
    runs = json.loads(_run("runs", "list", "--store", store, "--json").stdout)
    assert [r["id"] for r in runs] == [b, a] and {r["status"] for r in runs} == {"finished"}
    rec = json.loads(_run("runs", "show", a, "--store", store, "--json").stdout)
    assert rec["workflow"] == "private-prediction" and rec["seed"] == 0
    assert rec["settings"]["system"]["sigma"] == 2.0
    assert rec["command"].startswith("dpaudit audit private-prediction --out")
    assert rec["result"]["entries"][0]["system"] == "capc"
    kinds = sorted(x["kind"] for x in rec["artefacts"])
    assert kinds == ["json", "png", "png"]
    assert "total" in rec["timings"] and rec["versions"]["dpaudit"]
    shown = _run("runs", "show", a[-6:], "--store", store)
    assert shown.exit_code == 0 and "lower bounds next to the claims" in shown.stdout
    assert a in _run("runs", "list", "--store", store).stdout


def test_list_fits_80_columns_without_cutting_cells(recorded):
    store, (a, b), _ = recorded
    res = CliRunner().invoke(build_app(), ["runs", "list", "--store", store], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    table = [line for line in res.stdout.splitlines() if "│" in line or "┃" in line]
    assert table and max(len(line) for line in table) <= 80
    assert "…" not in res.stdout
    assert a in res.stdout and b in res.stdout and "private-prediction" in res.stdout


def test_compare_report_and_remove(recorded, tmp_path):
    store, (a, b), _ = recorded
    cmp = json.loads(_run("runs", "compare", a, b, "--store", store, "--json").stdout)
    assert [d["path"] for d in cmp["settings"]] == ["system.sigma"]
    assert "system.sigma" in _run("runs", "compare", a, b, "--store", store).stdout
    out = tmp_path / "r.html"
    res = _run("report", a, "--store", store, "--out", str(out), "--json")
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert a in page and "data:image/png;base64," in page
    results = json.loads(_run("runs", "show", b, "--store", store, "--json").stdout)["result"]
    rj = tmp_path / "results.json"
    rj.write_text(json.dumps(results))
    assert _run("report", str(rj), "--out", str(tmp_path / "f.html"), "--no-figures").exit_code == 0
    copy = tmp_path / "copy.sqlite"
    src, dst = sqlite3.connect(store), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    assert _run("runs", "rm", a, "--store", str(copy), "--json").stdout.strip() == json.dumps(
        {"removed": a}
    )
    bad = _run("runs", "show", a, "--store", str(copy))
    assert bad.exit_code == 2 and "no run" in bad.output
    missing = _run("runs", "list", "--store", str(tmp_path / "none.sqlite"))
    assert missing.exit_code == 2 and "no run store" in missing.output


def test_no_store_and_bad_store(tmp_path):
    store = tmp_path / "s.sqlite"
    res = _run(*TINY, "--no-store", "--json", "--queries", "2")
    assert res.exit_code == 0 and not store.exists()
    res = _run(*TINY, "--store", str(tmp_path), "--json")
    assert res.exit_code == 2 and "--store" in res.output


def test_an_interrupted_audit_resumes(tmp_path):
    """A run whose process died is listed interrupted and finishes with --resume."""
    store = str(tmp_path / "runs.sqlite")
    out = tmp_path / "out"
    code = textwrap.dedent(
        """
        import os, sys
        from dpaudit.experiments.private_prediction import PrivatePredictionSettings
        from dpaudit.store import RunStore
        s = PrivatePredictionSettings.of(dataset="digits", systems=("capc",), teachers=8,
            sigma=2.0, adversaries=("pois-advq",), queries=3, experiments=100000,
            instantiations=1, retrainings=1)
        RunStore(sys.argv[1]).start("private-prediction", s, out_dir=sys.argv[2],
            resume_command="dpaudit audit private-prediction")
        os._exit(1)  # killed before it finished
        """
    )
    assert subprocess.run([sys.executable, "-c", code, store, str(out)], timeout=120).returncode
    (rec,) = json.loads(_run("runs", "list", "--store", store, "--json").stdout)
    assert rec["status"] == "interrupted"
    listed = _run("runs", "list", "--store", store, "--status", "interrupted")
    assert "--resume" in listed.stdout
    bad = _run(*TINY, "--resume", rec["id"], "--store", store)
    assert bad.exit_code == 2 and "give no --config nor options" in bad.output
    res = _run("audit", "private-prediction", "--resume", rec["id"], "--store", store, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["settings"]["system"]["teachers"] == 8
    with RunStore(store) as s:
        done = s.get(rec["id"])
    assert done.status == "finished" and done.attempts == 2
    assert (out / "results.json").is_file()
    again = _run("audit", "private-prediction", "--resume", rec["id"], "--store", store)
    assert again.exit_code == 2 and "only interrupted or failed" in again.output
