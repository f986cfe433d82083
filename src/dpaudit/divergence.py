"""Rényi divergences between discrete distributions and of the noisy argmax (layer 2).

``D_α(P‖Q) = (1/(α−1))·log Σ_x P(x)^α Q(x)^{1−α}`` (Rényi 1961; Mironov 2017 Def. 3;
Chadha et al. 2024 §3), computed in log space as a logsumexp so that probabilities down to 1e-300
and below contribute correctly. ``α = 1`` is the KL divergence ``Σ P log(P/Q)`` and
``α = ∞`` the max log-ratio ``max_{x: P(x)>0} log(P(x)/Q(x))``.

For the noisy argmax, ``exact_renyi`` evaluates ``D_α(Q(H)‖Q(H'))`` with the exact output
probabilities (Chadha et al. 2024 §4.2, Eq. 4; Wang et al. 2022 Thm 1) and
``worst_case_neighbour_renyi``
maximises it over every histogram one teacher away — the "exact" curve of Chadha et al. 2024 Fig. 2;
``worst_case_group_renyi`` over every histogram m votes away (group privacy, Chadha et al. 2024
App. C; the histograms are :func:`dpaudit.mechanisms.group_histograms`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_memory,
    check_orders,
    check_positive,
    check_votes,
    check_work,
)
from dpaudit.mechanisms import _group
from dpaudit.mechanisms.noisy_argmax import check_quadrature_work, log_argmax_probabilities

__all__ = [
    "GroupRenyi",
    "WorstCaseRenyi",
    "exact_renyi",
    "neighbouring_histograms",
    "renyi_divergence",
    "renyi_divergence_from_log",
    "worst_case_group_renyi",
    "worst_case_neighbour_renyi",
]

RELATIONS = ("replace", "add-remove")
#: Neighbouring histograms evaluated at once by :func:`worst_case_neighbour_renyi`: memory
#: stays O(chunk·C²) whatever the number of neighbours (C(C−1) under "replace").
NEIGHBOUR_CHUNK = 256
#: How far a row of log-probabilities may be from normalised: ``|log Σ exp| ≤ 1e-9``.
NORMALISATION_TOL = 1e-9


#: Most orders one call evaluates (each is a pass over the outcomes, ~20 µs of overhead).
#: Raise ``dpaudit.divergence.MAX_ORDERS`` to allow longer order grids.
MAX_ORDERS = 100_000
#: Most ``orders × outcomes`` terms of :func:`renyi_divergence_from_log` (~10 ns each).
#: Raise ``dpaudit.divergence.MAX_DIVERGENCE_TERMS`` to allow more.
MAX_DIVERGENCE_TERMS = 10**9


def _check_div_orders(orders: ArrayLike) -> np.ndarray:
    arr = np.atleast_1d(check_array("orders", orders, finite=False))
    if arr.ndim != 1:
        raise ValueError(f"orders must be a scalar or 1-d array, got shape {arr.shape}")
    check_work(
        arr.size,
        MAX_ORDERS,
        f"a Rényi divergence at orders=<{arr.size} orders>",
        "orders",
        "raise dpaudit.divergence.MAX_ORDERS",
    )
    if np.any(np.isnan(arr)) or np.any(arr <= 0):
        raise ValueError(f"orders must be > 0 (inf allowed), got {orders!r}")
    return arr


def renyi_divergence_from_log(log_p: ArrayLike, log_q: ArrayLike, orders: ArrayLike) -> FloatArray:
    """Rényi divergence ``D_α(P‖Q)`` from log-probabilities, for every order.

    Args:
        log_p: log P over the outcomes in the last axis (``-inf`` for zero mass), ``(..., K)``.
        log_q: log Q, broadcastable with ``log_p``.
        orders: orders α > 0; 1 gives KL, ``inf`` the max log-ratio.

    Returns:
        ``(..., len(orders))`` divergences, ≥ 0 (rounding below 0 is clipped); ``inf`` where
        P puts mass on an outcome Q does not (α ≥ 1).

    Raises:
        ValueError: orders ≤ 0 or NaN, NaN or positive log-probabilities, rows that are not
            normalised (``|log Σ exp(log p)| > 1e-9``; the divergence of unnormalised
            measures can be negative), shape mismatch.
        TypeError: non-numeric input.

    Example:
        >>> renyi_divergence_from_log(np.log([0.5, 0.5]), np.log([0.25, 0.75]), [2.0]).round(6)
        array([0.287682])
    """
    lp = _check_log_probabilities("log_p", log_p)
    lq = _check_log_probabilities("log_q", log_q)
    try:
        lp, lq = np.broadcast_arrays(lp, lq)
    except ValueError as exc:
        raise ValueError(f"log_p and log_q shapes differ: {lp.shape} vs {lq.shape}") from exc
    alphas = _check_div_orders(orders)
    check_work(
        float(alphas.size) * lp.size,
        MAX_DIVERGENCE_TERMS,
        f"renyi_divergence_from_log at orders=<{alphas.size} orders> over log_p of shape "
        f"{lp.shape}",
        "terms",
        "raise dpaudit.divergence.MAX_DIVERGENCE_TERMS",
    )
    check_memory(
        8.0 * alphas.size * (lp.size // max(lp.shape[-1], 1) if lp.ndim else 1),
        f"renyi_divergence_from_log at orders=<{alphas.size} orders>",
    )
    support = lp > -np.inf
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = np.where(support, lp - lq, -np.inf)  # log(P/Q) on P's support
    out = np.empty((*lp.shape[:-1], alphas.size))
    for k, a in enumerate(alphas):
        if np.isinf(a):
            out[..., k] = ratio.max(axis=-1)
        elif a == 1.0:
            with np.errstate(invalid="ignore"):
                terms = np.where(support, np.exp(lp) * ratio, 0.0)
            out[..., k] = terms.sum(axis=-1)
        else:
            # log Σ P^α Q^{1−α} = log Σ P·(P/Q)^{α−1} over P's support.
            with np.errstate(invalid="ignore", over="ignore"):
                terms = np.where(support, lp + (a - 1.0) * ratio, -np.inf)
            m = terms.max(axis=-1, keepdims=True)
            finite_m = np.where(np.isfinite(m), m, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                lse = np.log(np.exp(terms - finite_m).sum(axis=-1)) + finite_m[..., 0]
            lse = np.where(np.isposinf(m[..., 0]), np.inf, lse)
            out[..., k] = lse / (a - 1.0)
    return np.maximum(out, 0.0)


def _check_log_probabilities(name: str, value: ArrayLike) -> np.ndarray:
    """Log-probabilities over the last axis: no NaN, ≤ 0, each row normalised."""
    arr = check_array(name, value, ndim_min=1, finite=False)
    if np.any(np.isnan(arr)) or np.any(arr > 1e-12):
        raise ValueError(f"{name} must contain log-probabilities (≤ 0, no NaN), got {value!r}")
    top = arr.max(axis=-1, keepdims=True)
    if np.any(np.isneginf(top)):
        raise ValueError(f"{name} must put mass somewhere in every row, got {value!r}")
    with np.errstate(under="ignore"):
        total = np.log(np.exp(arr - top).sum(axis=-1)) + top[..., 0]
    if np.any(np.abs(total) > NORMALISATION_TOL):
        worst = float(np.max(np.abs(total)))
        raise ValueError(
            f"{name} must be normalised (log Σ exp = 0 within {NORMALISATION_TOL} in every "
            f"row), got a row with |log Σ exp| = {worst:.3g}"
        )
    return arr


def renyi_divergence(p: ArrayLike, q: ArrayLike, orders: ArrayLike) -> FloatArray:
    """Rényi divergence ``D_α(P‖Q)`` of discrete distributions for every order.

    Args:
        p: probabilities over the last axis ``(..., K)``, non-negative, summing to 1.
        q: probabilities broadcastable with ``p``.
        orders: orders α > 0 (1 = KL, ``inf`` = max log-ratio).

    Returns:
        ``(..., len(orders))`` divergences.

    Raises:
        ValueError: negative or non-finite probabilities, rows not summing to 1 (±1e-9),
            bad orders.

    Example:
        >>> renyi_divergence([0.5, 0.5], [0.25, 0.75], [2.0]).round(6)
        array([0.287682])
    """
    pa = check_array("p", p, ndim_min=1, nonneg=True)
    qa = check_array("q", q, ndim_min=1, nonneg=True)
    for name, arr in (("p", pa), ("q", qa)):
        if np.any(np.abs(arr.sum(axis=-1) - 1.0) > 1e-9):
            raise ValueError(f"{name} must sum to 1 along the last axis")
    with np.errstate(divide="ignore"):
        return renyi_divergence_from_log(np.log(pa), np.log(qa), orders)


def exact_renyi(
    votes: ArrayLike, neighbour_votes: ArrayLike, sigma: float, orders: ArrayLike
) -> FloatArray:
    """``D_α(Q(H)‖Q(H'))`` for the Gaussian noisy argmax, exactly (Chadha et al. 2024 §4.2, Eq. 4).

    Args:
        votes: histogram H ``(C,)`` or batch ``(..., C)``.
        neighbour_votes: H', same shape (or broadcastable).
        sigma: noise standard deviation σ > 0.
        orders: Rényi orders α > 0 (1 = KL, ``inf`` allowed).

    Returns:
        ``(..., len(orders))`` divergences.

    Example:
        >>> d = exact_renyi([14, 12, 10, 8, 6], [13, 13, 10, 8, 6], 2.0, [2.0, 10.0])
        >>> bool(d[0] < d[1])
        True
    """
    h = check_votes("votes", votes)
    h2 = check_votes("neighbour_votes", neighbour_votes)
    if h.shape[-1] != h2.shape[-1]:
        raise ValueError(
            f"votes and neighbour_votes must have the same number of classes, got {h.shape} "
            f"and {h2.shape}"
        )
    alphas = _check_div_orders(orders)
    sigma = check_positive("sigma", sigma)
    return renyi_divergence_from_log(
        log_argmax_probabilities(h, sigma), log_argmax_probabilities(h2, sigma), alphas
    )


def neighbouring_histograms(votes: ArrayLike, relation: str = "replace") -> np.ndarray:
    """All histograms one teacher away from ``votes``.

    ``"replace"`` (PATE: one teacher changes its vote): one vote moved from class a to class
    b ≠ a, for every a with at least one vote. ``"add-remove"``: one vote added to or removed
    from a class (removal needs at least one vote there).

    Returns:
        ``(K, C)`` array of neighbours (K ≤ C(C−1) under ``"replace"``, ≤ 2C otherwise).

    Raises:
        ValueError: votes not one non-negative histogram, bad relation, no neighbour, or
            more than the memory cap (:func:`dpaudit._validate.memory_cap`) for the K×C array.

    Example:
        >>> neighbouring_histograms([1, 0]).tolist()
        [[0.0, 1.0]]
    """
    h = _check_histogram(votes)
    check_choice("relation", relation, RELATIONS)
    k = _num_neighbours(h, relation)
    check_memory(8.0 * k * h.size, f"neighbouring_histograms of votes with C={h.size} classes")
    return np.concatenate(list(_neighbour_chunks(h, relation, max(k, 1))))


def _check_histogram(votes: ArrayLike) -> np.ndarray:
    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 1:
        raise ValueError(f"votes must be a single histogram (C,), got shape {h.shape}")
    return h


def _num_neighbours(h: np.ndarray, relation: str) -> int:
    donors = int(np.count_nonzero(h >= 1))
    k = donors * (h.size - 1) if relation == "replace" else h.size + donors
    if k == 0:
        raise ValueError(f"votes has no neighbour under relation {relation!r}: {h!r}")
    return k


def _neighbour_chunks(h: np.ndarray, relation: str, chunk: int) -> Iterator[np.ndarray]:
    """The neighbours of :func:`neighbouring_histograms`, in order, ``chunk`` rows at a time."""
    c = h.size
    if relation == "replace":
        moves = ((a, b) for a, b in itertools.permutations(range(c), 2) if h[a] >= 1)
    else:
        moves = itertools.chain(
            ((None, b) for b in range(c)), ((a, None) for a in range(c) if h[a] >= 1)
        )
    while batch := list(itertools.islice(moves, chunk)):
        rows = np.tile(h, (len(batch), 1))
        for i, (a, b) in enumerate(batch):
            if a is not None:
                rows[i, a] -= 1
            if b is not None:
                rows[i, b] += 1
        yield rows


@dataclasses.dataclass(frozen=True)
class WorstCaseRenyi(ResultMixin):
    """Worst-case Rényi divergence of the noisy argmax over neighbouring histograms.

    Attributes:
        orders: the Rényi orders α.
        epsilons: ``max_{H'} max(D_α(Q(H)‖Q(H')), D_α(Q(H')‖Q(H)))`` at each order.
        neighbours: the maximising neighbour histogram at each order, ``(len(orders), C)``.
        directions: ``"forward"`` (``D(Q(H)‖Q(H'))``) or ``"reverse"`` at each order.
        votes: the histogram H.
        sigma: noise standard deviation.
        relation: neighbouring relation (``"replace"`` or ``"add-remove"``).
        method: ``"exact"``: exact output probabilities, no sampling.
    """

    orders: FloatArray
    epsilons: FloatArray
    neighbours: FloatArray
    directions: tuple[str, ...]
    votes: FloatArray
    sigma: float
    relation: str
    method: str = "exact"


def worst_over_neighbours(
    votes: np.ndarray, sigma: float, alphas: np.ndarray, chunks: Iterator[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, int]:
    """The running maximum of ``D_α(Q(H)‖Q(H′))`` (forward) and ``D_α(Q(H′)‖Q(H))`` (reverse)
    over chunks of neighbouring histograms H′, per order — shared by the worst-case
    neighbour and the worst-case group divergences.

    Ties keep the first neighbour (and the caller prefers "forward"), as an argmax over all
    forward divergences followed by all reverse ones would.

    Returns:
        ``(best (2, n_orders), argmax neighbours (2, n_orders, C), neighbours seen)``.
    """
    lq = log_argmax_probabilities(votes, sigma)[None, :]
    best = np.full((2, alphas.size), -np.inf)
    arg = np.zeros((2, alphas.size, votes.size))
    cols = np.arange(alphas.size)
    total = 0
    for neigh in chunks:
        total += neigh.shape[0]
        lq_n = log_argmax_probabilities(neigh, sigma)
        for d, div in enumerate(
            (
                renyi_divergence_from_log(lq, lq_n, alphas),
                renyi_divergence_from_log(lq_n, lq, alphas),
            )
        ):
            i = div.argmax(axis=0)
            top = div[i, cols]
            better = top > best[d]
            best[d, better] = top[better]
            arg[d, better] = neigh[i[better]]
    return best, arg, total


def worst_case_neighbour_renyi(
    votes: ArrayLike, sigma: float, orders: ArrayLike, relation: str = "replace"
) -> WorstCaseRenyi:
    """Exact per-query RDP of the noisy argmax at a fixed histogram, over all neighbours.

    The maximum over every histogram one teacher away (both directions of the divergence) of
    ``D_α(Q(H)‖Q(H'))`` — the "exact" curve of Chadha et al. 2024 Fig. 2 (§4.2: "exact Rényi
    divergence ... for all possible neighbouring histograms").

    Args:
        votes: the histogram H ``(C,)`` with non-negative votes.
        sigma: noise standard deviation σ > 0.
        orders: Rényi orders α ≥ 1 (``inf`` allowed).
        relation: ``"replace"`` (default) or ``"add-remove"``.

    The neighbours are streamed :data:`NEIGHBOUR_CHUNK` at a time (a running maximum), so
    memory is O(chunk·C²) however many there are.

    Returns:
        :class:`WorstCaseRenyi`.

    Raises:
        ValueError: bad votes, σ, orders (< 1) or relation, or more quadrature than
            :data:`dpaudit.mechanisms.noisy_argmax.MAX_QUADRATURE_NODES` (about
            ``K·C·50·√(C/10)`` nodes for K neighbours; ~C² neighbours under "replace").

    Example:
        >>> r = worst_case_neighbour_renyi([200, 30, 20], 40.0, [2.0, 20.0])
        >>> bool(np.all(r.epsilons <= np.array([2.0, 20.0]) / 40**2))
        True
    """
    h = _check_histogram(votes)
    sigma = check_positive("sigma", sigma)
    alphas = _check_div_orders(orders)
    if np.any(alphas < 1):
        raise ValueError(f"orders must be >= 1 for an RDP curve, got {orders!r}")
    check_choice("relation", relation, RELATIONS)
    k = _num_neighbours(h, relation)
    check_quadrature_work(
        k + 1,
        h.size,
        f"worst_case_neighbour_renyi of votes with C={h.size} classes ({k} neighbours under "
        f"relation={relation!r})",
    )
    best, arg, _ = worst_over_neighbours(
        h, sigma, alphas, _neighbour_chunks(h, relation, NEIGHBOUR_CHUNK)
    )
    reverse = best[1] > best[0]
    cols = np.arange(alphas.size)
    return WorstCaseRenyi(
        orders=alphas,
        epsilons=np.maximum(best[reverse.astype(int), cols], 0.0),
        neighbours=arg[reverse.astype(int), cols],
        directions=tuple("reverse" if r else "forward" for r in reverse),
        votes=h,
        sigma=sigma,
        relation=relation,
    )


@dataclasses.dataclass(frozen=True)
class GroupRenyi(ResultMixin):
    """Exact worst-case Rényi divergence of the noisy argmax at distance m.

    Attributes:
        orders: the Rényi orders α.
        epsilons: ``max_{H′} max(D_α(Q(H)‖Q(H′)), D_α(Q(H′)‖Q(H)))`` over the reachable H′.
        neighbours: the maximising H′ at each order, ``(len(orders), C)``.
        directions: ``"forward"`` or ``"reverse"`` at each order.
        votes: the histogram H.
        sigma: noise standard deviation.
        distance: m.
        relation: ``"replace"`` or ``"add-remove"``.
        num_histograms: how many H′ were evaluated.
        method: ``"exact"`` (exact output probabilities, no sampling).
    """

    orders: FloatArray
    epsilons: FloatArray
    neighbours: FloatArray
    directions: tuple[str, ...]
    votes: FloatArray
    sigma: float
    distance: int
    relation: str
    num_histograms: int
    method: str = "exact"


def worst_case_group_renyi(
    votes: ArrayLike,
    sigma: float,
    orders: ArrayLike,
    *,
    distance: int,
    relation: str = "replace",
) -> GroupRenyi:
    """Exact group RDP of the Gaussian noisy argmax at one histogram, over distance m.

    The maximum over every H′ of :func:`dpaudit.mechanisms.group_histograms` (both directions) of
    ``D_α(Q(H)‖Q(H′))``, with Q the exact output distribution of ``argmax(H + N(0, σ²I))``
    (Chadha et al. 2024, arXiv:2402.09403, Eq. 4; Wang et al. 2022, arXiv:2209.10732, Thm 1).
    At distance 1 it equals :func:`worst_case_neighbour_renyi`. The histograms are streamed
    a chunk at a time.

    Args:
        votes: the histogram H ``(C,)``.
        sigma: noise standard deviation σ > 0.
        orders: Rényi orders α ≥ 1 (``inf`` allowed).
        distance: m ≥ 1.
        relation: ``"replace"`` (default) or ``"add-remove"``.

    Returns:
        :class:`GroupRenyi`.

    Raises:
        ValueError: bad votes, σ, orders, distance or relation; more quadrature than
            :data:`dpaudit.mechanisms.noisy_argmax.MAX_QUADRATURE_NODES`.

    Example:
        >>> r1 = worst_case_group_renyi([5, 5, 0], 1.0, [2.0], distance=1)
        >>> r2 = worst_case_group_renyi([5, 5, 0], 1.0, [2.0], distance=2)
        >>> bool(r2.epsilons[0] > r1.epsilons[0])
        True
    """
    h = _group.check_histogram(votes)
    s = check_positive("sigma", sigma)
    alphas = check_orders(orders, allow_one=True, allow_inf=True)
    check_choice("relation", relation, _group.GROUP_RELATIONS)
    m = _group.effective_distance(h, _group.check_distance(distance), relation)
    bound = _group.count_reachable(h.size, m, relation)
    check_quadrature_work(
        bound + 1,
        h.size,
        f"worst_case_group_renyi of votes with C={h.size} classes at distance={m} "
        f"(≤ {bound} histograms)",
    )
    shifts = _group.shifts(h, m, relation)
    chunks = (
        h + np.stack(batch).astype(np.float64)
        for batch in iter(lambda: list(itertools.islice(shifts, _group.GROUP_CHUNK)), [])
    )
    best, arg, total = worst_over_neighbours(h, s, alphas, chunks)
    if total == 0:
        raise ValueError(f"votes has no histogram at distance {m} under {relation!r}: {votes!r}")
    pick = (best[1] > best[0]).astype(int)
    cols = np.arange(alphas.size)
    return GroupRenyi(
        orders=alphas,
        epsilons=np.maximum(best[pick, cols], 0.0),
        neighbours=arg[pick, cols],
        directions=tuple("reverse" if p else "forward" for p in pick),
        votes=h,
        sigma=s,
        distance=m,
        relation=relation,
        num_histograms=total,
    )
