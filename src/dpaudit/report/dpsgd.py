"""Report of the one-run DP-SGD audit and of the canary-scores audit: tables and plots.

For :func:`dpaudit.experiments.dpsgd.pipeline.audit_dpsgd` (Liu, Boglioni, Fu, Hu, Thaker & Wu,
*Enhancing One-run Privacy Auditing with Quantile Regression-Based Membership Inference*,
Tables 1–2 layout) and :func:`dpaudit.experiments.canary_scores.pipeline.audit_canary_scores`:

* :func:`dpsgd_table` — one row per attack (baseline, QMIA) × bound (ε_or, ε_or-fdp, ε_max):
  the valid bound of repetition 0, mean ± sd of the valid bounds over repetitions, and the
  papers' uncorrected maximum (mean ± sd), labelled NOT valid; the claims in the caption.
* :func:`plot_guess_sweep` — ε against the number of guesses for each attack (repetition 0):
  the uncorrected per-guess-count bounds of both procedures, the valid bounds as horizontal
  lines, and the claimed ε as a line.
* :func:`scores_table` — the canary-scores audit: one row per bound, valid or not.
* The worst-case-initialised audit (``detail.estimate``): :func:`worstcase_table` (the valid
  bound and the papers' estimate, labelled) and, instead of the guess sweep, the histogram of
  the target's scores with and without it (:func:`plot_guess_sweep` draws it).
* :func:`write_dpsgd_report`, :func:`write_scores_report` — ``results.json`` and the PNG.

rich and matplotlib are imported lazily (extras ``cli`` and ``plot``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.errors import require
from dpaudit.report._figures import figure, save
from dpaudit.report._report import Report
from dpaudit.report.html import register_figures

__all__ = [
    "DPSGD_REPORT",
    "SCORES_REPORT",
    "dpsgd_table",
    "plot_guess_sweep",
    "render_canary_scores",
    "render_dpsgd",
    "scores_table",
    "whitebox_table",
    "worstcase_table",
    "write_dpsgd_report",
    "write_scores_report",
]

_BOUND_LABEL = {"or": "ε_or (Steinke)", "or-fdp": "ε_or-fdp (f-DP)", "max": "ε_max"}


def _pm(mean: float, std: float) -> str:
    return f"{mean:.3f} ± {std:.3f}"


def dpsgd_table(result: Any):
    """A rich Table of the DP-SGD audit (see the module docstring)."""
    rich_table = require("rich.table", "cli")
    d = result.detail
    claim = result.entries[0].claim
    claims = "; ".join(f"{c.analysis}: ε = {c.epsilon:.3f}" for c in result.entries[0].claims)
    m = d.mechanism
    level = result.entries[0].lower_bound.confidence_level
    t = rich_table.Table(
        title=(
            f"One-run audit of DP-SGD on {d.dataset}: m = {d.num_canaries} canaries, "
            f"r = {d.num_non_canaries}, n = {d.nominal_size} (q = {m.sampling_rate:.4g}, "
            f"σ = {m.noise_multiplier:.4g}, T = {m.steps}); δ = {claim.delta:g}"
        ),
        caption=(
            f"claims — {claims}. Valid: confidence {level:g}, guess count (and procedure "
            "for ε_max) paid for. Uncorrected = the papers' "
            "maximum over guess counts (and procedures), NOT a valid lower bound."
        ),
    )
    for col in ("attack", "bound", "valid (run 0)", "valid mean ± sd", "uncorrected mean ± sd"):
        t.add_column(col, justify="left" if col in ("attack", "bound") else "right")
    for e in result.entries:
        s = e.detail
        t.add_row(
            s.attack,
            _BOUND_LABEL[s.bound],
            f"{e.lower_bound.epsilon:.3f}",
            _pm(s.valid_mean, s.valid_std),
            _pm(s.uncorrected_mean, s.uncorrected_std) + " (NOT valid)",
        )
    return t


def whitebox_table(result: Any):
    """A rich Table of the white-box DP-SGD audit: one row per statistic × bound."""
    rich_table = require("rich.table", "cli")
    d = result.detail
    run, m = d.runs[0], d.mechanism
    claims = "; ".join(f"{c.analysis}: ε = {c.epsilon:.3f}" for c in result.entries[0].claims)
    lo, hi = run.noise_multipliers
    t = rich_table.Table(
        title=(
            f"White-box audit of DP-SGD: m = {run.num_canaries} canary gradients, "
            f"{run.steps} steps (claimed q = {m.sampling_rate:.4g}, σ = {m.noise_multiplier:.4g}); "
            f"σ seen in the updates {lo:.4g}–{hi:.4g}; δ = {result.entries[0].lower_bound.delta:g}"
        ),
        caption=f"claims — {claims}. Valid bounds: confidence "
        f"{result.entries[0].lower_bound.confidence_level:g}, guess count paid for.",
    )
    for col in ("entry", "ε", "valid?", f"over {len(d.runs)} run(s)"):
        t.add_column(col, justify="left" if col == "entry" else "right")
    for e in result.entries:
        v = d.valid[e.adversary]
        spread = f"{np.mean(v):.3f} ± {np.std(v, ddof=1) if len(v) > 1 else 0.0:.3f}"
        valid = "yes" if e.lower_bound.epsilon_is_valid else "NO (estimate)"
        t.add_row(e.adversary, f"{e.lower_bound.epsilon:.3f}", valid, spread)
    return t


def entries_table(result: Any, title: str):
    """A rich Table of a result's entries: bound, validity and note, with the claims."""
    rich_table = require("rich.table", "cli")
    claims = "; ".join(f"{c.analysis}: ε = {c.epsilon:.3f}" for c in result.entries[0].claims)
    t = rich_table.Table(title=title, caption=f"claims — {claims}.")
    for col in ("entry", "ε", "valid?", "note"):
        t.add_column(col)
    for e in result.entries:
        lb = e.lower_bound
        t.add_row(e.adversary, f"{lb.epsilon:.3f}", "yes" if lb.epsilon_is_valid else
                  "NO (estimate)", lb.note)  # fmt: skip
    return t


