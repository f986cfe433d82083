"""Report of the vote-leakage reproduction: the four plots and ``results.json``.

The figures of Wang et al. 2022, "In Differential Privacy, There is Truth: On Vote Leakage in
Ensemble Private Learning" (arXiv:2209.10732), from the result of
:func:`dpaudit.experiments.vote_leakage.pipeline.run_vote_leakage`:

* :func:`plot_query_limited` — Fig. 6: error per histogram grouped by σ, cost as red dots.
* :func:`plot_budget_limited` — Fig. 4a: error per histogram under the canonical budget.
* :func:`plot_noise_sweep` — §4.2: mean error and privacy cost against σ.
* :func:`plot_attribute_inference` — Fig. 1: consensus of PhD vs non-PhD holders.
* :func:`write_vote_leakage_report` — ``results.json`` (the whole
  :class:`~dpaudit._results.AuditResult`) and the PNGs of the parts that ran.

matplotlib is imported lazily (extra ``plot``) through :func:`dpaudit.report._figures.figure`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.data import VoteHistograms, load_mnist_vote_histograms
from dpaudit.report._figures import figure, save
from dpaudit.report._report import Report

__all__ = [
    "REPORT",
    "plot_attribute_inference",
    "plot_budget_limited",
    "plot_noise_sweep",
    "plot_query_limited",
    "render_vote_leakage",
    "render_vote_leakage_claims",
    "write_vote_leakage_report",
]


def _ordered(histograms: VoteHistograms | None) -> tuple[VoteHistograms, list[int]]:
    hs = histograms if histograms is not None else load_mnist_vote_histograms()
    return hs, hs.figure_order()


def plot_query_limited(
    result: Any, path: str | os.PathLike[str], *, histograms: VoteHistograms | None = None
) -> Path:
    """Wang et al. 2022 Fig. 6: error per histogram, grouped by σ, privacy cost as red dots.

    One panel per estimator; bars are means over repetitions; red dots (right axis) are the
    paper-style Confident-GNMax expected data-dependent ε of the M queries.

    Args:
        result: a :class:`~dpaudit.experiments.vote_leakage.extraction.QueryLimitedResult`.
        path: PNG file to write.
        histograms: the histograms attacked (default: all 15).

    Returns:
        The path written.
    """
    hs, order = _ordered(histograms)
    names = [hs.names[i] for i in order]
    ests = result.estimators
    fig, axes = figure(1, len(ests), 5.5, 4.2)
    width = 0.8 / len(result.sigmas)
    x = np.arange(len(names))
    for ax, est in zip(axes[0], ests, strict=True):
        twin = ax.twinx()
        for k, s in enumerate(result.sigmas):
            errs = [
                np.mean(
                    [
                        r.error
                        for r in result.records
                        if r.histogram == nm and r.sigma == s and r.estimator == est
                    ]
                )
                for nm in names
            ]
            eps = [
                next(
                    c.epsilon_paper_data_dependent
                    for c in result.costs
                    if c.histogram == nm and c.sigma == s
                )
                for nm in names
            ]
            pos = x - 0.4 + width * (k + 0.5)
            ax.bar(pos, errs, width, label=f"σ = {s:g}")
            twin.plot(pos, eps, "o", color="red", markersize=3)
        ax.set_xticks(x, [hs.labels[i] for i in order])
        ax.set_ylabel("normalised L1 error")
        twin.set_ylabel("privacy cost ε (red)", color="red")
        ax.set_title(f"{est}: M = {result.num_queries}, {result.repetitions} rep.")
        ax.legend(fontsize=7)
    return save(fig, path)


def plot_budget_limited(
    result: Any, path: str | os.PathLike[str], *, histograms: VoteHistograms | None = None
) -> Path:
    """Wang et al. 2022 Fig. 4a: error per histogram under the budget (live vs paper model).

    Args:
        result: a :class:`~dpaudit.experiments.vote_leakage.budget_limited.BudgetLimitedResult`.
        path: PNG file to write.
        histograms: the histograms attacked (default: all 15).

    Returns:
        The path written.
    """
    hs, order = _ordered(histograms)
    names = [hs.names[i] for i in order]
    fig, axes = figure(1, 1, 9.0, 4.0)
    ax = axes[0][0]
    series = [("live", "mle"), ("live", "paper"), ("paper", "mle"), ("paper", "paper")]
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for k, (model, est) in enumerate(series):
        vals = []
        for nm in names:
            rows = [r for r in result.records if r.histogram == nm and r.model == model]
            errs = [getattr(r, f"error_{est}") for r in rows]
            vals.append(np.mean([1.0 if e is None else e for e in errs]))
        ax.bar(x - 0.4 + width * (k + 0.5), vals, width, label=f"{model} model, {est} estimator")
    ax.set_xticks(x, [hs.labels[i] for i in order])
    ax.set_ylabel("normalised L1 error")
    ax.set_title(
        f"Budget-limited attack: Confident GNMax T={result.threshold:g}, σ1={result.sigma1:g}, "
        f"σ2={result.sigma2:g}, ε={result.budget:g} at δ={result.delta:g}"
    )
    ax.legend(fontsize=7)
    return save(fig, path)


def plot_noise_sweep(
    result: Any, path: str | os.PathLike[str], *, histograms: VoteHistograms | None = None
) -> Path:
    """ "More noise helps the attacker": mean error (left) and privacy cost (right) against σ.

    Args:
        result: a :class:`~dpaudit.experiments.vote_leakage.noise_sweep.NoiseSweepResult`.
        path: PNG file to write.
        histograms: unused (the sweep's means are over every histogram attacked).

    Returns:
        The path written.
    """
    del histograms
    fig, axes = figure(1, 1, 6.5, 4.2)
    ax = axes[0][0]
    ax.plot(result.sigmas, result.mean_error, "k-o", label="all histograms")
    for lvl, vals in result.mean_error_by_level.items():
        ax.plot(result.sigmas, vals, "--", marker=".", label=f"{lvl} consensus")
    ax.set_xscale("log")
    ax.set_xlabel("GNMax noise σ")
    ax.set_ylabel(f"mean normalised L1 error (M = {result.num_queries})")
    twin = ax.twinx()
    twin.plot(result.sigmas, result.mean_epsilon_data_dependent, "r:", label="ε data-dep.")
    twin.plot(result.sigmas, result.mean_epsilon_data_independent, "m:", label="ε data-indep.")
    twin.set_yscale("log")
    twin.set_ylabel(f"ε(δ={result.delta:g}) of the M queries", color="red")
    ax.legend(loc="upper right", fontsize=7)
    twin.legend(loc="center right", fontsize=7)
    ax.set_title("More noise helps the attacker (Wang et al. 2022 §4.2)")
    return save(fig, path)


def plot_attribute_inference(result: Any, path: str | os.PathLike[str]) -> Path:
    """Wang et al. 2022 Fig. 1: consensus of PhD vs non-PhD holders (direct and extracted).

    Args:
        result: an :class:`~dpaudit.experiments.vote_leakage.AttributeInferenceExperiment`.
        path: PNG file to write.

    Returns:
        The path written.
    """
    panels = [("true histograms", result.consensus_direct)]
    if result.consensus_extracted is not None:
        panels.append(("extracted through the interface", result.consensus_extracted))
    fig, axes = figure(1, len(panels), 5.0, 3.8)
    bins = np.linspace(0.5, 1.0, 26)
    for ax, (title, cons) in zip(axes[0], panels, strict=True):
        ax.hist(cons[result.is_member], bins=bins, alpha=0.6, label="PhD")
        ax.hist(cons[~result.is_member], bins=bins, alpha=0.6, label="not PhD")
        ax.axvline(result.threshold, color="k", linestyle="--")
        ax.set_xlabel("consensus (top votes / N)")
        ax.set_ylabel("test individuals")
        ax.set_title(title)
        ax.legend(fontsize=7)
    return save(fig, path)


def write_vote_leakage_report(
    result: Any, out_dir: str | os.PathLike[str], *, plots: bool = True
) -> dict[str, Path]:
    """Write ``results.json`` and the PNG plots of the parts that ran to a directory.

    Args:
        result: the :class:`~dpaudit._results.AuditResult` of
            :func:`~dpaudit.experiments.vote_leakage.pipeline.run_vote_leakage`.
        out_dir: directory (created if missing).
        plots: also write the PNGs (needs the ``plot`` extra): ``fig6_query_limited.png``,
            ``fig4a_budget_limited.png``, ``noise_helps_attacker.png``,
            ``fig1_attribute_inference.png``.

    Returns:
        The paths written by kind (``"json"``, ``"query_limited"``, ``"budget_limited"``,
        ``"noise_sweep"``, ``"attribute_inference"``).
    """
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    detail = result.detail
    hs = detail.histograms
    if plots:
        if detail.query_limited is not None:
            paths["query_limited"] = plot_query_limited(
                detail.query_limited, d / "fig6_query_limited.png", histograms=hs
            )
        if detail.budget_limited is not None:
            paths["budget_limited"] = plot_budget_limited(
                detail.budget_limited, d / "fig4a_budget_limited.png", histograms=hs
            )
        if detail.noise_sweep is not None:
            paths["noise_sweep"] = plot_noise_sweep(
                detail.noise_sweep, d / "noise_helps_attacker.png"
            )
        if detail.attribute_inference is not None:
            paths["attribute_inference"] = plot_attribute_inference(
                detail.attribute_inference, d / "fig1_attribute_inference.png"
            )
    paths["json"] = result.write_json(d / "results.json")
    return paths


def render_vote_leakage_claims(console: Any, result: Any) -> None:
    """What the defender's accountant charged for each part's queries (primary claim)."""
    from rich.table import Table

    t = Table(
        title="Privacy cost charged for the attack's queries (no ε lower bound: extraction "
        "error is not a privacy loss)"
    )
    for col in ("part", "accountant", "ε", "δ", "conversion"):
        t.add_column(col, justify="right" if col in ("ε", "δ") else "left")
    for e in result.entries:
        c = e.claim
        if c is None:
            continue
        t.add_row(e.adversary, c.analysis, f"{c.epsilon:.3g}", f"{c.delta:g}", c.conversion or "–")
    console.print(t)


def render_vote_leakage(console: Any, result: Any) -> None:
    """Print each enabled part's table and the privacy cost charged for its queries."""
    from rich.table import Table

    r = result.detail
    if r.query_limited is not None:
        q = r.query_limited
        t = Table(
            title=f"Query-limited attack (Wang et al. 2022 Fig. 6): mean normalised L1 error, "
            f"M = {q.num_queries}, {q.repetitions} repetitions"
        )
        t.add_column("estimator")
        for s in q.sigmas:
            t.add_column(f"σ = {s:g}", justify="right")
        for est, row in q.mean_error.items():
            t.add_row(est, *(f"{row[f'{s:g}']:.4f}" for s in q.sigmas))
        console.print(t)
        if q.mle_below_l2 is not None:
            console.print(f"MLE error below L2 error in {q.mle_below_l2:.0%} of cells")
    if r.budget_limited is not None:
        b = r.budget_limited
        t = Table(
            title=f"Budget-limited attack (Fig. 4a): ε = {b.budget:g} at δ = {b.delta:g}, "
            f"T = {b.threshold:g}, σ1 = {b.sigma1:g}, σ2 = {b.sigma2:g}"
        )
        t.add_column("model")
        t.add_column("MLE", justify="right")
        t.add_column("paper procedure", justify="right")
        for model, row in b.mean_error.items():
            t.add_row(model, f"{row['mle']:.4f}", f"{row['paper']:.4f}")
        console.print(t)
    if r.noise_sweep is not None:
        n = r.noise_sweep
        t = Table(title="More noise helps the attacker: mean MLE error against σ")
        t.add_column("σ", justify="right")
        t.add_column("error", justify="right")
        t.add_column("ε data-dep.", justify="right")
        for s, e, eps in zip(n.sigmas, n.mean_error, n.mean_epsilon_data_dependent, strict=True):
            t.add_row(f"{s:g}", f"{e:.4f}", f"{eps:.3g}")
        console.print(t)
    if r.attribute_inference is not None:
        a = r.attribute_inference
        t = Table(title=f"PhD inference on UCI Adult ({a.num_teachers} teachers)")
        t.add_column("histograms")
        t.add_column("precision", justify="right")
        t.add_column("recall", justify="right")
        for name, res in (("true", a.direct), ("extracted", a.end_to_end)):
            if res is not None:
                t.add_row(name, f"{res.precision:.3f}", f"{res.recall:.3f}")
        console.print(t)
    render_vote_leakage_claims(console, result)


#: The vote-leakage workflow's report.
REPORT = Report(render=render_vote_leakage, writer=write_vote_leakage_report)
