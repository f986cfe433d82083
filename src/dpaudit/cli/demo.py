"""``dpaudit demo``: the demo audit that ``make demo`` runs.

PATE and CaPC on scikit-learn's digits with 30 teachers, all three adversaries of Chadha et
al. 2024 §4.1 (the shipped ``demo`` config); prints the summary table and writes
``results.json``, the PNG plots and the self-contained HTML report (``report.html``, its path
printed) to ``--out`` (default ``runs/demo``), and records the run in the run store
(``--store`` / ``--no-store``; :mod:`dpaudit.store`). About a minute on 2 cores.
"""

from __future__ import annotations

from dpaudit.cli._app import app, typer
from dpaudit.cli._common import fail

__all__ = ["demo"]


@app.command("demo")
def demo(
    out: str = typer.Option("runs/demo", "--out", help="directory for results.json and PNG plots"),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="write PNG plots"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="rich progress bars"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    store: str = typer.Option(None, "--store", help="run store file (default: $DPAUDIT_STORE)"),
    no_store: bool = typer.Option(False, "--no-store", help="do not record this run"),
) -> None:
    """Run the demo audit (digits, PATE and CaPC, Nat-AdvQ / Pois-AdvQ / Pois-NatQ)."""
    from dpaudit.cli._options import check_out
    from dpaudit.cli.audit import run_and_report
    from dpaudit.experiments import WORKFLOWS
    from dpaudit.experiments.private_prediction import config

    workflow = WORKFLOWS.get("private-prediction")
    try:
        settings = config.demo_settings()
        out_dir = check_out(out)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    if not as_json:
        s = settings
        typer.echo(
            f"dpaudit demo: {s.data.dataset}, {s.system.teachers} teachers, "
            f"σ={s.system.sigma:g}, {s.adversary.queries} queries, "
            f"{s.engine.experiments:.0e} experiments per query"
        )
    from dpaudit.cli._options import _resumable
    from dpaudit.cli._record import RunRecorder

    recorder = RunRecorder(store, no_store)
    recorder.start(
        "private-prediction", settings, command="dpaudit demo",
        resume_command="dpaudit audit private-prediction", out_dir=out_dir,
    )  # fmt: skip
    try:
        result = run_and_report(
            workflow, settings, out=out_dir, as_json=as_json, progress=progress, plots=plots
        )
        if plots and out_dir is not None:
            from dpaudit.report import write_html_report

            html = write_html_report(result, out_dir / "report.html")
            if not as_json:
                typer.echo(f"wrote the HTML report: {html.resolve()}")
    except (ValueError, FileNotFoundError) as exc:
        recorder.fail(f"{type(exc).__name__}: {exc}", resumable=_resumable(exc, out_dir))
        fail(str(exc))
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        recorder.fail(str(exc), interrupted=interrupted, resumable=_resumable(exc, out_dir))
        raise
    else:
        recorder.finish(result, out_dir=out_dir)
    finally:
        recorder.close()
