"""ε of a batch of PATE queries under every analysis and conversion (Papernot et al. 2018 tables).

One call composes the per-query RDP of a batch of vote histograms (GNMax, or Confident GNMax
with a threshold) under the data-independent analysis (Prop. 8) and the data-dependent one
(Thm 6, q̃ from the union bound and from the exact probabilities), and converts each curve
to (ε, δ) with the standard and the Balle et al. 2020 conversion (``shared/formulas.md``
§1.2–§1.5, §1.7). This is what ``dpaudit account pate`` prints.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_array, check_delta, check_orders, check_positive, check_votes
from dpaudit.accounting._confident import check_threshold, confident_gnmax_cost
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import gnmax_rdp_details
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = ["PateAccounting", "PateEpsilon", "pate_accounting"]

_ROWS = (("data-independent", "none"), ("data-dependent", "union"), ("data-dependent", "exact"))


@dataclasses.dataclass(frozen=True)
class PateEpsilon(ResultMixin):
    """One cell group of the table: an analysis, a conversion, ε and its optimal order.

    Attributes:
        analysis: ``"data-independent"`` or ``"data-dependent"``.
        q: ``"union"``, ``"exact"`` (data-dependent) or ``"none"``.
        conversion: ``"standard"`` or ``"balle2020"``.
        epsilon: ε at the report's δ.
        order: the optimal Rényi order.
        fallback_fraction: share of queries whose data-dependent bound fell back to the
            data-independent one at the optimal order (a condition of Thm 6 failed, for
            either step of Confident GNMax); 0 for the data-independent rows.
    """

    analysis: str
    q: str
    conversion: str
    epsilon: float
    order: float
    fallback_fraction: float


@dataclasses.dataclass(frozen=True, eq=False)
class PateAccounting(ResultMixin):
    """ε of a batch of PATE queries under each analysis and conversion.

    Attributes:
        rows: one :class:`PateEpsilon` per (analysis, q, conversion).
        num_queries: number of histograms.
        num_answered: answered queries (realised), or their expectation Σ p_i when a
            threshold is set and ``answered`` was not given.
        cost: ``"all-answered"`` (plain GNMax), ``"realised"`` or ``"expected"``
            (Confident GNMax: Σ ρ1 + 1{answered}·ρ2, or Σ ρ1 + p·ρ2).
        sigma, threshold, sigma1, delta: the mechanism and the δ.
        orders: the order grid.
        curves: the composed RDP per row label (``"data-independent"``,
            ``"data-dependent/union"``, ``"data-dependent/exact"``).
        method: the sources.
    """

    rows: tuple[PateEpsilon, ...]
    num_queries: int
    num_answered: float
    cost: str
    sigma: float
    threshold: float | None
    sigma1: float | None
    delta: float
    orders: FloatArray
    curves: dict[str, RDPCurve]
    method: str = (
        "Papernot et al. 2018 Prop. 8, Thm 6 (+ Prop. 7 / exact q), Alg. 1; "
        "Mironov 2017 Prop. 3; Balle et al. 2020 Thm 20"
    )


def pate_accounting(
    votes: ArrayLike,
    *,
    sigma: float,
    delta: float,
    threshold: float | None = None,
    sigma1: float | None = None,
    answered: ArrayLike | None = None,
    orders: ArrayLike = DEFAULT_ORDERS,
) -> PateAccounting:
    """Compose a batch of PATE queries and convert under every analysis and conversion.

    Args:
        votes: ``(n, C)`` vote histograms, one per query (or one ``(C,)`` histogram).
        sigma: GNMax noise σ (σ2 of Confident GNMax) > 0.
        delta: δ ∈ (0, 1).
        threshold: Confident GNMax threshold T ≥ 0, or None for plain GNMax.
        sigma1: threshold noise σ1 > 0 (required with ``threshold``).
        answered: ``(n,)`` booleans, which queries passed the threshold (realised cost);
            default: the expected cost ``ρ1 + p·ρ2`` (only with a threshold).
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).

    Returns:
        :class:`PateAccounting`.

    Raises:
        ValueError: bad votes, σ ≤ 0, δ ∉ (0, 1), T < 0, σ1 ≤ 0, ``threshold`` without
            ``sigma1`` (or vice versa), ``answered`` without a threshold or of wrong shape.

    Example:
        >>> r = pate_accounting([[200, 30, 20]] * 100, sigma=40, delta=1e-5)
        >>> [round(row.epsilon, 3) for row in r.rows if row.conversion == "balle2020"]
        [1.478, 0.491, 0.488]
    """
    batch = check_votes("votes", votes, min_classes=1, nonneg=True)
    if batch.ndim == 1:
        batch = batch[None, :]
    if batch.ndim != 2:
        raise ValueError(f"votes must have shape (n, C), got shape {batch.shape}")
    s = check_positive("sigma", sigma)
    d = check_delta(delta, allow_zero=False)
    lam = check_orders(orders)
    if (threshold is None) != (sigma1 is None):
        raise ValueError(
            "threshold and sigma1 must be given together, got "
            f"threshold={threshold!r}, sigma1={sigma1!r}"
        )
    n = batch.shape[0]
    mask = None
    if answered is not None:
        if threshold is None:
            raise ValueError("answered needs a threshold (plain GNMax answers every query)")
        mask = check_array("answered", answered, ndim=1)
        if mask.shape != (n,) or not np.all((mask == 0) | (mask == 1)):
            raise ValueError(f"answered must be {n} booleans, got {answered!r}")
    curves: dict[str, RDPCurve] = {}
    fallback: dict[str, np.ndarray] = {}  # (n, K) masks
    num_answered: float = float(n)
    cost = "all-answered"
    for analysis, q in _ROWS:
        key = analysis if q == "none" else f"{analysis}/{q}"
        q_arg = "union" if q == "none" else q
        if threshold is None:
            det = gnmax_rdp_details(batch, s, lam, analysis=analysis, q=q_arg)
            curves[key] = det.curve()
            fallback[key] = det.fallback.reshape(n, lam.size)
            continue
        c = confident_gnmax_cost(
            batch, threshold=check_threshold(threshold), sigma1=sigma1, sigma2=s, orders=lam,
            analysis=analysis, q=q_arg,
        )  # fmt: skip
        if mask is None:
            curves[key] = c.expected()
            num_answered, cost = float(np.sum(c.answer_probability)), "expected"
        else:
            curves[key] = c.realised(mask)
            num_answered, cost = float(mask.sum()), "realised"
        fallback[key] = (c.threshold_fallback | c.argmax_fallback).reshape(n, lam.size)
    rows = []
    for analysis, q in _ROWS:
        key = analysis if q == "none" else f"{analysis}/{q}"
        for conversion in ("standard", "balle2020"):
            conv = curves[key].to_dp(d, conversion=conversion)
            at = np.flatnonzero(lam == conv.order)
            share = float(np.mean(fallback[key][:, at[0]])) if at.size else float("nan")
            rows.append(PateEpsilon(analysis, q, conversion, conv.epsilon, conv.order, share))
    return PateAccounting(
        rows=tuple(rows),
        num_queries=n,
        num_answered=num_answered,
        cost=cost,
        sigma=s,
        threshold=None if threshold is None else float(threshold),
        sigma1=None if sigma1 is None else float(sigma1),
        delta=d,
        orders=lam,
        curves=curves,
    )
