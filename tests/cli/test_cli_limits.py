"""CLI rough edges of issue 28: oversized or empty requests refused up front, quickly."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app
from dpaudit.cli.argmax import DEFAULT_MAX_CLASSES
from dpaudit.experiments.lidp_gaussian import LiDPGaussianSettings
from dpaudit.experiments.lidp_gaussian.settings import MIN_RUNS


def _invoke(args):
    start = time.perf_counter()
    res = CliRunner().invoke(build_app(), args)
    return res, time.perf_counter() - start


def test_argmax_refuses_too_many_classes_before_work():
    # 100 equal votes took > 2 minutes (every quadrature on the per-class path).
    res, seconds = _invoke(["argmax", "--votes", ",".join(["10"] * 100), "--sigma", "40", "--json"])
    assert res.exit_code == 2, res.output
    assert seconds < 2
    assert "--max-classes=30" in res.output and "100 classes" in res.output


def test_argmax_cap_can_be_raised_and_default_size_answers_in_seconds():
    votes = ",".join(["10"] * 12)
    res, _ = _invoke(["argmax", "--votes", votes, "--sigma", "40", "--max-classes", "11"])
    assert res.exit_code == 2 and "--max-classes=11" in res.output
    res, _ = _invoke(["argmax", "--votes", votes, "--sigma", "40", "--max-classes", "12", "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["probabilities"]) == 12
    assert DEFAULT_MAX_CLASSES == 30
    res, _ = _invoke(["argmax", "--votes", "1,1", "--sigma", "1", "--max-classes", "0"])
    assert res.exit_code == 2 and "max_classes" in res.output


def test_extract_histogram_refuses_an_empty_config(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing\n")
    res, seconds = _invoke(["attack", "extract-histogram", "--config", str(empty), "--json"])
    assert res.exit_code == 2, res.output
    assert seconds < 2
    assert "--config" in res.output and "sets no option" in res.output


@pytest.mark.parametrize("runs", [1, MIN_RUNS - 1])
def test_lidp_gaussian_refuses_too_few_runs(runs):
    with pytest.raises(ValueError, match=f"num_runs must be at least {MIN_RUNS}.*got {runs}"):
        LiDPGaussianSettings(num_runs=runs)
    with pytest.raises(ValueError, match=f"num_tuning_runs must be at least {MIN_RUNS}"):
        LiDPGaussianSettings(num_runs=100, num_tuning_runs=runs)
    assert LiDPGaussianSettings(num_runs=MIN_RUNS).num_runs == MIN_RUNS
    res, seconds = _invoke(["audit", "lidp-gaussian", "--runs", str(runs), "--dim", "4"])
    assert res.exit_code == 2, res.output
    assert seconds < 2
    assert "num_runs" in res.output and str(MIN_RUNS) in res.output
