"""Does an audit refute a claimed privacy guarantee?

A mechanism claimed to be (ε, δ)-DP (or (α, ρ(α))-RDP) is refuted at confidence 1 − β when a
lower bound valid at that confidence exceeds the claim: if the claim were true the lower
bound would exceed it with probability at most β (Chadha et al. 2024, arXiv:2402.09403,
§2.2: an audit gives ε^ℓ such that the algorithm "does not satisfy (ε, δ)-DP for any
ε < ε^ℓ"). For the exact
Clopper–Pearson audits the result also carries the p-value: the smallest β at which the same
audit (same counts, same choice) would refute the claim.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_array, check_delta, check_real
from dpaudit.bounds._cuts import RDPAudit, candidate_bounds
from dpaudit.bounds._epsdelta import EpsDeltaAudit, confusion_core, epsilon_at_beta
from dpaudit.bounds._rdp_compose import RDPLowerBoundCurve, check_single_curve
from dpaudit.bounds._selection import MultiSplit

__all__ = ["ViolationCheck", "check_dp_claim", "check_rdp_claim"]

#: Smallest p-value reported (Beta quantiles are unreliable further out); "p ≤ P_FLOOR".
P_FLOOR = 1e-16
_MULTI_SPLIT = MultiSplit.strategy


@dataclasses.dataclass(frozen=True)
class ViolationCheck(ResultMixin):
    """Outcome of checking a claimed guarantee against an audit.

    Attributes:
        refuted: the audit's lower bound exceeds the claim (at some order, for RDP).
        claim: ``"dp"`` or ``"rdp"``.
        claimed_epsilon: the claimed ε (scalar) or RDP curve (on ``orders``).
        claimed_delta: the claimed δ (``"dp"`` only).
        lower_bound: the audit's lower bound at the claimed δ, or its curve.
        margin: largest ``lower_bound − claimed_epsilon`` (positive iff refuted).
        orders: the Rényi orders (``"rdp"`` only).
        refuted_orders: orders at which the bound exceeds the claim (``"rdp"`` only).
        confidence_level: confidence of the statement "the claim is false" when refuted
            (the audit's level; for curves not simultaneous over orders, ``1 − A·β`` by the
            union bound over all A audited orders, floored at 0).
        valid: False when the audit is only asymptotically valid (k-cut, bootstrap), not
            simultaneous over orders, or invalid at zero divergence.
        p_value: smallest β at which this audit refutes the claim (exact Clopper–Pearson
            audits only, floored at :data:`P_FLOOR`); 1.0 when it cannot refute; ``None``
            when not computed.
        method: the audit method.
        evidence: the audit result itself (counts, intervals, choice of O).
        note: how to read the result.
    """

    refuted: bool
    claim: str
    claimed_epsilon: float | FloatArray
    claimed_delta: float | None
    lower_bound: float | FloatArray
    margin: float
    orders: FloatArray | None
    refuted_orders: FloatArray | None
    confidence_level: float
    valid: bool
    p_value: float | None
    method: str
    evidence: EpsDeltaAudit | RDPAudit | RDPLowerBoundCurve
    note: str


def _smallest_beta(refutes, lo: float = P_FLOOR) -> float:
    """Smallest β in [lo, 1) with ``refutes(β)`` (monotone: larger β refutes more easily)."""
    if refutes(lo):
        return lo
    hi = 1.0 - 1e-12
    if not refutes(hi):
        return 1.0
    a, b = math.log(lo), math.log(hi)
    for _ in range(60):
        mid = 0.5 * (a + b)
        if refutes(math.exp(mid)):
            b = mid
        else:
            a = mid
    return math.exp(b)


def check_dp_claim(audit: EpsDeltaAudit, *, epsilon: float, delta: float) -> ViolationCheck:
    """Check a claimed (ε, δ)-DP guarantee against an (ε, δ) audit.

    The audit's TPR/FPR bounds hold jointly at its confidence whatever δ, so the lower bound
    is re-evaluated at the claimed δ (Chadha et al. 2024 Eq. 1, FP/FN form):
    ``ε_lb(δ) = max{log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)), 0}``.
    Refuted iff ``ε_lb(δ) > ε``. The p-value re-runs the same bound at smaller β (same
    counts, same threshold, same Bonferroni factor). A ``"multi-split"`` audit is a median
    over splits (:class:`~dpaudit.bounds.MultiSplit`): its bound holds at its own δ only and
    has no p-value here, so the claimed δ must be the audit's.

    Args:
        audit: an :class:`EpsDeltaAudit`.
        epsilon: claimed ε ≥ 0.
        delta: claimed δ in [0, 1).

    Returns:
        :class:`ViolationCheck` (``claim="dp"``).

    Raises:
        TypeError: ``audit`` is not an :class:`EpsDeltaAudit`.
        ValueError: ε < 0 or not finite, δ ∉ [0, 1), or a multi-split audit at another δ.

    Example:
        >>> from dpaudit.bounds import epsilon_from_confusion
        >>> audit = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
        >>> check_dp_claim(audit, epsilon=1.0, delta=1e-5).refuted
        True
    """
    if not isinstance(audit, EpsDeltaAudit):
        raise TypeError(f"audit must be an EpsDeltaAudit, got {type(audit).__name__}")
    eps_c = check_real("epsilon", epsilon)
    if eps_c < 0:
        raise ValueError(f"epsilon must be non-negative, got {eps_c}")
    d = check_delta(delta)
    if audit.selection.strategy == _MULTI_SPLIT:
        return _multi_split_dp_check(audit, eps_c, d)
    tail = 1.0 - audit.interval_level
    core = confusion_core(audit.tp, audit.fn, audit.fp, audit.tn, d, tail, audit.orientation)
    lb = float(core["epsilon"])

    def refutes(beta: float) -> bool:
        lb_b = epsilon_at_beta(
            audit.tp, audit.fn, audit.fp, audit.tn, d, beta, audit.orientation, audit.n_candidates
        )
        return lb_b > eps_c

    return _dp_check(audit, eps_c, d, lb, _smallest_beta(refutes), "")


def _multi_split_dp_check(audit: EpsDeltaAudit, eps_c: float, d: float) -> ViolationCheck:
    """A median-over-splits audit against a claim at the audit's own δ (no p-value)."""
    if d != audit.delta:
        raise ValueError(
            f"delta must be the audit's delta ({audit.delta:g}) for a multi-split audit (a "
            f"median over splits holds at its own delta only), got {d:g}"
        )
    return _dp_check(
        audit, eps_c, d, float(audit.epsilon), None, " (median over splits; no p-value)"
    )


