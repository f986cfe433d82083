"""Composition of per-query RDP lower bounds, and their (ε, δ) conversion for display.

Rényi divergences of independent outputs add (RDP composition, Mironov 2017, arXiv:1702.07476,
Prop. 1), so per-query lower bounds sum to a lower bound on the composed mechanism, with the
failure probabilities added (union bound) — the "audit each query in isolation, and compose
the lower bounds" of Chadha et al. 2024 (arXiv:2402.09403, §4.2). Converting an RDP *lower*
bound to (ε, δ) with an upper-bound conversion (Balle et al. 2020, arXiv:1905.09982, Thm 20)
gives a number to show next to converted upper bounds, not an (ε, δ) lower bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import FloatArray
from dpaudit._validate import check_confidence_level, check_delta, check_positive_int
from dpaudit.bounds._cuts import RDPAudit
from dpaudit.conversions import rdp_to_dp

__all__ = [
    "ConvertedRDPLowerBound",
    "RDPLowerBoundCurve",
    "compose_rdp_lower_bounds",
    "per_query_confidence_level",
    "rdp_lower_bound_to_dp",
]


@dataclasses.dataclass(frozen=True)
class RDPLowerBoundCurve(ResultMixin):
    """A composed RDP lower-bound curve (sum of per-query lower bounds at each order).

    Attributes:
        orders: Rényi orders, shape ``(A,)``.
        epsilons: composed lower bounds, shape ``(A,)``.
        confidence_level: ``1 − Σ_q β_q`` (union bound over the queries' failure events).
        n_queries: number of per-query curves summed.
        methods: the audit methods that contributed.
        asymptotic: some contribution is only asymptotically valid.
        simultaneous_over_orders: every contribution holds at all orders at once.
        note: validity statement.
        valid_at_zero: every contribution is valid when its true divergence is 0 (False
            as soon as one bootstrap audit is composed: summing bootstrap bounds over many
            near-zero-leakage queries adds up their bias; Chadha et al. 2024 App. B).
    """

    orders: FloatArray
    epsilons: FloatArray
    confidence_level: float
    n_queries: int
    methods: tuple[str, ...]
    asymptotic: bool
    simultaneous_over_orders: bool
    note: str = ""
    valid_at_zero: bool = True

    def __add__(self, other: RDPLowerBoundCurve | RDPAudit) -> RDPLowerBoundCurve:
        return compose_rdp_lower_bounds([self, other])


@dataclasses.dataclass(frozen=True)
class ConvertedRDPLowerBound(ResultMixin):
    """(ε, δ) obtained by converting an RDP *lower* bound — for display, not a lower bound.

    Attributes:
        epsilon: ε from the conversion of the lower-bound curve.
        delta: δ used.
        order: order attaining the minimum.
        conversion: ``"balle2020"`` (Balle et al. 2020 Thm 20) or ``"standard"``.
        rdp_confidence_level: confidence of the RDP curve that was converted.
        is_valid_dp_lower_bound: always False (see ``note``).
        note: why this number is not an (ε, δ) lower bound.
    """

    epsilon: float
    delta: float
    order: float
    conversion: str
    rdp_confidence_level: float
    is_valid_dp_lower_bound: bool
    note: str


def check_single_curve(curve: object, name: str) -> RDPAudit | RDPLowerBoundCurve:
    """A composed curve or a single-query :class:`RDPAudit` (TypeError / ValueError else)."""
    if isinstance(curve, RDPAudit):
        if curve.epsilons.ndim != 1:
            raise ValueError(
                f"{name} must be a single-query audit (epsilons of shape (A,)), got shape "
                f"{curve.epsilons.shape}; compose a batch with compose_rdp_lower_bounds first"
            )
    elif not isinstance(curve, RDPLowerBoundCurve):
        raise TypeError(
            f"{name} must be an RDPAudit or RDPLowerBoundCurve, got {type(curve).__name__}"
        )
    return curve


def per_query_confidence_level(confidence_level: float, n_queries: int) -> float:
    """Per-query level so that ``n_queries`` composed lower bounds hold jointly at the level.

    Union bound: ``1 − (1 − confidence_level)/n_queries``.

    Args:
        confidence_level: the joint level wanted for the composed curve, in (0, 1).
        n_queries: number of per-query audits to compose, ≥ 1.

    Returns:
        The level to pass to each per-query audit.

    Raises:
        ValueError, TypeError: level ∉ (0, 1) or ``n_queries`` < 1.

    Example:
        >>> per_query_confidence_level(0.95, 100)
        0.9995
    """
    level = check_confidence_level(confidence_level)
    q = check_positive_int("n_queries", n_queries)
    return 1.0 - (1.0 - level) / q


def compose_rdp_lower_bounds(
    audits: RDPAudit | RDPLowerBoundCurve | Sequence[RDPAudit | RDPLowerBoundCurve],
) -> RDPLowerBoundCurve:
    """Compose per-query RDP lower bounds by summing them at each order.

    Rényi divergences of independent outputs add (RDP composition, Mironov 2017 Prop. 1;
    Chadha et al. 2024 §4.2: "audit each query in isolation, and compose the lower bounds"), so
    ``Σ_q L_q(α) ≤ Σ_q D_α,q`` whenever every per-query bound holds; the composed curve's
    confidence is ``1 − Σ_q β_q`` (union bound). Use :func:`per_query_confidence_level` to
    run each query at the level that gives the joint level you want. The validity flags
    carry over: ``asymptotic`` if any contribution is, ``simultaneous_over_orders`` and
    ``valid_at_zero`` only if every contribution is.

    Args:
        audits: one :class:`RDPAudit` (its batch of queries is summed), a composed curve,
            or a sequence of them; all on the same orders.

    Returns:
        :class:`RDPLowerBoundCurve`.

    Raises:
        TypeError: an element is not an audit or curve.
        ValueError: empty input, different orders, or failure probabilities summing to ≥ 1.

    Example:
        >>> from dpaudit.bounds import rdp_two_cut
        >>> a = rdp_two_cut([[9000, 1000]] * 2, [[7000, 3000]] * 2, [2], output_set=[0],
        ...                 confidence_level=per_query_confidence_level(0.95, 2))
        >>> curve = compose_rdp_lower_bounds(a)
        >>> curve.n_queries, round(curve.confidence_level, 6), np.round(curve.epsilons, 3)
        (2, 0.95, array([0.274]))
    """
    if isinstance(audits, (RDPAudit, RDPLowerBoundCurve)):
        items = [audits]
    elif isinstance(audits, Iterable) and not isinstance(audits, (str, bytes)):
        items = list(audits)
    else:
        raise TypeError(
            f"audits must be an RDPAudit, an RDPLowerBoundCurve or a sequence of them, "
            f"got {type(audits).__name__}"
        )
    if not items:
        raise ValueError("audits must contain at least one audit")
    orders = items[0].orders if isinstance(items[0], (RDPAudit, RDPLowerBoundCurve)) else None
    total = None
    beta = 0.0
    n_q = 0
    methods: list[str] = []
    for i, item in enumerate(items):
        eps, q, item_beta, item_methods = _contribution(item, i)
        if item.orders.shape != orders.shape or not np.array_equal(item.orders, orders):
            raise ValueError(f"orders of audits[{i}] differ from those of audits[0]")
        total = np.zeros(orders.size) + eps if total is None else total + eps
        beta += item_beta
        n_q += q
        methods += [m for m in item_methods if m not in methods]
    if beta >= 1.0:
        raise ValueError(
            f"confidence_level of the composed curve would be 1 - {beta:.4g} <= 0 (union bound "
            f"over {n_q} queries); run each query at per_query_confidence_level(level, {n_q})"
        )
    asym = any(item.asymptotic for item in items)
    at_zero = all(item.valid_at_zero for item in items)
    return RDPLowerBoundCurve(
        orders=np.asarray(orders),
        epsilons=np.asarray(total),
        confidence_level=1.0 - beta,
        n_queries=n_q,
        methods=tuple(methods),
        asymptotic=asym,
        simultaneous_over_orders=all(item.simultaneous_over_orders for item in items),
        note=_composed_note(n_q, asym, at_zero),
        valid_at_zero=at_zero,
    )


def _contribution(item: object, i: int) -> tuple[np.ndarray, int, float, list[str]]:
    """Summed curve, number of queries, failure probability and methods of one item."""
    if isinstance(item, RDPAudit):
        eps = item.epsilons.reshape(-1, item.orders.size).sum(axis=0)
        return eps, item.n_queries, item.n_queries * (1.0 - item.confidence_level), [item.method]
    if isinstance(item, RDPLowerBoundCurve):
        return item.epsilons, item.n_queries, 1.0 - item.confidence_level, list(item.methods)
    raise TypeError(
        f"audits[{i}] must be an RDPAudit or RDPLowerBoundCurve, got {type(item).__name__}"
    )


def _composed_note(n_q: int, asymptotic: bool, valid_at_zero: bool) -> str:
    note = f"sum of {n_q} per-query lower bounds; confidence by the union bound."
    if asymptotic:
        note += " Some contributions are only asymptotically valid."
    if not valid_at_zero:
        note += (
            " Some contributions are invalid at zero divergence (bootstrap): summed over "
            "near-zero-leakage queries they can exceed the true divergence (Chadha et al. "
            "2024, App. B)."
        )
    return note


def rdp_lower_bound_to_dp(
    curve: RDPLowerBoundCurve | RDPAudit, delta: float, *, conversion: str = "balle2020"
) -> ConvertedRDPLowerBound:
    """Convert an RDP lower-bound curve to (ε, δ) **for display only**.

    Uses :func:`dpaudit.conversions.rdp_to_dp` (Balle et al. 2020, arXiv:1905.09982, Thm 20,
    or the standard conversion of Mironov 2017 Prop. 3). That conversion maps an RDP
    *guarantee* to an (ε, δ) *guarantee*; applied to a lower bound it does not give a lower
    bound on the ε the mechanism satisfies at δ, and the result says so
    (``is_valid_dp_lower_bound=False``).
    Chadha et al. 2024 plot such converted values next to converted upper bounds.

    Args:
        curve: a composed curve, or a single-query :class:`RDPAudit`.
        delta: δ in (0, 1).
        conversion: ``"balle2020"`` (default) or ``"standard"``.

    Returns:
        :class:`ConvertedRDPLowerBound`.

    Raises:
        TypeError: ``curve`` has the wrong type.
        ValueError: a batched audit (compose it first), δ ∉ (0, 1), unknown conversion.

    Example:
        >>> from dpaudit.bounds import rdp_two_cut
        >>> a = rdp_two_cut([9000, 1000], [7000, 3000], [2, 4, 8], output_set=[0])
        >>> res = rdp_lower_bound_to_dp(a, 1e-5)
        >>> res.is_valid_dp_lower_bound
        False
    """
    check_single_curve(curve, "curve")
    d = check_delta(delta, allow_zero=False)
    conv = rdp_to_dp(curve.orders, curve.epsilons, d, conversion=conversion)
    return ConvertedRDPLowerBound(
        epsilon=float(conv.epsilon),
        delta=d,
        order=float(conv.order),
        conversion=conv.conversion,
        rdp_confidence_level=curve.confidence_level,
        is_valid_dp_lower_bound=False,
        note=(
            "display only: an RDP-to-DP conversion maps guarantees (upper bounds) to "
            "guarantees; applied to an RDP lower bound it is not a lower bound on (epsilon, "
            "delta)."
        ),
    )
