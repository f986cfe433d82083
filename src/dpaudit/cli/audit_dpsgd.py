"""``dpaudit audit dp-sgd`` and ``dpaudit audit scores``: one-run audits of DP-SGD.

* ``dp-sgd`` — train DP-SGD once with canaries, score them black-box (baseline and QMIA),
  and bound ε in one run (:func:`dpaudit.experiments.dpsgd.audit_dpsgd`); options derived from
  :class:`~dpaudit.experiments.dpsgd_settings.DPSGDAuditSettings` (they override
  ``--config FILE.toml``).
* ``scores`` — bring your own model: every bound from canary scores computed elsewhere
  (``--in-scores``/``--out-scores`` or ``--scores``/``--included``, CSV or NPY;
  :func:`dpaudit.experiments.canary_scores.audit_scores`).

With ``--out DIR`` both write ``DIR/results.json`` and ``DIR/guess_sweep.png``; ``--json``
prints the :class:`~dpaudit._results.AuditResult`.
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit
from dpaudit.cli._options import settings_command
from dpaudit.experiments.canary_scores import ScoresAuditSettings
from dpaudit.experiments.dpsgd_settings import DPSGDAuditSettings

__all__ = ["run_dpsgd", "run_scores"]


def run_dpsgd(settings: DPSGDAuditSettings, *, out: Path | None, as_json: bool, progress: bool):
    """Run the DP-SGD audit, write the report files, print the table or JSON."""
    from dpaudit.experiments.dpsgd import audit_dpsgd
    from dpaudit.report.dpsgd import render_dpsgd, write_dpsgd_report

    result = audit_dpsgd(settings, progress=progress and not as_json)
    if out is not None:
        write_dpsgd_report(result, out)
    emit(result, as_json=as_json, render=render_dpsgd)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'} and {out / 'guess_sweep.png'}")
    return result


def run_scores(settings: ScoresAuditSettings, *, out: Path | None, as_json: bool, progress: bool):
    """Bound ε from score files, write the report files, print the table or JSON."""
    from dpaudit.experiments.canary_scores import audit_scores
    from dpaudit.report.dpsgd import render_canary_scores, write_scores_report

    result = audit_scores(settings)
    if out is not None:
        write_scores_report(result, out)
    emit(result, as_json=as_json, render=render_canary_scores)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'} and {out / 'guess_sweep.png'}")
    return result


settings_command(
    audit_app,
    "dp-sgd",
    DPSGDAuditSettings,
    run_dpsgd,
    help="One-run black-box audit of DP-SGD: canaries, baseline vs QMIA scores, one-run and "
    "f-DP bounds with the number of guesses paid for, next to the accountant's claim.",
)
settings_command(
    audit_app,
    "scores",
    ScoresAuditSettings,
    run_scores,
    help="Bring your own model: Clopper-Pearson, GDP, one-run and f-DP lower bounds from "
    "canary scores (CSV/NPY), with every choice paid for.",
)
