"""The Lifted-DP experiment of paper 002, end to end: auditing a Gaussian sum query.

Mechanism: ``M(D) = Σ_{x ∈ D} x + N(0, σ² I_d)`` over vectors of norm ≤ 1 (add/remove one
record moves the output by ≤ 1 in L2), so M is μ-GDP with ``μ = 1/σ`` and its true ε at δ is
``ε(1/σ, δ)`` (Dong, Roth & Su 2022, Cor. 2.13). Records other than canaries add a known
constant and are left out.

Audit (paper 002, "Auditing a Gaussian mechanism": sum query, canaries uniform on the unit
sphere, inner-product test; ``shared/formulas.md`` §4):

* **k canaries per run (LiDP).** Alternative run: release ``y = Σ_{j≤k} c_j + σZ`` and test
  each included canary with ``t_j = ⟨y, c_j⟩``. Null run: release ``y = Σ_{j<k} c_j + σZ``
  and test k *fresh* canaries ``c′_j`` that were not included, ``t_j = ⟨y, c′_j⟩``. Outcome
  ``x_ij = 1{t_ij ≥ τ}``; the bound is :func:`dpaudit.bounds.lidp_epsilon` (default
  ``wilson4``).
* **1 canary per run (baseline).** The same with k = 1 and the Clopper–Pearson bound.

The threshold τ of each audit is tuned on a separate batch of runs (maximising that audit's own
bound on the tuning batch), so the audited runs never see the choice. The experiment then
reports the ε lower bound of both audits as a function of the number of runs n on a grid, the
target ``ε* = baseline bound at n = num_runs``, and for each audit the smallest n on the grid
from which its bound stays at or above ε*; their ratio is the sample-complexity gain of paper
002 (4–16× there).

Randomness: ``rng`` → one ``SeedSequence`` child per batch (tuning/audit × baseline/LiDP);
each batch draws its runs in fixed blocks of :data:`RUNS_PER_BLOCK` with
:func:`dpaudit._rng.block_seeds`, so results do not depend on memory-driven chunking.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, block_seeds, seed_entropy
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds import LiDPResult, lidp_epsilon
from dpaudit.conversions._gdp import gdp_epsilon

__all__ = [
    "RUNS_PER_BLOCK",
    "GaussianCanaryStatistics",
    "LiDPExperimentResult",
    "lidp_gaussian_statistics",
    "run_lidp_gaussian",
]

#: Runs drawn per random-stream block (fixed so results are reproducible).
RUNS_PER_BLOCK = 16
_METHODS = ("wilson1", "wilson2", "wilson4")
_NUM_THRESHOLDS = 80


@dataclasses.dataclass(frozen=True)
class LiDPExperimentResult(ResultMixin):
    """Outcome of the paper-002 Gaussian sum-query experiment.

    Attributes:
        sigma: noise standard deviation σ of the sum query.
        dim: dimension d.
        num_canaries: k canaries per run for the LiDP audit.
        num_runs: audited runs per audit (each run = one alternative + one null release).
        num_tuning_runs: separate runs per audit used only to tune τ.
        delta: δ of the bounds and of the true ε.
        confidence_level: 1 − β of every bound.
        method: LiDP interval (``wilson1``/``wilson2``/``wilson4``); the baseline uses CP.
        true_epsilon: ε(μ = 1/σ, δ) of the mechanism (Dong–Roth–Su Cor. 2.13).
        threshold_baseline: τ tuned for the 1-canary audit.
        threshold_lidp: τ tuned for the k-canary audit.
        run_grid: numbers of runs n at which both bounds are evaluated (prefixes of the runs).
        epsilon_baseline: 1-canary (Clopper–Pearson) ε lower bound at each n.
        epsilon_lidp: k-canary LiDP ε lower bound at each n.
        target_epsilon: the baseline bound with all ``num_runs`` runs.
        runs_needed_baseline: smallest n on the grid from which the baseline bound stays at or
            above the target (≤ num_runs by construction; None when the target is 0).
        runs_needed_lidp: the same for the LiDP bound (None if it ends below the target).
        sample_complexity_gain: runs_needed_baseline / runs_needed_lidp (None if undefined).
        baseline: the baseline :class:`~dpaudit.bounds.LiDPResult` with all runs.
        lidp: the LiDP :class:`~dpaudit.bounds.LiDPResult` with all runs.
        selection: ``"split"`` — τ was chosen on runs disjoint from the audited ones.
        seed: integer seed when known.
    """

    sigma: float
    dim: int
    num_canaries: int
    num_runs: int
    num_tuning_runs: int
    delta: float
    confidence_level: float
    method: str
    true_epsilon: float
    threshold_baseline: float
    threshold_lidp: float
    run_grid: np.ndarray
    epsilon_baseline: np.ndarray
    epsilon_lidp: np.ndarray
    target_epsilon: float
    runs_needed_baseline: int | None
    runs_needed_lidp: int | None
    sample_complexity_gain: float | None
    baseline: LiDPResult
    lidp: LiDPResult
    selection: str = "split"
    seed: int | None = None


def _unit_rows(gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform on the unit sphere: normalised standard Gaussian vectors (last axis)."""
    g = gen.standard_normal(shape)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def _block_statistics(
    gen: np.random.Generator, runs: int, sigma: float, dim: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Alternative and null inner-product statistics of ``runs`` runs, each (runs, k)."""
    included = _unit_rows(gen, (runs, k, dim))
    y = included.sum(axis=1) + sigma * gen.standard_normal((runs, dim))
    alt = np.einsum("rkd,rd->rk", included, y)
    kept = included[:, : k - 1, :] if k > 1 else np.zeros((runs, 0, dim))
    fresh = _unit_rows(gen, (runs, k, dim))
    y0 = kept.sum(axis=1) + sigma * gen.standard_normal((runs, dim))
    null = np.einsum("rkd,rd->rk", fresh, y0)
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
        null: (n × k) ⟨y, c′_j⟩ for k fresh canaries in each null run (k − 1 included).
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
    """Simulate the statistics of paper 002's Gaussian sum-query audit (module docstring).

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
    alt: np.ndarray, null: np.ndarray, tau: float, method: str, delta: float, level: float
) -> LiDPResult:
    return lidp_epsilon(
        (alt >= tau).astype(np.float64),
        (null >= tau).astype(np.float64),
        delta=delta,
        confidence_level=level,
        method=method,
    )


