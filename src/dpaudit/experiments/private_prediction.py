"""Audit private prediction end to end: PATE and CaPC on real data (paper 000 §4–5).

The pipeline, per algorithm (PATE or CaPC) and adversary (Nat-AdvQ, Pois-AdvQ, Pois-NatQ):

1. **Training phase.** N_g instantiations of Alg. 1's training phase on the dataset
   (:func:`dpaudit.attacks.parametric.train_instantiations`): PATE re-partitions at random,
   CaPC keeps fixed parties. Every teacher votes on the natural queries (n_Q random test
   points) and on the poisoning source point.
2. **Crafting.** Per query (adversarial distinguisher; the first ``candidate_queries`` of the
   natural queries) or once (natural distinguisher), the crafter makes S′ = S ∪ {(x′, y′)}
   (:mod:`dpaudit.attacks.adversaries`). R retrainings per point change only the teacher whose
   part receives it (a random part in PATE, the adversary's party in CaPC).
3. **Models.** Maximum-likelihood parametric histogram models per query (paper 000 §5.1–5.2)
   and their exact output distributions ``p̄ = E[Q(H_S)]``, ``p̄′ = E[Q(H_S′)]``.
4. **Sampling.** T experiments per query under S and under S′ through the sampling engine
   (:mod:`dpaudit.engine`): ``Multinomial(T, p̄)`` (exact in distribution:
   experiments are independent and each output is one draw from p̄) or the direct simulation
   (a histogram per experiment, Gaussian noise, argmax).
5. **Audit.** Per query the 2-cut RDP lower bound with Clopper–Pearson intervals (paper 000
   §4.2, App. B), the output set chosen on a random half of the experiments and bounded on
   the other half (:func:`dpaudit.bounds.rdp_audit`, ``selection="split"``). The adversarial
   distinguisher's worst query is chosen on the selection halves only and its held-out bound
   composed over ``queries`` repetitions; the natural distinguisher's bounds are summed over
   the queries, each at level ``1 − β/n_Q`` (union bound), by
   :func:`dpaudit.bounds.compose_rdp_lower_bounds`.
6. **Beside it** (same order grid, same composition): the **exact** RDP of the modelled
   output distributions ``D_α(p̄‖p̄′)``; the **data-dependent** RDP (Papernot et al. 2018
   Thm 6) of the modelled mechanism, ``(1/(α−1)) log E_{H~H_S}[e^{(α−1) ε_dd(H, α)}]``; and
   the **data-independent** ``α/σ²`` (Prop. 8).

**Why the curves are ordered.** ``audit ≤ exact`` with probability ≥ 1 − β (the 2-cut of a
divergence is below it, Balle et al. 2020, and the bound is valid at its level).
``exact ≤ data-dependent``: for α > 1, ``(P, Q) ↦ Σ P^α Q^{1−α}`` is jointly convex, and
``(H_S, H_S′)`` can be coupled so that they differ in at most one teacher's vote (the
affected one), so ``e^{(α−1) D_α(p̄‖p̄′)} ≤ E[e^{(α−1) D_α(Q(H)‖Q(H′))}] ≤ E[e^{(α−1) ε_dd(H)}]``
because ε_dd(H) bounds the divergence to *every* neighbour of H. ``data-dependent ≤
data-independent`` since ε_dd ≤ α/σ² pointwise. The data-dependent expectation is taken over
the enumerated most probable histograms, with the left-out mass charged at α/σ² (an upper
bound again). A violation of the last two is a bug and raises; a violation of the first is a
statistical event that the result records (``ordering``).

ε at δ (default 1e-6) by Balle et al. 2020 Thm 20 (paper 000 Thm 1) is given for display;
applied to the audit's RDP lower bound it is **not** an (ε, δ) lower bound (paper 000 §5.4),
and the result says so.

Caveat shared with the paper: answers to repeated queries of one trained interface share its
training randomness, so composing the per-query bound of the modelled mixture over
repetitions treats them as fresh experiments; the composed curves are those of paper 000
Fig. 3–4.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._rng import block_seeds
from dpaudit._typing import FloatArray, IntArray
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
)
from dpaudit.errors import DPAuditError

__all__ = [
    "SAMPLERS",
    "SUMMARY_ORDERS",
    "AdversaryAudit",
    "EpsilonDisplay",
    "OrderingCheck",
    "PrivatePredictionAudit",
    "PrivatePredictionSettings",
    "QueryResults",
    "audit_distributions",
    "audit_private_prediction",
    "mixture_data_dependent_rdp",
]

SAMPLERS: tuple[str, ...] = ("exact", "monte-carlo")
Q_BOUNDS: tuple[str, ...] = ("union", "exact")
#: Orders at which per-query curves are kept in the result (full curves are kept composed).
SUMMARY_ORDERS: tuple[float, ...] = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
_DEFAULT_BLOCK = {"exact": 2**26, "monte-carlo": 2**18}
_ORDER_RTOL = 1e-9
_ORDER_ATOL = 1e-12
_AUDIT_CHUNK = 16


def _orders_default() -> np.ndarray:
    from dpaudit.accounting import DEFAULT_ORDERS

    return np.asarray(DEFAULT_ORDERS, dtype=np.float64)


# =============================================================================================
# Settings
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class PrivatePredictionSettings(ResultMixin):
    """Everything an end-to-end private-prediction audit needs (validated on construction).

    Attributes:
        name: run name.
        dataset: ``"digits"``, ``"mnist-5k"``, ``"fashion-mnist"`` or ``"adult"``.
        algorithms: subset of ``("pate", "capc")``.
        adversaries: subset of ``("nat-advq", "pois-advq", "pois-natq")``.
        teachers: m, number of teachers (parts).
        teachers_per_query: k ≤ m teachers vote per query (``None``: all m).
        sigma: GNMax noise σ > 0 (vote units).
        queries: n_Q, natural queries (natural distinguisher) and repetitions composed for
            the adversarial distinguisher.
        candidate_queries: queries tried by the adversarial distinguishers (the first ones of
            the natural queries; ``None``: all n_Q).
        experiments: T experiments per query under S and under S′ (≥ 4).
        instantiations: N_g training phases for the models.
        retrainings: R retrainings with the crafted point per point.
        estimator: teacher model (``"logistic"``, ``"extra-trees"``, ``"random-forest"``,
            ``"cnn"``).
        neighbour_estimator: ``"paired"`` or ``"direct"`` (see :mod:`dpaudit.attacks.parametric`).
        data_dependent_q: ``"union"`` (Papernot et al. 2018 Prop. 7, what PATE claims) or
            ``"exact"`` q̃ for the data-dependent curve.
        sampler: ``"exact"`` (Multinomial from the exact output distribution) or
            ``"monte-carlo"`` (direct simulation).
        block_size: experiments per engine block (default 2^26 exact, 2^18 Monte Carlo).
        executor: engine executor (``"serial"``, ``"processes"``, ``"joblib"``, ``"ray"``).
        workers: engine workers.
        n_jobs: joblib workers for teacher training and retraining.
        confidence_level: 1 − β of every composed lower bound.
        delta: δ of the ε display.
        orders: Rényi orders (``None``: :data:`dpaudit.accounting.DEFAULT_ORDERS`).
        selection_order: the order at which candidate output sets are compared on the
            selection half (any fixed choice keeps the bound valid; the chosen set is then
            bounded at every order).
        seed: root seed of everything random.
        n_train: training rows kept (seeded subset; ``None``: all).
        n_test: test rows kept (``None``: all).
        max_support: histograms enumerated per model (data-dependent curve, CaPC).
    """

    name: str = "private-prediction"
    dataset: str = "digits"
    algorithms: tuple[str, ...] = ("pate", "capc")
    adversaries: tuple[str, ...] = ("nat-advq", "pois-advq", "pois-natq")
    teachers: int = 250
    teachers_per_query: int | None = None
    sigma: float = 40.0
    queries: int = 1000
    candidate_queries: int | None = None
    experiments: int = 10**8
    instantiations: int = 2
    retrainings: int = 4
    estimator: str = "logistic"
    neighbour_estimator: str = "paired"
    data_dependent_q: str = "union"
    sampler: str = "exact"
    block_size: int | None = None
    executor: str = "serial"
    workers: int = 1
    n_jobs: int = 1
    confidence_level: float = 0.95
    delta: float = 1e-6
    orders: tuple[float, ...] | None = None
    selection_order: float = 10.0
    seed: int = 0
    n_train: int | None = None
    n_test: int | None = None
    max_support: int = 2**14

    def __post_init__(self) -> None:
        from dpaudit.attacks.adversaries import ADVERSARY_NAMES
        from dpaudit.attacks.parametric import ALGORITHMS, NEIGHBOUR_ESTIMATORS
        from dpaudit.engine import EXECUTORS
        from dpaudit.systems import ESTIMATOR_NAMES
        from dpaudit.systems.data import DATASET_NAMES

        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        check_choice("dataset", self.dataset, DATASET_NAMES)
        algs = _names("algorithms", self.algorithms, ALGORITHMS)
        advs = _names("adversaries", self.adversaries, ADVERSARY_NAMES)
        m = check_positive_int("teachers", self.teachers)
        if m < 2:
            raise ValueError(f"teachers must be at least 2, got {m}")
        k = None
        if self.teachers_per_query is not None:
            k = check_positive_int("teachers_per_query", self.teachers_per_query)
            if k > m:
                raise ValueError(
                    f"teachers_per_query (k) must be at most teachers (m={m}), got k={k}"
                )
        sigma = check_positive("sigma", self.sigma)
        nq = check_positive_int("queries", self.queries)
        cand = None
        if self.candidate_queries is not None:
            cand = check_positive_int("candidate_queries", self.candidate_queries)
            if cand > nq:
                raise ValueError(f"candidate_queries must be at most queries={nq}, got {cand}")
        t = check_positive_int("experiments", self.experiments)
        if t < 4:
            raise ValueError(f"experiments must be at least 4 (half selects, half bounds), got {t}")
        check_positive_int("instantiations", self.instantiations)
        check_positive_int("retrainings", self.retrainings)
        check_choice("estimator", self.estimator, ESTIMATOR_NAMES)
        check_choice("neighbour_estimator", self.neighbour_estimator, NEIGHBOUR_ESTIMATORS)
        check_choice("data_dependent_q", self.data_dependent_q, Q_BOUNDS)
        check_choice("sampler", self.sampler, SAMPLERS)
        if self.block_size is not None:
            check_positive_int("block_size", self.block_size)
        check_choice("executor", self.executor, EXECUTORS)
        check_positive_int("workers", self.workers)
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero integer (joblib), got {self.n_jobs!r}")
        level = check_confidence_level(self.confidence_level)
        delta = check_delta(self.delta, allow_zero=False)
        orders = None
        if self.orders is not None:
            lam = check_orders(self.orders)
            if lam.size > 1 and not np.all(np.diff(lam) > 0):
                raise ValueError(f"orders must be strictly increasing, got {self.orders!r}")
            orders = tuple(float(a) for a in lam)
        sel = check_orders(check_positive("selection_order", self.selection_order))
        seed = check_nonneg_int("seed", self.seed)
        for field in ("n_train", "n_test"):
            if getattr(self, field) is not None:
                check_positive_int(field, getattr(self, field))
        check_positive_int("max_support", self.max_support)
        for name, value in (
            ("algorithms", algs),
            ("adversaries", advs),
            ("teachers", m),
            ("teachers_per_query", k),
            ("sigma", sigma),
            ("queries", nq),
            ("candidate_queries", cand),
            ("experiments", t),
            ("confidence_level", level),
            ("delta", delta),
            ("orders", orders),
            ("selection_order", float(sel[0])),
            ("seed", seed),
        ):
            object.__setattr__(self, name, value)

    @property
    def k(self) -> int:
        """Teachers per query (k)."""
        return self.teachers if self.teachers_per_query is None else self.teachers_per_query

    @property
    def num_candidates(self) -> int:
        """Queries tried by the adversarial distinguishers."""
        return self.queries if self.candidate_queries is None else self.candidate_queries

    def order_grid(self) -> np.ndarray:
        """The Rényi orders used."""
        return _orders_default() if self.orders is None else np.asarray(self.orders)


def _names(field: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(v).strip().lower() for v in items if str(v).strip())
    if not names:
        raise ValueError(f"{field} must name at least one of {allowed}, got {value!r}")
    for n in names:
        check_choice(field, n, allowed)
    return tuple(dict.fromkeys(names))


# =============================================================================================
# Results
# =============================================================================================


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
    """ε at δ of each composed curve (Balle et al. 2020 Thm 20 = paper 000 Thm 1), for plots.

    Attributes:
        delta: δ.
        audit: ε of the audit's RDP lower bound, converted at the orders where it is
            positive — **not** an (ε, δ) lower bound (paper 000 §5.4).
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
        affected_teachers: CaPC: the party given the point (−1 for PATE).
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
        algorithm: ``"pate"`` or ``"capc"``.
        adversary: ``"nat-advq"``, ``"pois-advq"`` or ``"pois-natq"``.
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
        queries: per-query details.
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
    method: str = (
        "2-cut RDP audit with Clopper-Pearson intervals, held-out choice of output set and "
        "worst query (paper 000 §4.2, App. B); parametric histogram models (§5.1-5.2)"
    )


