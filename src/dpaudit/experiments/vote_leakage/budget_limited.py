"""Budget-limited vote-histogram extraction (Wang et al. 2022, arXiv:2209.10732, §4.1, Fig. 4a).

The defender is the canonical MNIST PATE of Papernot et al. 2018 (arXiv:1802.08908): Confident
GNMax with T = 200, σ1 = 150, σ2 = 40 and a budget of ε = 1.97 at δ = 1e-5. Two models of it:

* ``"live"`` — a real :class:`~dpaudit.systems.PrivatePredictor` whose data-dependent
  :class:`~dpaudit.accounting.PrivacyLedger` (dpaudit's accountant, conversion of Balle et
  al. 2020, arXiv:1905.09982, Thm 21) refuses the query that could exceed the budget; the
  attacker queries until refused, and abstentions carry no label.
* ``"paper"`` — the model of the paper's released scripts: the number of queries whose
  *expected* cost, converted with the standard conversion (Mironov 2017, arXiv:1702.07476,
  Prop. 3), stays within the budget, every one of them answered by GNMax(σ2).

Streams: histogram ``h``, repetition ``r``: the live attack draws from
``child_seed(seed, 2, h, r, 0)``, the paper model's answers from ``child_seed(seed, 2, h, r, 1)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import child_seed, int_seed
from dpaudit._typing import RngLike
from dpaudit._validate import check_delta, check_positive, check_positive_int, check_real
from dpaudit.attacks import (
    extract_histogram,
    fixed_histogram_interface,
    normalised_l1_error,
    reconstruct_histogram,
    reconstruct_histogram_paper,
)
from dpaudit.data import VoteHistograms
from dpaudit.experiments.vote_leakage.extraction import (
    NATIVE_CONVERSION,
    PAPER_CONVERSION,
    PART_BUDGET,
)
from dpaudit.mechanisms import sample_argmax_counts_exact
from dpaudit.systems import ConfidentGNMax, make_ledger

__all__ = ["BudgetLimitedRecord", "BudgetLimitedResult", "run_budget_limited"]

#: The "paper" budget model counts queries up to this many (checked against the budget).
_PAPER_MAX_QUERIES = 10**9


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
    """Wang et al. 2022 (arXiv:2209.10732) Fig. 4a: the attack on the canonical MNIST PATE.

    Attributes:
        records: one per (histogram, repetition, model).
        mean_error: ``{model: {estimator: mean error}}`` (``"mle"``, ``"paper"``); an attack
            that got no label counts as error 1.
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


def _expected_rdp(votes: np.ndarray, threshold: float, sigma1: float, sigma2: float) -> np.ndarray:
    """Expected per-query Confident-GNMax RDP on DEFAULT_ORDERS (Papernot et al. 2018)."""
    from dpaudit.accounting import confident_gnmax_cost

    cost = confident_gnmax_cost(votes, threshold=threshold, sigma1=sigma1, sigma2=sigma2)
    return np.asarray(cost.expected_rdp, dtype=np.float64)


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
    conversion, :data:`~dpaudit.experiments.vote_leakage.extraction.PAPER_CONVERSION`), on dpaudit's
    default order grid (the released code uses 2, 2.5, …, 99.5 and 200 log-spaced orders to
    1000). ε(k) is non-decreasing in k (a minimum over orders of non-decreasing functions), so
    bisection finds the largest k with ε(k) ≤ budget; every count returned has been checked,
    and when even ``limit`` queries fit the budget ``limit`` is returned.
    """
    per_query = _expected_rdp(votes, threshold, sigma1, sigma2)

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


@dataclasses.dataclass(frozen=True)
class _Defender:
    """The defender's settings, validated."""

    threshold: float
    sigma1: float
    sigma2: float
    budget: float
    delta: float
    batch_size: int


