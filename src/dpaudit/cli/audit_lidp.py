"""``dpaudit audit lidp-gaussian``: paper 002's Gaussian sum-query audit, 1 vs k canaries/run."""

from __future__ import annotations

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit, fail


def _fmt_runs(n: int | None) -> str:
    return "not reached" if n is None else str(n)


def _render(console, r) -> None:
    from rich.table import Table

    t = Table(
        title=(
            f"Gaussian sum query σ = {r.sigma:g}, d = {r.dim}: ε lower bounds "
            f"(δ = {r.delta:g}, confidence {r.confidence_level:g}); true ε = {r.true_epsilon:.4f}"
        ),
        caption=(
            f"τ tuned on {r.num_tuning_runs} separate runs per audit "
            f"(1 canary: τ = {r.threshold_baseline:.4g}; {r.num_canaries} canaries: "
            f"τ = {r.threshold_lidp:.4g})."
        ),
    )
    t.add_column("runs", justify="right")
    t.add_column("1 canary/run (CP)", justify="right")
    t.add_column(f"{r.num_canaries} canaries/run ({r.method})", justify="right")
    for n, eb, el in zip(r.run_grid, r.epsilon_baseline, r.epsilon_lidp, strict=True):
        t.add_row(str(int(n)), f"{eb:.4f}", f"{el:.4f}")
    console.print(t)
    gain = "—" if r.sample_complexity_gain is None else f"{r.sample_complexity_gain:.2f}×"
    console.print(
        f"target ε = {r.target_epsilon:.4f} (1 canary/run with {r.num_runs} runs): "
        f"1 canary/run needs {_fmt_runs(r.runs_needed_baseline)} runs, "
        f"{r.num_canaries} canaries/run need {_fmt_runs(r.runs_needed_lidp)} runs; gain {gain}"
    )


@audit_app.command("lidp-gaussian")
def lidp_gaussian_command(
    sigma: float = typer.Option(..., help="Noise standard deviation σ of the sum query."),
    dim: int = typer.Option(..., help="Dimension d of the sum query."),
    canaries: int = typer.Option(..., help="Canaries per run k for the LiDP audit."),
    runs: int = typer.Option(..., help="Audited runs per audit."),
    tuning_runs: int = typer.Option(
        None, help="Separate runs to tune the threshold (default: as many as --runs)."
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
            num_tuning_runs=tuning_runs,
            delta=delta,
            confidence_level=confidence_level,
            method=method,
            rng=seed,
        )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    emit(result, as_json=json_, render=_render)
