"""``dpaudit audit label-dp``: train label-DP systems with canaries, attack, compare claims.

The reproduction of Malek et al. 2021 ("Antipodes of Label Differential Privacy",
arXiv:2106.03408, Tables 1 and 6) run by :func:`dpaudit.experiments.label_dp.run_label_dp`.
Its options are derived from
:class:`~dpaudit.experiments.label_dp_settings.LabelDPSettings` (they override
``--config FILE.toml``); without ``--config`` the shipped demo configuration
(``dpaudit/configs/label-dp-demo.toml``) is the base. The full reproduction is
``--config src/dpaudit/configs/label-dp-fashion-mnist.toml``. With ``--out DIR`` the command
writes ``DIR/results.json``, ``DIR/table.md`` and ``DIR/claimed_vs_measured.png``.
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit
from dpaudit.cli._options import settings_command
from dpaudit.experiments.label_dp_settings import LabelDPSettings, load_label_dp_config

__all__ = ["run_and_report"]


def run_and_report(settings: LabelDPSettings, *, out: Path | None, as_json: bool, progress: bool):
    """Run the audit, write the report files, print the table or JSON."""
    from dpaudit.experiments.label_dp import run_label_dp
    from dpaudit.report.label_dp import render_label_dp, write_label_dp_report

    result = run_label_dp(settings, progress=progress and not as_json)
    if out is not None:
        write_label_dp_report(result, out)
    emit(result, as_json=as_json, render=render_label_dp)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'}, {out / 'table.md'} and a PNG plot")
    return result


settings_command(
    audit_app,
    "label-dp",
    LabelDPSettings,
    run_and_report,
    help=(
        "Label DP under audit (ALIBI, AGIBI, RR, PATE-FM): accuracy, claimed ε and the "
        "label-memorization ε_m per accuracy level."
    ),
    base=lambda: load_label_dp_config("label-dp-demo"),
)