@dataclasses.dataclass(frozen=True)
class PrivatePredictionAudit(ResultMixin):
    """The end-to-end audit of private prediction: every algorithm × adversary.

    Attributes:
        settings: what was run.
        dataset: dataset name; ``num_train``, ``num_test``, ``num_classes`` its sizes.
        num_train: training rows used.
        num_test: test rows available.
        num_classes: C.
        results: one :class:`AdversaryAudit` per algorithm × adversary.
        plurality_accuracy: per algorithm, accuracy of the noiseless plurality vote of the
            first instantiation on the natural queries.
        timings: wall seconds per phase.
        seed: the root seed.
        note: what the numbers mean.
    """

    settings: PrivatePredictionSettings
    dataset: str
    num_train: int
    num_test: int
    num_classes: int
    results: tuple[AdversaryAudit, ...]
    plurality_accuracy: dict[str, float]
    timings: dict[str, float]
    seed: int
    note: str = (
        "audit = valid RDP lower bound at confidence_level; exact = RDP of the modelled output "
        "distributions; data-dependent / data-independent = the claimed guarantee (Papernot "
        "et al. 2018). epsilon values at delta are for display; the audit's is not an "
        "(epsilon, delta) lower bound."
    )

    def result(self, algorithm: str, adversary: str) -> AdversaryAudit:
        """The result for one algorithm and adversary.

        Raises:
            KeyError: not part of this audit.
        """
        for r in self.results:
            if r.algorithm == algorithm and r.adversary == adversary:
                return r
        raise KeyError(f"no result for algorithm={algorithm!r}, adversary={adversary!r}")

    def write_json(self, path: str | Path) -> Path:
        """Write the audit as strict JSON to ``path`` and return it."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.to_json() + "\n")
        return p


# =============================================================================================
# Data-dependent RDP of the modelled mechanism
# =============================================================================================


def mixture_data_dependent_rdp(
    votes: np.ndarray,
    probabilities: np.ndarray,
    dropped_mass: float,
    sigma: float,
    orders: np.ndarray,
    *,
    q: str = "union",
) -> FloatArray:
    """Data-dependent RDP of the noisy argmax on a random histogram (module notes).

    ``(1/(α−1)) log [Σ_h P(h) e^{(α−1) ε_dd(h, α)} + P_dropped e^{(α−1) α/σ²}]`` with
    ``ε_dd`` Papernot et al. 2018 Thm 6 (:func:`dpaudit.accounting.gnmax_rdp`), capped at
    ``α/σ²`` (Prop. 8). By joint convexity this bounds ``D_α(E Q(H_S) ‖ E Q(H_S′))`` for any
    H_S′ one teacher away from H_S.

    Args:
        votes: support histograms ``(S, C)`` (may be empty when ``dropped_mass = 1``).
        probabilities: their probabilities ``(S,)``.
        dropped_mass: probability of the histograms left out, in [0, 1].
        sigma: σ > 0.
        orders: Rényi orders α > 1.
        q: ``"union"`` or ``"exact"`` q̃.

    Returns:
        ``(A,)`` RDP at each order.

    Example:
        >>> lam = np.array([2.0, 10.0])
        >>> one = mixture_data_dependent_rdp(np.array([[200, 30, 20]]), np.ones(1), 0.0, 40.0, lam)
        >>> from dpaudit.accounting import gnmax_rdp
        >>> bool(np.allclose(one, gnmax_rdp([200, 30, 20], 40.0, lam)))
        True
    """
    from dpaudit.accounting import gnmax_rdp

    s = check_positive("sigma", sigma)
    lam = check_orders(orders)
    di = lam / (s * s)
    terms = []
    if votes.shape[0]:
        eps = gnmax_rdp(votes, s, lam, analysis="data-dependent", q=q)  # (S, A)
        with np.errstate(divide="ignore"):
            logp = np.log(probabilities)[:, None]
        terms.append(logp + (lam - 1.0)[None, :] * eps)
    if dropped_mass > 0:
        terms.append((math.log(dropped_mass) + (lam - 1.0) * di)[None, :])
    if not terms:
        return np.zeros_like(lam)
    stacked = np.concatenate(terms, axis=0)
    total = probabilities.sum() + dropped_mass
    out = (special.logsumexp(stacked, axis=0) - math.log(total)) / (lam - 1.0)
    return np.minimum(np.maximum(out, 0.0), di)


# =============================================================================================
# Auditing given output distributions
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class _Audited:
    per_query: np.ndarray  # (n, A) held-out bounds
    output_sets: tuple[tuple[int, ...], ...]
    score: np.ndarray  # (n,)
    counts: np.ndarray  # (n, 2, C)
    curve: Any  # RDPLowerBoundCurve
    worst: int | None
    per_query_level: float


def _sample_counts(
    probabilities: np.ndarray,
    experiments: int,
    *,
    sampler: str,
    models: Sequence[Any] | None,
    sigma: float,
    rng: np.random.SeedSequence,
    block_size: int,
    executor: str,
    workers: int,
    checkpoint: str | Path | None,
    progress: bool,
    description: str,
) -> tuple[np.ndarray, float]:
    from dpaudit.engine import probabilities_key, run_blocks
    from dpaudit.mechanisms import MultinomialBlock, NoisyArgmaxBlock

    start = time.perf_counter()
    if sampler == "exact":
        run = run_blocks(
            MultinomialBlock(probabilities),
            experiments,
            rng=rng,
            block_size=block_size,
            executor=executor,
            workers=workers,
            checkpoint=checkpoint,
            key=probabilities_key(probabilities),
            progress=progress,
            description=description,
        )
        return run.counts, time.perf_counter() - start
    if models is None:
        raise ValueError("the monte-carlo sampler needs the histogram models")
    n = probabilities.shape[0]
    counts = np.zeros(probabilities.shape, dtype=np.int64)
    seeds = block_seeds(rng, 2 * n)
    for i, model in enumerate(models):
        for side in (0, 1):
            run = run_blocks(
                NoisyArgmaxBlock(model.sampler(neighbour=bool(side)), sigma),
                experiments,
                rng=seeds[2 * i + side],
                block_size=block_size,
                executor=executor,
                workers=workers,
                progress=False,
            )
            counts[i, side] = run.counts
    return counts, time.perf_counter() - start


def _candidates(c: int) -> list[tuple[int, ...]] | None:
    from dpaudit.bounds._rdp import MAX_CLASSES_TWO_CUT

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
) -> _Audited:
    """2-cut audit of per-query counts and its composition (internal; used by the pipeline
    and the coverage test).

    The output set of each query is chosen on a random half of its counts at
    ``selection_order`` and bounded on the other half at every order.
    ``composition="repetitions"``: each query at ``confidence_level``; the worst query is the
    one with the largest selection-half 2-cut bound at ``selection_order`` and level
    ``1 − β/n`` (plug-in divergence, then the lowest index, break ties); its held-out bound
    times ``num_composed``. ``"queries"``: each query at
    ``1 − β/n`` and the held-out bounds summed (union bound).
    """
    from dpaudit.bounds import (
        RDPLowerBoundCurve,
        compose_rdp_lower_bounds,
        per_query_confidence_level,
        rdp_audit,
        rdp_two_cut,
    )
    from dpaudit.bounds._rdp import _candidate_bounds, _two_cut_partition

    n, _, c = counts.shape
    level = (
        confidence_level
        if composition == "repetitions"
        else per_query_confidence_level(confidence_level, n)
    )
    cands = _candidates(c)
    sel_orders = np.array([selection_order])
    # The worst query is scored on the selection halves at a Bonferroni level over the n
    # candidates: at the per-query level about β·n leak-free queries would show a positive
    # selection bound by chance and the maximum would pick one of them (valid, since the
    # held-out half decides the bound, but powerless).
    score_level = 1.0 - (1.0 - confidence_level) / n
    per_query = np.zeros((n, orders.size))
    sets: list[tuple[int, ...]] = []
    score = np.zeros(n)
    plug = np.zeros(n)
    audits = []
    seeds = block_seeds(rng, (n + _AUDIT_CHUNK - 1) // _AUDIT_CHUNK)
    for b, start in enumerate(range(0, n, _AUDIT_CHUNK)):
        sl = slice(start, min(start + _AUDIT_CHUNK, n))
        res = rdp_audit(
            counts[sl, 0],
            counts[sl, 1],
            orders,
            candidates=cands,
            selection="split",
            selection_order=selection_order,
            confidence_level=level,
            rng=seeds[b],
        )
        audits.append(res)
        per_query[sl] = res.epsilons
        chosen = res.chosen[:, 0]
        sel1 = res.counts - res.bound_counts
        sel2 = res.counts_neighbour - res.bound_counts_neighbour
        for r, j in enumerate(chosen):
            o = res.candidates[int(j)][0]
            sets.append(o)
            two = rdp_two_cut(
                sel1[r], sel2[r], sel_orders, output_set=o, confidence_level=score_level
            )
            score[start + r] = float(two.epsilons[0])
            part = (_two_cut_partition(o, c),)
            plug[start + r] = float(
                _candidate_bounds(sel1[r], sel2[r], part, sel_orders, "plug-in", 0.0)[0, 0]
            )
    if composition == "repetitions":
        worst = int(np.lexsort((-np.arange(n), plug, score))[-1])
        curve = RDPLowerBoundCurve(
            orders=orders,
            epsilons=num_composed * per_query[worst],
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
    else:
        worst = None
        curve = compose_rdp_lower_bounds(audits)
    return _Audited(per_query, tuple(sets), score, counts, curve, worst, level)


# =============================================================================================
# The pipeline
# =============================================================================================


def _exact_rdp(pbar: np.ndarray, orders: np.ndarray) -> np.ndarray:
    from dpaudit.divergence import renyi_divergence_from_log

    with np.errstate(divide="ignore"):
        lp = np.log(np.maximum(pbar[:, 0], 0.0))
        lq = np.log(np.maximum(pbar[:, 1], 0.0))
    lp -= special.logsumexp(lp, axis=1, keepdims=True)
    lq -= special.logsumexp(lq, axis=1, keepdims=True)
    return np.maximum(renyi_divergence_from_log(lp, lq, orders), 0.0)


def _ordering(
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


def _epsilons(curve: Any, exact, dd, di, orders, delta: float) -> EpsilonDisplay:
    """ε at δ of the four curves (paper 000 Thm 1 = Balle et al. 2020 Thm 20).

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