def _tune(alt: np.ndarray, null: np.ndarray, method: str, delta: float, level: float) -> float:
    """τ maximising the audit's own bound on tuning runs (ties: the smallest τ).

    Candidates are quantiles of the tuning null statistics at false-positive rates from ½ down
    to about one over the number of null statistics, where the bound is usually best.
    """
    fprs = np.geomspace(0.5, 0.5 / null.size, _NUM_THRESHOLDS)
    candidates = np.unique(np.quantile(null.ravel(), 1.0 - fprs))
    eps = np.array([_bound(alt, null, float(t), method, delta, level).epsilon for t in candidates])
    return float(candidates[int(np.argmax(eps))])


def _default_grid(num_runs: int) -> np.ndarray:
    lo = min(num_runs, 20)
    grid = np.unique(np.rint(np.geomspace(lo, num_runs, 24)).astype(np.int64))
    return grid[grid >= 1]


def _runs_needed(grid: np.ndarray, eps: np.ndarray, target: float) -> int | None:
    """Smallest n on the grid from which the bound stays ≥ target (None if it ends below)."""
    below = np.nonzero(eps < target)[0]
    if below.size == 0:
        return int(grid[0])
    if below[-1] == grid.size - 1:
        return None
    return int(grid[below[-1] + 1])


