"""``dpaudit audit NAME``: one command per registered workflow, generated, never written.

For every entry of :data:`dpaudit.experiments.WORKFLOWS` the command's options derive from the
workflow's settings type (:func:`dpaudit.cli._options.settings_command`: one option per setting,
``--config NAME|PATH``, ``--print-config``, ``--out``, ``--json``, the run store). Without
``--config`` the workflow's shipped config (or its settings' defaults) is the base. With
``--out DIR`` the run keeps its checkpoints in ``DIR/checkpoints`` (an interrupted run resumes
with ``--resume ID`` or the same command) and its report writes ``DIR/results.json`` and the
workflow's tables and plots. A workflow registered at run time (a plug-in, a test) gets its
command the next time the command line is built (:func:`sync_workflow_commands`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit
from dpaudit.cli._options import settings_command

__all__ = ["run_and_report", "sync_workflow_commands"]

#: name → the Workflow its command was generated from.
_GENERATED: dict[str, Any] = {}


def run_and_report(
    workflow: Any,
    settings: Any,
    *,
    out: Path | None,
    as_json: bool,
    progress: bool,
    plots: bool = True,
) -> Any:
    """Run ``workflow`` on ``settings``, write its report under ``out``, print the table or
    JSON; return the :class:`~dpaudit.AuditResult` (recorded by the caller)."""
    from dpaudit.report import generic_report

    checkpoint = out / "checkpoints" if out is not None else None
    result = workflow(settings, progress=progress and not as_json, checkpoint=checkpoint)
    report = workflow.reporter() or generic_report
    written = report.write(result, out, plots=plots) if out is not None else ()
    emit(result, as_json=as_json, render=report.render)
    if written and not as_json:
        typer.echo("wrote " + ", ".join(str(p) for p in written))
    return result


def _command_for(workflow: Any) -> None:
    def run(settings: Any, *, out: Path | None, as_json: bool, progress: bool) -> Any:
        return run_and_report(workflow, settings, out=out, as_json=as_json, progress=progress)

    settings_command(
        audit_app,
        workflow.name,
        workflow.settings,
        run,
        help=workflow.summary + (f" ({workflow.source})" if workflow.source else ""),
        base=workflow.default_settings,
    )


def sync_workflow_commands() -> None:
    """Give every registered workflow its ``dpaudit audit NAME`` command (and drop the
    commands of workflows no longer registered or registered anew)."""
    from dpaudit.experiments import WORKFLOWS

    current = dict(WORKFLOWS.items())
    stale = {n for n, w in _GENERATED.items() if current.get(n) is not w}
    if stale:
        audit_app.registered_commands[:] = [
            c for c in audit_app.registered_commands if c.name not in stale
        ]
        for name in stale:
            del _GENERATED[name]
    for name, workflow in current.items():
        if name not in _GENERATED:
            _command_for(workflow)
            _GENERATED[name] = workflow


sync_workflow_commands()