def _summary_idx(orders: np.ndarray) -> np.ndarray:
    return np.array([int(np.argmin(np.abs(orders - a))) for a in SUMMARY_ORDERS])


def _load(settings: PrivatePredictionSettings):
    from dpaudit.systems.data import load_dataset

    kwargs: dict[str, Any] = {}
    if settings.dataset in ("digits", "mnist-5k"):
        kwargs["seed"] = settings.seed
    if settings.dataset == "fashion-mnist":
        kwargs.update(n_train=settings.n_train, n_test=settings.n_test, seed=settings.seed)
    ds = load_dataset(settings.dataset, **kwargs)
    if settings.dataset != "fashion-mnist" and (settings.n_train or settings.n_test):
        from dpaudit.systems.data import Dataset

        gen = np.random.default_rng(settings.seed)
        tr = np.arange(ds.num_train)
        te = np.arange(ds.num_test)
        if settings.n_train and settings.n_train < ds.num_train:
            tr = np.sort(gen.choice(ds.num_train, settings.n_train, replace=False))
        if settings.n_test and settings.n_test < ds.num_test:
            te = np.sort(gen.choice(ds.num_test, settings.n_test, replace=False))
        ds = Dataset(
            name=ds.name,
            X_train=ds.X_train[tr],
            y_train=ds.y_train[tr],
            X_test=ds.X_test[te],
            y_test=ds.y_test[te],
            num_classes=ds.num_classes,
            class_names=ds.class_names,
            feature_names=ds.feature_names,
            image_shape=ds.image_shape,
            source=ds.source,
            split=ds.split + f", subsampled(n_train={settings.n_train}, n_test={settings.n_test})",
        )
    return ds


