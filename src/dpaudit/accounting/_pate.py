"""ε of a batch of PATE queries under every analysis and conversion (Papernot et al. 2018 tables).

One call composes the per-query RDP of a batch of vote histograms answered by a mechanism value
(:class:`~dpaudit.mechanisms.GNMax` or :class:`~dpaudit.mechanisms.ConfidentGNMax`) under the
data-independent analysis (Papernot et al. 2018, arXiv:1802.08908, Prop. 8) and the
data-dependent one (Thm 6, q̃ from the union bound of Prop. 7 and from the exact
probabilities), each per-query cost read from :func:`~dpaudit.accounting.noisy_argmax_cost`,
and converts each curve to (ε, δ) with the standard (Mironov 2017, arXiv:1702.07476, Prop. 3)
and the Balle et al. 2020 (arXiv:1905.09982, Thm 21) conversion. This is what
``dpaudit account pate`` prints.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_delta, check_mask, check_orders, check_votes
from dpaudit.accounting._confident import check_threshold
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import check_rdp_table
from dpaudit.accounting._mechanisms import NoisyArgmaxCost, check_finite_cost, noisy_argmax_cost
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax

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
        order: the optimal Rényi order (``inf`` when no order gives a finite ε).
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
        mechanism: the mechanism value.
        sigma, threshold, sigma1, delta: its σ (σ2), T and σ1 (None for GNMax), and the δ.
        orders: the order grid.
        curves: the composed RDP per row label (``"data-independent"``,
            ``"data-dependent/union"``, ``"data-dependent/exact"``).
        method: the sources.
    """

    rows: tuple[PateEpsilon, ...]
    num_queries: int
    num_answered: float
    cost: str
    mechanism: GNMax | ConfidentGNMax
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
    mechanism: GNMax | ConfidentGNMax,
    *,
    delta: float,
    answered: ArrayLike | None = None,
    orders: ArrayLike | None = None,
) -> PateAccounting:
    """Compose a batch of PATE queries and convert under every analysis and conversion.

    Args:
        votes: ``(n, C)`` vote histograms, one per query (or one ``(C,)`` histogram).
        mechanism: :class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax` (threshold T ≥ 0).
        delta: δ ∈ (0, 1).
        answered: ``(n,)`` booleans, which queries passed the threshold (realised cost);
            default: the expected cost ``ρ1 + p·ρ2`` (only with Confident GNMax).
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).

    Returns:
        :class:`PateAccounting`.

    Raises:
        TypeError: ``mechanism`` is not GNMax or Confident GNMax.
        ValueError: bad votes, δ ∉ (0, 1), T < 0, ``answered`` with plain GNMax or of the
            wrong shape, σ so small that ``λ/σ²`` overflows float64.

    Example:
        >>> from dpaudit.mechanisms import GNMax
        >>> r = pate_accounting([[200, 30, 20]] * 100, GNMax(40.0), delta=1e-5)
        >>> [round(row.epsilon, 3) for row in r.rows if row.conversion == "balle2020"]
        [1.478, 0.491, 0.488]
    """
    if not isinstance(mechanism, (GNMax, ConfidentGNMax)):
        raise TypeError(
            "mechanism must be a GNMax or ConfidentGNMax value (dpaudit.mechanisms), got "
            f"{type(mechanism).__name__}"
        )
    confident = isinstance(mechanism, ConfidentGNMax)
    if confident:
        check_threshold(mechanism.threshold)
    batch = check_votes("votes", votes, min_classes=1, nonneg=True)
    if batch.ndim == 1:
        batch = batch[None, :]
    if batch.ndim != 2:
        raise ValueError(f"votes must have shape (n, C), got shape {batch.shape}")
    d = check_delta(delta, allow_zero=False)
    lam = check_orders(DEFAULT_ORDERS if orders is None else orders)
    check_rdp_table(batch.shape[0], lam.size)
    check_finite_cost(mechanism, lam)
    n = batch.shape[0]
    mask = None
    if answered is not None:
        mask = check_mask("answered", answered)
        if not confident:
            raise ValueError("answered needs a threshold (plain GNMax answers every query)")
        if mask.shape != (n,):
            raise ValueError(f"answered must be {n} booleans, got {answered!r}")
    curves: dict[str, RDPCurve] = {}
    fallback: dict[str, np.ndarray] = {}  # (n, K) masks
    num_answered: float = float(n)
    cost = "all-answered"
    for analysis, q in _ROWS:
        key = analysis if q == "none" else f"{analysis}/{q}"
        c = _cost(mechanism, lam, batch, analysis, q)
        if not confident:
            curves[key] = c.composed()
        elif mask is None:
            curves[key] = c.expected()
            num_answered, cost = float(np.sum(c.answer_probability)), "expected"
        else:
            curves[key] = c.realised(mask)
            num_answered, cost = float(mask.sum()), "realised"
        fallback[key] = (c.threshold_fallback | c.answer_fallback).reshape(n, lam.size)
    return PateAccounting(
        rows=_rows(curves, fallback, lam, d),
        num_queries=n,
        num_answered=num_answered,
        cost=cost,
        mechanism=mechanism,
        sigma=mechanism.sigma,
        threshold=mechanism.threshold if confident else None,
        sigma1=mechanism.sigma1 if confident else None,
        delta=d,
        orders=lam,
        curves=curves,
    )


def _cost(
    mechanism: GNMax | ConfidentGNMax, lam: np.ndarray, batch: np.ndarray, analysis: str, q: str
) -> NoisyArgmaxCost:
    """One row's per-query costs. The exact q̃ comes from the noisy-argmax quadrature, whose
    lattice overflows when σ is ~1e19 times the vote scale: a clear ValueError there."""
    if q != "exact":
        return noisy_argmax_cost(
            mechanism, lam, votes=batch, analysis=analysis, q="union" if q == "none" else q
        )
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # the overflow is raised below
            return noisy_argmax_cost(mechanism, lam, votes=batch, analysis=analysis, q=q)
    except (OverflowError, FloatingPointError) as exc:
        raise ValueError(
            f"the {analysis} cost with q='exact' cannot be computed in float64 for "
            f"sigma={mechanism.sigma!r} and these votes ({type(exc).__name__}: {exc})"
        ) from exc


def _rows(
    curves: dict[str, RDPCurve], fallback: dict[str, np.ndarray], lam: np.ndarray, delta: float
) -> tuple[PateEpsilon, ...]:
    rows = []
    for analysis, q in _ROWS:
        key = analysis if q == "none" else f"{analysis}/{q}"
        for conversion in ("standard", "balle2020"):
            conv = curves[key].to_dp(delta, conversion=conversion)
            at = np.flatnonzero(lam == conv.order)
            if at.size:
                share = float(np.mean(fallback[key][:, at[0]]))
            else:  # no order gives a finite ε (order = inf): the largest share over the orders
                share = float(np.max(np.mean(fallback[key], axis=0)))
            rows.append(PateEpsilon(analysis, q, conversion, conv.epsilon, conv.order, share))
    return tuple(rows)
