"""``dpaudit audit private-prediction``: audit any registered private-prediction system.

Its options are derived from
:class:`dpaudit.experiments.private_prediction.PrivatePredictionSettings` (one per setting;
they override ``--config FILE.toml``), validated before any training. With ``--out DIR`` the
command writes ``DIR/results.json``, ``DIR/rdp_vs_order.png`` and ``DIR/epsilon_bars.png``
(and engine checkpoints in ``DIR/checkpoints``, so an interrupted run resumes its sampling).
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit
from dpaudit.cli._options import settings_command
from dpaudit.experiments.private_prediction.settings import PrivatePredictionSettings

__all__ = ["run_and_report"]


def run_and_report(
    settings: PrivatePredictionSettings,
    *,
    out: Path | None,
    as_json: bool,
    progress: bool,
    plots: bool = True,
):
    """Run the audit, write the report files, print the table or JSON (shared with demo)."""
    from dpaudit.experiments.private_prediction import audit_private_prediction
    from dpaudit.report import render_private_prediction, write_private_prediction_report

    checkpoints = out / "checkpoints" if out is not None else None
    result = audit_private_prediction(
        settings, progress=progress and not as_json, checkpoint_dir=checkpoints
    )
    if out is not None:
        write_private_prediction_report(result, out, plots=plots)
    emit(result, as_json=as_json, render=render_private_prediction)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'}" + (" and PNG plots" if plots else ""))
    return result


settings_command(
    audit_app,
    "private-prediction",
    PrivatePredictionSettings,
    run_and_report,
    help="Audit private prediction (PATE, CaPC, …): RDP lower bound vs exact and claimed RDP.",
)