def _dp_check(
    audit: EpsDeltaAudit, eps_c: float, d: float, lb: float, p: float | None, remark: str
) -> ViolationCheck:
    """The check of an (ε, δ) claim against lower bound ``lb`` of ``audit``."""
    refuted = lb > eps_c
    return ViolationCheck(
        refuted=refuted,
        claim="dp",
        claimed_epsilon=eps_c,
        claimed_delta=d,
        lower_bound=lb,
        margin=lb - eps_c,
        orders=None,
        refuted_orders=None,
        confidence_level=audit.confidence_level,
        valid=True,
        p_value=p,
        method=audit.method,
        evidence=audit,
        note=(
            f"(eps={eps_c:g}, delta={d:g})-DP is {'refuted' if refuted else 'not refuted'} at "
            f"confidence {audit.confidence_level:g}: lower bound {lb:.6g} at delta={d:g}"
            f"{remark}."
        ),
    )


def _two_cut_p_value(audit: RDPAudit, claimed: np.ndarray) -> float | None:
    """p-value of a 2-cut audit against a claimed curve (same counts and choice of O);
    None for a median over splits (the median of the splits' curves has no one p-value)."""
    if audit.selection.strategy == _MULTI_SPLIT:
        return None
    if audit.selection.strategy == "bonferroni":
        cands, m = audit.candidates, len(audit.candidates)
    else:
        cands, m = (audit.candidates[int(np.ravel(audit.chosen)[0])],), 1

    def refutes(beta: float) -> bool:
        bounds = candidate_bounds(
            audit.bound_counts, audit.bound_counts_neighbour, cands, audit.orders, "two-cut",
            beta / m,
        )  # fmt: skip
        return bool(np.any(bounds.max(axis=-2) > claimed))

    return _smallest_beta(refutes)