def run_lidp_gaussian(
    sigma: float,
    dim: int,
    num_canaries: int,
    num_runs: int,
    *,
    num_tuning_runs: int | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    method: str = "wilson4",
    run_grid: ArrayLike | None = None,
    rng: RngLike = None,
) -> LiDPExperimentResult:
    """Run paper 002's Gaussian-mechanism experiment: 1 canary per run vs k canaries per run.

    See the module docstring for the mechanism, the statistics and the protocol.

    Args:
        sigma: noise standard deviation σ > 0 of the sum query.
        dim: dimension d ≥ 1.
        num_canaries: k ≥ 1 canaries per run for the LiDP audit (≥ 4 for ``wilson4``).
        num_runs: audited runs per audit, n ≥ 1.
        num_tuning_runs: separate runs used to tune τ (default ``num_runs``).
        delta: δ in (0, 1) for the bounds and the true ε.
        confidence_level: 1 − β in (0, 1).
        method: LiDP interval, ``"wilson1"``, ``"wilson2"`` or ``"wilson4"``.
        run_grid: run counts at which to evaluate both bounds (default: ~24 geometric points
            up to ``num_runs``; ``num_runs`` is always included).
        rng: seed or generator (keyword-only).

    Returns:
        :class:`LiDPExperimentResult`.

    Raises:
        TypeError, ValueError: bad σ, d, k, n, δ, level, method or grid.

    Example:
        >>> res = run_lidp_gaussian(1.0, 32, 8, 200, method="wilson2", rng=0)
        >>> res.true_epsilon > res.lidp.epsilon
        True
    """
    sigma = check_positive("sigma", sigma)
    dim = check_positive_int("dim", dim)
    k = check_positive_int("num_canaries", num_canaries)
    n = check_positive_int("num_runs", num_runs)
    n_tune = (
        n if num_tuning_runs is None else check_positive_int("num_tuning_runs", num_tuning_runs)
    )
    delta = check_delta(delta, allow_zero=False)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _METHODS)
    need = {"wilson2": 2, "wilson4": 4}.get(method, 1)
    if k < need:
        raise ValueError(f"num_canaries must be at least {need} for method={method!r}, got {k}")
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
    grid = np.unique(np.append(grid, n))

    root = as_seed_sequence(rng)
    s_tune_base, s_tune_lidp, s_base, s_lidp = np.random.SeedSequence(
        root.entropy, spawn_key=root.spawn_key
    ).spawn(4)
    tb_alt, tb_null = _statistics(s_tune_base, n_tune, sigma, dim, 1)
    tl_alt, tl_null = _statistics(s_tune_lidp, n_tune, sigma, dim, k)
    tau_base = _tune(tb_alt, tb_null, "clopper-pearson", delta, level)
    tau_lidp = _tune(tl_alt, tl_null, method, delta, level)
    b_alt, b_null = _statistics(s_base, n, sigma, dim, 1)
    l_alt, l_null = _statistics(s_lidp, n, sigma, dim, k)

    eps_base = np.array(
        [
            _bound(b_alt[:g], b_null[:g], tau_base, "clopper-pearson", delta, level).epsilon
            for g in grid
        ]
    )
    eps_lidp = np.array(
        [_bound(l_alt[:g], l_null[:g], tau_lidp, method, delta, level).epsilon for g in grid]
    )
    target = float(eps_base[-1])
    need_base = _runs_needed(grid, eps_base, target) if target > 0 else None
    need_lidp = _runs_needed(grid, eps_lidp, target) if target > 0 else None
    gain = need_base / need_lidp if (need_base is not None and need_lidp is not None) else None
    return LiDPExperimentResult(
        sigma=sigma,
        dim=dim,
        num_canaries=k,
        num_runs=n,
        num_tuning_runs=n_tune,
        delta=delta,
        confidence_level=level,
        method=method,
        true_epsilon=gdp_epsilon(1.0 / sigma, delta),
        threshold_baseline=tau_base,
        threshold_lidp=tau_lidp,
        run_grid=grid,
        epsilon_baseline=eps_base,
        epsilon_lidp=eps_lidp,
        target_epsilon=target,
        runs_needed_baseline=need_base,
        runs_needed_lidp=need_lidp,
        sample_complexity_gain=gain,
        baseline=_bound(b_alt, b_null, tau_base, "clopper-pearson", delta, level),
        lidp=_bound(l_alt, l_null, tau_lidp, method, delta, level),
        seed=seed_entropy(rng),
    )
