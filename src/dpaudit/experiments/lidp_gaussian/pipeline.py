"""The Lifted-DP experiment, end to end: auditing a Gaussian sum query with many canaries.

Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023, "Unleashing the Power of Randomization in
Auditing Differentially Private ML" (NeurIPS 2023, arXiv:2305.18447), "Auditing a Gaussian
mechanism". Mechanism: ``M(D) = Σ_{x ∈ D} x + N(0, σ² I_d)`` over vectors of norm ≤ 1
(add/remove one record moves the output by ≤ 1 in L2), so M is μ-GDP with ``μ = 1/σ`` and its
true ε at δ is ``ε(1/σ, δ)`` (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13). Records other
than canaries add a known constant and are left out.

Audit (Pillutla et al. 2023: sum query, canaries uniform on the unit sphere, inner-product
test, as in the authors' ``lidp_auditing/synthetic`` code):

* **k canaries per run (LiDP).** Alternative run: release ``y = Σ_{j≤k} c_j + σZ`` and test
  each included canary with ``t_j = ⟨y, c_j⟩``. Null run: release ``y₀ = Σ_{j<k} c_j + σZ₀``
  (k − 1 of the same canaries, fresh noise) and test k *fresh* canaries ``c′_j`` that were not
  included, ``t_j = ⟨y₀, c′_j⟩``. Outcome ``x_ij = 1{t_ij ≥ τ}``; the bound is
  :func:`dpaudit.bounds.lidp_epsilon` (default ``wilson4``).
* **1 canary per run (baseline).** The same with k = 1 and the Clopper–Pearson bound.

Protocol (as the synthetic experiment of Pillutla et al. 2023):

* **Threshold per sample size.** For every number of runs n on the grid, τ is tuned on n
  separate tuning runs (scaled when ``num_tuning_runs`` differs from ``num_runs``) by
  maximising that audit's own bound over
  :data:`~dpaudit.experiments.lidp_gaussian.protocol.NUM_THRESHOLDS` evenly spaced candidates
  between the smaller 10 % and the larger 90 % quantile of the pooled tuning statistics (the
  authors' candidate window), then applied to the first n audited runs. The audited runs
  never see the choice.
* **Average over repetitions.** The paper plots the mean bound over 25 seeds. Here the whole
  experiment is repeated ``num_repetitions`` times with independent seeded streams, and the
  runs needed are read off the *mean* bound curves: the target is the 1-canary mean bound with
  all ``num_runs`` runs (or a given ``target_epsilon``); an audit needs the smallest n from
  which its mean curve stays at or above the target, interpolated linearly in log n between the
  bracketing grid points. Gain = baseline runs / LiDP runs.
* **Spread.** A 90 % percentile bootstrap over repetitions (resampling whole repetitions,
  recomputing mean curves, target and gain; seeded) gives ``gain_interval``.

A single realisation is not enough: the 1-canary bound at n = 1000 has a standard deviation of
0.1–0.25 in ε across seeds, so "the first grid point from which one noisy curve stays above
another noisy curve's endpoint" can report a gain below 1 when LiDP is in fact better (and
is undefined in a third of seeds). Even the mean-curve gain is a ratio of run counts read off
a flat curve, so noise in the target inflates it slightly on average with few repetitions
(σ = 2, d = 1000, k = 16, n = 1000: about 3.0× with 10 repetitions vs 2.4–2.6× with 30–40);
use 20 or more.

Simulation (:mod:`~dpaudit.experiments.lidp_gaussian.simulation`): everything is rotation
invariant, so each run is simulated exactly in a (k + 1)-dimensional frame, at a cost that does
not grow with d; the joint law of the statistics is exactly that of the d-dimensional
simulation.

Randomness: ``rng`` → one ``SeedSequence`` child for the bootstrap and one per repetition;
each repetition → one child per batch (tuning/audit × baseline/LiDP); each batch draws its
runs in fixed blocks of :data:`~dpaudit.experiments.lidp_gaussian.simulation.RUNS_PER_BLOCK`
with :func:`dpaudit._rng.block_seeds`, so results do not depend on memory-driven chunking,
and repetition r is the same whatever ``num_repetitions`` is.

Result: :func:`run_lidp_gaussian` returns a :class:`dpaudit._results.AuditResult` (workflow
``"lidp-gaussian"``) with one entry per audit — the 1-canary Clopper–Pearson baseline and the
k-canary LiDP interval — each with its valid ε lower bound (repetition 0, all runs), the exact
ε of the mechanism as claim, and the threshold choice recorded as a ``"split"`` selection; the
curves, runs needed and gain are its ``detail`` (:class:`LiDPExperimentResult`). The settings
are one :class:`LiDPGaussianSettings` (:mod:`dpaudit._settings`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    LowerBound,
    ResultMixin,
    SelectionRecord,
    package_versions,
)
from dpaudit._rng import as_seed_sequence, block_seeds, seed_entropy
from dpaudit._typing import ArrayLike, RngLike
from dpaudit.bounds import LiDPResult
from dpaudit.conversions._gdp import gdp_epsilon
from dpaudit.experiments.lidp_gaussian.protocol import (
    NUM_THRESHOLDS,
    _bound,
    _check_grid,
    _gain,
    _gain_interval,
    _tune,
)
from dpaudit.experiments.lidp_gaussian.settings import LiDPGaussianSettings
from dpaudit.experiments.lidp_gaussian.simulation import _statistics

__all__ = [
    "SYSTEM",
    "LiDPExperimentResult",
    "audit_lidp_gaussian",
    "run_lidp_gaussian",
]


@dataclasses.dataclass(frozen=True)
class LiDPExperimentResult(ResultMixin):
    """Outcome of the Gaussian sum-query experiment of Pillutla et al. 2023 (arXiv:2305.18447).

    Attributes:
        sigma: noise standard deviation σ of the sum query.
        dim: dimension d.
        num_canaries: k canaries per run for the LiDP audit.
        num_runs: audited runs per audit and repetition (each run = one alternative + one
            null release).
        num_tuning_runs: separate tuning runs per audit and repetition (τ for n audited runs
            is tuned on the first ``round(n · num_tuning_runs / num_runs)`` of them).
        num_repetitions: independent repetitions of the whole experiment.
        delta: δ of the bounds and of the true ε.
        confidence_level: 1 − β of every bound.
        method: LiDP interval (``wilson1``/``wilson2``/``wilson4``); the baseline uses CP.
        variance: fourth-order variance form passed to :func:`~dpaudit.bounds.lidp_epsilon`.
        true_epsilon: ε(μ = 1/σ, δ) of the mechanism (Dong–Roth–Su Cor. 2.13).
        run_grid: numbers of runs n at which both bounds are evaluated (prefixes of the runs).
        epsilon_baseline: mean over repetitions of the 1-canary (Clopper–Pearson) ε lower
            bound at each n.
        epsilon_lidp: mean over repetitions of the k-canary LiDP ε lower bound at each n.
        epsilon_baseline_by_repetition: (repetitions × grid) 1-canary bounds.
        epsilon_lidp_by_repetition: (repetitions × grid) LiDP bounds.
        thresholds_baseline: (repetitions × grid) τ tuned for the 1-canary audit.
        thresholds_lidp: (repetitions × grid) τ tuned for the k-canary audit.
        target_epsilon: the ε both audits must reach: the given ``target_epsilon`` or, by
            default, the mean 1-canary bound with all ``num_runs`` runs.
        runs_needed_baseline: smallest n from which the mean 1-canary curve stays at or above
            the target (log-linear interpolation between grid points; ``run_grid[0]`` if it is
            above everywhere; None if it ends below or the target is 0).
        runs_needed_lidp: the same for the mean LiDP curve.
        sample_complexity_gain: runs_needed_baseline / runs_needed_lidp (None if undefined).
            When the LiDP curve is above the target at ``run_grid[0]`` this is a lower bound.
        gain_interval: 90 % percentile-bootstrap interval of the gain over repetitions
            (None with one repetition or an undefined gain); resamples where the LiDP curve
            misses the target count as gain 0.
        baseline: the 1-canary :class:`~dpaudit.bounds.LiDPResult` of repetition 0, all runs.
        lidp: the LiDP :class:`~dpaudit.bounds.LiDPResult` of repetition 0, all runs.
        selection: ``"split"`` — τ was chosen on runs disjoint from the audited ones.
        seed: integer seed when known.
    """

    sigma: float
    dim: int
    num_canaries: int
    num_runs: int
    num_tuning_runs: int
    num_repetitions: int
    delta: float
    confidence_level: float
    method: str
    variance: str
    true_epsilon: float
    run_grid: np.ndarray
    epsilon_baseline: np.ndarray
    epsilon_lidp: np.ndarray
    epsilon_baseline_by_repetition: np.ndarray
    epsilon_lidp_by_repetition: np.ndarray
    thresholds_baseline: np.ndarray
    thresholds_lidp: np.ndarray
    target_epsilon: float
    runs_needed_baseline: float | None
    runs_needed_lidp: float | None
    sample_complexity_gain: float | None
    gain_interval: tuple[float, float] | None
    baseline: LiDPResult
    lidp: LiDPResult
    selection: str = "split"
    seed: int | None = None


def _audit_curve(
    seeds: tuple[np.random.SeedSequence, np.random.SeedSequence],
    grid: np.ndarray,
    n_tune: int,
    sigma: float,
    dim: int,
    k: int,
    method: str,
    delta: float,
    level: float,
    variance: str,
) -> tuple[np.ndarray, np.ndarray, LiDPResult]:
    """One repetition of one audit: τ tuned per grid point, bound on the audited prefix."""
    n = int(grid[-1])
    t_alt, t_null = _statistics(seeds[0], n_tune, sigma, dim, k)
    alt, null = _statistics(seeds[1], n, sigma, dim, k)
    eps = np.empty(grid.size)
    taus = np.empty(grid.size)
    last = None
    for i, g in enumerate(grid):
        g_tune = max(1, round(int(g) * n_tune / n))
        taus[i] = _tune(t_alt[:g_tune], t_null[:g_tune], method, delta, level, variance)
        last = _bound(alt[:g], null[:g], taus[i], method, delta, level, variance)
        eps[i] = last.epsilon
    assert last is not None  # the grid always holds n
    return eps, taus, last


def _experiment(s: LiDPGaussianSettings, rng: RngLike) -> LiDPExperimentResult:
    """Every repetition of both audits, mean curves, runs needed and the gain's spread."""
    grid = _check_grid(s.run_grid, s.num_runs)
    n_tune, reps = s.tuning_runs, s.num_repetitions
    common = (grid, n_tune, s.sigma, s.dim)
    stats = (s.delta, s.confidence_level, s.variance)
    boot_seed, *rep_seeds = block_seeds(as_seed_sequence(rng), reps + 1)
    eps_b, eps_l = np.empty((reps, grid.size)), np.empty((reps, grid.size))
    tau_b, tau_l = np.empty((reps, grid.size)), np.empty((reps, grid.size))
    first: list[LiDPResult] = []
    for r, rep_seed in enumerate(rep_seeds):
        s_tune_base, s_tune_lidp, s_base, s_lidp = block_seeds(rep_seed, 4)
        base_seeds, lidp_seeds = (s_tune_base, s_base), (s_tune_lidp, s_lidp)
        eps_b[r], tau_b[r], res_b = _audit_curve(base_seeds, *common, 1, "clopper-pearson", *stats)
        eps_l[r], tau_l[r], res_l = _audit_curve(
            lidp_seeds, *common, s.num_canaries, s.method, *stats
        )
        if r == 0:
            first = [res_b, res_l]
    mean_b, mean_l = eps_b.mean(axis=0), eps_l.mean(axis=0)
    tgt, need_base, need_lidp, gain = _gain(grid, mean_b, mean_l, s.target_epsilon)
    interval = (
        None if gain is None else _gain_interval(boot_seed, grid, eps_b, eps_l, s.target_epsilon)
    )
    return LiDPExperimentResult(
        sigma=s.sigma,
        dim=s.dim,
        num_canaries=s.num_canaries,
        num_runs=s.num_runs,
        num_tuning_runs=n_tune,
        num_repetitions=reps,
        delta=s.delta,
        confidence_level=s.confidence_level,
        method=s.method,
        variance=s.variance,
        true_epsilon=gdp_epsilon(1.0 / s.sigma, s.delta),
        run_grid=grid,
        epsilon_baseline=mean_b,
        epsilon_lidp=mean_l,
        epsilon_baseline_by_repetition=eps_b,
        epsilon_lidp_by_repetition=eps_l,
        thresholds_baseline=tau_b,
        thresholds_lidp=tau_l,
        target_epsilon=tgt,
        runs_needed_baseline=need_base,
        runs_needed_lidp=need_lidp,
        sample_complexity_gain=gain,
        gain_interval=interval,
        baseline=first[0],
        lidp=first[1],
        seed=seed_entropy(rng),
    )