def _live_attack(
    histograms: VoteHistograms, hi: int, r: int, df: _Defender, seed: int
) -> BudgetLimitedRecord:
    """Query a real interface with a budget ledger until it refuses; reconstruct H."""
    truth = histograms.votes[hi].astype(np.float64)
    aggregator = ConfidentGNMax(df.threshold, df.sigma1, df.sigma2)
    ledger = make_ledger(
        aggregator, delta=df.delta, epsilon_budget=df.budget, conversion=NATIVE_CONVERSION
    )
    api = fixed_histogram_interface(histograms.votes[hi], aggregator, ledger=ledger)
    live = extract_histogram(
        api,
        [0.0],
        num_queries=None,
        batch_size=df.batch_size,
        intervals="none",
        rng=child_seed(seed, PART_BUDGET, hi, r, 0),
    )
    err_mle = err_paper = None
    if live.num_answered > 0:
        assert live.votes is not None
        err_mle = normalised_l1_error(truth, live.votes)
        err_paper = normalised_l1_error(
            truth,
            reconstruct_histogram_paper(live.counts, df.sigma2, histograms.num_teachers).votes,
        )
    return BudgetLimitedRecord(
        histogram=histograms.names[hi],
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


def _paper_model_attack(
    histograms: VoteHistograms, hi: int, r: int, df: _Defender, k_paper: int, seed: int
) -> BudgetLimitedRecord:
    """The released scripts' model: ``k_paper`` GNMax(σ2) answers, all labelled."""
    truth = histograms.votes[hi].astype(np.float64)
    n_teachers = histograms.num_teachers
    counts = sample_argmax_counts_exact(
        truth, df.sigma2, k_paper, rng=child_seed(seed, PART_BUDGET, hi, r, 1)
    )
    err_mle = err_paper = None
    if k_paper > 0:
        err_mle = normalised_l1_error(
            truth, reconstruct_histogram(counts, df.sigma2, n_teachers, intervals="none").votes
        )
        err_paper = normalised_l1_error(
            truth, reconstruct_histogram_paper(counts, df.sigma2, n_teachers).votes
        )
    per_query = _expected_rdp(truth, df.threshold, df.sigma1, df.sigma2)
    return BudgetLimitedRecord(
        histogram=histograms.names[hi],
        label=histograms.labels[hi],
        level=histograms.levels[hi],
        repetition=r,
        model="paper",
        num_sent=k_paper,
        num_answered=k_paper,
        num_abstained=0,
        epsilon=_paper_epsilon(per_query, k_paper, df.delta),
        error_mle=err_mle,
        error_paper=err_paper,
        conversion=PAPER_CONVERSION,
    )


def _mean_error(records: list[BudgetLimitedRecord]) -> dict[str, dict[str, float]]:
    """Mean error per model and estimator (no label: error 1)."""
    out: dict[str, dict[str, float]] = {}
    for model in ("live", "paper"):
        rows = [x for x in records if x.model == model]
        out[model] = {
            "mle": float(np.mean([x.error_mle if x.error_mle is not None else 1.0 for x in rows])),
            "paper": float(
                np.mean([x.error_paper if x.error_paper is not None else 1.0 for x in rows])
            ),
        }
    return out


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
    """Budget-limited attack with the canonical MNIST setting (Wang et al. 2022 §4.1, Fig. 4a).

    Two models of the defender (module notes): ``"live"``, a real interface whose ledger
    refuses the query that could exceed the budget; ``"paper"``, the released scripts' count
    of queries whose expected cost stays within it (:func:`_paper_max_queries`), all answered.

    Args:
        histograms: e.g. :func:`dpaudit.data.load_mnist_vote_histograms`.
        threshold, sigma1, sigma2: Confident GNMax (Papernot et al. 2018: 200, 150, 40).
        budget: ε budget at ``delta`` (1.97 at 1e-5).
        delta: δ.
        repetitions: independent attacks per histogram.
        batch_size: queries per ``predict`` call in the live attack.
        rng: seed.
        progress: called after each histogram.

    Returns:
        :class:`BudgetLimitedResult`.

    Raises:
        ValueError: bad settings.

    Example:
        >>> from dpaudit.data import load_mnist_vote_histograms
        >>> hs = load_mnist_vote_histograms().subset(["H1"])
        >>> r = run_budget_limited(hs, budget=0.3, repetitions=1, rng=0)
        >>> [(x.model, x.epsilon <= 0.3) for x in r.records]
        [('live', True), ('paper', True)]
    """
    df = _Defender(
        threshold=check_real("threshold", threshold),
        sigma1=check_positive("sigma1", sigma1),
        sigma2=check_positive("sigma2", sigma2),
        budget=check_positive("budget", budget),
        delta=check_delta(delta, allow_zero=False),
        batch_size=batch_size,
    )
    reps = check_positive_int("repetitions", repetitions)
    seed = int_seed(rng)
    records: list[BudgetLimitedRecord] = []
    for hi in range(len(histograms)):
        truth = histograms.votes[hi].astype(np.float64)
        k_paper = _paper_max_queries(truth, df.threshold, df.sigma1, df.sigma2, df.budget, df.delta)
        for r in range(reps):
            records.append(_live_attack(histograms, hi, r, df, seed))
            records.append(_paper_model_attack(histograms, hi, r, df, k_paper, seed))
        if progress is not None:
            progress(f"budget-limited {histograms.labels[hi]}")
    return BudgetLimitedResult(
        records=tuple(records),
        mean_error=_mean_error(records),
        threshold=df.threshold,
        sigma1=df.sigma1,
        sigma2=df.sigma2,
        budget=df.budget,
        delta=df.delta,
        repetitions=reps,
        seed=seed,
    )
