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
  maximising that audit's own bound over :data:`NUM_THRESHOLDS` evenly spaced candidates
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

Simulation. Everything is rotation invariant, so each run is simulated exactly in a
(k + 1)-dimensional frame: the Gram–Schmidt coordinates of k + 1 i.i.d. ``N(0, I_d)`` vectors
(the k included canaries before normalisation and Z) form a lower-triangular matrix with
``N(0, 1)`` entries below the diagonal and ``χ_{d−i}`` on it (Bartlett decomposition), so the
cost does not grow with d (d = 10⁶ as in the paper is cheap); for d ≤ k the vectors are drawn
in ℝ^d directly. A fresh canary is independent of ``y₀``, so ``⟨y₀, c′⟩ = ‖y₀‖·u`` with u the
first coordinate of a uniform unit vector, ``u = N/√(N² + χ²_{d−1})``; and
``‖y₀‖² = (‖s‖ + σN₀)² + σ²χ²_{d−1}`` with ``s = Σ_{j<k} c_j``. The joint law of the statistics
is exactly that of the d-dimensional simulation.

Randomness: ``rng`` → one ``SeedSequence`` child for the bootstrap and one per repetition;
each repetition → one child per batch (tuning/audit × baseline/LiDP); each batch draws its
runs in fixed blocks of :data:`RUNS_PER_BLOCK` with :func:`dpaudit._rng.block_seeds`, so
results do not depend on memory-driven chunking, and repetition r is the same whatever
``num_repetitions`` is.

Result: :func:`run_lidp_gaussian` returns a :class:`dpaudit._results.AuditResult` (workflow
``"lidp-gaussian"``) with one entry per audit — the 1-canary Clopper–Pearson baseline and the
k-canary LiDP interval — each with its valid ε lower bound (repetition 0, all runs), the exact
ε of the mechanism as claim, and the threshold choice recorded as a ``"split"`` selection; the
curves, runs needed and gain are its ``detail`` (:class:`LiDPExperimentResult`). The settings
are one :class:`LiDPGaussianSettings` (:mod:`dpaudit._settings`).
"""

from __future__ import annotations

import dataclasses
import math
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
from dpaudit._settings import option
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.bounds import LiDPResult, lidp_epsilon
from dpaudit.conversions._gdp import gdp_epsilon

__all__ = [
    "NUM_THRESHOLDS",
    "RUNS_PER_BLOCK",
    "SYSTEM",
    "GaussianCanaryStatistics",
    "LiDPExperimentResult",
    "LiDPGaussianSettings",
    "audit_lidp_gaussian",
    "gain_interval",
    "lidp_gaussian_statistics",
    "resolve_run_grid",
    "run_lidp_gaussian",
    "sample_complexity_gain",
    "threshold_bound",
    "tune_threshold",
]

#: Runs drawn per random-stream block (fixed so results are reproducible).
RUNS_PER_BLOCK = 16
#: Candidate thresholds per tuning (evenly spaced in the authors' 10 %–90 % quantile window).
NUM_THRESHOLDS = 48
_METHODS = ("wilson1", "wilson2", "wilson4")
_VARIANCES = ("reference", "exact")
_NUM_BOOTSTRAP = 1000
_GAIN_INTERVAL_LEVEL = 0.90


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


def _block_statistics(
    gen: np.random.Generator, runs: int, sigma: float, dim: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Alternative and null inner-product statistics of ``runs`` runs, each (runs, k).

    Exact low-dimensional simulation (module docstring): rows of ``coords`` are the
    coordinates of the k unnormalised included canaries and of Z in an orthonormal frame.
    """
    p = k + 1
    if dim >= p:  # Bartlett: Gram–Schmidt coordinates of p i.i.d. N(0, I_d) vectors
        coords = np.zeros((runs, p, p))
        below = np.tril_indices(p, -1)
        coords[:, below[0], below[1]] = gen.standard_normal((runs, below[0].size))
        diag = np.arange(p)
        coords[:, diag, diag] = np.sqrt(gen.chisquare(dim - diag, size=(runs, p)))
    else:
        coords = gen.standard_normal((runs, p, dim))
    included = coords[:, :k] / np.linalg.norm(coords[:, :k], axis=-1, keepdims=True)
    y = included.sum(axis=1) + sigma * coords[:, k]
    alt = np.einsum("rkp,rp->rk", included, y)
    # Null release y₀ = s + σZ₀ with s = Σ_{j<k} c_j: split Z₀ along s and its complement.
    s_norm = np.linalg.norm(included[:, : k - 1].sum(axis=1), axis=-1)
    along = gen.standard_normal(runs)
    rest = gen.chisquare(dim - 1, size=runs) if dim > 1 else np.zeros(runs)
    y0_norm = np.sqrt((s_norm + sigma * along) ** 2 + sigma**2 * rest)
    # Fresh canaries: first coordinate of a uniform unit vector, independent of y₀.
    first = gen.standard_normal((runs, k))
    rest_fresh = gen.chisquare(dim - 1, size=(runs, k)) if dim > 1 else np.zeros((runs, k))
    null = y0_norm[:, None] * first / np.sqrt(first**2 + rest_fresh)
    return alt, null