def worstcase_table(result: Any):
    """A rich Table of the worst-case-initialised audit: the valid bound and the estimate."""
    rich_table = require("rich.table", "cli")
    d, m = result.detail, result.detail.mechanism
    claims = "; ".join(f"{c.analysis}: ε = {c.epsilon:.3f}" for c in result.entries[0].claims)
    t = rich_table.Table(
        title=(
            f"Worst-case-initialised black-box audit on {d.dataset}: |D⁻| = {d.num_members}, "
            f"{len(d.in_scores)} + {len(d.out_scores)} models (q = {m.sampling_rate:.4g}, "
            f"σ = {m.noise_multiplier:.4g}, T = {m.steps}); θ₀ pre-trained "
            f"{d.pretrain_epochs} epochs on {d.num_public} public records; target label "
            f"{d.target_label}"
        ),
        caption=f"claims — {claims}.",
    )
    for col in ("entry", "ε", "valid?", "note"):
        t.add_column(col)
    for e in result.entries:
        lb = e.lower_bound
        valid = "yes" if lb.epsilon_is_valid else "NO (estimate)"
        t.add_row(e.adversary, f"{lb.epsilon:.3f}", valid, lb.note)
    return t


def render_dpsgd(console: Any, result: Any) -> None:
    """Print the DP-SGD table and a line per repetition (accuracy, throughput, QMIA); a
    white-box result (``detail.runs``) prints its own table and the auditor's cost, an
    all-iterates one (``detail.one_run``) the table of its pooled scores' bounds."""
    if hasattr(result.detail, "estimate"):  # worst-case-init: valid bound and estimate
        console.print(worstcase_table(result))
        return
    if hasattr(result.detail, "stream"):  # a sequential many-run audit: where it stopped
        console.print(entries_table(result, "Sequential many-run audit of DP-SGD"))
        return
    if hasattr(result.detail, "one_run"):  # all-iterates: the pooled scores' bounds
        console.print(scores_table(result))
        return
    if hasattr(result.detail, "runs"):
        console.print(whitebox_table(result))
        for i, (train, book) in enumerate(
            zip(result.detail.training_seconds, result.detail.bookkeeping_seconds, strict=True)
        ):
            console.print(f"run {i}: {train:.1f} s of DP-SGD, of which {book:.2f} s canary "
                          "bookkeeping")  # fmt: skip
        return
    console.print(dpsgd_table(result))
    for r in result.detail.repetitions:
        sc = r.scores
        acc = "—" if sc.test_accuracy is None else f"{sc.test_accuracy:.3f}"
        qmia = ""
        if sc.qmia_regressor is not None:
            qmia = (
                f", QMIA {sc.qmia_regressor} {sc.qmia_seconds:.1f} s "
                f"(best epoch {sc.qmia_best_epoch})"
            )
        console.print(
            f"run {r.index}: {r.num_members} trained examples ({r.num_included} canaries), "
            f"test accuracy {acc}, {r.training_seconds:.1f} s of DP-SGD "
            f"({r.examples_per_second:.0f} examples/s){qmia}"
        )


