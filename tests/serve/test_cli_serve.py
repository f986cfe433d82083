"""``dpaudit serve`` options, ``dpaudit keys`` and ``dpaudit attack extract-histogram --url``."""

from __future__ import annotations

import json

import pytest
from serve_support import fixed_service

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app
from dpaudit.serve import ServiceServer, create_app


def _run(*args, env=None):
    return CliRunner().invoke(build_app(), list(args), env=env)


def test_keys_add_list_revoke(tmp_path):
    ledger = str(tmp_path / "l.sqlite")
    res = _run("keys", "add", "alice", "--ledger", ledger, "--epsilon", "2.5", "--json")
    assert res.exit_code == 0, res.output
    key = json.loads(res.stdout)["api_key"]
    assert key.startswith("dpa_")
    res = _run("keys", "list", "--ledger", ledger, "--json")
    clients = json.loads(res.stdout)
    assert [(c["name"], c["epsilon_budget"], c["revoked"]) for c in clients] == [
        ("alice", 2.5, False)
    ]
    assert key not in res.stdout
    assert "alice" in _run("keys", "list", "--ledger", ledger).stdout
    assert _run("keys", "revoke", "alice", "--ledger", ledger).exit_code == 0
    assert json.loads(_run("keys", "list", "--ledger", ledger, "--json").stdout)[0]["revoked"]
    res = _run("keys", "add", "alice", "--ledger", ledger)
    assert res.exit_code == 2 and "already exists" in res.output
    res = _run("keys", "revoke", "bob", "--ledger", ledger)
    assert res.exit_code == 2 and "no client named" in res.output
    res = _run("keys", "add", "x", "--ledger", str(tmp_path))
    assert res.exit_code == 2 and "--ledger" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--teachers", "1"], "teachers must be at least 2"),
        (["--system", "pate,capc"], "exactly one system"),
        (["--max-batch", "0"], "max_batch"),
        (["--port", "70000"], "port"),
        (["--analysis", "exact"], "analysis"),
        (["--ledger", "."], "is a directory"),
        (["--client-epsilon", "20", "--global-epsilon", "10"], "exceeds the global"),
    ],
)
def test_serve_rejects_bad_settings_before_training(args, message):
    res = _run("serve", *args)
    assert res.exit_code == 2 and message in res.output, res.output


def test_serve_print_config_round_trips(tmp_path):
    from dpaudit import _settings
    from dpaudit.serve import ServeSettings

    res = _run("serve", "--teachers", "12", "--cache", "--ledger", "x.sqlite", "--print-config")
    assert res.exit_code == 0, res.output
    cfg = tmp_path / "serve.toml"
    cfg.write_text(res.stdout)
    s = _settings.load_toml(cfg, ServeSettings)
    assert (s.system.teachers, s.server.cache, s.server.ledger) == (12, True, "x.sqlite")
    res = _run("serve", "--config", str(cfg), "--port", "9", "--print-config")
    assert "port = 9" in res.stdout and "teachers = 12" in res.stdout


def test_attack_extract_histogram_over_http():
    svc = fixed_service(sigma=40.0)
    key = svc.ledger.add_client("attacker", 5.0)
    with ServiceServer(create_app(svc, access_log=False), lifetime=60) as srv:
        res = _run(
            "attack", "extract-histogram", "--url", srv.url, "--query", "0",
            "--queries", "200", "--batch-size", "50", "--intervals", "none", "--json",
            env={"DPAUDIT_API_KEY": key},
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["workflow"] == "vote-extraction-remote"
        assert data["entries"][0]["detail"]["num_answered"] == 200
        assert data["detail"]["budget_after"]["num_queries"] == 200
        res = _run(
            "attack", "extract-histogram", "--url", srv.url, "--api-key", key, "--query",
            "0", "--until-refused", "--batch-size", "64", "--intervals", "none",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        assert "budget consumed" in res.stdout and "stopped: refused" in res.stdout
        bad = _run("attack", "extract-histogram", "--url", srv.url, "--api-key", "dpa_x",
                   "--query", "0")  # fmt: skip
        assert bad.exit_code == 2 and "401" in bad.output
    res = _run("attack", "extract-histogram", "--url", srv.url, "--api-key", key)
    assert res.exit_code == 2 and "--query" in res.output
    res = _run("attack", "extract-histogram", "--url", "http://x", "--votes", "1,2")
    assert res.exit_code == 2 and "exactly one" in res.output


def test_attack_craft_and_distinguish_over_http(tmp_path):
    from dpaudit import _settings
    from dpaudit.serve import ServeSettings

    s, s2 = (
        fixed_service(sigma=1.0, votes=[10, 11, 9]),
        fixed_service(sigma=1.0, votes=[10, 10, 10]),
    )
    k, k2 = s.ledger.add_client("a", 1e9), s2.ledger.add_client("a", 1e9)
    with (
        ServiceServer(create_app(s, access_log=False), lifetime=60) as srv,
        ServiceServer(create_app(s2, access_log=False), lifetime=60) as srv2,
    ):
        res = _run(
            "attack", "craft", "--url", srv.url, "--api-key", k, "--query", "0", "--label",
            "1", "--queries", "500", "--teacher", "2",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        toml = tmp_path / "s2.toml"
        toml.write_text(res.stdout)
        canary = _settings.load_toml(toml, ServeSettings).canary
        assert canary.features == (0.0,) and canary.teacher == 2 and canary.label != 1
        res = _run(
            "attack", "distinguish", "--url", srv.url, "--neighbour-url", srv2.url,
            "--api-key", k, "--neighbour-api-key", k2, "--query", "0", "--repetitions", "2000",
            "--json",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["workflow"] == "private-prediction-remote"
        assert data["entries"][0]["gap"]["refutes_claim"] is False
        res = _run(
            "attack", "distinguish", "--url", srv.url, "--neighbour-url", srv2.url,
            "--api-key", k, "--neighbour-api-key", k2, "--query", "0", "--repetitions", "500",
        )  # fmt: skip
        assert res.exit_code == 0 and "not refuted" in " ".join(res.stdout.split())
