"""Every CLI error is one line on stderr with exit code 2, never a traceback (issue 13).

Every command of the ``dpaudit`` tree is found by walking the click command behind the typer
app, so a new command is covered without being listed: each gets an unknown option, a
missing or existing-file ``--config`` / ``--out`` where it has them, and the commands with
arguments of their own get the bad values of :data:`CASES`. All are run through
:func:`dpaudit.cli.run` (what the console script calls) and must fail before any work.
"""

from __future__ import annotations

import pytest

pytest.importorskip("typer")

from dpaudit.cli import _command, run


def _commands() -> dict[str, object]:
    """``"group name"`` → click command, for every leaf command of the tree."""
    out: dict[str, object] = {}

    def walk(cmd, path):
        if hasattr(cmd, "list_commands"):
            ctx = type(cmd).context_class(cmd) if hasattr(type(cmd), "context_class") else None
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])
        else:
            out[" ".join(path)] = cmd

    walk(_command(), [])
    return out


COMMANDS = _commands()


def _options(cmd) -> set[str]:
    return {opt for p in cmd.params for opt in getattr(p, "opts", ())}


@pytest.fixture
def files(tmp_path):
    """An existing file (a bad ``--out``), a missing one, and small valid inputs."""
    existing = tmp_path / "results.json"
    existing.write_text("{}")
    votes = tmp_path / "votes.csv"
    votes.write_text("200,30,20\n150,60,40\n")
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('[system]\nteachers = "30"\n')
    return {
        "existing": str(existing),
        "missing": str(tmp_path / "missing.toml"),
        "votes": str(votes),
        "bad_toml": str(bad_toml),
        "store": str(tmp_path / "runs.sqlite"),
        "ledger": str(tmp_path / "ledger.sqlite"),
    }


#: Bad arguments per command (``{name}`` fields are filled from :func:`files`).
CASES: dict[str, list[list[str]]] = {
    "argmax": [
        ["--votes", "a,b", "--sigma", "1"],
        ["--votes", "200,30", "--sigma", "-1"],
        ["--votes", "200,30,20", "--sigma", "nan"],
        ["--votes", "200,30,20", "--sigma", "40", "--relation", "bogus"],
        ["--votes", "200,30,20", "--sigma", "40", "--orders", "0.5"],
        ["--votes", "200", "--sigma", "40"],
    ],
    "account pate": [
        ["--votes-file", "{missing}", "--sigma", "1"],
        ["--votes-file", "{votes}", "--sigma", "0"],
        ["--votes-file", "{votes}", "--sigma", "40", "--delta", "2"],
        ["--votes-file", "{votes}", "--sigma", "40", "--threshold", "5"],
        ["--votes-file", "{existing}", "--sigma", "40"],
    ],
    "audit lidp-gaussian": [
        ["--sigma", "-1", "--dim", "1", "--canaries", "4", "--runs", "10"],
        ["--sigma", "1", "--dim", "0", "--canaries", "4", "--runs", "10"],
        ["--sigma", "1", "--dim", "1", "--canaries", "4", "--runs", "10", "--method", "x"],
        ["--sigma", "1", "--dim", "1", "--canaries", "4", "--runs", "10", "--delta", "1"],
    ],
    "audit private-prediction": [
        ["--experiments", "1e19"],
        ["--teachers", "2.5"],
        ["--sigma", "four"],
        ["--config", "{bad_toml}"],
    ],
    "attack extract-histogram": [
        ["--votes", "40,70,60", "--teachers", "10"],
        ["--votes", "40,70,60", "--sigma", "-1"],
        ["--votes", "40,70,60", "--queries", "0"],
        ["--votes", "a,b"],
        [],
        ["--config", "vote_leakage_mnist", "--out", "{existing}"],
    ],
    "runs show": [["no-such-run", "--store", "{store}"]],
    "report": [["no-such-run", "--store", "{store}"]],
    "keys add": [["client", "--ledger", "{ledger}", "--epsilon", "-1"]],
}


def _cases() -> list[tuple[str, list[str]]]:
    out = []
    for name, cmd in COMMANDS.items():
        opts = _options(cmd)
        out.append((name, ["--no-such-option"]))
        if "--out" in opts:
            out.append((name, ["--out", "{existing}"]))
            out.append((name, ["--out", "{existing}/sub"]))  # cannot be created
        if "--config" in opts:
            out.append((name, ["--config", "{missing}"]))
        out += [(name, args) for args in CASES.get(name, [])]
    return out


def _fill(args: list[str], files: dict[str, str]) -> list[str]:
    return [a.format(**files) for a in args]


def test_every_command_with_its_own_cases_exists():
    """The table names real commands (a renamed command must move its cases)."""
    assert not set(CASES) - set(COMMANDS), sorted(set(CASES) - set(COMMANDS))


@pytest.mark.parametrize(("command", "args"), _cases(), ids=lambda x: " ".join(x) or "none")
def test_bad_arguments_are_one_line_and_exit_2(command, args, files, capsys, monkeypatch):
    monkeypatch.setenv("DPAUDIT_STORE", files["store"])
    monkeypatch.delenv("DPAUDIT_DEBUG", raising=False)
    status = run([*command.split(), *_fill(args, files)])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert status == 2, (status, captured.out[-500:], captured.err[-500:])
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_unexpected_errors_are_one_line_with_the_debug_hint(monkeypatch, capsys):
    """Anything that is not a dpaudit / value / type / OS error: one line and a hint; with
    DPAUDIT_DEBUG=1 the exception propagates (its traceback is shown)."""
    import dpaudit.cli.argmax as argmax_cli

    def boom(*args, **kwargs):
        raise KeyError("internal")

    monkeypatch.setattr(argmax_cli, "argmax_report", boom)
    monkeypatch.delenv("DPAUDIT_DEBUG", raising=False)
    assert run(["argmax", "--votes", "200,30,20", "--sigma", "40"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected KeyError" in err and "DPAUDIT_DEBUG=1" in err
    monkeypatch.setenv("DPAUDIT_DEBUG", "1")
    with pytest.raises(KeyError):
        run(["argmax", "--votes", "200,30,20", "--sigma", "40"])


def test_extreme_sigma_is_answered_not_a_traceback(capsys):
    """``--sigma 1e300`` used to overflow in α/σ²: the limits are printed instead."""
    assert run(["argmax", "--votes", "200,30,20", "--sigma", "1e300", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"data_independent_rdp"' in out


def test_main_exits_with_the_status(monkeypatch):
    from dpaudit.cli import main

    with pytest.raises(SystemExit) as info:
        main(["argmax", "--no-such-option"])
    assert info.value.code == 2


@pytest.mark.parametrize("argv", [[], ["audit"], ["runs"]])
def test_no_command_prints_the_help(argv, capsys):
    """``dpaudit`` (or a group) with no command prints its help on stdout and succeeds."""
    assert run(argv) == 0
    out = capsys.readouterr().out
    assert "Usage: dpaudit" in out and "Commands" in out


def test_every_workflow_has_an_audit_command(capsys):
    from dpaudit.experiments import WORKFLOWS

    assert run(["audit", "--help"]) == 0
    out = capsys.readouterr().out
    for name in WORKFLOWS.names():
        assert name in out