def _statistics(
    seed: np.random.SeedSequence, runs: int, sigma: float, dim: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    num_blocks = -(-runs // RUNS_PER_BLOCK)
    alts, nulls = [], []
    for b, child in enumerate(block_seeds(seed, num_blocks)):
        size = min(RUNS_PER_BLOCK, runs - b * RUNS_PER_BLOCK)
        a, n = _block_statistics(np.random.default_rng(child), size, sigma, dim, k)
        alts.append(a)
        nulls.append(n)
    return np.concatenate(alts), np.concatenate(nulls)


@dataclasses.dataclass(frozen=True)
class GaussianCanaryStatistics(ResultMixin):
    """Inner-product statistics of the Gaussian sum-query audit.

    Attributes:
        alternative: (n × k) ⟨y, c_j⟩ for the k canaries included in each alternative run.
        null: (n × k) ⟨y₀, c′_j⟩ for k fresh canaries in each null run (k − 1 included).
        sigma: noise standard deviation σ.
        dim: dimension d.
        seed: integer seed when known.
    """

    alternative: np.ndarray
    null: np.ndarray
    sigma: float
    dim: int
    seed: int | None = None


def lidp_gaussian_statistics(
    sigma: float, dim: int, num_canaries: int, num_runs: int, *, rng: RngLike = None
) -> GaussianCanaryStatistics:
    """Simulate the statistics of the Gaussian sum-query audit (module docstring).

    The simulation is exact in law and costs O(k²) per run whatever d is.

    Args:
        sigma: noise standard deviation σ > 0.
        dim: dimension d ≥ 1.
        num_canaries: k ≥ 1 canaries per run.
        num_runs: number of runs n ≥ 1.
        rng: seed or generator (keyword-only).

    Returns:
        :class:`GaussianCanaryStatistics` with two (n × k) arrays.

    Raises:
        TypeError, ValueError: non-positive σ, d, k or n.

    Example:
        >>> stats = lidp_gaussian_statistics(1.0, 16, 4, 8, rng=0)
        >>> stats.alternative.shape, stats.null.shape
        ((8, 4), (8, 4))
    """
    sigma = check_positive("sigma", sigma)
    dim = check_positive_int("dim", dim)
    k = check_positive_int("num_canaries", num_canaries)
    n = check_positive_int("num_runs", num_runs)
    alt, null = _statistics(as_seed_sequence(rng), n, sigma, dim, k)
    return GaussianCanaryStatistics(alt, null, sigma, dim, seed_entropy(rng))


def _bound(
    alt: np.ndarray,
    null: np.ndarray,
    tau: float,
    method: str,
    delta: float,
    level: float,
    variance: str,
) -> LiDPResult:
    return lidp_epsilon(
        (alt >= tau).astype(np.float64),
        (null >= tau).astype(np.float64),
        delta=delta,
        confidence_level=level,
        method=method,
        variance=variance,
    )


def _tune(
    alt: np.ndarray,
    null: np.ndarray,
    method: str,
    delta: float,
    level: float,
    variance: str,
    num: int = NUM_THRESHOLDS,
) -> float:
    """τ maximising the audit's own bound on tuning runs (ties: the smallest τ).

    Candidates: :data:`NUM_THRESHOLDS` evenly spaced values between the smaller of the 10 %
    quantiles and the larger of the 90 % quantiles of the two sets of statistics (the window
    of the authors' synthetic experiment). Staying out of the extreme tail keeps the choice
    from chasing a lucky handful of false positives in the tuning runs.
    """
    lo = min(np.quantile(alt, 0.1), np.quantile(null, 0.1))
    hi = max(np.quantile(alt, 0.9), np.quantile(null, 0.9))
    candidates = np.linspace(lo, hi, num)
    eps = np.array(
        [_bound(alt, null, float(t), method, delta, level, variance).epsilon for t in candidates]
    )
    return float(candidates[int(np.argmax(eps))])


def _default_grid(num_runs: int) -> np.ndarray:
    lo = min(num_runs, max(10.0, num_runs / 64))
    grid = np.unique(np.rint(np.geomspace(lo, num_runs, 14)).astype(np.int64))
    return grid[grid >= 1]


def _runs_needed(grid: np.ndarray, eps: np.ndarray, target: float) -> float | None:
    """Smallest n from which the curve stays ≥ target (log-linear between grid points).

    ``grid[0]`` if the curve is at or above the target everywhere; None if it ends below.
    """
    below = np.nonzero(eps < target)[0]
    if below.size == 0:
        return float(grid[0])
    i = int(below[-1])
    if i == grid.size - 1:
        return None
    x0, x1 = math.log(grid[i]), math.log(grid[i + 1])
    frac = (target - eps[i]) / (eps[i + 1] - eps[i])  # eps[i] < target ≤ eps[i + 1]
    return float(math.exp(x0 + frac * (x1 - x0)))


def _gain(
    grid: np.ndarray, base: np.ndarray, lidp: np.ndarray, target: float | None
) -> tuple[float, float | None, float | None, float | None]:
    """(target, runs needed baseline, runs needed LiDP, gain) from mean curves."""
    tgt = float(base[-1]) if target is None else target
    if tgt <= 0:
        return tgt, None, None, None
    need_base = _runs_needed(grid, base, tgt)
    need_lidp = _runs_needed(grid, lidp, tgt)
    if need_base is None or need_lidp is None:
        return tgt, need_base, need_lidp, None
    return tgt, need_base, need_lidp, need_base / need_lidp


def _gain_interval(
    seed: np.random.SeedSequence,
    grid: np.ndarray,
    base: np.ndarray,
    lidp: np.ndarray,
    target: float | None,
) -> tuple[float, float] | None:
    """Percentile bootstrap over repetitions (LiDP missing the target counts as gain 0)."""
    reps = base.shape[0]
    if reps < 2:
        return None
    idx = np.random.default_rng(seed).integers(0, reps, size=(_NUM_BOOTSTRAP, reps))
    gains = np.full(_NUM_BOOTSTRAP, np.nan)
    for b in range(_NUM_BOOTSTRAP):
        mb, ml = base[idx[b]].mean(axis=0), lidp[idx[b]].mean(axis=0)
        _, need_base, need_lidp, gain = _gain(grid, mb, ml, target)
        if gain is not None:
            gains[b] = gain
        elif need_base is not None and need_lidp is None:
            gains[b] = 0.0
    if np.all(np.isnan(gains)):
        return None
    tail = (1.0 - _GAIN_INTERVAL_LEVEL) / 2.0
    lo, hi = np.nanquantile(gains, [tail, 1.0 - tail])
    return float(lo), float(hi)


def _check_grid(run_grid: ArrayLike | None, n: int) -> np.ndarray:
    if run_grid is None:
        grid = _default_grid(n)
    else:
        grid = np.atleast_1d(check_array("run_grid", run_grid))
        if (
            grid.ndim != 1
            or not np.all(grid == np.round(grid))
            or np.any(grid < 1)
            or np.any(grid > n)
        ):
            raise ValueError(f"run_grid must hold integers in [1, {n}], got {run_grid!r}")
        grid = grid.astype(np.int64)
    return np.unique(np.append(grid, n))


# -------------------------------------------------------- the protocol's pieces, public
# The same threshold tuning, bounds and gain are used by other LiDP audits (the DP-SGD one,
# :mod:`dpaudit.experiments.lidp_dpsgd.pipeline`); these keyword wrappers are their public names.


def threshold_bound(
    alternative: np.ndarray,
    null: np.ndarray,
    threshold: float,
    *,
    method: str = "wilson4",
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    variance: str = "reference",
) -> LiDPResult:
    """The LiDP bound (:func:`dpaudit.bounds.lidp_epsilon`) of (n × k) statistics of included
    (``alternative``) and fresh (``null``) canaries thresholded at τ: ``x = 1{t ≥ τ}``.

    Example:
        >>> alt, null = np.full((50, 4), 2.0), np.zeros((50, 4))
        >>> round(threshold_bound(alt, null, 1.0, method="wilson1").epsilon, 3)
        2.566
    """
    return _bound(np.asarray(alternative), np.asarray(null), float(threshold), method, delta,
                  confidence_level, variance)  # fmt: skip


def tune_threshold(
    alternative: np.ndarray,
    null: np.ndarray,
    *,
    method: str = "wilson4",
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    variance: str = "reference",
    num_thresholds: int = NUM_THRESHOLDS,
) -> float:
    """τ maximising the audit's own bound on *tuning* runs (never the audited ones).

    ``num_thresholds`` (default :data:`NUM_THRESHOLDS`) candidates, evenly spaced between the
    smaller 10 % and the larger 90 % quantile of the two sets of statistics (the window of the
    synthetic experiment of Pillutla et al. 2023, arXiv:2305.18447); ties go to the smallest τ.

    Example:
        >>> g = np.random.default_rng(0)
        >>> tau = tune_threshold(g.normal(2, 1, (200, 4)), g.normal(0, 1, (200, 4)))
        >>> bool(0.0 < tau < 3.0)
        True
    """
    num = check_positive_int("num_thresholds", num_thresholds)
    return _tune(np.asarray(alternative), np.asarray(null), method, delta, confidence_level,
                 variance, num)  # fmt: skip


def resolve_run_grid(run_grid: ArrayLike | None, num_runs: int) -> np.ndarray:
    """The run counts a curve is evaluated at: ``run_grid`` (checked) or 14 geometric
    points from ``max(10, n/64)`` to n; n is always included.

    Raises:
        ValueError: grid values that are not integers in [1, n].

    Example:
        >>> resolve_run_grid([10, 50], 100).tolist()
        [10, 50, 100]
    """
    return _check_grid(run_grid, num_runs)


def sample_complexity_gain(
    grid: np.ndarray, baseline: np.ndarray, lidp: np.ndarray, target: float | None
) -> tuple[float, float | None, float | None, float | None]:
    """``(target, runs needed by the baseline, by LiDP, gain = their ratio)`` from mean curves;
    the target defaults to the baseline's last value.

    Example:
        >>> g = np.array([10, 100, 1000])
        >>> out = sample_complexity_gain(g, np.array([0, 1.0, 2]), np.array([1, 2.0, 2.5]), None)
        >>> [round(v, 6) for v in out]
        [2.0, 1000.0, 100.0, 10.0]
    """
    return _gain(np.asarray(grid), np.asarray(baseline), np.asarray(lidp), target)


def gain_interval(
    seed: RngLike,
    grid: np.ndarray,
    baseline_by_repetition: np.ndarray,
    lidp_by_repetition: np.ndarray,
    target: float | None,
) -> tuple[float, float] | None:
    """90 % percentile-bootstrap interval of the gain, resampling whole repetitions (a LiDP
    curve missing the target counts as gain 0); None with one repetition.

    Example:
        >>> g = np.array([10, 100, 1000])
        >>> base = np.array([[0.0, 1.0, 2.0], [0.0, 1.2, 2.1]])
        >>> lidp = np.array([[1.0, 2.0, 2.5], [1.1, 2.2, 2.6]])
        >>> lo, hi = gain_interval(0, g, base, lidp, None)
        >>> bool(1.0 < lo <= hi)
        True
    """
    return _gain_interval(as_seed_sequence(seed), np.asarray(grid),
                          np.asarray(baseline_by_repetition), np.asarray(lidp_by_repetition),
                          target)  # fmt: skip


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


@dataclasses.dataclass(frozen=True)
class LiDPGaussianSettings(ResultMixin):
    """Settings of the Gaussian sum-query experiment (defaults: the paper's ε ≈ 2 setting).

    Validated at construction (messages name the field); :func:`dpaudit._settings.from_mapping`
    reads them from TOML. See :func:`run_lidp_gaussian` for the meaning of each field.
    """

    sigma: float = option(2.149, help="noise standard deviation σ of the sum query")
    dim: int = option(10**6, help="dimension d of the sum query")
    num_canaries: int = option(16, help="canaries per run k of the LiDP audit")
    num_runs: int = option(1000, help="audited runs per audit and repetition")
    num_repetitions: int = option(20, help="independent repetitions averaged")
    num_tuning_runs: int | None = option(None, help="separate threshold-tuning runs [num_runs]")
    target_epsilon: float | None = option(None, help="ε both audits must reach [1-canary mean]")
    delta: float = option(1e-5, help="δ of the bounds and of the true ε")
    confidence_level: float = option(0.95, help="confidence level 1 − β of every bound")
    method: str = option("wilson4", help="LiDP interval: wilson1, wilson2 or wilson4")
    variance: str = option("reference", help="fourth-order variance form: reference or exact")
    run_grid: tuple[int, ...] | None = option(None, help="run counts evaluated [14 geometric]")
    seed: int | None = option(None, help="root seed [fresh entropy]")

    def __post_init__(self) -> None:
        put = object.__setattr__
        if self.seed is not None:
            put(self, "seed", check_nonneg_int("seed", self.seed))
        put(self, "sigma", check_positive("sigma", self.sigma))
        put(self, "dim", check_positive_int("dim", self.dim))
        k = check_positive_int("num_canaries", self.num_canaries)
        put(self, "num_canaries", k)
        n = check_positive_int("num_runs", self.num_runs)
        put(self, "num_runs", n)
        put(self, "num_repetitions", check_positive_int("num_repetitions", self.num_repetitions))
        if self.num_tuning_runs is not None:
            put(
                self, "num_tuning_runs", check_positive_int("num_tuning_runs", self.num_tuning_runs)
            )
        if self.target_epsilon is not None:
            target = check_real("target_epsilon", self.target_epsilon)
            if not (0.0 < target < math.inf):
                raise ValueError(
                    f"target_epsilon must be positive and finite, got {self.target_epsilon!r}"
                )
            put(self, "target_epsilon", target)
        put(self, "delta", check_delta(self.delta, allow_zero=False))
        put(self, "confidence_level", check_confidence_level(self.confidence_level))
        check_choice("method", self.method, _METHODS)
        check_choice("variance", self.variance, _VARIANCES)
        need = {"wilson2": 2, "wilson4": 4}.get(self.method, 1)
        if k < need:
            raise ValueError(
                f"num_canaries must be at least {need} for method={self.method!r}, got {k}"
            )
        if self.run_grid is not None:
            _check_grid(self.run_grid, n)
            put(self, "run_grid", tuple(int(g) for g in np.atleast_1d(self.run_grid)))

    @property
    def tuning_runs(self) -> int:
        """Tuning runs per audit and repetition (``num_tuning_runs`` or ``num_runs``)."""
        return self.num_runs if self.num_tuning_runs is None else self.num_tuning_runs


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
        num_runs: audited runs per audit and repetition, n ≥ 1.
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
