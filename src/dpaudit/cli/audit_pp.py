"""``dpaudit audit private-prediction``: audit PATE / CaPC end to end (paper 000 §4–5).

Options override the values of ``--config FILE.toml`` (both validated before any training);
anything given neither way takes the default of
:class:`dpaudit.experiments.private_prediction.PrivatePredictionSettings`. With ``--out DIR``
the command writes ``DIR/results.json``, ``DIR/rdp_vs_order.png`` and
``DIR/epsilon_bars.png`` (and engine checkpoints in ``DIR/checkpoints``, so an interrupted
run resumes its sampling).
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.cli._app import audit_app, typer
from dpaudit.cli._common import emit, fail

__all__ = ["private_prediction"]


def run_and_report(settings, *, out: Path | None, as_json: bool, progress: bool, plots: bool):
    """Run the audit, write the report files, print the table or JSON (shared with demo)."""
    from dpaudit.experiments.private_prediction import audit_private_prediction
    from dpaudit.report import render_private_prediction, write_private_prediction_report

    checkpoints = out / "checkpoints" if out is not None else None
    result = audit_private_prediction(
        settings, progress=progress and not as_json, checkpoint_dir=checkpoints
    )
    if out is not None:
        write_private_prediction_report(result, out, plots=plots)
    emit(result, as_json=as_json, render=render_private_prediction)
    if out is not None and not as_json:
        typer.echo(f"wrote {out / 'results.json'}" + (" and PNG plots" if plots else ""))
    return result


@audit_app.command("private-prediction")
def private_prediction(
    algorithm: str = typer.Option(
        None, "--algorithm", help="pate, capc, or both comma-separated [default: pate,capc]"
    ),
    dataset: str = typer.Option(
        None, "--dataset", help="digits, mnist-5k, fashion-mnist or adult [default: digits]"
    ),
    teachers: int = typer.Option(None, "--teachers", help="number of teachers m [250]"),
    teachers_per_query: int = typer.Option(
        None, "--teachers-per-query", "-k", help="teachers voting per query k ≤ m [all]"
    ),
    sigma: float = typer.Option(None, "--sigma", help="GNMax noise σ [40]"),
    adversary: str = typer.Option(
        None,
        "--adversary",
        help="comma-separated: nat-advq, pois-advq, pois-natq [all three]",
    ),
    queries: int = typer.Option(None, "--queries", help="n_Q natural queries / repetitions"),
    candidate_queries: int = typer.Option(
        None, "--candidate-queries", help="queries tried by adversarial distinguishers [n_Q]"
    ),
    experiments: float = typer.Option(
        None, "--experiments", help="experiments per query and dataset, e.g. 1e8 [1e8]"
    ),
    instantiations: int = typer.Option(None, "--instantiations", help="N_g training phases [2]"),
    retrainings: int = typer.Option(None, "--retrainings", help="R retrainings per point [4]"),
    estimator: str = typer.Option(None, "--estimator", help="teacher model [logistic]"),
    sampler: str = typer.Option(None, "--sampler", help="exact or monte-carlo [exact]"),
    executor: str = typer.Option(
        None, "--executor", help="serial, processes, joblib or ray [serial]"
    ),
    workers: int = typer.Option(None, "--workers", help="engine workers [1]"),
    n_jobs: int = typer.Option(None, "--n-jobs", help="teacher-training workers [1]"),
    confidence_level: float = typer.Option(None, "--confidence-level", help="[0.95]"),
    delta: float = typer.Option(None, "--delta", help="δ of the ε display [1e-6]"),
    seed: int = typer.Option(None, "--seed", help="root seed [0]"),
    n_train: int = typer.Option(None, "--n-train", help="training rows kept [all]"),
    n_test: int = typer.Option(None, "--n-test", help="test rows kept [all]"),
    name: str = typer.Option(None, "--name", help="run name"),
    out: str = typer.Option(None, "--out", help="directory for results.json and PNG plots"),
    config: str = typer.Option(None, "--config", help="TOML config (options override it)"),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="write PNG plots with --out"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="rich progress bars"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Audit PATE/CaPC private prediction: RDP lower bound vs exact and claimed RDP."""
    from dpaudit.experiments.config import load_config, parse_config

    overrides = {
        "algorithms": algorithm,
        "dataset": dataset,
        "teachers": teachers,
        "teachers_per_query": teachers_per_query,
        "sigma": sigma,
        "adversaries": adversary,
        "queries": queries,
        "candidate_queries": candidate_queries,
        "experiments": experiments,
        "instantiations": instantiations,
        "retrainings": retrainings,
        "estimator": estimator,
        "sampler": sampler,
        "executor": executor,
        "workers": workers,
        "n_jobs": n_jobs,
        "confidence_level": confidence_level,
        "delta": delta,
        "seed": seed,
        "n_train": n_train,
        "n_test": n_test,
        "name": name,
    }
    if experiments is not None:
        if not float(experiments).is_integer():
            fail(f"--experiments must be a whole number, got {experiments!r}")
        overrides["experiments"] = int(experiments)
    try:
        if config is not None:
            settings = load_config(config, overrides=overrides)
        else:
            settings = parse_config({}, overrides=overrides)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    try:
        run_and_report(
            settings,
            out=Path(out) if out is not None else None,
            as_json=as_json,
            progress=progress,
            plots=plots,
        )
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
