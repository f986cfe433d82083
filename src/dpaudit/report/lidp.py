"""Reports of the Lifted-DP audits (Pillutla et al. 2023, arXiv:2305.18447): the Gaussian
sum query and DP-SGD — tables, ε-vs-runs curves as markdown and PNG, ``results.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpaudit.report._report import Report

__all__ = [
    "DPSGD_REPORT",
    "GAUSSIAN_REPORT",
    "curves_markdown",
    "plot_curves",
    "render_lidp_dpsgd",
    "render_lidp_gaussian",
    "write_lidp_dpsgd_report",
]


def _fmt_runs(n: float | None) -> str:
    return "not reached" if n is None else f"{n:.0f}"


def render_lidp_gaussian(console: Any, result: Any) -> None:
    """The mean ε curves of both audits, the runs each needs and the gain."""
    from rich.table import Table

    r = result.detail
    t = Table(
        title=(
            f"Gaussian sum query σ = {r.sigma:g}, d = {r.dim}: mean ε lower bounds over "
            f"{r.num_repetitions} repetitions (δ = {r.delta:g}, confidence "
            f"{r.confidence_level:g}); true ε = {r.true_epsilon:.4f}"
        ),
        caption=(
            f"τ tuned for every n on separate runs ({r.num_tuning_runs} per audit at "
            f"n = {r.num_runs}); ± is the standard deviation across repetitions."
        ),
    )
    t.add_column("runs", justify="right")
    t.add_column("1 canary/run (CP)", justify="right")
    t.add_column(f"{r.num_canaries} canaries/run ({r.method})", justify="right")
    sd_b = r.epsilon_baseline_by_repetition.std(axis=0)
    sd_l = r.epsilon_lidp_by_repetition.std(axis=0)
    for i, n in enumerate(r.run_grid):
        t.add_row(
            str(int(n)),
            f"{r.epsilon_baseline[i]:.4f} ± {sd_b[i]:.4f}",
            f"{r.epsilon_lidp[i]:.4f} ± {sd_l[i]:.4f}",
        )
    console.print(t)
    gain = "—" if r.sample_complexity_gain is None else f"{r.sample_complexity_gain:.2f}×"
    if r.gain_interval is not None:
        lo, hi = r.gain_interval
        gain += f" (90% bootstrap interval over repetitions {lo:.2f}–{hi:.2f}×)"
    console.print(
        f"target ε = {r.target_epsilon:.4f}: 1 canary/run needs "
        f"{_fmt_runs(r.runs_needed_baseline)} runs, {r.num_canaries} canaries/run need "
        f"{_fmt_runs(r.runs_needed_lidp)} runs; gain {gain}"
    )
    for e in result.entries:
        lb = e.lower_bound
        console.print(
            f"{e.adversary}: ε ≥ {lb.epsilon:.4f} at {lb.confidence_level:g} confidence "
            f"(repetition 0, {r.num_runs} runs; τ: {e.selections[0].strategy}); "
            f"exact ε = {e.exact.epsilon:.4f}"
        )


def _gain_text(g: Any) -> str:
    if g.gain is None:
        return "—"
    text = f"{g.gain:.2f}×"
    if g.gain_interval is not None:
        text += f" (90 % bootstrap {g.gain_interval[0]:.2f}–{g.gain_interval[1]:.2f}×)"
    return text


def curves_markdown(result: Any) -> str:
    """ε lower bound vs number of runs for every k (mean ± sd over repetitions), runs needed
    and gains, as markdown."""
    a = result.detail.audit
    head = "| runs n | " + " | ".join(f"k = {c.num_canaries} ({c.curve_method})" for c in a.audits)
    lines = [head + " |", "|---:|" + "---:|" * len(a.audits)]
    for i, n in enumerate(a.run_grid):
        cells = [f"{c.curve_mean[i]:.3f} ± {c.curve_std[i]:.3f}" for c in a.audits]
        lines.append(f"| {int(n)} | " + " | ".join(cells) + " |")
    out = "\n".join(lines) + "\n"
    if a.gains:
        out += "\n| k | target ε | runs k = 1 needs | runs k needs | gain |\n"
        out += "|---:|---:|---:|---:|---|\n"
        for g in a.gains:
            out += (
                f"| {g.num_canaries} | {g.target_epsilon:.3f} | "
                f"{_fmt_runs(g.runs_needed_baseline)} | {_fmt_runs(g.runs_needed)} | "
                f"{_gain_text(g)} |\n"
            )
    return out


def plot_curves(result: Any, path: Path) -> bool:
    """ε vs runs per k (mean over repetitions, ±1 sd band) to ``path``; False without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    a = result.detail.audit
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c in a.audits:
        label = f"k = {c.num_canaries} ({c.curve_method})"
        ax.plot(a.run_grid, c.curve_mean, marker="o", ms=3, label=label)
        ax.fill_between(a.run_grid, c.curve_mean - c.curve_std, c.curve_mean + c.curve_std,
                        alpha=0.15)  # fmt: skip
    if a.gains:
        ax.axhline(a.gains[0].target_epsilon, color="grey", ls=":", lw=1, label="target")
    ax.set_xscale("log")
    ax.set_xlabel("runs n (each: 1 alternative + 1 null training run)")
    ax.set_ylabel(f"ε lower bound (δ = {a.delta:g}, {a.confidence_level:.0%})")
    ax.set_title(f"Lifted-DP audit of DP-SGD: mean of {a.repetitions} repetition(s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def render_lidp_dpsgd(console: Any, result: Any) -> None:
    """One row per k and interval, the curves, and the runs computed."""
    from rich.table import Table

    d, a = result.detail, result.detail.audit
    claim = result.entries[0].claims[0]
    t = Table(
        title=(
            f"Lifted-DP audit of DP-SGD ({d.dataset}, {d.num_features} features, |D| = "
            f"{d.num_train}; {d.canary_kind} canaries, {d.statistic}): {a.num_runs} + "
            f"{a.num_runs} runs per k, τ tuned on {a.num_tuning_runs} + {a.num_tuning_runs} "
            f"separate runs"
        ),
        caption=(
            f"claim: ε = {claim.epsilon:.4f} at δ = {claim.delta:g} ({claim.analysis}); each "
            "bound is valid on its own at its level (repetition 0)"
        ),
    )
    for col in ("k", "interval", "ε lower bound", "TPR ≥", "FPR ≤", "τ"):
        t.add_column(col, justify="right")
    for e in result.entries:
        r = e.detail
        k, method = e.adversary.split(":", 1)
        tau = e.selections[0].detail.rsplit("τ = ", 1)[-1]
        t.add_row(k[2:], method, f"{r.epsilon:.4f}", f"{r.tpr_interval.low:.4f}",
                  f"{r.fpr_interval.high:.4f}", tau)  # fmt: skip
    console.print(t)
    if a.run_grid.size > 1:
        console.print(curves_markdown(result))
    console.print(
        f"{a.computed_runs} training runs computed ({a.resumed_runs} resumed) on "
        f"{a.executor} × {a.workers}: {d.runs_per_minute:.0f} runs/min"
    )


def write_lidp_dpsgd_report(result: Any, out_dir: Path, *, plots: bool = True) -> tuple[Path, ...]:
    """Write ``results.json``, ``curves.md`` and (with matplotlib) ``epsilon_vs_runs.png``."""
    out = Path(out_dir)
    paths = [result.write_json(out / "results.json")]
    (out / "curves.md").write_text(curves_markdown(result))
    paths.append(out / "curves.md")
    if plots and plot_curves(result, out / "epsilon_vs_runs.png"):
        paths.append(out / "epsilon_vs_runs.png")
    return tuple(paths)


def _write_json(result: Any, out_dir: Path, *, plots: bool = True) -> tuple[Path, ...]:
    return (result.write_json(Path(out_dir) / "results.json"),)


#: The lidp-gaussian workflow's report.
GAUSSIAN_REPORT = Report(render=render_lidp_gaussian, writer=_write_json)

#: The lidp-dp-sgd workflow's report.
DPSGD_REPORT = Report(render=render_lidp_dpsgd, writer=write_lidp_dpsgd_report)