def _check_against_data(settings: PrivatePredictionSettings, ds) -> None:
    if settings.teachers > ds.num_train:
        raise ValueError(
            f"teachers must be at most the {ds.num_train} training rows of {ds.name}, "
            f"got {settings.teachers}"
        )
    if settings.queries + 1 > ds.num_test:
        raise ValueError(
            f"queries must be at most {ds.num_test - 1} for {ds.name} (one test point is kept "
            f"for the poisoning source), got {settings.queries}"
        )


def _models_for(
    algorithm: str,
    preds: np.ndarray,
    paired: Sequence[Any],
    columns: Sequence[int],
    parties: Sequence[int] | None,
    settings: PrivatePredictionSettings,
    num_classes: int,
    natural: bool,
) -> list[Any]:
    """One model per query column. Adversarial: ``paired[i]`` holds the retrainings with
    column i's own crafted point (votes on that query). Natural: ``paired[0]`` holds the
    retrainings with the poison, with votes on every query (column i)."""
    from dpaudit.attacks.parametric import estimate_capc_model, estimate_pate_model

    models = []
    for i, col in enumerate(columns):
        pv = paired[0] if natural else paired[i]
        e = i if natural else 0
        before, after = pv.before[:, e], pv.after[:, e]
        if algorithm == "pate":
            models.append(
                estimate_pate_model(
                    preds[:, col, :],
                    before,
                    after,
                    num_classes=num_classes,
                    teachers_per_query=settings.k,
                    neighbour_estimator=settings.neighbour_estimator,
                    confidence_level=settings.confidence_level,
                )
            )
        else:
            assert parties is not None
            j = parties[0] if natural else parties[i]
            models.append(
                estimate_capc_model(
                    preds[:, col, :],
                    before,
                    after,
                    affected_teacher=int(j),
                    num_classes=num_classes,
                    teachers_per_query=settings.k,
                    neighbour_estimator=settings.neighbour_estimator,
                    confidence_level=settings.confidence_level,
                    max_support=settings.max_support,
                )
            )
    return models


