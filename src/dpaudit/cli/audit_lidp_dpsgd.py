"""``dpaudit audit lidp-dp-sgd``: the Lifted-DP audit of DP-SGD, k random canaries per run.

Pillutla et al. 2023 (arXiv:2305.18447), run by
:func:`dpaudit.experiments.lidp_dpsgd.run_lidp_dpsgd`. Options are derived from
:class:`~dpaudit.experiments.lidp_dpsgd_settings.LiDPDPSGDSettings` (they override
``--config FILE.toml``; without it the shipped ``lidp-dp-sgd`` config is the base; the gain
experiment is ``--config src/dpaudit/configs/lidp-dp-sgd-gain.toml``). A progress bar
advances per training run. Runs go to local processes (``--workers``), or to Ray with
``--executor ray`` (a local instance) or ``--address HOST:PORT`` (a cluster).

With ``--out DIR`` every finished training run is journaled in ``DIR/checkpoints/runs.tasks``:
an interrupted audit resumes with ``--resume ID`` (the run store) or by running the same
command again with the same ``--out`` — no finished run is trained twice, and the result is
the one an uninterrupted run gives. The command writes ``DIR/results.json`` (the
:class:`~dpaudit._results.AuditResult`), ``DIR/curves.md`` (ε vs runs per k, runs needed,
gain) and, with the ``plots`` extra, ``DIR/epsilon_vs_runs.png``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit
from dpaudit.cli._options import settings_command
from dpaudit.experiments.lidp_dpsgd_settings import LiDPDPSGDSettings

__all__ = ["CHECKPOINT_NAME", "curves_markdown", "plot_curves", "run_and_report"]

#: The runs' journal under ``--out``.
CHECKPOINT_NAME = "checkpoints/runs.tasks"


def _fmt_runs(n: float | None) -> str:
    return "not reached" if n is None else f"{n:.0f}"


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


def _render(console: Any, result: Any) -> None:
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


def run_and_report(settings: LiDPDPSGDSettings, *, out: Path | None, as_json: bool,
                   progress: bool):  # fmt: skip
    """Run the audit (checkpointed under ``out``), write the files, print table or JSON."""
    from dpaudit.experiments.lidp_dpsgd import run_lidp_dpsgd

    checkpoint = out / CHECKPOINT_NAME if out is not None else None
    result = run_lidp_dpsgd(settings, checkpoint=checkpoint, progress=progress and not as_json)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(result.to_dict(), allow_nan=False) + "\n")
        (out / "curves.md").write_text(curves_markdown(result))
        plot_curves(result, out / "epsilon_vs_runs.png")
    emit(result, as_json=as_json, render=_render)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'}, {out / 'curves.md'} and a PNG plot")
    return result


def _base() -> LiDPDPSGDSettings:
    from dpaudit import _settings
    from dpaudit.experiments.config import find_config

    return _settings.load_toml(find_config("lidp-dp-sgd"), LiDPDPSGDSettings)


settings_command(
    audit_app,
    "lidp-dp-sgd",
    LiDPDPSGDSettings,
    run_and_report,
    help=(
        "Lifted-DP audit of DP-SGD: k random canaries per training run, many runs on local "
        "processes or Ray, ε lower bounds (CP, Wilson 1/2/4) next to the accountant's claim."
    ),
    base=_base,
)
