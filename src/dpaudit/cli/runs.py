"""``dpaudit runs list | show ID | compare ID ID | rm ID`` and ``dpaudit report RUN``.

The run store (:mod:`dpaudit.store`) holds every recorded audit. A run is named by its id, a
unique prefix of it, or its unique random suffix. Every command takes ``--store PATH``
(default: ``$DPAUDIT_STORE`` or ``~/.local/share/dpaudit/runs.sqlite``) and ``--json``.
``dpaudit report RUN`` writes the self-contained HTML report of a stored run (or of a
``results.json`` file) with :func:`dpaudit.report.write_html_report`, beside its results
(``report.html`` next to the ``results.json`` or in the run's output directory) unless
``--out FILE`` says where.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dpaudit.cli._app import app, typer
from dpaudit.cli._common import fail

__all__ = ["report_command", "runs_app"]

runs_app = typer.Typer(help="The run store: recorded audits.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

_STORE_HELP = "run store file (default: $DPAUDIT_STORE or ~/.local/share/dpaudit/runs.sqlite)"


def _open(store: str | None) -> Any:
    import sqlite3

    from dpaudit.store import RunStore, default_store_path

    path = Path(store) if store else default_store_path()
    if path is None:
        fail("the run store is switched off (DPAUDIT_STORE=off); give --store PATH")
    if not path.exists():
        fail(f"no run store at {path} (no run was recorded there yet)")
    try:
        return RunStore(path)
    except (OSError, ValueError, sqlite3.Error) as exc:
        fail(f"--store {path}: {exc}")


def _get(s: Any, ref: str, *, with_result: bool = True) -> Any:
    from dpaudit.store import RunNotFoundError

    try:
        return s.get(ref, with_result=with_result)
    except RunNotFoundError as exc:
        fail(str(exc))


def _num(x: Any) -> str:
    from dpaudit.report.html import format_number

    return format_number(x)


def _headline(run: Any) -> str:
    """The first entry's lower bound and claim, if finished."""
    result = run.result or {}
    entries = result.get("entries") or []
    if not entries:
        return ""
    e = entries[0]
    lb = (e.get("lower_bound") or {}).get("epsilon")
    claims = e.get("claims") or []
    claim = claims[0].get("epsilon") if claims else None
    return f"ε ≥ {_num(lb)} vs {_num(claim)}"