def _data_dependent(model: Any, settings: PrivatePredictionSettings, orders, cache: dict):
    from dpaudit.attacks.parametric import PATEHistogramModel, _multinomial_support

    if isinstance(model, PATEHistogramModel):
        key = ("pate", model.probabilities.tobytes(), model.teachers_per_query)
    else:
        key = ("capc", model.teacher_probabilities.tobytes(), model.teachers_per_query)
    if key not in cache:
        if isinstance(model, PATEHistogramModel):
            sup = _multinomial_support(
                model.probabilities, model.teachers_per_query, settings.max_support, 0.5
            )
        else:
            sup = model.support(max_support=settings.max_support)
        dd = mixture_data_dependent_rdp(
            sup.votes,
            sup.probabilities,
            sup.dropped_mass,
            settings.sigma,
            orders,
            q=settings.data_dependent_q,
        )
        cache[key] = (dd, sup.dropped_mass)
    return cache[key]


def audit_private_prediction(
    settings: PrivatePredictionSettings,
    *,
    dataset: Any = None,
    progress: bool = False,
    checkpoint_dir: str | Path | None = None,
) -> PrivatePredictionAudit:
    """Run the end-to-end audit of private prediction (module notes; paper 000 §4–5).

    Everything is validated (settings at construction, sizes against the dataset) before
    any teacher is trained.

    Args:
        settings: :class:`PrivatePredictionSettings`.
        dataset: a :class:`dpaudit.systems.data.Dataset` to use instead of loading
            ``settings.dataset`` (its name must match).
        progress: rich progress bars for training, retraining and sampling.
        checkpoint_dir: directory for the sampling engine's checkpoints (resume an
            interrupted run with the same settings).

    Returns:
        :class:`PrivatePredictionAudit`.

    Raises:
        ValueError: settings inconsistent with the dataset (too many teachers or queries).
        MissingDatasetError: the dataset is not installed (the message says what to do).
        DPAuditError: exact ≤ data-dependent ≤ data-independent failed (a bug).

    Example:
        >>> s = PrivatePredictionSettings(dataset="digits", algorithms=("capc",),
        ...     adversaries=("pois-advq",), teachers=10, sigma=2.0, queries=4,
        ...     experiments=10**6, instantiations=1, retrainings=1)
        >>> res = audit_private_prediction(s)
        >>> r = res.result("capc", "pois-advq")
        >>> bool(np.all(r.exact <= r.data_dependent + 1e-12))
        True
    """
    from dpaudit.attacks.adversaries import (
        ADVERSARY_NAMES,
        choose_party,
        craft,
        get_adversary,
        natural_queries,
    )
    from dpaudit.attacks.parametric import (
        ALGORITHMS,
        FlipEstimate,
        retrain_with_points,
        train_instantiations,
    )
    from dpaudit.bounds import clopper_pearson

    if not isinstance(settings, PrivatePredictionSettings):
        raise TypeError(
            f"settings must be PrivatePredictionSettings, got {type(settings).__name__}"
        )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    ds = _load(settings) if dataset is None else dataset
    if ds.name != settings.dataset:
        raise ValueError(f"dataset must be {settings.dataset!r}, got {ds.name!r}")
    _check_against_data(settings, ds)
    timings["load"] = time.perf_counter() - t0
    orders = settings.order_grid()
    idx = _summary_idx(orders)
    c = ds.num_classes
    sigma = settings.sigma
    root = np.random.SeedSequence(settings.seed)
    s_queries, s_train, s_retrain = block_seeds(root, 3)
    gen = np.random.default_rng(s_queries)
    poison_source = int(gen.integers(ds.num_test))
    q_idx = natural_queries(ds.num_test, settings.queries, rng=gen, exclude=[poison_source])
    rows = np.concatenate([q_idx, [poison_source]])
    X_rows = np.asarray(ds.X_test)[rows]
    y_rows = np.asarray(ds.y_test)[rows]
    nq, ncand = settings.queries, settings.num_candidates
    advs = [get_adversary(a) for a in settings.adversaries]
    results: list[AdversaryAudit] = []
    accuracy: dict[str, float] = {}
    dd_cache: dict[Any, Any] = {}
    # Streams are indexed by the algorithm's and adversary's names (not their position in the
    # settings), so a run of a subset reproduces the same numbers.
    alg_seeds = dict(zip(ALGORITHMS, block_seeds(s_train, len(ALGORITHMS)), strict=True))
    for alg in settings.algorithms:
        t = time.perf_counter()
        inst = train_instantiations(
            ds.X_train,
            ds.y_train,
            X_rows,
            algorithm=alg,
            num_teachers=settings.teachers,
            num_instantiations=settings.instantiations,
            estimator=settings.estimator,
            num_classes=c,
            rng=alg_seeds[alg],
            n_jobs=settings.n_jobs,
            progress=progress,
        )
        timings[f"{alg}/training"] = time.perf_counter() - t
        preds = inst.predictions  # (N_g, nq + 1, m)
        base_votes = np.stack([np.bincount(p, minlength=c) for p in preds[0]])  # H_S, inst. 0
        accuracy[alg] = float(np.mean(base_votes[:nq].argmax(axis=1) == y_rows[:nq]))
        for adv in advs:
            label = f"{alg}/{adv.name}"
            t = time.perf_counter()
            retrain_seed, sample_seed, audit_seed = block_seeds(
                np.random.SeedSequence(
                    s_retrain.entropy,
                    spawn_key=(
                        *s_retrain.spawn_key,
                        ALGORITHMS.index(alg),
                        ADVERSARY_NAMES.index(adv.name),
                    ),
                ),
                3,
            )
            if adv.distinguisher == "adversarial":
                cols = list(range(ncand))
                points = [
                    craft(
                        adv.crafter,
                        X_rows[q],
                        int(y_rows[q]),
                        base_votes[q],
                        source_index=int(rows[q]),
                    )
                    for q in cols
                ]
                parties = (
                    [choose_party(preds[0, q, :], p) for q, p in zip(cols, points, strict=True)]
                    if alg == "capc"
                    else None
                )
                paired = retrain_with_points(
                    inst,
                    np.stack([p.x for p in points]),
                    np.array([p.label for p in points]),
                    num_retrainings=settings.retrainings,
                    teachers=parties,
                    rng=retrain_seed,
                    n_jobs=settings.n_jobs,
                    progress=progress,
                )
                crafted_labels = np.array([p.label for p in points], dtype=np.int64)
            else:
                cols = list(range(nq))
                point = craft(
                    adv.crafter,
                    X_rows[nq],
                    int(y_rows[nq]),
                    base_votes[nq],
                    source_index=poison_source,
                )
                parties = [choose_party(preds[0, nq, :], point)] if alg == "capc" else None
                paired = retrain_with_points(
                    inst,
                    point.x[None, :],
                    np.array([point.label]),
                    num_retrainings=settings.retrainings,
                    eval_rows=[X_rows[:nq]],
                    teachers=parties,
                    rng=retrain_seed,
                    n_jobs=settings.n_jobs,
                    progress=progress,
                )
                crafted_labels = np.full(nq, point.label, dtype=np.int64)
            timings[f"{label}/retraining"] = time.perf_counter() - t
            t = time.perf_counter()
            models = _models_for(
                alg, preds, paired, cols, parties, settings, c, adv.distinguisher == "natural"
            )
            pbar = np.stack([m.output_distributions(sigma) for m in models])  # (n, 2, C)
            exact_q = _exact_rdp(pbar, orders)
            dd_pairs = [_data_dependent(m, settings, orders, dd_cache) for m in models]
            dd_q = np.stack([d for d, _ in dd_pairs])
            dropped = np.array([x for _, x in dd_pairs])
            timings[f"{label}/models"] = time.perf_counter() - t
            ckpt = None
            if checkpoint_dir is not None:
                ckpt = Path(checkpoint_dir) / f"{alg}-{adv.name}.npz"
            block = settings.block_size or _DEFAULT_BLOCK[settings.sampler]
            counts, engine_s = _sample_counts(
                pbar,
                settings.experiments,
                sampler=settings.sampler,
                models=models,
                sigma=sigma,
                rng=sample_seed,
                block_size=block,
                executor=settings.executor,
                workers=settings.workers,
                checkpoint=ckpt,
                progress=progress,
                description=f"sampling {label}",
            )
            timings[f"{label}/sampling"] = engine_s
            t = time.perf_counter()
            audited = audit_distributions(
                counts,
                orders,
                composition=adv.composition,
                num_composed=nq,
                confidence_level=settings.confidence_level,
                rng=audit_seed,
                selection_order=settings.selection_order,
            )
            timings[f"{label}/audit"] = time.perf_counter() - t
            di = nq * orders / sigma**2
            if adv.composition == "repetitions":
                w = audited.worst
                exact = nq * exact_q[w]
                dd = nq * dd_q[w]
                fl = models[w].estimation.flips
            else:
                w = None
                exact = exact_q.sum(axis=0)
                dd = dd_q.sum(axis=0)
                pv = paired[0]
                nflip = int(np.sum(pv.before != pv.after))
                tot = int(pv.before.size)
                fl = FlipEstimate(
                    tot,
                    nflip,
                    nflip / tot,
                    clopper_pearson(nflip, tot, confidence_level=settings.confidence_level),
                    settings.confidence_level,
                )
            audit_curve = audited.curve
            ordering = _ordering(
                audit_curve.epsilons, exact, dd, di, audited.per_query, exact_q, label
            )
            flips_q = np.array([m.estimation.flips.num_flips for m in models], dtype=np.int64)
            retr_q = np.array([m.estimation.flips.num_retrainings for m in models], dtype=np.int64)
            affected = (
                np.array([m.affected_teacher for m in models], dtype=np.int64)
                if alg == "capc"
                else np.full(len(models), -1, dtype=np.int64)
            )
            qres = QueryResults(
                test_indices=rows[cols].astype(np.int64),
                true_labels=y_rows[cols].astype(np.int64),
                crafted_labels=crafted_labels,
                affected_teachers=affected,
                output_probabilities=pbar,
                counts=counts,
                output_sets=audited.output_sets,
                summary_orders=orders[idx],
                audit=audited.per_query[:, idx],
                exact=exact_q[:, idx],
                data_dependent=dd_q[:, idx],
                selection_score=audited.score,
                flips=flips_q,
                retrainings=retr_q,
                dropped_mass=dropped,
            )
            results.append(
                AdversaryAudit(
                    algorithm=alg,
                    adversary=adv.name,
                    crafter=adv.crafter,
                    distinguisher=adv.distinguisher,
                    composition=adv.composition,
                    num_composed=nq,
                    orders=orders,
                    audit=np.asarray(audit_curve.epsilons),
                    exact=exact,
                    data_dependent=dd,
                    data_independent=di,
                    confidence_level=float(audit_curve.confidence_level),
                    per_query_confidence_level=audited.per_query_level,
                    selection="split",
                    worst_query=w,
                    worst_query_test_index=int(rows[w]) if w is not None else None,
                    epsilon=_epsilons(audit_curve, exact, dd, di, orders, settings.delta),
                    ordering=ordering,
                    flips=fl,
                    num_instantiations=settings.instantiations,
                    num_retrainings=settings.retrainings,
                    experiments=settings.experiments,
                    sampler=settings.sampler,
                    engine_seconds=engine_s,
                    queries=qres,
                )
            )
    timings["total"] = time.perf_counter() - t0
    return PrivatePredictionAudit(
        settings=settings,
        dataset=ds.name,
        num_train=int(ds.num_train),
        num_test=int(ds.num_test),
        num_classes=int(c),
        results=tuple(results),
        plurality_accuracy=accuracy,
        timings=timings,
        seed=settings.seed,
    )
