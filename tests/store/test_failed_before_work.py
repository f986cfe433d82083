"""Issue 45: a run that fails before any work (a refused setting, a missing dependency or
dataset) is recorded as failed without a ``--resume`` hint: resuming it would fail the same
way. A run interrupted, or failed after checkpointing work, keeps its hint."""

from __future__ import annotations

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app
from dpaudit.cli._options import _resumable
from dpaudit.errors import MissingDatasetError, MissingDependencyError
from dpaudit.store import RunStore


def test_a_refused_setting_is_recorded_without_a_resume_hint(tmp_path):
    store = str(tmp_path / "runs.sqlite")
    args = ["audit", "private-prediction", "--queries", "1000", "--no-progress"]
    res = CliRunner().invoke(build_app(), [*args, "--store", store, "--out", str(tmp_path / "o")])
    assert res.exit_code != 0
    with RunStore(store) as s:
        (run,) = s.list()
        assert run.status == "failed" and "queries must be at most 448" in run.error
        assert run.resume_command is None and not run.resumable
    listing = CliRunner().invoke(build_app(), ["runs", "list", "--store", store])
    assert listing.exit_code == 0 and "--resume" not in listing.output


def test_the_store_drops_the_hint_only_when_asked(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as s:
        a = s.start("w", {"seed": 1}, resume_command="dpaudit audit w")
        b = s.start("w", {"seed": 2}, resume_command="dpaudit audit w")
        s.fail(a, "RuntimeError: crashed")
        s.fail(b, "MissingDependencyError: no torch", resumable=False)
        assert s.get(a).resumable and s.get(a).resume_command == f"dpaudit audit w --resume {a}"
        assert not s.get(b).resumable and s.get(b).resume_command is None


def test_which_failures_a_resume_could_help(tmp_path):
    assert not _resumable(MissingDependencyError("'torch' is required"), tmp_path)
    assert not _resumable(MissingDatasetError("install dataset-fashion-mnist"), tmp_path)
    assert not _resumable(ValueError("queries must be at most 448"), None)
    assert not _resumable(ValueError("bad"), tmp_path)  # no checkpoint under --out
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "block.npz").write_bytes(b"x")
    assert _resumable(ValueError("late"), tmp_path)  # work done: resuming reuses it
    assert _resumable(RuntimeError("crashed"), None)
    assert _resumable(KeyboardInterrupt(), None)