def _grid(sweep: Any) -> Any:
    """A sweep's grid (``values``, which a JSON view would read as the dict method)."""
    if isinstance(sweep, dict):
        return np.asarray(sweep["values"], dtype=float)
    return sweep.values


def _sweep_panel(ax: Any, bounds: Any, title: str, claim: float | None) -> None:
    st, fdp = bounds.steinke, bounds.fdp
    ax.plot(_grid(st), st.epsilons, color="tab:blue", lw=1.2, label="ε_or per k (uncorrected)")
    ax.plot(_grid(fdp), fdp.epsilons, color="tab:orange", lw=1.2,
            label="ε_or-fdp per k (uncorrected)")  # fmt: skip
    for value, color, label in (
        (st.epsilon, "tab:blue", f"ε_or valid ({st.selection.strategy})"),
        (fdp.epsilon, "tab:orange", f"ε_or-fdp valid ({fdp.selection.strategy})"),
        (bounds.max_valid, "tab:green", "ε_max valid (Bonferroni over 2)"),
    ):
        ax.axhline(value, color=color, ls="--", lw=1.0, label=f"{label} = {value:.3f}")
    unc = bounds.uncorrected_max
    ax.axhline(unc, color="tab:red", ls=":", lw=1.0,
               label=f"ε_max uncorrected = {unc:.3f} (NOT valid)")  # fmt: skip
    if claim is not None:
        ax.axhline(claim, color="black", lw=1.5, label=f"claimed ε = {claim:.3f}")
    ax.set_xlabel("number of guesses k")
    ax.set_ylabel("ε lower bound")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="best")


def _member(mapping: Any, key: str) -> Any:
    """``mapping[key]``, read through the JSON view of :mod:`dpaudit.report.html` if it is one."""
    return mapping[key] if type(mapping) is dict else getattr(mapping, key)


