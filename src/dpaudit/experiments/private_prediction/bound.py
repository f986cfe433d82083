"""The bound stage of the private-prediction audit: 2-cut RDP lower bounds per query and
their composition over queries or repetitions."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import block_seeds
from dpaudit._typing import FloatArray, IntArray

__all__ = ["QueryAudit", "audit_distributions"]

_AUDIT_CHUNK = 16


@dataclasses.dataclass(frozen=True)
class QueryAudit(ResultMixin):
    """The audit of per-query counts (:func:`audit_distributions`).

    Attributes:
        per_query: held-out per-query RDP lower bounds ``(n, A)``.
        output_sets: the 2-cut output set chosen per query (on its selection half).
        score: the selection-half score of each query (how the worst query is chosen).
        counts: the counts audited ``(n, 2, C)``.
        curve: the composed :class:`dpaudit.bounds.RDPLowerBoundCurve`.
        worst: the chosen worst query (``"repetitions"``), else None.
        per_query_level: the confidence level of each per-query bound.
    """

    per_query: FloatArray
    output_sets: tuple[tuple[int, ...], ...]
    score: FloatArray
    counts: IntArray
    curve: Any
    worst: int | None
    per_query_level: float


def _candidates(c: int) -> list[tuple[int, ...]] | None:
    from dpaudit.bounds import MAX_CLASSES_TWO_CUT

    if c <= min(MAX_CLASSES_TWO_CUT, 12):
        return None
    singles = [(i,) for i in range(c)]
    pairs = [(i, j) for i in range(c) for j in range(i + 1, c)]
    return singles + pairs


def audit_distributions(
    counts: np.ndarray,
    orders: np.ndarray,
    *,
    composition: str,
    num_composed: int,
    confidence_level: float,
    rng: np.random.SeedSequence | int,
    selection_order: float = 10.0,
    n_jobs: int = 1,
) -> QueryAudit:
    """2-cut RDP audit of per-query counts and its composition (Chadha et al. 2024,
    arXiv:2402.09403, §4.2, App. B).

    The output set of each query is chosen on a random half of its counts at
    ``selection_order`` and bounded on the other half at every order.
    ``composition="repetitions"``: each query at ``confidence_level``; the worst query is the
    one with the largest selection-half 2-cut bound at ``selection_order`` and level
    ``1 − β/n`` (a Jeffreys-smoothed plug-in divergence, then the lowest index, break
    ties); its held-out bound times ``num_composed``. ``"queries"``: each query at
    ``1 − β/n`` and the held-out bounds summed (union bound).
    """
    from dpaudit.bounds import compose_rdp_lower_bounds, per_query_confidence_level

    n, _, c = counts.shape
    level = (
        confidence_level
        if composition == "repetitions"
        else per_query_confidence_level(confidence_level, n)
    )
    cands = _candidates(c)
    # The worst query is scored on the selection halves at a Bonferroni level over the n
    # candidates: at the per-query level about β·n leak-free queries would show a positive
    # selection bound by chance and the maximum would pick one of them (valid, since the
    # held-out half decides the bound, but powerless).
    score_level = 1.0 - (1.0 - confidence_level) / n
    per_query = np.zeros((n, orders.size))
    seeds = block_seeds(rng, (n + _AUDIT_CHUNK - 1) // _AUDIT_CHUNK)
    jobs = [
        (counts[start : start + _AUDIT_CHUNK], seeds[b])
        for b, start in enumerate(range(0, n, _AUDIT_CHUNK))
    ]
    args = (orders, cands, level, selection_order, score_level)
    done = _map_chunks(jobs, args, n_jobs)
    audits = [res for res, _, _, _ in done]
    sets = [o for _, chunk_sets, _, _ in done for o in chunk_sets]
    score = np.concatenate([sc for _, _, sc, _ in done])
    plug = np.concatenate([pl for _, _, _, pl in done])
    for b, res in enumerate(audits):
        per_query[b * _AUDIT_CHUNK : b * _AUDIT_CHUNK + res.epsilons.shape[0]] = res.epsilons
    if composition == "repetitions":
        worst = int(np.lexsort((-np.arange(n), plug, score))[-1])
        curve = _repetitions_curve(per_query[worst], orders, num_composed, level)
    else:
        worst = None
        curve = compose_rdp_lower_bounds(audits)
    return QueryAudit(per_query, tuple(sets), score, counts, curve, worst, level)


def _repetitions_curve(
    worst_bound: np.ndarray, orders: np.ndarray, num_composed: int, level: float
) -> Any:
    """``num_composed`` repetitions of the worst query: its held-out 2-cut bound times
    ``num_composed`` (RDP composition, Mironov 2017, Prop. 1; Chadha et al. 2024,
    arXiv:2402.09403, App. B)."""
    from dpaudit.bounds import RDPLowerBoundCurve

    return RDPLowerBoundCurve(
        orders=orders,
        epsilons=num_composed * worst_bound,
        confidence_level=level,
        n_queries=int(num_composed),
        methods=("two-cut",),
        asymptotic=False,
        simultaneous_over_orders=True,
        note=(
            f"{num_composed} repetitions of the worst query, chosen on selection halves "
            "only; its held-out 2-cut bound is valid at the stated level."
        ),
    )


def _audit_chunk(
    counts: np.ndarray,
    seed: np.random.SeedSequence,
    orders: np.ndarray,
    cands: list[tuple[int, ...]] | None,
    level: float,
    selection_order: float,
    score_level: float,
) -> tuple[Any, list[tuple[int, ...]], FloatArray, FloatArray]:
    """One chunk of queries: the held-out audit, the chosen output sets, and each query's
    selection-half score and plug-in divergence at the selection order."""
    from dpaudit.bounds import Split, rdp_audit, rdp_two_cut

    res = rdp_audit(
        counts[:, 0],
        counts[:, 1],
        orders,
        candidates=cands,
        selection=Split(),
        selection_order=selection_order,
        confidence_level=level,
        rng=seed,
    )
    sel_orders = np.array([selection_order])
    sel1 = res.counts - res.bound_counts
    sel2 = res.counts_neighbour - res.bound_counts_neighbour
    sets, score, plug = [], np.zeros(len(res.chosen)), np.zeros(len(res.chosen))
    for r, j in enumerate(res.chosen[:, 0]):
        o = res.candidates[int(j)][0]
        sets.append(o)
        two = rdp_two_cut(sel1[r], sel2[r], sel_orders, output_set=o, confidence_level=score_level)
        score[r] = float(two.epsilons[0])
        plug[r] = _smoothed_plug_in(sel1[r], sel2[r], o, selection_order)
    return res, sets, score, plug


def _smoothed_plug_in(c1: np.ndarray, c2: np.ndarray, output_set: Any, order: float) -> float:
    """Tie-break of the worst-query choice: the 2-cut Rényi divergence of order ``order`` at
    the selection halves' frequencies with half a count added to each cell (Jeffreys).

    The raw plug-in is infinite wherever one side has no count in the output set, so a query
    whose selection bound is 0 but which saw few outputs of O would win every tie; the
    smoothed value stays finite and orders such queries by how far apart their halves are.
    It reads the selection halves only, so the held-out bound stays valid.
    """
    from dpaudit.divergence import renyi_divergence

    mask = np.zeros(c1.size, dtype=bool)
    mask[list(output_set)] = True
    p = np.array([c1[mask].sum(), c1[~mask].sum()], dtype=float) + 0.5
    q = np.array([c2[mask].sum(), c2[~mask].sum()], dtype=float) + 0.5
    return float(renyi_divergence(p / p.sum(), q / q.sum(), [order])[0])


def _map_chunks(jobs: list[tuple[Any, Any]], args: tuple[Any, ...], n_jobs: int) -> list[Any]:
    """:func:`_audit_chunk` over the chunks, in order (joblib workers when ``n_jobs != 1``)."""
    if n_jobs == 1 or len(jobs) < 4:
        return [_audit_chunk(c, sd, *args) for c, sd in jobs]
    from dpaudit.errors import require

    joblib = require("joblib", "ml")
    with joblib.parallel_config(backend="loky", inner_max_num_threads=1):
        return joblib.Parallel(n_jobs=n_jobs, batch_size="auto")(
            joblib.delayed(_audit_chunk)(c, sd, *args) for c, sd in jobs
        )
