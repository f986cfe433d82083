"""``dpaudit audit private-prediction`` and ``dpaudit demo`` end to end (small digits runs)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("typer")
pytest.importorskip("pydantic")
from typer.testing import CliRunner

from dpaudit.cli import build_app

TINY = [
    "audit", "private-prediction", "--system", "capc", "--dataset", "digits",
    "--teachers", "8", "--sigma", "2", "--adversary", "pois-advq,pois-natq", "--queries", "3",
    "--experiments", "1e5", "--instantiations", "1", "--retrainings", "1", "--no-progress",
]  # fmt: skip


def test_json_output():
    res = CliRunner().invoke(build_app(), [*TINY, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {(e["system"], e["adversary"]) for e in data["entries"]} == {
        ("capc", "pois-advq"),
        ("capc", "pois-natq"),
    }
    for e in data["entries"]:
        r = e["detail"]
        assert r["ordering"]["exact_le_data_dependent"] is True
        assert r["epsilon"]["audit_is_valid_dp_lower_bound"] is False
    assert data["settings"]["engine"]["experiments"] == 100_000
    assert data["workflow"] == "private-prediction"


def test_out_dir_table_and_plots(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(build_app(), [*TINY, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Pois-AdvQ" in res.stdout and "CaPC" in res.stdout
    assert (out / "results.json").is_file()
    assert (out / "rdp_vs_order.png").stat().st_size > 10_000
    assert (out / "epsilon_bars.png").stat().st_size > 10_000
    assert json.loads((out / "results.json").read_text())["detail"]["dataset"] == "digits"


def test_config_file_with_overrides(tmp_path):
    cfg = tmp_path / "a.toml"
    cfg.write_text(
        '[data]\ndataset = "digits"\n[system]\nsystems = ["pate"]\nteachers = 8\nsigma = 2.0\n'
        '[adversary]\nadversaries = ["nat-advq"]\nqueries = 2\ninstantiations = 1\n'
        "retrainings = 1\n[engine]\nexperiments = 100000\n"
    )
    res = CliRunner().invoke(
        build_app(),
        ["audit", "private-prediction", "--config", str(cfg), "--queries", "3", "--json",
         "--no-progress"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["settings"]["adversary"]["queries"] == 3
    assert data["settings"]["system"]["systems"] == ["pate"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sigma", "-1"], "sigma"),
        (["--teachers-per-query", "20"], "teachers_per_query"),
        (["--experiments", "1e19"], "2**63"),
        (["--sigma", "1e300x"], "--sigma must be a number"),
        (["--teachers", "ten"], "--teachers must be an integer"),
        (["--dataset", "no-such-dataset"], "dataset"),
        (["--experiments", "0"], "experiments"),
        (["--experiments", "1.5"], "experiments"),
        (["--adversary", "knn"], "adversar"),
        (["--teachers", "100000"], "teachers"),
    ],
)
def test_bad_options_are_clear_errors(args, message):
    res = CliRunner().invoke(build_app(), [*TINY, *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


def test_out_naming_an_existing_file_fails_before_any_work(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    res = CliRunner().invoke(build_app(), [*TINY, "--out", str(f)])
    assert res.exit_code == 2 and "existing file" in " ".join(res.output.split())


def test_help_lists_the_options_derived_from_the_settings():
    res = CliRunner().invoke(build_app(), ["audit", "private-prediction", "--help"])
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    for flag in (
        "--system",
        "--teachers",
        "--sigma",
        "--adversary",
        "--experiments",
        "--executor",
        "--confidence-level",
        "--selection-order",
        "--max-support",
    ):
        assert flag in text, flag


def test_missing_config_file(tmp_path):
    res = CliRunner().invoke(
        build_app(), ["audit", "private-prediction", "--config", str(tmp_path / "none.toml")]
    )
    assert res.exit_code == 2 and "does not exist" in " ".join(res.output.split())


def test_config_by_shipped_name(tmp_path, monkeypatch):
    """``--config paper-mnist`` (README) reads the shipped file; a local file wins."""
    from dpaudit.cli._options import config_path

    assert config_path("paper-mnist").name == "paper-mnist.toml"
    assert config_path("paper-mnist.toml").parent.name == "configs"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper-mnist").write_text('name = "mine"\n')
    assert config_path("paper-mnist").resolve() == tmp_path / "paper-mnist"
    with pytest.raises(FileNotFoundError, match=r"does not exist: .*paper-fashion-mnist"):
        config_path("no-such-config")


def test_demo_command(monkeypatch, tmp_path):
    import dpaudit.experiments.private_prediction.config as config

    tiny = config.parse_config(
        {"data": {"dataset": "digits"},
         "system": {"systems": ["pate", "capc"], "teachers": 8, "sigma": 2.0},
         "adversary": {"adversaries": ["pois-natq"], "queries": 2, "instantiations": 1,
                       "retrainings": 1},
         "engine": {"experiments": 10**5}}
    )  # fmt: skip
    monkeypatch.setattr(config, "demo_settings", lambda **kw: tiny)
    res = CliRunner().invoke(build_app(), ["demo", "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "dpaudit demo" in res.stdout and "Pois-NatQ" in res.stdout
    assert (tmp_path / "results.json").is_file() and (tmp_path / "epsilon_bars.png").is_file()
    res = CliRunner().invoke(build_app(), ["demo", "--out", str(tmp_path), "--json", "--no-plots"])
    assert res.exit_code == 0
    assert len(json.loads(res.stdout)["entries"]) == 2