#: The system audited: the sum query with Gaussian noise.
SYSTEM = "gaussian-sum-query"


def _entries(r: LiDPExperimentResult) -> tuple[AuditEntry, ...]:
    """One entry per audit: the valid bound of repetition 0 next to the exact ε."""
    exact = Claim(
        analysis="exact",
        source=(
            f"Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13: the sum query with "
            f"N(0, σ² I) noise, σ = {r.sigma:g}, is (1/σ)-GDP"
        ),
        epsilon=r.true_epsilon,
        delta=r.delta,
    )
    tuned = SelectionRecord(
        choice="threshold τ",
        strategy="split",
        detail=(
            f"tuned for every n on {r.num_tuning_runs} separate runs per audit and repetition "
            f"(the audit's own bound maximised over {NUM_THRESHOLDS} candidates in the 10–90 % "
            "quantile window), then applied to the audited runs"
        ),
    )
    audits = (
        ("1 canary per run", r.baseline, "Clopper–Pearson, k = 1 (baseline)", r.epsilon_baseline),
        (
            f"{r.num_canaries} canaries per run",
            r.lidp,
            f"Lifted-DP {r.method} interval, k = {r.num_canaries} (Pillutla et al. 2023, "
            "arXiv:2305.18447)",
            r.epsilon_lidp,
        ),
    )
    return tuple(
        AuditEntry(
            system=SYSTEM,
            adversary=adversary,
            lower_bound=LowerBound(
                method=method,
                confidence_level=res.confidence_level,
                epsilon=res.epsilon,
                delta=res.delta,
                interval=res.confidence_interval,
                note=(
                    f"repetition 0 with all {r.num_runs} runs; the mean over "
                    f"{r.num_repetitions} repetitions ({float(mean[-1]):.4g}) is a summary, "
                    "not itself a bound at this confidence level"
                ),
            ),
            claims=(exact,),
            exact=exact,
            selections=(tuned,),
            detail=res,
        )
        for adversary, res, method, mean in audits
    )


