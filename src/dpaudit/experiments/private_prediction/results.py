"""Results of the private-prediction audit: per adversary detail and the shared entry.

Each audited (system, adversary) becomes one :class:`dpaudit.AuditEntry` of the
:class:`dpaudit.AuditResult`: the composed RDP lower bound next to the data-dependent and
data-independent claims and the exact RDP of the modelled mechanism, with the
:class:`AdversaryAudit` (curves, per-query results, flips) hanging off it as ``detail``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    Claim,
    Curve,
    LowerBound,
    ResultMixin,
    SelectionRecord,
)
from dpaudit._typing import FloatArray, IntArray
from dpaudit.errors import DPAuditError

__all__ = [
    "AdversaryAudit",
    "EpsilonDisplay",
    "OrderingCheck",
    "PrivatePredictionDetail",
    "QueryResults",
    "check_ordering",
    "epsilon_display",
    "make_entry",
]

_ORDER_RTOL = 1e-9
_ORDER_ATOL = 1e-12


@dataclasses.dataclass(frozen=True)
class OrderingCheck(ResultMixin):
    """``audit ≤ exact ≤ data-dependent ≤ data-independent`` at every order.

    Attributes:
        audit_le_exact: the composed lower bound is below the exact curve at every order
            (fails with probability ≤ β by chance).
        exact_le_data_dependent: guaranteed mathematically (a failure raises).
        data_dependent_le_data_independent: guaranteed mathematically (a failure raises).
        per_query_audit_exceeds_exact: queries whose own bound exceeds their exact curve at
            some order (each happens with probability ≤ β).
        violations: human-readable description of any failure.
    """

    audit_le_exact: bool
    exact_le_data_dependent: bool
    data_dependent_le_data_independent: bool
    per_query_audit_exceeds_exact: int
    violations: tuple[str, ...]

    @property
    def holds(self) -> bool:
        """Whether the whole chain holds at every order."""
        return (
            self.audit_le_exact
            and self.exact_le_data_dependent
            and self.data_dependent_le_data_independent
        )


@dataclasses.dataclass(frozen=True)
class EpsilonDisplay(ResultMixin):
    """ε at δ of each composed curve, for plots (Balle et al. 2020, arXiv:1905.09982, Thm 20;
    Chadha et al. 2024 Thm 1).

    Attributes:
        delta: δ.
        audit: ε of the audit's RDP lower bound, converted at the orders where it is
            positive — **not** an (ε, δ) lower bound (Chadha et al. 2024 §5.4).
        exact: ε of the exact RDP curve (an upper bound for this adversary's neighbours).
        data_dependent: ε of the data-dependent RDP.
        data_independent: ε of the data-independent RDP.
        conversion: ``"balle2020"``.
        audit_is_valid_dp_lower_bound: always False.
        note: why.
    """

    delta: float
    audit: float
    exact: float
    data_dependent: float
    data_independent: float
    conversion: str
    audit_is_valid_dp_lower_bound: bool
    note: str


@dataclasses.dataclass(frozen=True)
class QueryResults(ResultMixin):
    """Per-query details of one adversary's audit.

    Attributes:
        test_indices: the queries' indices in the test set, ``(n,)``.
        true_labels: their labels.
        crafted_labels: label of the crafted point per query (adversarial) or the poison's
            label repeated (natural).
        affected_teachers: the teacher given the point where the adversary chose it (−1
            where it lands in a random part).
        output_probabilities: exact ``p̄`` (row 0, S) and ``p̄′`` (row 1, S′), ``(n, 2, C)``.
        counts: experiment counts under S and S′, ``(n, 2, C)``.
        output_sets: the 2-cut output set O chosen per query (on the selection half).
        summary_orders: orders of the per-query curves kept here.
        audit: per-query held-out lower bounds at ``summary_orders``, ``(n, len)``.
        exact: per-query exact RDP at ``summary_orders``.
        data_dependent: per-query data-dependent RDP at ``summary_orders``.
        selection_score: the score the worst query was chosen by: the selection-half 2-cut
            bound at the selection order and level 1 − β/n (selection halves only).
        flips: flips of the affected teacher per query (adversarial) or per natural query.
        retrainings: retrainings behind each count of flips.
        dropped_mass: histogram probability left out of the data-dependent expectation.
    """

    test_indices: IntArray
    true_labels: IntArray
    crafted_labels: IntArray
    affected_teachers: IntArray
    output_probabilities: FloatArray
    counts: IntArray
    output_sets: tuple[tuple[int, ...], ...]
    summary_orders: FloatArray
    audit: FloatArray
    exact: FloatArray
    data_dependent: FloatArray
    selection_score: FloatArray
    flips: IntArray
    retrainings: IntArray
    dropped_mass: FloatArray


@dataclasses.dataclass(frozen=True)
class AdversaryAudit(ResultMixin):
    """One algorithm × adversary: composed curves, their ε, and how they were obtained.

    Attributes:
        algorithm: the audited system's registered name (``"pate"``, ``"capc"``, …).
        adversary: the adversary's registered name (``"nat-advq"``, …).
        crafter: ``"natural"`` or ``"poisoning"``.
        distinguisher: ``"adversarial"`` or ``"natural"``.
        composition: ``"repetitions"`` (worst query × n_Q) or ``"queries"`` (sum over n_Q).
        num_composed: n_Q.
        orders: Rényi orders.
        audit: composed RDP lower bound (valid at ``confidence_level``).
        exact: composed exact RDP of the modelled output distributions.
        data_dependent: composed data-dependent RDP.
        data_independent: composed data-independent RDP ``n_Q·α/σ²``.
        confidence_level: confidence of ``audit`` (selection and union bound included).
        per_query_confidence_level: level of each per-query audit.
        selection: ``"split"`` (output set and worst query chosen on held-out halves).
        worst_query: position of the chosen query among the candidates (adversarial).
        worst_query_test_index: its index in the test set (adversarial).
        epsilon: ε at δ of the four curves (display only for the audit).
        ordering: the check of ``audit ≤ exact ≤ data-dependent ≤ data-independent``.
        flips: the affected teacher's flip probability (worst query, or pooled over the
            natural queries' votes) with a Clopper–Pearson interval.
        num_instantiations: N_g.
        num_retrainings: R.
        experiments: T per query and dataset.
        sampler: ``"exact"`` or ``"monte-carlo"``.
        engine_seconds: wall time of the sampling engine.
        queries: per-query details (of the screening, where a confirmation followed).
        profile: the :class:`~dpaudit.experiments.private_prediction.findings.LeakageProfile`
            the findings check reads (flips and output distributions behind the curves).
        confirmation: the worst query re-estimated on fresh retrainings
            (:class:`~dpaudit.experiments.private_prediction.confirm.Confirmation`), when
            ``adversary.confirmations > 0``; the composed curves and ``flips`` are then its.
        method: what the audit is.
    """

    algorithm: str
    adversary: str
    crafter: str
    distinguisher: str
    composition: str
    num_composed: int
    orders: FloatArray
    audit: FloatArray
    exact: FloatArray
    data_dependent: FloatArray
    data_independent: FloatArray
    confidence_level: float
    per_query_confidence_level: float
    selection: str
    worst_query: int | None
    worst_query_test_index: int | None
    epsilon: EpsilonDisplay
    ordering: OrderingCheck
    flips: Any
    num_instantiations: int
    num_retrainings: int
    experiments: int
    sampler: str
    engine_seconds: float
    queries: QueryResults
    profile: Any = None
    confirmation: Any = None
    method: str = (
        "2-cut RDP audit with Clopper-Pearson intervals, held-out choice of output set and "
        "worst query (Chadha et al. 2024, arXiv:2402.09403, §4.2, App. B); parametric "
        "histogram models (§5.1-5.2)"
    )


def check_ordering(
    audit: np.ndarray,
    exact: np.ndarray,
    dd: np.ndarray,
    di: np.ndarray,
    per_query_audit: np.ndarray,
    per_query_exact: np.ndarray,
    label: str,
) -> OrderingCheck:
    def le(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a <= b + _ORDER_ATOL + _ORDER_RTOL * np.abs(b)

    violations = []
    a_ok = bool(np.all(le(audit, exact)))
    if not a_ok:
        k = int(np.argmax(audit - exact))
        violations.append(
            f"audit > exact at {int(np.sum(~le(audit, exact)))} orders (e.g. {audit[k]:.4g} > "
            f"{exact[k]:.4g}); a chance event of probability <= 1 - confidence_level"
        )
    e_ok = bool(np.all(le(exact, dd)))
    d_ok = bool(np.all(le(dd, di)))
    if not (e_ok and d_ok):
        raise DPAuditError(
            f"{label}: exact <= data-dependent <= data-independent failed "
            f"(exact<=dd: {e_ok}, dd<=di: {d_ok}); this is a bug, please report it"
        )
    per_q = int(np.sum(np.any(~le(per_query_audit, per_query_exact), axis=1)))
    return OrderingCheck(a_ok, e_ok, d_ok, per_q, tuple(violations))


def epsilon_display(curve: Any, exact, dd, di, orders, delta: float) -> EpsilonDisplay:
    """ε at δ of the four curves (Balle et al. 2020, arXiv:1905.09982, Thm 20).

    The audit's curve is converted at the orders where it is positive only: at the other
    orders the lower bound carries no information (it is clipped at 0), and the conversion
    rule "ρ ≈ 0 ⇒ ε = 0" that is right for a guarantee would turn that absence of
    information into ε = 0.
    """
    from dpaudit.bounds import RDPLowerBoundCurve, rdp_lower_bound_to_dp
    from dpaudit.conversions import rdp_to_dp

    eps = np.asarray(curve.epsilons)
    pos = eps > 0
    if pos.any():
        informative = RDPLowerBoundCurve(
            orders=orders[pos],
            epsilons=eps[pos],
            confidence_level=curve.confidence_level,
            n_queries=curve.n_queries,
            methods=curve.methods,
            asymptotic=curve.asymptotic,
            simultaneous_over_orders=curve.simultaneous_over_orders,
            note=curve.note,
            valid_at_zero=curve.valid_at_zero,
        )
        converted = rdp_lower_bound_to_dp(informative, delta)
        audit_eps, note = converted.epsilon, converted.note
    else:
        audit_eps = 0.0
        note = "the audit's lower bound is 0 at every order"
    return EpsilonDisplay(
        delta=delta,
        audit=float(audit_eps),
        exact=float(rdp_to_dp(orders, exact, delta).epsilon),
        data_dependent=float(rdp_to_dp(orders, dd, delta).epsilon),
        data_independent=float(rdp_to_dp(orders, di, delta).epsilon),
        conversion="balle2020",
        audit_is_valid_dp_lower_bound=False,
        note=note + " Converted at the orders where the lower bound is positive.",
    )


@dataclasses.dataclass(frozen=True)
class PrivatePredictionDetail(ResultMixin):
    """What the whole private-prediction run saw (the ``detail`` of its AuditResult).

    Attributes:
        dataset: dataset name.
        num_train: training rows used.
        num_test: test rows available.
        num_classes: C.
        plurality_accuracy: per system, accuracy of the noiseless plurality vote of the first
            instantiation on the natural queries.
        findings: whether the data resolve the paper's findings
            (:class:`~dpaudit.experiments.private_prediction.findings.FindingsCheck`).
        retrainings: per system, distinct retrainings computed (tasks repeated within or
            across adversaries are computed once).
    """

    dataset: str
    num_train: int
    num_test: int
    num_classes: int
    plurality_accuracy: dict[str, float]
    findings: Any = None
    retrainings: dict[str, int] = dataclasses.field(default_factory=dict)


_SOURCES = {
    "data-dependent": "Papernot et al. 2018, arXiv:1802.08908, Thm 6, in expectation over the "
    "modelled histograms (Chadha et al. 2024, arXiv:2402.09403, §5)",
    "data-independent": "Papernot et al. 2018, arXiv:1802.08908, Prop. 8",
    "exact": "Renyi divergence of the modelled output distributions (Chadha et al. 2024 Eq. 4)",
}


def make_entry(audit: AdversaryAudit, *, primary: str = "data-dependent") -> AuditEntry:
    """The shared :class:`dpaudit.AuditEntry` of one system × adversary.

    Args:
        audit: the adversary's detailed result.
        primary: the analysis the system ships (first claim).
    """
    eps = audit.epsilon
    orders = audit.orders

    def claim(analysis: str, curve: np.ndarray, epsilon: float) -> Claim:
        return Claim(
            analysis=analysis,
            source=_SOURCES[analysis],
            epsilon=epsilon,
            delta=eps.delta,
            rdp=Curve(orders, curve),
            conversion=eps.conversion,
        )

    claims = {
        "data-dependent": claim("data-dependent", audit.data_dependent, eps.data_dependent),
        "data-independent": claim("data-independent", audit.data_independent, eps.data_independent),
    }
    ordered = (claims[primary], *(c for k, c in claims.items() if k != primary))
    lower = LowerBound(
        method=audit.method,
        confidence_level=audit.confidence_level,
        epsilon=eps.audit,
        delta=eps.delta,
        epsilon_is_valid=False,
        rdp=Curve(orders, audit.audit),
        note="the RDP curve is the valid lower bound; epsilon is its conversion at delta, "
        "shown for comparison only. " + eps.note,
    )
    return AuditEntry(
        system=audit.algorithm,
        adversary=audit.adversary,
        lower_bound=lower,
        claims=ordered,
        exact=claim("exact", audit.exact, eps.exact),
        selections=_selections(audit),
        detail=audit,
    )


def _selections(audit: AdversaryAudit) -> tuple[SelectionRecord, ...]:
    """The data-dependent choices behind an entry's bound: the output set of each query
    (selection split), then the worst query (``"repetitions"``) or the Bonferroni level over
    the queries (``"queries"``) (Chadha et al. 2024, arXiv:2402.09403, §4.2, App. B)."""
    output_set = SelectionRecord(
        "output set",
        "split",
        "per query, chosen on a random half of the experiments and bounded on the other",
    )
    if audit.composition == "repetitions":
        composed = SelectionRecord(
            "worst query",
            "split",
            "chosen on the selection halves only (Bonferroni-level score over the "
            "candidates); its held-out bound is composed over the repetitions",
        )
    else:
        composed = SelectionRecord(
            "queries",
            "bonferroni",
            f"each of the {audit.num_composed} queries bounded at level 1 - beta/n_Q; "
            "the bounds are summed (union bound)",
        )
    return (output_set, composed)
