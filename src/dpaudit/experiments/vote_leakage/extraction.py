"""Query-limited vote-histogram extraction (Wang et al. 2022, arXiv:2209.10732, §4.1–§4.2).

The attack of Wang, Schuster, Shumailov, Lie & Papernot 2022, "In Differential Privacy, There
is Truth: On Vote Leakage in Ensemble Private Learning" (arXiv:2209.10732), Fig. 6: the
attacker sends the same query M times to a GNMax interface (Papernot et al. 2018,
arXiv:1802.08908) and reconstructs the teachers' vote histogram H from the answer counts.

* :func:`simulate_extraction` — one histogram: M answers drawn exactly
  (``counts ~ Multinomial(M, Q(H))`` with the exact noisy-argmax probabilities,
  :func:`dpaudit.mechanisms.sample_argmax_counts_exact`), reconstructed by
  :func:`dpaudit.attacks.reconstruct_histogram`; error = normalised L1 (§4.1); the privacy
  cost the defender's accountant charges for the M queries.
* :func:`run_query_limited` — every histogram at every σ, with the maximum-likelihood, the L2
  and the paper's own estimator, and two costs per cell: plain GNMax(σ) under dpaudit's
  accountant (Balle et al. 2020 conversion) and the paper's cost dots (Confident GNMax,
  expected cost, the conversion of its released code).

Streams: cell (histogram ``h``, σ index ``s``, repetition ``r``) draws its answers from
``child_seed(seed, 1, h, s, r)``; the bootstrap of estimator ``e`` uses
``child_seed(cell, e)`` (:func:`dpaudit._rng.child_seed`), so any number can be recomputed
on its own.

**RDP → (ε, δ).** Whatever reproduces the paper's accountant uses the conversion of its
released code (Papernot et al.'s ``privacy_analysis``: ``ε = min_λ ρ(λ) + log(1/δ)/(λ − 1)``,
Mironov 2017, arXiv:1702.07476, Prop. 3: :data:`PAPER_CONVERSION`); dpaudit's own ledger and
GNMax costs use the tighter conversion of Balle et al. 2020 (arXiv:1905.09982, Thm 21:
:data:`NATIVE_CONVERSION`). Each record names the one it used.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import child_seed, int_seed, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_positive,
    check_positive_int,
    check_votes,
)
from dpaudit.attacks import (
    ExtractionCost,
    HistogramReconstruction,
    extraction_privacy_cost,
    normalised_l1_error,
    reconstruct_histogram,
    reconstruct_histogram_paper,
)
from dpaudit.data import CONSENSUS_LEVELS, VoteHistograms
from dpaudit.mechanisms import sample_argmax_counts_exact

__all__ = [
    "ESTIMATORS",
    "NATIVE_CONVERSION",
    "PAPER_CONVERSION",
    "CostRecord",
    "ExtractionRecord",
    "QueryLimitedResult",
    "SimulatedExtraction",
    "run_query_limited",
    "simulate_extraction",
]

#: Reconstructions compared: maximum likelihood, L2 objective, the paper's own procedure.
ESTIMATORS = ("mle", "l2", "paper")
#: The conversion of the paper's released accountant (Papernot et al. ``privacy_analysis``).
PAPER_CONVERSION = "standard"
#: dpaudit's own ledger and GNMax costs.
NATIVE_CONVERSION = "balle2020"
#: First key of every random stream of the vote-leakage parts (one part, one key).
PART_QUERY, PART_BUDGET, PART_SWEEP, PART_ATTRIBUTE = 1, 2, 3, 4


# --------------------------------------------------------------------------- one histogram


@dataclasses.dataclass(frozen=True, eq=False)
class SimulatedExtraction(ResultMixin):
    """One simulated query-limited extraction (what ``dpaudit attack extract-histogram`` prints).

    Attributes:
        true_votes: H.
        reconstruction: the estimate with intervals.
        error: normalised L1 error of the estimate (Wang et al. 2022, arXiv:2209.10732, §4.1).
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
        "answers ~ Multinomial(M, Q(H)) with the exact noisy-argmax probabilities Q "
        "(Chadha et al. 2024, arXiv:2402.09403, Eq. 4); reconstruction by "
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
    num_bootstrap: int = 200,
    rng: RngLike = None,
) -> SimulatedExtraction:
    """Simulate M answers of a GNMax interface for histogram H and reconstruct H from them.

    Args:
        votes: the true integer histogram H (C,).
        sigma: GNMax σ > 0.
        num_queries: M ≥ 1.
        num_teachers: N; it must equal Σ H (the default), since each teacher votes once.
        objective, intervals, confidence_level, round_to_integers: see
            :func:`dpaudit.attacks.reconstruct_histogram`.
        delta: δ of the privacy cost.
        num_bootstrap: resamples of ``intervals="bootstrap"``.
        rng: seed of the simulated answers; the bootstrap (``intervals="bootstrap"``) draws
            from its child stream (key 0, :func:`dpaudit._rng.child_seed`), so a seed fixes
            both.

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
    n_teachers = int(h.sum())
    if num_teachers is not None and check_positive_int("num_teachers", num_teachers) != n_teachers:
        raise ValueError(
            f"num_teachers must equal the number of votes in votes ({n_teachers}: each teacher "
            f"casts one vote), got {num_teachers}"
        )
    counts = sample_argmax_counts_exact(h, s, m, rng=rng)
    rec = reconstruct_histogram(
        counts,
        s,
        n_teachers,
        objective=objective,
        intervals=intervals,
        confidence_level=confidence_level,
        round_to_integers=round_to_integers,
        num_bootstrap=num_bootstrap,
        rng=child_seed(rng, 0),
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
    num_bootstrap: int = 200,
) -> tuple[np.ndarray, tuple[Any, ...] | None]:
    if estimator == "paper":
        return reconstruct_histogram_paper(counts, sigma, num_teachers).votes, None
    rec = reconstruct_histogram(
        counts, sigma, num_teachers, objective=estimator, intervals=intervals,
        num_bootstrap=num_bootstrap, rng=rng,
    )  # fmt: skip
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
    """Wang et al. 2022 (arXiv:2209.10732) Fig. 6: errors and costs of the query-limited attack.

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
    method: str = (
        "Wang et al. 2022 (arXiv:2209.10732) §4.1 query-limited attack, "
        "answers ~ Multinomial(M, Q(H))"
    )