def plot_guess_sweep(result: Any, path: str | Path) -> Path:
    """ε vs number of guesses per attack (repetition 0), valid and uncorrected, and the claim.

    Works for the DP-SGD audit (one panel per attack) and the canary-scores audit (one
    panel), from the result or its JSON view (:func:`dpaudit.report.html.result_view`).

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    if hasattr(result.detail, "in_scores"):  # worst-case-init: no guess sweep, the scores
        return _plot_target_scores(result.detail, path)
    claims = result.entries[0].claims
    claim_eps = claims[0].epsilon if len(claims) else None
    reps = getattr(result.detail, "repetitions", None) or getattr(result.detail, "runs", None)
    if reps is not None:
        bmap = _member(reps[0], "bounds")
        panels = [(name, _member(bmap, name)) for name in bmap]
    else:
        panels = [("scores", result.detail.one_run)]
    fig, axes = figure(1, len(panels), 5.0, 3.8)
    for ax, (name, bounds) in zip(axes[0], panels, strict=True):
        _sweep_panel(ax, bounds, f"{name}: ε vs guesses (δ = {bounds.delta:g})", claim_eps)
    return save(fig, path)


def _plot_target_scores(detail: Any, path: str | Path) -> Path:
    """Histogram of the target's negative loss on the models with and without it."""
    fig, axes = figure(1, 1, 5.0, 3.8)
    ax = axes[0][0]
    ins, outs = np.asarray(detail.in_scores, float), np.asarray(detail.out_scores, float)
    bins = np.linspace(min(ins.min(), outs.min()), max(ins.max(), outs.max()), 30)
    ax.hist(outs, bins=bins, alpha=0.6, label=f"without the target ({outs.size})")
    ax.hist(ins, bins=bins, alpha=0.6, label=f"with the target ({ins.size})")
    ax.set_xlabel("−loss of the target on the final model")
    ax.set_ylabel("models")
    ax.set_title("Worst-case-initialised audit: the target's score")
    ax.legend(fontsize=7, loc="best")
    return save(fig, path)


def scores_table(result: Any):
    """A rich Table of the canary-scores audit: one row per bound, valid or not."""
    rich_table = require("rich.table", "cli")
    d = result.detail
    claim = result.entries[0].claim
    cap = "" if claim is None else f"claimed ε = {claim.epsilon:g}. "
    t = rich_table.Table(
        title=(
            f"Canary scores: {d.num_in} in, {d.num_out} out; design = {d.design!r}; "
            f"δ = {result.entries[0].lower_bound.delta:g}"
        ),
        caption=cap + "Uncorrected maxima are shown for comparison only (NOT valid).",
    )
    for col in ("bound", "ε lower bound", "valid?", "how chosen", "note"):
        t.add_column(col)
    for e in result.entries:
        lb = e.lower_bound
        strategies = ", ".join(sorted({s.strategy for s in e.selections}))
        t.add_row(
            e.adversary, f"{lb.epsilon:.4f}", "yes" if lb.epsilon_is_valid else "NO",
            strategies, lb.note,
        )  # fmt: skip
    return t


def render_canary_scores(console: Any, result: Any) -> None:
    """Print the canary-scores table."""
    console.print(scores_table(result))


def write_dpsgd_report(result: Any, out_dir: str | Path, *, plots: bool = True) -> dict[str, Path]:
    """Write ``results.json`` (and ``guess_sweep.png``) to a directory; return the paths."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = {"json": result.write_json(d / "results.json")}
    if plots:
        paths["sweep_plot"] = plot_guess_sweep(result, d / "guess_sweep.png")
    return paths


#: The canary-scores audit writes the same files (``results.json``, ``guess_sweep.png``).
write_scores_report = write_dpsgd_report

_SWEEP_CAPTION = (
    "ε lower bound against the number of guesses k (repetition 0): per-k bounds of Steinke et "
    "al. 2023 (arXiv:2305.08846) and of the f-DP audit of Mahloujifar et al. 2024 "
    "(arXiv:2410.22235) at the nominal level are uncorrected; the dashed lines are the valid "
    "bounds with the choice of k (and, for ε_max, of the procedure) paid for; the black line "
    "is the primary claim."
)


@register_figures("dp-sgd", "dp-sgd-one-run")
def _dpsgd_figures(view: Any, d: Path) -> list[tuple[str, Path]]:
    return [(_SWEEP_CAPTION, plot_guess_sweep(view, d / "guess_sweep.png"))]


@register_figures("scores", "canary-scores")
def _scores_figures(view: Any, d: Path) -> list[tuple[str, Path]]:
    return [(_SWEEP_CAPTION, plot_guess_sweep(view, d / "guess_sweep.png"))]


#: The dpsgd workflow's report.
DPSGD_REPORT = Report(render=render_dpsgd, writer=write_dpsgd_report)

#: The canary-scores workflow's report.
SCORES_REPORT = Report(render=render_canary_scores, writer=write_scores_report)
