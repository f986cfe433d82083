"""``dpaudit demo``: the demo audit that ``make demo`` runs.

PATE and CaPC on scikit-learn's digits with 30 teachers, all three adversaries of paper 000
§4.1 (``configs/demo.toml``); prints the summary table and writes ``results.json`` and the
PNG plots to ``--out`` (default ``runs/demo``). About a minute on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.cli._app import app, typer
from dpaudit.cli._common import fail

__all__ = ["demo"]


@app.command("demo")
def demo(
    out: str = typer.Option("runs/demo", "--out", help="directory for results.json and PNG plots"),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="write PNG plots"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="rich progress bars"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Run the demo audit (digits, PATE and CaPC, Nat-AdvQ / Pois-AdvQ / Pois-NatQ)."""
    from dpaudit.cli.audit_pp import run_and_report
    from dpaudit.experiments.config import demo_settings

    try:
        settings = demo_settings()
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    if not as_json:
        typer.echo(
            f"dpaudit demo: {settings.dataset}, {settings.teachers} teachers, "
            f"σ={settings.sigma:g}, {settings.queries} queries, "
            f"{settings.experiments:.0e} experiments per query"
        )
    run_and_report(settings, out=Path(out), as_json=as_json, progress=progress, plots=plots)