def sigma_key(sigma: float) -> str:
    """The key of σ in per-σ mappings (``f"{σ:g}"``: ``"40"``, ``"2.5"``)."""
    return f"{sigma:g}"


def _cost_record(
    histograms: VoteHistograms,
    hi: int,
    sigma: float,
    num_queries: int,
    delta: float,
    paper_threshold: float,
    paper_sigma1: float,
) -> CostRecord:
    """Both charges of one (histogram, σ) cell: GNMax(σ) and the paper's cost dots."""
    truth = histograms.votes[hi].astype(np.float64)
    gn = extraction_privacy_cost(
        truth, sigma=sigma, num_queries=num_queries, delta=delta, conversion=NATIVE_CONVERSION
    )
    pp = extraction_privacy_cost(
        truth,
        sigma=sigma,
        num_queries=num_queries,
        threshold=paper_threshold,
        sigma1=paper_sigma1,
        accounting="expected",
        delta=delta,
        conversion=PAPER_CONVERSION,
    )
    return CostRecord(
        histogram=histograms.names[hi],
        label=histograms.labels[hi],
        level=histograms.levels[hi],
        sigma=sigma,
        num_queries=num_queries,
        epsilon_gnmax_data_dependent=gn.epsilon_data_dependent,
        epsilon_gnmax_data_independent=gn.epsilon_data_independent,
        epsilon_paper_data_dependent=pp.epsilon_data_dependent,
        epsilon_paper_data_independent=pp.epsilon_data_independent,
        delta=delta,
    )


def _cell_records(
    histograms: VoteHistograms,
    hi: int,
    sigma: float,
    repetition: int,
    cell: np.random.SeedSequence,
    num_queries: int,
    estimators: tuple[str, ...],
    intervals: str,
    num_bootstrap: int = 200,
) -> list[ExtractionRecord]:
    """One answer set of one (histogram, σ) cell, reconstructed by every estimator."""
    truth = histograms.votes[hi].astype(np.float64)
    counts = sample_argmax_counts_exact(truth, sigma, num_queries, rng=cell)
    out = []
    for e in estimators:
        t0 = time.perf_counter()
        # the bootstrap of estimator e: child e of the cell's stream
        votes, ivs = _estimate(
            e,
            counts,
            sigma,
            histograms.num_teachers,
            intervals,
            child_seed(cell, ESTIMATORS.index(e)),
            num_bootstrap,
        )
        out.append(
            ExtractionRecord(
                histogram=histograms.names[hi],
                label=histograms.labels[hi],
                level=histograms.levels[hi],
                sigma=sigma,
                repetition=repetition,
                estimator=e,
                num_queries=num_queries,
                error=normalised_l1_error(truth, votes),
                interval_coverage=_coverage(ivs, truth),
                seconds=time.perf_counter() - t0,
            )
        )
    return out