def run_lidp_gaussian(
    sigma: float,
    dim: int,
    num_canaries: int,
    num_runs: int,
    *,
    num_repetitions: int = 20,
    num_tuning_runs: int | None = None,
    target_epsilon: float | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    method: str = "wilson4",
    variance: str = "reference",
    run_grid: ArrayLike | None = None,
    rng: RngLike = None,
) -> AuditResult:
    """Run the Gaussian-mechanism experiment: 1 canary per run vs k canaries per run.

    Pillutla et al. 2023 (arXiv:2305.18447), "Auditing a Gaussian mechanism". See the module
    docstring for the mechanism, the statistics and the protocol (τ tuned per sample size on
    separate runs; runs needed read off mean curves over repetitions; bootstrap spread of the
    gain).

    Args:
        sigma: noise standard deviation σ > 0 of the sum query (paper: σ² = 4.62 ↔ ε = 2).
        dim: dimension d ≥ 1 (paper: up to 10⁶; the cost does not depend on d).
        num_canaries: k ≥ 1 canaries per run for the LiDP audit (≥ 4 for ``wilson4``).
        num_runs: audited runs per audit and repetition, n ≥ 10 (``settings.MIN_RUNS``).
        num_repetitions: independent repetitions averaged (paper: 25).
        num_tuning_runs: separate tuning runs per audit and repetition (default ``num_runs``).
        target_epsilon: ε both audits must reach (default: the mean 1-canary bound with all
            ``num_runs`` runs).
        delta: δ in (0, 1) for the bounds and the true ε.
        confidence_level: 1 − β in (0, 1).
        method: LiDP interval, ``"wilson1"``, ``"wilson2"`` or ``"wilson4"``.
        variance: ``"reference"`` or ``"exact"`` fourth-order form (``wilson4`` only).
        run_grid: run counts at which to evaluate both bounds (default: 14 geometric points
            from ``max(10, num_runs/64)`` to ``num_runs``; ``num_runs`` is always included).
        rng: seed or generator (keyword-only).

    Returns:
        :class:`~dpaudit._results.AuditResult` (workflow ``"lidp-gaussian"``): entries
        ``"1 canary per run"`` and ``"k canaries per run"`` (system ``"gaussian-sum-query"``),
        settings :class:`LiDPGaussianSettings`, detail :class:`LiDPExperimentResult`.

    Raises:
        TypeError, ValueError: bad σ, d, k, n, repetitions, target, δ, level, method,
            variance or grid.

    Example:
        >>> res = run_lidp_gaussian(2.0, 1000, 8, 200, num_repetitions=2, rng=0)
        >>> r = res.detail
        >>> bool(r.true_epsilon > r.epsilon_lidp[-1] > r.epsilon_baseline[-1])
        True
        >>> lidp = res.entry("gaussian-sum-query", "8 canaries per run")
        >>> lidp.lower_bound.epsilon == r.lidp.epsilon, lidp.gap.refutes_claim
        (True, False)
    """
    settings = LiDPGaussianSettings(
        sigma=sigma,
        dim=dim,
        num_canaries=num_canaries,
        num_runs=num_runs,
        num_repetitions=num_repetitions,
        num_tuning_runs=num_tuning_runs,
        target_epsilon=target_epsilon,
        delta=delta,
        confidence_level=confidence_level,
        method=method,
        variance=variance,
        run_grid=run_grid,
    )
    return _audit(settings, rng)


