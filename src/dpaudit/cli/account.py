"""``dpaudit account pate``: ε of a batch of PATE queries under each analysis and conversion."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpaudit.cli._app import account_app, typer
from dpaudit.cli._common import emit, fail


def _load_array(path: Path, what: str) -> np.ndarray:
    """Read ``.npy`` (no pickles) or a comma/whitespace-separated text file."""
    if not path.is_file():
        fail(f"{what} {str(path)!r} does not exist")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        return np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=1)
    except (OSError, ValueError) as exc:
        fail(f"cannot read {what} {str(path)!r}: {exc}")
    raise AssertionError("unreachable")  # fail() always exits


def _render(console, r) -> None:
    from rich.table import Table

    mech = (
        f"GNMax σ = {r.sigma:g}"
        if r.threshold is None
        else f"Confident GNMax T = {r.threshold:g}, σ1 = {r.sigma1:g}, σ2 = {r.sigma:g}"
    )
    answered = f"{r.num_answered:.1f} expected" if r.cost == "expected" else f"{r.num_answered:g}"
    t = Table(
        title=f"{mech}: {r.num_queries} queries, {answered} answered, δ = {r.delta:g}",
        caption="ε per analysis and RDP→DP conversion (λ* = optimal order). "
        "fallback: share of queries where Thm 6 fell back to λ/σ² at λ* (Balle). "
        "Data-dependent ε is not itself private (see gnss_release).",
    )
    t.add_column("analysis", no_wrap=True)
    t.add_column("q̃", no_wrap=True)
    for col in ("ε standard", "λ*", "ε Balle 2020", "λ*", "fallback"):
        t.add_column(col, justify="right", no_wrap=True)
    by_key: dict[tuple[str, str], dict[str, object]] = {}
    for row in r.rows:
        by_key.setdefault((row.analysis, row.q), {})[row.conversion] = row
    for (analysis, q), cells in by_key.items():
        std, balle = cells["standard"], cells["balle2020"]
        t.add_row(
            analysis,
            "—" if q == "none" else q,
            f"{std.epsilon:.4f}",
            f"{std.order:g}",
            f"{balle.epsilon:.4f}",
            f"{balle.order:g}",
            "—" if q == "none" else f"{100 * balle.fallback_fraction:.1f}%",
        )
    console.print(t)


@account_app.command("pate")
def pate_command(
    votes_file: str = typer.Option(
        ..., "--votes-file", help="Vote histograms, shape (n, C): .npy, .csv or whitespace text."
    ),
    sigma: float = typer.Option(..., help="GNMax noise σ (σ2 of Confident GNMax)."),
    delta: float = typer.Option(1e-5, help="δ of the (ε, δ) conversion."),
    threshold: float | None = typer.Option(None, help="Confident GNMax threshold T."),
    sigma1: float | None = typer.Option(None, help="Threshold noise σ1 (with --threshold)."),
    answered_file: str | None = typer.Option(
        None,
        "--answered-file",
        help="Which queries were answered (n booleans; with --threshold). Default: expected cost.",
    ),
    json_: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """ε of a batch of PATE queries: data-independent vs data-dependent, standard vs Balle 2020."""
    from dpaudit.accounting import pate_accounting

    votes = _load_array(Path(votes_file), "votes file")
    answered = None if answered_file is None else _load_array(Path(answered_file), "answered file")
    try:
        report = pate_accounting(votes, _mechanism(sigma, threshold, sigma1), delta=delta,
                                 answered=answered)  # fmt: skip
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    emit(report, as_json=json_, render=_render)


def _mechanism(sigma: float, threshold: float | None, sigma1: float | None):
    """The mechanism value the options describe: GNMax, or Confident GNMax with both
    ``--threshold`` and ``--sigma1``."""
    from dpaudit.mechanisms import ConfidentGNMax, GNMax

    if (threshold is None) != (sigma1 is None):
        raise ValueError(
            f"--threshold and --sigma1 must be given together, got threshold={threshold!r}, "
            f"sigma1={sigma1!r}"
        )
    if threshold is None:
        return GNMax(sigma)
    return ConfidentGNMax(threshold, sigma1, sigma)