def _mean_errors(
    records: Sequence[ExtractionRecord], estimators: tuple[str, ...], sigmas: tuple[float, ...]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]:
    """Mean error per (estimator, σ), overall and per consensus level."""
    mean_error: dict[str, dict[str, float]] = {}
    by_level: dict[str, dict[str, dict[str, float]]] = {}
    for e in estimators:
        mean_error[e] = {}
        by_level[e] = {}
        for s in sigmas:
            cell = [x for x in records if x.estimator == e and x.sigma == s]
            mean_error[e][sigma_key(s)] = float(np.mean([x.error for x in cell]))
            by_level[e][sigma_key(s)] = {
                lvl: float(np.mean([x.error for x in cell if x.level == lvl]))
                for lvl in CONSENSUS_LEVELS
                if any(x.level == lvl for x in cell)
            }
    return mean_error, by_level


def _mle_below_l2(records: Sequence[ExtractionRecord]) -> float:
    """Fraction of (histogram, σ, repetition) cells where the MLE's error is below L2's."""
    pairs: dict[tuple[str, float, int], dict[str, float]] = {}
    for x in records:
        if x.estimator in ("mle", "l2"):
            pairs.setdefault((x.histogram, x.sigma, x.repetition), {})[x.estimator] = x.error
    return float(np.mean([p["mle"] < p["l2"] for p in pairs.values()]))


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
    num_bootstrap: int = 200,
    rng: RngLike = 0,
    progress: Callable[[str], None] | None = None,
) -> QueryLimitedResult:
    """The query-limited attack on every histogram at every σ (Wang et al. 2022 Fig. 6).

    Args:
        histograms: e.g. :func:`dpaudit.data.load_mnist_vote_histograms`.
        sigmas: GNMax noise levels.
        num_queries: M answers per histogram and σ.
        repetitions: independent answer sets per cell (the paper ran one).
        estimators: among ``"mle"``, ``"l2"``, ``"paper"``.
        intervals: intervals of the MLE/L2 estimates (``"profile"``, ``"bootstrap"``,
            ``"none"``); their per-class coverage of H is recorded.
        paper_threshold, paper_sigma1: the Confident-GNMax parameters of the paper's cost dots.
        delta: δ of the costs.
        num_bootstrap: resamples of ``intervals="bootstrap"``.
        rng: seed (an int is recorded; streams are keyed per cell).
        progress: called with a short message after each cell.

    Returns:
        :class:`QueryLimitedResult`.

    Raises:
        ValueError: bad settings.

    Example:
        >>> from dpaudit.data import load_mnist_vote_histograms
        >>> hs = load_mnist_vote_histograms().subset(["H1"])
        >>> r = run_query_limited(hs, sigmas=[40], repetitions=1, estimators=["mle"],
        ...                       intervals="none", rng=0)
        >>> r.mean_error["mle"]["40"] < 0.1
        True
    """
    sig = tuple(check_positive("sigmas", s) for s in sigmas)
    m = check_positive_int("num_queries", num_queries)
    reps = check_positive_int("repetitions", repetitions)
    est = tuple(check_choice("estimators", e, ESTIMATORS) for e in estimators)
    if not sig or not est:
        raise ValueError("sigmas and estimators must not be empty")
    d = check_delta(delta, allow_zero=False)
    check_positive_int("num_bootstrap", num_bootstrap)
    seed = int_seed(rng)
    records: list[ExtractionRecord] = []
    costs: list[CostRecord] = []
    for hi in range(len(histograms)):
        for si, s in enumerate(sig):
            costs.append(_cost_record(histograms, hi, s, m, d, paper_threshold, paper_sigma1))
            for r in range(reps):
                cell = child_seed(seed, PART_QUERY, hi, si, r)
                records.extend(_cell_records(histograms, hi, s, r, cell, m, est, intervals,
                                             num_bootstrap))  # fmt: skip
            if progress is not None:
                progress(f"query-limited {histograms.labels[hi]} sigma={s:g}")
    mean_error, by_level = _mean_errors(records, est, sig)
    return QueryLimitedResult(
        records=tuple(records),
        costs=tuple(costs),
        mean_error=mean_error,
        mean_error_by_level=by_level,
        mle_below_l2=_mle_below_l2(records) if "mle" in est and "l2" in est else None,
        sigmas=sig,
        num_queries=m,
        repetitions=reps,
        estimators=est,
        delta=d,
        seed=seed,
    )
