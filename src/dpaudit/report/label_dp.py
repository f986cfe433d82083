"""Report of the label-DP audit: the Table 1 / Table 6 layout, a Fig. 1-style plot, files.

For :func:`~dpaudit.experiments.label_dp.run_label_dp` (Malek et al. 2021, "Antipodes of Label
Differential Privacy", arXiv:2106.03408):

* :func:`label_dp_rows` — one row per mechanism × accuracy level: dataset, level, mechanism,
  test accuracy, claimed ε (δ), ε_m (the valid lower bound and its 95% interval on the
  held-out canaries, the threshold and how it was chosen), the averaged variant, and the
  authors' uncorrected best-of-seven number (not a valid bound) beside;
* :func:`label_dp_table` (rich) and :func:`label_dp_markdown` (for the README);
* :func:`plot_claimed_vs_measured` — claimed ε against the ε_m interval, one panel per level;
* :func:`write_label_dp_report` — ``results.json``, ``table.md`` and the PNG in a directory.

rich and matplotlib are imported lazily (extras ``cli`` and ``plot``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.errors import require
from dpaudit.report._figures import figure, save
from dpaudit.report._report import Report

__all__ = [
    "REPORT",
    "label_dp_markdown",
    "label_dp_rows",
    "label_dp_table",
    "plot_claimed_vs_measured",
    "render_label_dp",
    "write_label_dp_report",
]

_LABELS = {
    "alibi": "ALIBI",
    "agibi": "AGIBI",
    "rr": "RR",
    "soft-rr": "Soft-RR",
    "pate-fm": "PATE-FM",
}


class _View(dict):
    """A JSON mapping read like the result object (``a.b`` and ``a["b"]``)."""

    __getattr__ = dict.__getitem__


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _View({k: _plain(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def _view(result: Any) -> Any:
    """``result`` itself, or its ``results.json`` mapping as a read-alike (claim = claims[0])."""
    if not isinstance(result, Mapping):
        return result
    view = _plain(result)
    for e in view.entries:
        e["claim"] = e.claims[0]
    return view


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    if math.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def _claim_text(claim: Any) -> str:
    eps = claim.epsilon
    text = f"{eps:.3g}" if eps < 100 else f"{eps:.0f}"
    return text if not claim.delta else f"{text} (δ={claim.delta:g})"


def label_dp_rows(result: Any) -> list[dict[str, Any]]:
    """One plain row per entry of a label-DP :class:`~dpaudit._results.AuditResult` (or of
    its ``results.json`` mapping)."""
    result = _view(result)
    rows = []
    for e in result.entries:
        d = e.detail
        lb = e.lower_bound
        chosen = e.selections[0]
        other = d["acgr"] if result.settings.attack.variant == "cgr" else d["cgr"]
        rows.append(
            {
                "dataset": result.detail["dataset"],
                "level": d["level"],
                "mechanism": _LABELS.get(e.system, e.system),
                "accuracy": d["accuracy"],
                "claimed_epsilon": e.claim.epsilon,
                "claim_delta": e.claim.delta,
                "claim": _claim_text(e.claim),
                "claim_analysis": e.claim.analysis,
                "epsilon_m": lb.epsilon,
                "epsilon_m_low": lb.interval.low,
                "epsilon_m_high": lb.interval.high,
                "threshold": d[result.settings.attack.variant].threshold,
                "selection": chosen.strategy,
                "other_variant_low": other.interval.low,
                "other_variant_high": other.interval.high,
                "uncorrected": d[result.settings.attack.variant].uncorrected_epsilon,
                "refutes_claim": bool(e.gap.refutes_claim) if e.gap else False,
            }
        )
    return rows


def _headers(result: Any) -> tuple[str, str]:
    v = result.settings.attack.variant
    other = "ACGR" if v == "cgr" else "CGR"
    return v.upper(), other


def label_dp_markdown(result: Any) -> str:
    """The Table 1 layout as a Markdown table (measured values; ε_m two-sided 95% CI)."""
    result = _view(result)
    main, other = _headers(result)
    lines = [
        f"| dataset | accuracy level | mechanism | accuracy | claimed ε | ε_m ≥ ({main}) "
        f"| ε_m 95% CI ({main}) | τ ({result.settings.attack.selection}) "
        f"| ε_m 95% CI ({other}) | uncorrected best of 7 |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in label_dp_rows(result):
        lines.append(
            f"| {r['dataset']} | {r['level']} | {r['mechanism']} | {100 * r['accuracy']:.1f}% "
            f"| {r['claim']} | {_fmt(r['epsilon_m'])} "
            f"| {_fmt(r['epsilon_m_low'])}–{_fmt(r['epsilon_m_high'])} "
            f"| {r['threshold']:g} | {_fmt(r['other_variant_low'])}–"
            f"{_fmt(r['other_variant_high'])} | {_fmt(r['uncorrected'])} |"
        )
    return "\n".join(lines) + "\n"


def label_dp_table(result: Any) -> Any:
    """A rich table in the Table 1 / Table 6 layout."""
    result = _view(result)
    table_mod = require("rich.table", "cli")
    s = result.settings
    main, other = _headers(result)
    t = table_mod.Table(
        title=(
            f"Label DP on {result.detail['dataset']} (n={result.detail['n_train']}, "
            f"N={result.detail['num_canaries']} canaries, {s.training.model.upper()})"
        ),
        caption=(
            f"ε_m ≥: the audit's one-sided {s.attack.confidence_level:.0%} lower bound; CI: "
            f"two-sided {s.attack.confidence_level:.0%} interval, both on the held-out "
            f"canaries (τ: {s.attack.selection}). "
            "'uncorrected' = best of the authors' 7 thresholds on the same canaries (NOT valid)."
        ),
    )
    for col in ("dataset", "level", "mechanism", "accuracy", "claimed ε"):
        t.add_column(col, justify="right" if col in ("accuracy", "claimed ε") else "left")
    t.add_column(f"ε_m ≥ ({main})", justify="right")
    t.add_column(f"95% CI ({main})", justify="right")
    t.add_column("τ", justify="right")
    t.add_column(f"95% CI ({other})", justify="right")
    t.add_column("uncorrected", justify="right")
    for r in label_dp_rows(result):
        t.add_row(
            r["dataset"], r["level"], r["mechanism"], f"{100 * r['accuracy']:.1f}%", r["claim"],
            _fmt(r["epsilon_m"]), f"{_fmt(r['epsilon_m_low'])}–{_fmt(r['epsilon_m_high'])}",
            f"{r['threshold']:g}",
            f"{_fmt(r['other_variant_low'])}–{_fmt(r['other_variant_high'])}",
            _fmt(r["uncorrected"]),
        )  # fmt: skip
    return t


def render_label_dp(console: Any, result: Any) -> None:
    """Print the table, the App. C validation and the refuted claims, if any."""
    result = _view(result)
    console.print(label_dp_table(result))
    v = result.detail.get("validation")
    if v:
        for variant in ("cgr", "acgr"):
            one, pooled = v["one_run"][variant], v["pooled"][variant]
            console.print(
                f"App. C ({v['mechanism']}, {v['level']}, {variant.upper()}): one run with "
                f"{result.detail['num_canaries']} canaries "
                f"ε_m {_fmt(one['interval'].low)}–{_fmt(one['interval'].high)}; "
                f"{v['runs']} runs × {v['canaries_per_run']} pooled "
                f"ε_m {_fmt(pooled['interval'].low)}–{_fmt(pooled['interval'].high)}"
            )
    refuted = [r for r in label_dp_rows(result) if r["refutes_claim"]]
    for r in refuted:
        console.print(
            f"[red]refuted:[/red] {r['mechanism']} ({r['level']}) claims ε = {r['claim']} but "
            f"ε_m ≥ {r['epsilon_m']:.3f}"
        )


def plot_claimed_vs_measured(result: Any, path: str | Path) -> Path:
    """Claimed ε (bars) against the ε_m interval (error bars), one panel per level."""
    result = _view(result)
    rows = label_dp_rows(result)
    levels = list(dict.fromkeys(r["level"] for r in rows))
    fig, axes = figure(1, len(levels), 3.4, 3.0)
    for ax, level in zip(axes[0], levels, strict=True):
        sub = [r for r in rows if r["level"] == level]
        x = np.arange(len(sub))
        claimed = [r["claimed_epsilon"] for r in sub]
        low = np.array([r["epsilon_m_low"] for r in sub])
        high = np.array([min(r["epsilon_m_high"], 1e3) for r in sub])
        ax.bar(x, claimed, color="lightgray", edgecolor="gray", label="claimed ε")
        mid = (low + high) / 2
        ax.errorbar(x, mid, yerr=[mid - low, high - mid], fmt="none", ecolor="tab:red",
                    capsize=4, lw=2, label="ε_m 95% CI")  # fmt: skip
        ax.scatter(x, low, color="tab:red", zorder=3, s=12)
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_xticks(x, [f"{r['mechanism']}\n{100 * r['accuracy']:.0f}%" for r in sub])
        ax.set_title(f"{result.detail['dataset']}: {level}")
        ax.set_ylabel("ε")
    axes[0][0].legend(fontsize=8)
    return save(fig, path)


def write_label_dp_report(result: Any, out: str | Path, *, plots: bool = True) -> Path:
    """Write ``results.json``, ``table.md`` (and ``claimed_vs_measured.png``) to ``out``."""
    out_dir = Path(out)
    result.write_json(out_dir / "results.json")
    (out_dir / "table.md").write_text(label_dp_markdown(result))
    if plots:
        plot_claimed_vs_measured(result, out_dir / "claimed_vs_measured.png")
    return out_dir


#: The label-dp workflow's report.
REPORT = Report(render=render_label_dp, writer=write_label_dp_report)