def check_rdp_claim(
    audit: RDPAudit | RDPLowerBoundCurve, claimed_epsilons: ArrayLike
) -> ViolationCheck:
    """Check a claimed RDP curve against an RDP lower bound (one query or a composed curve).

    Refuted iff the lower bound exceeds the claimed ρ(α) at some audited order. For curves
    that hold at all orders at once (2-cut and k-cut CI audits, split or Bonferroni
    selection) the refutation has the audit's confidence; otherwise (bootstrap, valid order
    by order only) the orders that exceed the claim are picked after seeing the data, so the
    union bound covers every audited order: ``1 − A·β`` for A orders, and ``valid`` is
    False. Asymptotic audits (k-cut, bootstrap) and curves invalid at zero divergence give
    ``valid=False``: report them, do not rest a verdict on them.

    Args:
        audit: a single-query :class:`RDPAudit` (epsilons of shape ``(A,)``) or a composed
            :class:`RDPLowerBoundCurve`.
        claimed_epsilons: the claimed ρ(α) at ``audit.orders``, shape ``(A,)``, ≥ 0 (``inf``
            allowed: never refuted).

    Returns:
        :class:`ViolationCheck` (``claim="rdp"``), with a p-value for single-query 2-cut
        audits.

    Raises:
        TypeError: ``audit`` has the wrong type.
        ValueError: a batched audit, or claimed values of the wrong shape, negative or NaN.

    Example:
        >>> from dpaudit.bounds import rdp_two_cut
        >>> audit = rdp_two_cut([9000, 1000], [7000, 3000], [2, 10], output_set=[0])
        >>> check_rdp_claim(audit, [0.1, 0.1]).refuted
        True
    """
    check_single_curve(audit, "audit")
    claimed = check_array("claimed_epsilons", claimed_epsilons, finite=False)
    claimed = (
        np.broadcast_to(np.atleast_1d(claimed), audit.orders.shape).astype(np.float64)
        if (np.atleast_1d(claimed).size == 1)
        else np.atleast_1d(claimed)
    )
    if claimed.shape != audit.orders.shape:
        raise ValueError(
            f"claimed_epsilons must have the shape of audit.orders {audit.orders.shape}, "
            f"got {claimed.shape}"
        )
    if np.any(np.isnan(claimed)) or np.any(claimed < 0):
        raise ValueError(f"claimed_epsilons must be non-negative and not NaN, got {claimed!r}")
    lb = np.asarray(audit.epsilons, dtype=np.float64)
    over = lb > claimed
    refuted = bool(np.any(over))
    level = audit.confidence_level
    if not audit.simultaneous_over_orders and refuted:
        # which orders exceed the claim is data-dependent: pay for all of them
        level = max(0.0, 1.0 - audit.orders.size * (1.0 - level))
    method = audit.method if isinstance(audit, RDPAudit) else "+".join(audit.methods)
    p = None
    if isinstance(audit, RDPAudit) and audit.method == "two-cut":
        p = _two_cut_p_value(audit, claimed)
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isinf(claimed), -np.inf, lb - claimed)
    margin = float(np.max(diff))
    verdict = "refuted" if refuted else "not refuted"
    return ViolationCheck(
        refuted=refuted,
        claim="rdp",
        claimed_epsilon=claimed,
        claimed_delta=None,
        lower_bound=lb,
        margin=margin,
        orders=audit.orders,
        refuted_orders=audit.orders[over],
        confidence_level=level,
        valid=not audit.asymptotic and audit.simultaneous_over_orders and audit.valid_at_zero,
        p_value=p,
        method=method,
        evidence=audit,
        note=(
            f"claimed RDP curve {verdict} at confidence {level:g} by a {method} audit "
            f"({int(over.sum())} of {over.size} orders above the claim"
            + ("" if audit.simultaneous_over_orders else "; union bound over all orders")
            + ")."
        ),
    )
