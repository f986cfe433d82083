"""``dpaudit audit lidp-dp-sgd``: options from the settings, files under --out, resume from
the runs' journal, one-line errors before any training."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("typer")
pytest.importorskip("torch")
pytest.importorskip("opacus")

from typer.testing import CliRunner

from dpaudit import _settings
from dpaudit._settings import find_config
from dpaudit.cli import build_app
from dpaudit.experiments.lidp_dpsgd.settings import LiDPDPSGDSettings

TINY = ["--dataset", "digits", "--pooling", "1", "--train-examples", "32", "--canaries", "2",
        "--num-runs", "2", "--tuning-runs", "2", "--curve-method", "wilson2", "--steps", "3",
        "--executor", "serial", "--no-progress", "--no-store"]  # fmt: skip


def _invoke(args):
    return CliRunner().invoke(build_app(), ["audit", "lidp-dp-sgd", *args])


def test_shipped_configs_parse():
    for name in ("lidp-dp-sgd", "lidp-dp-sgd-gain"):
        s = _settings.load_toml(find_config(name), LiDPDPSGDSettings)
        assert s.training.sampling_rate == 1.0 and s.batch_size == s.nominal_size
    gain = _settings.load_toml(find_config("lidp-dp-sgd-gain"), LiDPDPSGDSettings)
    assert gain.canaries.counts == (1, 4, 16, 64) and gain.audit.repetitions == 5
    big = _settings.load_toml(find_config("lidp-dp-sgd-gain-16384"), LiDPDPSGDSettings)
    # the same experiment as lidp-dp-sgd-gain, at the paper's scale, with the batched trainer
    assert big.canaries == gain.canaries and big.seed == gain.seed
    assert big.audit.num_runs == 16384 and big.audit.run_grid[-1] == 16384
    assert big.training.trainer == "batched" and big.execution.workers == 2
    default = _settings.load_toml(find_config("lidp-dp-sgd"), LiDPDPSGDSettings)
    assert _settings.from_mapping(LiDPDPSGDSettings, _settings.to_mapping(default)) == default


def test_run_writes_files_and_a_second_run_resumes_everything(tmp_path):
    out = tmp_path / "out"
    first = _invoke([*TINY, "--out", str(out), "--json"])
    assert first.exit_code == 0, first.output
    res = json.loads(first.stdout)
    assert res["workflow"] == "lidp-dp-sgd" and res["detail"]["audit"]["computed_runs"] == 8
    assert [e["adversary"] for e in res["entries"]] == ["k=2:clopper-pearson", "k=2:wilson1",
                                                        "k=2:wilson2"]  # fmt: skip
    for name in ("results.json", "curves.md", "checkpoints/runs.tasks"):
        assert (out / name).is_file(), name
    again = _invoke([*TINY, "--out", str(out), "--json"])
    assert again.exit_code == 0, again.output
    res2 = json.loads(again.stdout)
    assert res2["detail"]["audit"]["computed_runs"] == 0
    assert res2["detail"]["audit"]["resumed_runs"] == 8
    assert res2["entries"] == res["entries"]
    table = _invoke([*TINY, "--out", str(out)])
    assert table.exit_code == 0 and "Lifted-DP audit of DP-SGD" in table.stdout
    assert "8 resumed" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--canaries", "0"], "counts must hold canary counts k >= 1"),
        (["--methods", "wilson4"], "'wilson4' needs at least 4 canaries per run, got k=2"),
        (["--num-runs", "1"], "num_runs must be at least 2"),
        (["--kind", "flipped", "--canary-pool", "2"], "2k - 1 = 3 distinct canaries"),
        (["--train-examples", "5000"], "num_train = 5000 examples, but digits"),
    ],
)
def test_bad_input_is_one_line_before_training(args, message):
    res = _invoke([*TINY, *args])
    assert res.exit_code == 2
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_journal_of_other_settings_is_refused(tmp_path):
    out = tmp_path / "out"
    assert _invoke([*TINY, "--out", str(out)]).exit_code == 0
    res = _invoke([*TINY, "--out", str(out), "--seed", "9"])
    assert res.exit_code == 2 and "belongs to another run" in res.stderr
