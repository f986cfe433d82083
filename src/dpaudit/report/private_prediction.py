"""Report of the private-prediction audit: rich summary table and matplotlib PNG plots.

For the private-prediction audit (:mod:`dpaudit.experiments.private_prediction`; Chadha et al.
2024, "Auditing Private Prediction", arXiv:2402.09403):

* :func:`summary_table` — one row per system × adversary: ε at δ of the audit (display
  only, flagged), of the exact, data-dependent and data-independent RDP; the affected
  teacher's flip rate with its interval; whether ``audit ≤ exact ≤ dd ≤ di`` held.
* :func:`findings_table` — the findings check: the paper's findings, each comparison's
  leakage intervals and whether the run's data resolve it.
* :func:`plot_rdp_curves` — RDP against the order, one panel per algorithm × adversary:
  audit, exact, data-dependent, data-independent (Chadha et al. 2024 Fig. 2/6 style, log scales).
* :func:`plot_epsilon_bars` — ε at δ as grouped bars per adversary, one panel per algorithm
  (Chadha et al. 2024 Fig. 3/4 style).
* :func:`write_private_prediction_report` — ``results.json`` and both PNGs in a directory.

rich and matplotlib are imported lazily (extras ``cli`` and ``plot``); plots use the Agg
canvas directly (:func:`dpaudit.report._figures.figure`), so no GUI backend or global pyplot
state is touched.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.errors import require
from dpaudit.report._figures import figure
from dpaudit.report._report import Report

__all__ = [
    "REPORT",
    "findings_table",
    "plot_epsilon_bars",
    "plot_rdp_curves",
    "render_private_prediction",
    "summary_table",
    "write_private_prediction_report",
]

_CURVES = (
    ("audit", "audit (lower bound)", "tab:red", "-"),
    ("exact", "exact (modelled)", "tab:blue", "-"),
    ("data_dependent", "data-dependent", "tab:green", "--"),
    ("data_independent", "data-independent", "tab:gray", ":"),
)
_ADV_LABEL = {"nat-advq": "Nat-AdvQ", "pois-advq": "Pois-AdvQ", "pois-natq": "Pois-NatQ"}
_ALG_LABEL = {"pate": "PATE", "capc": "CaPC"}


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}" if x != 0 else "0"


def _details(audit: Any) -> list[Any]:
    """The per-adversary details (``AdversaryAudit``) of a private-prediction AuditResult."""
    return [e.detail for e in audit.entries]


def summary_table(audit: Any):
    """A rich table summarising a private-prediction audit (one row per system × adversary).

    Args:
        audit: the :class:`dpaudit.AuditResult` of
            :func:`dpaudit.experiments.audit_private_prediction`.

    Returns:
        ``rich.table.Table``.
    """
    table_mod = require("rich.table", "cli")
    s = audit.settings
    delta = s.audit.delta
    t = table_mod.Table(
        title=(
            f"Private-prediction audit: {audit.detail.dataset}, m={s.system.teachers}, k={s.k}, "
            f"σ={s.system.sigma:g}, n_Q={s.adversary.queries}, "
            f"T={s.engine.experiments:.3g}/query, ε at δ={delta:g}"
        ),
        caption=(
            f"*audit: display only (RDP lower bound at {s.audit.confidence_level:.0%} converted "
            "with "
            "an upper-bound conversion — not an (ε, δ) lower bound). dd/di: data-(in)dependent "
            "claim. AdvQ: worst query × n_Q repetitions; NatQ: sum over n_Q queries. order ok: "
            "audit ≤ exact ≤ dd ≤ di at every order."
        ),
    )
    for col, just, wrap in (
        ("alg", "left", False),
        ("adversary", "left", False),
        ("ε audit*", "right", False),
        ("ε exact", "right", False),
        ("ε dd", "right", False),
        ("ε di", "right", False),
        ("flips [CI]", "right", True),
        ("order ok", "center", False),
    ):
        t.add_column(col, justify=just, no_wrap=not wrap)
    for r in _details(audit):
        fl = r.flips
        if fl.num_retrainings:
            flips = (
                f"{fl.num_flips}/{fl.num_retrainings} "
                f"[{fl.interval.low:.2f},{fl.interval.high:.2f}]"
            )
        else:
            flips = "–"
        t.add_row(
            _ALG_LABEL.get(r.algorithm, r.algorithm),
            _ADV_LABEL.get(r.adversary, r.adversary),
            _fmt(r.epsilon.audit),
            _fmt(r.epsilon.exact),
            _fmt(r.epsilon.data_dependent),
            _fmt(r.epsilon.data_independent),
            flips,
            "yes" if r.ordering.holds else "NO",
        )
    return t


def _side(iv: Any) -> str:
    name = f"{_ALG_LABEL.get(iv.system, iv.system)} {_ADV_LABEL.get(iv.adversary, iv.adversary)}"
    high = "∞" if not math.isfinite(iv.high) else f"{iv.high:.3g}"
    return f"{name} [{iv.low:.3g}, {high}]"


def findings_table(audit: Any):
    """A rich table of the findings check: per comparison, the two leakage intervals (ε at δ
    of the composed exact curve, from the flip-probability intervals), the verdict and the
    retrainings that would resolve it.

    Args:
        audit: the :class:`dpaudit.AuditResult` of a private-prediction audit.

    Returns:
        ``rich.table.Table`` (None when the result has no findings check).
    """
    check = getattr(audit.detail, "findings", None)
    if check is None or not check.findings:
        return None
    table_mod = require("rich.table", "cli")
    t = table_mod.Table(
        title=(
            f"Findings of Chadha et al. 2024 §5.4 on this run: all intervals hold together at "
            f"{check.confidence_level:.0%} (Bonferroni over {check.num_intervals})"
        ),
        caption="interval: ε at δ of the composed exact curve over the flip-probability "
        "interval (other model parameters at their estimates). needed: retrainings per side "
        "that would separate the intervals at the same estimates.",
    )
    for col, just in (
        ("finding", "left"),
        ("expected larger", "left"),
        ("expected smaller", "left"),
        ("verdict", "left"),
        ("needed", "right"),
    ):
        t.add_column(col, justify=just)
    for f in check.findings:
        for i, c in enumerate(f.comparisons):
            needed = "" if c.retrainings_needed is None else str(c.retrainings_needed)
            if c.verdict == "unresolved" and c.retrainings_needed is None:
                needed = "–"
            t.add_row(
                f"{f.name}: {f.verdict}" if i == 0 else "",
                _side(c.larger),
                _side(c.smaller),
                c.verdict,
                needed,
            )
    return t


def render_private_prediction(console: Any, audit: Any) -> None:
    """Print the summary table, the findings check and any ordering violation to a rich
    console."""
    console.print(summary_table(audit))
    findings = findings_table(audit)
    if findings is not None:
        console.print(findings)
    for r in _details(audit):
        for v in r.ordering.violations:
            console.print(f"[yellow]{r.algorithm}/{r.adversary}:[/yellow] {v}")


def plot_rdp_curves(audit: Any, path: str | Path) -> Path:
    """RDP against the order for each algorithm × adversary (Chadha et al. 2024 Fig. 2/6 style).

    Args:
        audit: the :class:`dpaudit.AuditResult` of a private-prediction audit.
        path: PNG file to write.

    Returns:
        The path written.
    """
    results = _details(audit)
    algs = list(dict.fromkeys(r.algorithm for r in results))
    advs = list(dict.fromkeys(r.adversary for r in results))
    fig, axes = figure(len(algs), len(advs), 4.2, 3.4)
    for r in results:
        ax = axes[algs.index(r.algorithm)][advs.index(r.adversary)]
        for attr, label, color, style in _CURVES:
            y = np.asarray(getattr(r, attr), dtype=np.float64)
            mask = y > 0
            if mask.any():
                ax.plot(r.orders[mask], y[mask], style, color=color, label=label, lw=1.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Rényi order α")
        ax.set_ylabel(f"RDP ε(α), {r.num_composed} {r.composition}")
        ax.set_title(
            f"{_ALG_LABEL.get(r.algorithm, r.algorithm)} · {_ADV_LABEL.get(r.adversary, '')}"
        )
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"{audit.detail.dataset}: RDP audit ({audit.settings.audit.confidence_level:.0%} lower "
        "bound) vs "
        "exact and claimed RDP"
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def plot_epsilon_bars(audit: Any, path: str | Path) -> Path:
    """ε at δ per adversary and algorithm as grouped bars (Chadha et al. 2024 Fig. 3/4 style).

    The audit's bar is hatched: an RDP lower bound converted with an upper-bound conversion
    is not an (ε, δ) lower bound (Chadha et al. 2024 §5.4 plot it the same way).

    Args:
        audit: the :class:`dpaudit.AuditResult` of a private-prediction audit.
        path: PNG file to write.

    Returns:
        The path written.
    """
    results = _details(audit)
    algs = list(dict.fromkeys(r.algorithm for r in results))
    advs = list(dict.fromkeys(r.adversary for r in results))
    fig, axes = figure(1, len(algs), 5.0, 3.6)
    width = 0.2
    for a_i, alg in enumerate(algs):
        ax = axes[0][a_i]
        for c_i, (attr, label, color, _) in enumerate(_CURVES):
            vals = []
            for adv in advs:
                rs = [r for r in results if r.algorithm == alg and r.adversary == adv]
                vals.append(getattr(rs[0].epsilon, attr) if rs else np.nan)
            x = np.arange(len(advs)) + (c_i - 1.5) * width
            ax.bar(
                x,
                vals,
                width,
                color=color,
                label=label,
                hatch="//" if attr == "audit" else None,
                edgecolor="black",
                linewidth=0.4,
            )
        labels = [_ADV_LABEL.get(a, a) for a in advs]
        long = len(advs) > 3 or max(len(t) for t in labels) > 10  # e.g. kNN / PromptPATE names
        ax.set_xticks(np.arange(len(advs)), labels)
        if long:
            ax.tick_params(axis="x", labelrotation=30)
            for tick in ax.get_xticklabels():
                tick.set_horizontalalignment("right")
        ax.set_ylabel(f"ε at δ = {audit.settings.audit.delta:g}")
        ax.set_title(_ALG_LABEL.get(alg, alg))
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{audit.detail.dataset}: privacy leakage (audit ε is for display only)")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def write_private_prediction_report(
    audit: Any, out_dir: str | Path, *, plots: bool = True
) -> dict[str, Path]:
    """Write ``results.json`` (and ``rdp_vs_order.png``, ``epsilon_bars.png``) to a directory.

    Args:
        audit: the :class:`dpaudit.AuditResult` of a private-prediction audit.
        out_dir: directory (created if missing).
        plots: also write the PNGs.

    Returns:
        The paths written, by kind (``"json"``, ``"rdp_plot"``, ``"epsilon_plot"``).
    """
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = {"json": audit.write_json(d / "results.json")}
    if plots:
        paths["rdp_plot"] = plot_rdp_curves(audit, d / "rdp_vs_order.png")
        paths["epsilon_plot"] = plot_epsilon_bars(audit, d / "epsilon_bars.png")
    return paths


#: The private-prediction workflow's report.
REPORT = Report(render=render_private_prediction, writer=write_private_prediction_report)
