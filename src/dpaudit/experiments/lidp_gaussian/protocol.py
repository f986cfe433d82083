"""The pieces of the LiDP audit protocol: the bound at a threshold, the threshold tuned on
separate runs, the run grid, the runs each audit needs and the sample-complexity gain with its
bootstrap interval over repetitions.

Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023, "Unleashing the Power of Randomization in
Auditing Differentially Private ML" (arXiv:2305.18447), as in the authors' synthetic
experiment; the protocol is described in :mod:`dpaudit.experiments.lidp_gaussian.pipeline`.
The bound is :func:`dpaudit.bounds.lidp_epsilon`.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit._rng import as_seed_sequence
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import check_array, check_positive_int
from dpaudit.bounds import LiDPResult, lidp_epsilon, lidp_epsilon_sweep

__all__ = [
    "NUM_THRESHOLDS",
    "gain_interval",
    "resolve_run_grid",
    "sample_complexity_gain",
    "threshold_bound",
    "tune_threshold",
]

#: Candidate thresholds per tuning (evenly spaced in the authors' 10 %–90 % quantile window).
NUM_THRESHOLDS = 48
_NUM_BOOTSTRAP = 1000
_GAIN_INTERVAL_LEVEL = 0.90


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
    eps = lidp_epsilon_sweep(alt, null, candidates, delta=delta, confidence_level=level,
                             method=method, variance=variance)  # fmt: skip
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