@runs_app.command("list")
def runs_list(
    store: str = typer.Option(None, "--store", help=_STORE_HELP),
    status: str = typer.Option(None, "--status", help="only runs of this status"),
    workflow: str = typer.Option(None, "--workflow", help="only runs of this workflow"),
    limit: int = typer.Option(50, "--limit", help="at most this many (newest first)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """List recorded runs, newest first (interrupted ones say how to resume)."""
    s = _open(store)
    try:
        runs = s.list(status=status, workflow=workflow, limit=limit)
    except ValueError as exc:
        fail(str(exc))
        return
    finally:
        s.close()
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in runs], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    # four columns fit an 80-column terminal whole: the id already says when the run started
    # (UTC); name, seed and times are in `dpaudit runs show ID`.
    t = Table(title=f"runs in {s.path}", title_justify="left")
    for col in ("id", "workflow", "status", "seconds"):
        t.add_column(col, no_wrap=True, justify="right" if col == "seconds" else "left")
    for r in runs:
        t.add_row(r.id, r.workflow, r.status, _num(r.wall_seconds))
    console = Console()
    console.print(t)
    for r in runs:
        if r.resumable:
            console.print(f"{r.status} {r.id} resumes with: {r.resume_command}", soft_wrap=True)


@runs_app.command("show")
def runs_show(
    run: str = typer.Argument(..., help="run id (or unique prefix / suffix)"),
    store: str = typer.Option(None, "--store", help=_STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the whole record as JSON"),
) -> None:
    """Show one run: settings, seed, versions, timings, artefacts and its entries."""
    s = _open(store)
    try:
        rec = _get(s, run)
    finally:
        s.close()
    if as_json:
        typer.echo(rec.to_json())
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]run {rec.id}[/bold] — {rec.workflow} — {rec.status}")
    for label, value in (
        ("name", rec.name), ("created", rec.created), ("finished", rec.finished),
        ("wall seconds", _num(rec.wall_seconds)), ("seed", _num(rec.seed)),
        ("command", rec.command), ("resume with", rec.resume_command if rec.resumable else None),
        ("output", rec.out_dir), ("error", rec.error), ("attempts", rec.attempts),
    ):  # fmt: skip
        if value not in (None, ""):
            console.print(f"  {label}: {value}")
    entries = (rec.result or {}).get("entries") or []
    if entries:
        t = Table(title="lower bounds next to the claims")
        for col in ("system", "adversary", "lower ε", "claimed ε", "exact ε", "refuted"):
            t.add_column(col)
        for e in entries:
            claims = e.get("claims") or []
            t.add_row(
                str(e.get("system")), str(e.get("adversary") or "–"),
                _num((e.get("lower_bound") or {}).get("epsilon")),
                _num(claims[0].get("epsilon") if claims else None),
                _num((e.get("exact") or {}).get("epsilon")),
                _num((e.get("gap") or {}).get("refutes_claim")),
            )  # fmt: skip
        console.print(t)
    for a in rec.artefacts:
        console.print(f"  {a.kind}: {a.path} ({a.size} bytes)")


@runs_app.command("compare")
def runs_compare(
    a: str = typer.Argument(..., help="first run"),
    b: str = typer.Argument(..., help="second run"),
    store: str = typer.Option(None, "--store", help=_STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Two runs side by side: settings that differ and every entry's numbers."""
    from dpaudit.store import compare_runs

    s = _open(store)
    try:
        cmp = compare_runs(_get(s, a), _get(s, b))
    finally:
        s.close()
    if as_json:
        typer.echo(cmp.to_json())
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(
        f"[bold]{cmp.a}[/bold] ({cmp.workflow_a}, seed {_num(cmp.seed_a)}, "
        f"{_num(cmp.total_seconds_a)} s) vs [bold]{cmp.b}[/bold] ({cmp.workflow_b}, seed "
        f"{_num(cmp.seed_b)}, {_num(cmp.total_seconds_b)} s)"
    )
    t = Table(title="settings that differ" if cmp.settings else "same settings")
    for col in ("setting", cmp.a, cmp.b):
        t.add_column(col)
    for d in cmp.settings:
        t.add_row(d.path, str(d.a), str(d.b))
    console.print(t)
    t = Table(title="entries")
    for col in ("system", "adversary", "lower ε", "claimed ε", "claim / lower"):
        t.add_column(col)
    for e in cmp.entries:
        t.add_row(
            e.system, e.adversary or "–", f"{_num(e.lower_a)} → {_num(e.lower_b)}",
            f"{_num(e.claim_a)} → {_num(e.claim_b)}", f"{_num(e.ratio_a)} → {_num(e.ratio_b)}",
        )  # fmt: skip
    console.print(t)
    for d in cmp.versions:
        console.print(f"  version of {d.path}: {d.a} → {d.b}")


@runs_app.command("rm")
def runs_rm(
    run: str = typer.Argument(..., help="run id (or unique prefix / suffix)"),
    store: str = typer.Option(None, "--store", help=_STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Delete a run's record (the files it wrote stay)."""
    s = _open(store)
    try:
        rid = _get(s, run, with_result=False).id
        s.remove(rid)
    finally:
        s.close()
    typer.echo(json.dumps({"removed": rid}) if as_json else f"removed {rid}")


@app.command("report")
def report_command(
    run: str = typer.Argument(..., help="a stored run (id, prefix or suffix) or a results.json"),
    out: str = typer.Option(
        None,
        "--out",
        help="HTML file to write (default: report.html beside the results: next to the "
        "results.json, in the run's output directory, else here)",
        metavar="FILE",
    ),
    store: str = typer.Option(None, "--store", help=_STORE_HELP),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="draw the figures"),
    as_json: bool = typer.Option(False, "--json", help="print the path as JSON"),
) -> None:
    """Write the self-contained HTML report of a run (plots embedded, raw JSON attached)."""
    from dpaudit.report import write_html_report

    source: Any
    beside: Path | None = None  # the directory holding the results, if there is one
    if run.endswith(".json") and Path(run).is_file():
        try:
            source = json.loads(Path(run).read_text())
        except ValueError as exc:
            fail(f"{run} is not JSON: {exc}")
        beside = Path(run).parent
    else:
        s = _open(store)
        try:
            source = _get(s, run)
        finally:
            s.close()
        out_dir = getattr(source, "out_dir", None)
        beside = Path(out_dir) if out_dir and Path(out_dir).is_dir() else None
    if out is None:
        out = str((beside if beside is not None else Path()) / "report.html")
    target = Path(out)
    if target.is_dir():
        fail(f"--out must be a file, but {out!r} is a directory")
    try:
        path = write_html_report(source, target, figures=figures)
    except (TypeError, ValueError) as exc:
        fail(str(exc))
        return
    typer.echo(json.dumps({"report": str(path.resolve())}) if as_json else f"wrote {path}")