def audit_lidp_gaussian(
    settings: LiDPGaussianSettings,
    *,
    data: Any = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """:func:`run_lidp_gaussian` from settings (the ``lidp-gaussian`` workflow's entry).

    Args:
        settings: :class:`LiDPGaussianSettings`; its ``seed`` keys every stream.
        data, progress, checkpoint: unused (the runs are simulated in seconds); accepted for
            the workflow signature.

    Raises:
        TypeError: ``settings`` is not a :class:`LiDPGaussianSettings`.
    """
    if not isinstance(settings, LiDPGaussianSettings):
        raise TypeError(f"settings must be LiDPGaussianSettings, got {type(settings).__name__}")
    return _audit(settings, settings.seed)


def _audit(settings: LiDPGaussianSettings, rng: RngLike) -> AuditResult:
    """Both audits of ``settings`` with the streams of ``rng``, as an AuditResult."""
    t0 = time.perf_counter()
    result = _experiment(settings, rng)
    return AuditResult(
        workflow="lidp-gaussian",
        entries=_entries(result),
        settings=settings,
        seed=result.seed,
        timings={"total": time.perf_counter() - t0},
        versions=package_versions(),
        detail=result,
        note=(
            "Valid ε lower bounds of one repetition with all runs next to the mechanism's "
            "exact ε; the mean curves over repetitions, the runs each audit needs and the "
            "sample-complexity gain are in detail."
        ),
    )
