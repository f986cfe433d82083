"""Recording a command's run in the run store (:mod:`dpaudit.store`) from the command line.

Audit commands take ``--store PATH`` (default: ``$DPAUDIT_STORE``, else
``~/.local/share/dpaudit/runs.sqlite``), ``--no-store`` and ``--resume ID``.
:class:`RunRecorder` opens the store lazily and never lets the *default* store break a
command: if it cannot be written, a warning goes to stderr and the run goes unrecorded (an
explicit ``--store`` that fails is an error). The run id is printed on stderr, so ``--json``
output stays clean.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from dpaudit.cli._app import typer
from dpaudit.cli._common import fail

__all__ = ["RunRecorder", "command_line", "record_options"]


def record_options() -> list[tuple[str, Any, Any]]:
    """``(parameter name, annotation, typer option)`` of ``--store``, ``--no-store``,
    ``--resume``."""
    return [
        (
            "store",
            str | None,
            typer.Option(
                None,
                "--store",
                metavar="PATH",
                help="run store file (default: $DPAUDIT_STORE or ~/.local/share/dpaudit/"
                "runs.sqlite)",
            ),
        ),
        (
            "no_store",
            bool,
            typer.Option(False, "--no-store", help="do not record this run", metavar=""),
        ),
        (
            "resume",
            str | None,
            typer.Option(None, "--resume", help="resume an interrupted run (its id)", metavar="ID"),
        ),
    ]


def command_line(path: str, options: dict[str, Any]) -> str:
    """A shell-like command line of the options given (for the record)."""
    parts = [path]
    for flag, value in options.items():
        if value is None or value is False:
            continue
        parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


class RunRecorder:
    """The run store of one command (module notes).

    Args:
        store: ``--store`` (None: the default store).
        no_store: ``--no-store``.
    """

    def __init__(self, store: str | None, no_store: bool) -> None:
        from dpaudit.store import default_store_path

        self._explicit = store is not None
        self._path = None if no_store else (Path(store) if store else default_store_path())
        self._store: Any = None
        self.run_id: str | None = None

    @property
    def enabled(self) -> bool:
        """Whether this run is recorded."""
        return self._path is not None

    def _problem(self, what: str, exc: Exception) -> None:
        if self._explicit:
            fail(f"--store {self._path}: {what}: {exc}")
        print(f"warning: run not recorded ({what} {self._path}: {exc})", file=sys.stderr)
        self._path = None
        self._store = None

    def store(self) -> Any:
        """The open :class:`~dpaudit.store.RunStore` (None when disabled)."""
        if self._path is None:
            return None
        if self._store is None:
            from dpaudit.store import RunStore

            try:
                self._store = RunStore(self._path)
            except (OSError, ValueError, sqlite3.Error) as exc:
                self._problem("cannot open", exc)
        return self._store

    def resume(self, ref: str) -> Any:
        """The stored run to resume (checked; marked running only by :meth:`start`)."""
        from dpaudit.store import RunNotFoundError

        store = self.store()
        if store is None:
            fail("--resume needs the run store (drop --no-store)")
        try:
            run = store.get(ref, with_result=False)
        except RunNotFoundError as exc:
            fail(str(exc))
        if run.status not in ("interrupted", "failed"):
            fail(f"run {run.id} is {run.status}; only interrupted or failed runs resume")
        return run

    def start(self, workflow: str, settings: Any, *, resume: str | None = None, **kw: Any) -> None:
        """Record the start (or mark the resumed run running again)."""
        store = self.store()
        if store is None:
            return
        try:
            self.run_id = (
                store.resume(resume).id if resume else store.start(workflow, settings, **kw)
            )
        except (OSError, sqlite3.Error) as exc:
            self._problem("cannot write", exc)
            return
        print(f"run {self.run_id} recorded in {self._path}", file=sys.stderr)

    def finish(self, result: Any, *, out_dir: Any = None, artefacts: Any = ()) -> None:
        """Record the result and the files written."""
        if self.run_id is None or self._store is None:
            return
        try:
            self._store.finish(self.run_id, result, out_dir=out_dir, artefacts=artefacts)
        except (OSError, sqlite3.Error, ValueError) as exc:
            self._problem("cannot write", exc)

    def fail(self, error: str, *, interrupted: bool = False, resumable: bool = True) -> None:
        """Record that the run ended without a result (``resumable=False``: no resume hint)."""
        if self.run_id is None or self._store is None:
            return
        try:
            self._store.fail(self.run_id, error, interrupted=interrupted, resumable=resumable)
        except (OSError, sqlite3.Error) as exc:  # pragma: no cover - best effort
            print(f"warning: could not record the failure: {exc}", file=sys.stderr)

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
