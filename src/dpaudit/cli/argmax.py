"""``dpaudit argmax``: the exact noisy-argmax distribution and its per-query RDP curve."""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit.cli._app import app, typer
from dpaudit.cli._common import emit, fail, parse_floats

DEFAULT_CLI_ORDERS = "1.5,2,3,5,10,20,50,100"

#: Default cap on the number of classes C of ``--votes`` (raise it with ``--max-classes``).
#: The exact worst case visits all C·(C−1) neighbouring histograms and evaluates the C output
#: probabilities of each, so the work grows like C³ quadratures; near-tied histograms send every
#: one of them to the slower per-class quadrature (~150 µs each). At C = 30 that worst case
#: takes about 5 s on one core; at C = 100 (e.g. 100 equal votes) more than 2 minutes.
DEFAULT_MAX_CLASSES = 30


@dataclasses.dataclass(frozen=True)
class ArgmaxReport(ResultMixin):
    """What ``dpaudit argmax`` prints.

    Attributes:
        votes: the histogram H.
        sigma: noise standard deviation σ.
        probabilities: exact Q(H) (Chadha et al. 2024 Eq. 4).
        orders: Rényi orders α.
        worst_case_rdp: max over neighbouring histograms of D_α (exact, both directions).
        data_independent_rdp: α/σ² (Papernot et al. 2018 Prop. 8; Gaussian mechanism with
            L2 sensitivity √2).
        relation: neighbouring relation used.
    """

    votes: np.ndarray
    sigma: float
    probabilities: np.ndarray
    orders: np.ndarray
    worst_case_rdp: np.ndarray
    data_independent_rdp: np.ndarray
    relation: str


def argmax_report(
    votes,
    sigma: float,
    orders,
    relation: str = "replace",
    *,
    max_classes: int = DEFAULT_MAX_CLASSES,
) -> ArgmaxReport:
    """Compute the report (library function behind the command).

    Raises:
        ValueError: bad votes, σ, orders or relation, or more than ``max_classes`` classes
            (checked before any work: see :data:`DEFAULT_MAX_CLASSES`).
    """
    from dpaudit._validate import check_positive_int
    from dpaudit.accounting import mechanism_rdp
    from dpaudit.divergence import worst_case_neighbour_renyi
    from dpaudit.mechanisms import GNMax, argmax_probabilities

    cap = check_positive_int("max_classes", max_classes)
    num_classes = np.shape(votes)[-1] if np.ndim(votes) else 1
    if num_classes > cap:
        raise ValueError(
            f"--votes has {num_classes} classes, more than --max-classes={cap}: the exact "
            f"worst case visits all {num_classes * (num_classes - 1)} neighbouring histograms "
            f"(work ~C³ quadratures; minutes for C = 100 with near-tied votes). Pass "
            f"--max-classes {num_classes} to compute it anyway"
        )
    q = argmax_probabilities(votes, sigma)
    wc = worst_case_neighbour_renyi(votes, sigma, orders, relation)
    return ArgmaxReport(
        votes=wc.votes,
        sigma=wc.sigma,
        probabilities=q,
        orders=wc.orders,
        worst_case_rdp=wc.epsilons,
        # α/σ², with σ² over- or underflowing to its limit (0 or inf) rather than raising
        data_independent_rdp=mechanism_rdp(GNMax(wc.sigma), wc.orders),
        relation=relation,
    )


def _render(console, r: ArgmaxReport) -> None:
    from rich.table import Table

    t = Table(title=f"Noisy argmax output distribution Q(H), σ = {r.sigma:g}")
    t.add_column("class", justify="right")
    t.add_column("votes", justify="right")
    t.add_column("Q(H)", justify="right")
    for i, (h, q) in enumerate(zip(r.votes, r.probabilities, strict=True)):
        t.add_row(str(i), f"{h:g}", f"{q:.6g}")
    console.print(t)
    t2 = Table(
        title=f"Per-query RDP: exact worst-case neighbour ({r.relation}) vs data-independent"
    )
    t2.add_column("order α", justify="right")
    t2.add_column("exact ε(α)", justify="right")
    t2.add_column("α/σ²", justify="right")
    t2.add_column("ratio", justify="right")
    for a, e, d in zip(r.orders, r.worst_case_rdp, r.data_independent_rdp, strict=True):
        ratio = f"{e / d:.3f}" if 0 < d < np.inf else "—"
        t2.add_row(f"{a:g}", f"{e:.4e}", f"{d:.4e}", ratio)
    console.print(t2)


@app.command("argmax")
def argmax_command(
    votes: str = typer.Option(..., help="Vote histogram, comma-separated, e.g. 200,30,20."),
    sigma: float = typer.Option(..., help="Standard deviation of the Gaussian noise."),
    orders: str = typer.Option(DEFAULT_CLI_ORDERS, help="Rényi orders, comma-separated."),
    relation: str = typer.Option("replace", help="Neighbouring relation: replace | add-remove."),
    max_classes: int = typer.Option(
        DEFAULT_MAX_CLASSES,
        help="Refuse --votes with more classes than this (the exact worst case costs ~C³ "
        "quadratures: seconds at the default, minutes at 100 classes).",
    ),
    json_: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Exact Q(H), the worst-case neighbour RDP curve and α/σ² side by side."""
    try:
        report = argmax_report(
            parse_floats("--votes", votes),
            sigma,
            parse_floats("--orders", orders),
            relation,
            max_classes=max_classes,
        )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    emit(report, as_json=json_, render=_render)
