"""Reports of audits (layer 8): rich summary tables and matplotlib PNG plots.

- :mod:`dpaudit.report.private_prediction` — the private-prediction audit (Chadha et al. 2024,
  arXiv:2402.09403): summary table, RDP curves, ε bars, ``results.json``.
- :mod:`dpaudit.report.vote_leakage` — the vote-leakage reproduction (Wang et al. 2022,
  arXiv:2209.10732): the four figures and ``results.json``.
- :mod:`dpaudit.report.label_dp` — the label-DP audit (Malek et al. 2021, arXiv:2106.03408):
  the Table 1 / Table 6 layout, claimed ε against ε_m, ``results.json``.
- :mod:`dpaudit.report.dpsgd` — the one-run DP-SGD audit (Liu et al., Tables 1–2 layout) and
  the canary-scores audit: tables, ε vs number of guesses, ``results.json``.
- :mod:`dpaudit.report.html` — one self-contained HTML file for any AuditResult (or stored
  run): the numbers, how every choice was paid for, the workflow's figures, the raw JSON.
- :mod:`dpaudit.report._figures` — the one figure helper every plot uses (Agg canvas, no
  pyplot state).

rich and matplotlib are imported lazily (extras ``cli`` and ``plot``).
"""

from dpaudit.report._report import Report, generic_report
from dpaudit.report.dpsgd import (
    dpsgd_table,
    plot_guess_sweep,
    render_canary_scores,
    render_dpsgd,
    scores_table,
    write_dpsgd_report,
    write_scores_report,
)
from dpaudit.report.html import format_number, render_html, write_html_report
from dpaudit.report.label_dp import (
    label_dp_markdown,
    label_dp_table,
    plot_claimed_vs_measured,
    render_label_dp,
    write_label_dp_report,
)
from dpaudit.report.private_prediction import (
    plot_epsilon_bars,
    plot_rdp_curves,
    render_private_prediction,
    summary_table,
    write_private_prediction_report,
)
from dpaudit.report.vote_leakage import (
    plot_attribute_inference,
    plot_budget_limited,
    plot_noise_sweep,
    plot_query_limited,
    write_vote_leakage_report,
)

__all__ = [
    "Report",
    "dpsgd_table",
    "format_number",
    "generic_report",
    "label_dp_markdown",
    "label_dp_table",
    "plot_attribute_inference",
    "plot_budget_limited",
    "plot_claimed_vs_measured",
    "plot_epsilon_bars",
    "plot_guess_sweep",
    "plot_noise_sweep",
    "plot_query_limited",
    "plot_rdp_curves",
    "render_canary_scores",
    "render_dpsgd",
    "render_html",
    "render_label_dp",
    "render_private_prediction",
    "scores_table",
    "summary_table",
    "write_dpsgd_report",
    "write_html_report",
    "write_label_dp_report",
    "write_private_prediction_report",
    "write_scores_report",
    "write_vote_leakage_report",
]
