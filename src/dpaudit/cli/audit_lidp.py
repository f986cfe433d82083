"""``dpaudit audit lidp-gaussian``: the Gaussian sum-query audit, 1 vs k canaries per run.

Pillutla et al. 2023 (arXiv:2305.18447), run by :func:`dpaudit.experiments.lidp.run_lidp_gaussian`;
``--json`` prints its :class:`~dpaudit._results.AuditResult`.
"""

from __future__ import annotations

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit, fail


def _fmt_runs(n: float | None) -> str:
    return "not reached" if n is None else f"{n:.0f}"


def _render(console, result) -> None:
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


@audit_app.command("lidp-gaussian")
def lidp_gaussian_command(
    sigma: float = typer.Option(..., help="Noise standard deviation σ of the sum query."),
    dim: int = typer.Option(..., help="Dimension d of the sum query."),
    canaries: int = typer.Option(..., help="Canaries per run k for the LiDP audit."),
    runs: int = typer.Option(..., help="Audited runs per audit and repetition."),
    repetitions: int = typer.Option(20, help="Independent repetitions averaged."),
    tuning_runs: int = typer.Option(
        None, help="Separate runs to tune the threshold (default: as many as --runs)."
    ),
    target: float = typer.Option(
        None, help="ε both audits must reach (default: the 1-canary mean bound at --runs)."
    ),
    delta: float = typer.Option(1e-5, help="δ of the bounds and of the true ε."),
    confidence_level: float = typer.Option(0.95, help="Confidence level 1 − β."),
    method: str = typer.Option("wilson4", help="LiDP interval: wilson1 | wilson2 | wilson4."),
    seed: int = typer.Option(None, help="Random seed (default: fresh entropy)."),
    json_: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Runs needed by 1 canary/run vs k canaries/run to reach the same ε lower bound."""
    from dpaudit.experiments.lidp import run_lidp_gaussian

    try:
        result = run_lidp_gaussian(
            sigma,
            dim,
            canaries,
            runs,
            num_repetitions=repetitions,
            num_tuning_runs=tuning_runs,
            target_epsilon=target,
            delta=delta,
            confidence_level=confidence_level,
            method=method,
            rng=seed,
        )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    emit(result, as_json=json_, render=_render)
