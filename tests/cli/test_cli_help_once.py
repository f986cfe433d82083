"""Issue 45: bare ``dpaudit`` prints its help once, and no flag's help shows a ``<bool>`` type."""

from __future__ import annotations

import pytest

from dpaudit.cli import _command, run


@pytest.mark.parametrize("argv", [[], ["audit"], ["account"], ["runs"]])
def test_a_group_without_a_command_prints_one_usage_block(argv, capsys):
    assert run(argv) == 0
    out = capsys.readouterr().out
    assert out.count("Usage: dpaudit") == 1, out
    assert out.count("Commands") == 1


def _paths(command, prefix=()):
    """Every command path of the tree (``()`` is ``dpaudit`` itself)."""
    yield prefix
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _paths(sub, (*prefix, name))


def test_no_help_shows_a_type_for_a_flag(capsys):
    paths = list(_paths(_command()))
    assert ("demo",) in paths and ("audit", "private-prediction") in paths
    for path in paths:
        assert run([*path, "--help"]) == 0
        out = capsys.readouterr().out
        assert "<bool>" not in out, f"dpaudit {' '.join(path)} --help shows <bool>"
        assert out.count("Usage: dpaudit") == 1


def test_the_click_command_is_built_once_and_again_when_the_app_changes():
    """Built once (typer → click copies every parameter), rebuilt after a command is added."""
    import typer

    from dpaudit.cli import build_app

    first = _command()
    assert _command() is first
    extra = typer.Typer()
    build_app().add_typer(extra, name="zz-test-group")
    try:
        extra.command("hello")(lambda: None)
        rebuilt = _command()
        assert rebuilt is not first and "zz-test-group" in rebuilt.commands
    finally:
        build_app().registered_groups.pop()
    assert "zz-test-group" not in _command().commands
