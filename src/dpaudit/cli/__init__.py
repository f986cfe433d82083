"""The ``dpaudit`` command line (layer 8): thin typer commands over library functions.

Every command takes ``--json`` and then prints its result dataclass as JSON on stdout.
Every error, whichever command raises it, is one line on stderr (``error: …``) and exit code 2
(:func:`main`); ``DPAUDIT_DEBUG=1`` shows the traceback of an unexpected one instead.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["build_app", "main", "run"]

# One module per command family; each registers its commands on the app in ``_app``.
_COMMAND_MODULES = [
    "dpaudit.cli.argmax",
    "dpaudit.cli.attack",
    "dpaudit.cli.account",
    "dpaudit.cli.audit",
    "dpaudit.cli.demo",
    "dpaudit.cli.serve",
    "dpaudit.cli.monitor",
    "dpaudit.cli.runs",
]


def build_app():
    """Import every command module and return the typer app."""
    from dpaudit.cli._app import app

    for name in _COMMAND_MODULES:
        importlib.import_module(name)
    from dpaudit.cli.audit import sync_workflow_commands

    sync_workflow_commands()
    return app


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the command line and exit with its status.

    Every error is one line on stderr with exit code 2, never a traceback: dpaudit's own
    errors and ``ValueError`` / ``TypeError`` / ``FileNotFoundError`` / ``OSError`` /
    ``MemoryError`` print as ``error: <message>``; usage errors (unknown option, bad value)
    as click words them; anything else as ``error: unexpected <type>: <message>`` with a hint
    that ``DPAUDIT_DEBUG=1`` shows the traceback (with it set, the exception propagates).
    Ctrl-C exits with 130.

    Args:
        argv: the arguments after ``dpaudit`` (default ``sys.argv[1:]``).
    """
    sys.exit(run(argv))


#: Exceptions whose message is the whole story: printed as one line, exit code 2.
_EXPECTED = (ValueError, TypeError, FileNotFoundError, OSError, MemoryError)


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` and return the exit status (:func:`main` exits with it).

    Returns:
        0 on success, 2 on any error (one line on stderr), 130 when interrupted.
    """
    from dpaudit.errors import DPAuditError

    debug = os.environ.get("DPAUDIT_DEBUG", "") not in ("", "0")
    try:
        command = _command()
        status = command.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="dpaudit",
            standalone_mode=False,
        )
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as exc:
        if _is_click(exc, "Abort"):
            _error("aborted")
            return 130
        if _is_click(exc, "NoArgsIsHelpError"):
            # a group called without a command: its help on stdout, like ``--help``, once.
            # The exception's message *is* the help (click renders it on construction); typer's
            # rich help is printed while being rendered and leaves the message empty.
            text = exc.format_message() if hasattr(exc, "format_message") else ""
            if text.strip():
                sys.stdout.write(text.rstrip("\n") + "\n")
            return 0
        if _is_click(exc, "ClickException"):
            _error(_click_message(exc))
            return 2
        if isinstance(exc, (DPAuditError, *_EXPECTED)):
            if debug:
                raise
            _error(str(exc) or type(exc).__name__)
            return 2
        if debug:
            raise
        _error(f"unexpected {type(exc).__name__}: {exc} (set DPAUDIT_DEBUG=1 to see the traceback)")
        return 2
    return status if isinstance(status, int) else 0


#: ``(signature of the typer app, its click command)``: see :func:`_command`.
_BUILT: list[tuple[tuple, object]] = []


def _command():
    """The click command behind the typer app (imports every command module).

    Converting the typer app to click copies every parameter of every command (~20 ms); the
    command is built again only when the app changed since (a workflow registered since the
    last call adds its command: :func:`_signature`)."""
    app = build_app()
    key = _signature(app)
    if _BUILT and _BUILT[0][0] == key:
        return _BUILT[0][1]
    typer_main = importlib.import_module("typer.main")
    command = typer_main.get_command(app)
    _hide_flag_types(command)
    _BUILT[:] = [(key, command)]
    return command


def _signature(app) -> tuple:
    """What the click command is built from: every command's name and callback, every group's
    name and its app's signature (recursively), and the app's own callback."""
    return (
        id(app),
        app.registered_callback and id(app.registered_callback.callback),
        tuple((c.name, id(c.callback)) for c in app.registered_commands),
        tuple((g.name, _signature(g.typer_instance)) for g in app.registered_groups),
    )


def _hide_flag_types(command) -> None:
    """No type column for flags (``--json``, ``--help`` …): typer shows ``<bool>`` for a flag
    without a metavar, though a flag takes no value. Every command of the tree, its help
    option included, gets an empty metavar on its flags."""
    click = importlib.import_module("click")
    stack = [command]
    while stack:
        cmd = stack.pop()
        help_option = cmd.get_help_option(click.Context(cmd))
        for param in [*cmd.params, *([help_option] if help_option is not None else [])]:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        stack.extend(getattr(cmd, "commands", {}).values())


def _is_click(exc: BaseException, name: str) -> bool:
    """``exc`` is click's exception class ``name`` (typer may vendor its own click copy)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _click_message(exc) -> str:
    """A usage error in one line, naming the command to ask for help."""
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"{exc.format_message()}{hint}"


def _error(message: str) -> None:
    """Write ``error: message`` on one line of stderr."""
    line = " ".join(str(message).split())
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()
