"""Lifted-DP audits over independent runs: k random canaries per run, many runs as tasks.

The protocol of Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023 ("Unleashing the Power of
Randomization in Auditing Differentially Private ML", NeurIPS 2023, arXiv:2305.18447) for any
mechanism that can be *run* with canaries — a DP-SGD training run
(:mod:`~dpaudit.experiments.lidp_dpsgd.pipeline`) or
 the Gaussian sum query (:class:`GaussianSumQueryRuns`,
whose ε is known: the coverage check of this very code path).

* **A run function** (:class:`CanaryRuns`): ``runs(alternative, k, seed) -> (k + E,) array``.
  An *alternative* run draws k canaries i.i.d. from the canary distribution, runs the
  mechanism with all k and returns the k test statistics of those canaries; a *null* run
  draws k − 1 included canaries and k fresh ones (fresh canaries are distributed as the k-th
  included canary of an alternative run, given the others), runs the mechanism with the
  k − 1 and returns the statistics of the k fresh ones. Statistics are oriented so larger
  means "included". ``E = len(runs.extras)`` trailing values describe the run (e.g. the final
  training loss); they are reported, never used by the bound.
* **The plan** (:class:`RunPlan`): for every canary count k, repetition r, role (tuning /
  audit) and kind (alternative / null) a contiguous block of task indices; one task = one
  run. All runs go through :func:`dpaudit.engine.run_tasks` in one call, so task i always
  gets the i-th child of the root seed: **the same seed gives the same statistics (and ε)
  whatever the executor and number of workers**, and with a checkpoint an interrupted audit
  resumes without rerunning any finished run.
* **The bound** for each k, repetition and interval method: τ is tuned on the *tuning* runs
  of that repetition by maximising the method's own bound
  (:func:`dpaudit.experiments.lidp_gaussian.protocol.tune_threshold`), then the audited runs give
  ``1{t ≥ τ}`` matrices and :func:`dpaudit.bounds.lidp_epsilon` the ε lower bound (CP on
  column 0, Wilson of order 1, 2, 4). The audited runs never see the choice (split).
* **Curves and gain**: on a grid of run counts n' ≤ n, the bound of the first n' audited
  runs with τ tuned on the first ``round(n'·n_tune/n)`` tuning runs; k = 1 uses
  Clopper–Pearson (the standard approach), k > 1 the ``curve_method``. Mean curves over
  repetitions give the runs each k needs to reach the target (the k = 1 mean bound with all
  n runs unless given) and the gain over k = 1, with a bootstrap interval over repetitions
  (:func:`~dpaudit.experiments.lidp_gaussian.protocol.sample_complexity_gain`,
  :func:`~dpaudit.experiments.lidp_gaussian.protocol.gain_interval`).

:func:`audit_canary_runs` does it all and returns :class:`LiDPRunsAudit`; the workflows wrap
it in an :class:`~dpaudit._results.AuditResult`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, child_seed, seed_entropy
from dpaudit._settings import option
from dpaudit._typing import ProgressLike, RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds import LiDPResult
from dpaudit.engine import Executor, TaskRun, run_tasks
from dpaudit.experiments.lidp_gaussian.protocol import (
    NUM_THRESHOLDS,
    gain_interval,
    resolve_run_grid,
    sample_complexity_gain,
    threshold_bound,
    tune_threshold,
)
from dpaudit.experiments.lidp_gaussian.simulation import lidp_gaussian_statistics

__all__ = [
    "LIDP_METHODS",
    "METHOD_MIN_CANARIES",
    "CanaryCountAudit",
    "CanaryRuns",
    "GainRecord",
    "GaussianSumQueryRuns",
    "LiDPAuditSettings",
    "LiDPRunsAudit",
    "RunPlan",
    "audit_canary_runs",
    "check_methods",
    "collect_statistics",
    "evaluate_statistics",
]

#: The fewest canaries per run each interval method needs.
METHOD_MIN_CANARIES = {"clopper-pearson": 1, "wilson1": 1, "wilson2": 2, "wilson4": 4}
#: The interval methods of :func:`dpaudit.bounds.lidp_epsilon`.
LIDP_METHODS: tuple[str, ...] = tuple(METHOD_MIN_CANARIES)
_ROLES = ("tuning", "audit")
_KINDS = ("alternative", "null")


@runtime_checkable
class CanaryRuns(Protocol):
    """One run of a mechanism with random canaries (module notes); picklable.

    Attributes:
        extras: names of the values after the k statistics (may be empty).
    """

    extras: tuple[str, ...]

    def __call__(
        self, alternative: bool, num_canaries: int, seed: np.random.SeedSequence
    ) -> np.ndarray:
        """``(k + len(extras),)``: the k canaries' statistics, then the extras."""
        ...


# ---------------------------------------------------------------------------------- settings


def check_methods(methods: Sequence[str], counts: Sequence[int]) -> None:
    """Every method must be known and have enough canaries per run for every k.

    Raises:
        ValueError: an unknown method, or e.g. ``wilson2`` with k < 2 / ``wilson4`` with k < 4.

    Example:
        >>> check_methods(("wilson4",), (4, 16))
        >>> check_methods(("wilson4",), (1, 16))
        Traceback (most recent call last):
        ...
        ValueError: method 'wilson4' needs at least 4 canaries per run, got k=1
    """
    for m in methods:
        check_choice("methods", m, LIDP_METHODS)
        for k in counts:
            if k < METHOD_MIN_CANARIES[m]:
                raise ValueError(
                    f"method {m!r} needs at least {METHOD_MIN_CANARIES[m]} canaries per run, "
                    f"got k={k}"
                )


@dataclasses.dataclass(frozen=True)
class LiDPAuditSettings:
    """How many runs, which intervals, the curve and the gain (the ``[audit]`` table)."""

    num_runs: int = option(100, help="n: alternative runs (and as many null runs) per k")
    num_tuning_runs: int | None = option(
        None, help="separate threshold-tuning runs per kind and k [n/2]", flag="--tuning-runs"
    )
    repetitions: int = option(1, help="independent repetitions (curves: their mean)")
    methods: tuple[str, ...] | None = option(
        None, help="intervals: clopper-pearson, wilson1, wilson2, wilson4 [all k allows]"
    )
    curve_method: str = option("wilson4", help="interval of the k > 1 curves (k = 1: CP)")
    confidence_level: float = option(0.95, help="confidence 1 − β of every bound")
    variance: str = option("reference", help="fourth-order variance form: reference | exact")
    run_grid: tuple[int, ...] | None = option(None, help="run counts of the curves [geometric]")
    target_epsilon: float | None = option(
        None, help="ε every k must reach [k = 1 mean bound at n]", flag="--gain-target"
    )
    num_thresholds: int = option(
        NUM_THRESHOLDS, help="τ candidates tried on the tuning runs (10–90 % quantile window)"
    )

    def __post_init__(self) -> None:
        n = check_positive_int("num_runs", self.num_runs)
        if n < 2:
            raise ValueError(f"num_runs must be at least 2, got {n}")
        if self.num_tuning_runs is not None:
            t = check_positive_int("num_tuning_runs", self.num_tuning_runs)
            if t < 2:
                raise ValueError(f"num_tuning_runs must be at least 2, got {t}")
        check_positive_int("repetitions", self.repetitions)
        if self.methods is not None:
            if not self.methods:
                raise ValueError("methods must list at least one interval (or be left out)")
            check_methods(self.methods, ())
        check_choice("curve_method", self.curve_method, LIDP_METHODS)
        check_confidence_level(self.confidence_level)
        check_choice("variance", self.variance, ("reference", "exact"))
        if self.run_grid is not None:
            resolve_run_grid(self.run_grid, n)
        if self.target_epsilon is not None:
            t = check_positive("target_epsilon", self.target_epsilon)
            if not math.isfinite(t):
                raise ValueError(f"target_epsilon must be finite, got {t}")
        check_positive_int("num_thresholds", self.num_thresholds)

    @property
    def tuning_runs(self) -> int:
        """Tuning runs per kind, k and repetition (``num_tuning_runs`` or ``max(2, n // 2)``)."""
        if self.num_tuning_runs is not None:
            return self.num_tuning_runs
        return max(2, self.num_runs // 2)

    def methods_for(self, k: int) -> tuple[str, ...]:
        """The interval methods audited with k canaries per run."""
        if self.methods is not None:
            return tuple(self.methods)
        return tuple(m for m in LIDP_METHODS if k >= METHOD_MIN_CANARIES[m])

    def curve_method_for(self, k: int) -> str:
        """Clopper–Pearson for k = 1 (the standard approach), else ``curve_method``."""
        return "clopper-pearson" if k == 1 else self.curve_method

    def check_counts(self, counts: Sequence[int]) -> None:
        """The methods and the curve method fit every k (before any run).

        Raises:
            ValueError: k < 1, or a method needing more canaries than some k.
        """
        for k in counts:
            check_positive_int("num_canaries", k)
        if self.methods is not None:
            check_methods(self.methods, counts)
        check_methods((self.curve_method,), [k for k in counts if k > 1])


# -------------------------------------------------------------------------------------- plan


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """Which task index is which run: blocks ``(k, repetition, role, kind)`` in this order.

    Attributes:
        counts: canary counts k.
        repetitions: repetitions R.
        num_runs: audited runs per kind (n).
        num_tuning_runs: tuning runs per kind.
    """

    counts: tuple[int, ...]
    repetitions: int
    num_runs: int
    num_tuning_runs: int

    def size(self, role: str) -> int:
        """Runs per block of a role."""
        return self.num_tuning_runs if role == "tuning" else self.num_runs

    def blocks(self) -> list[tuple[int, int, str, str, int, int]]:
        """``(k, repetition, role, kind, start, stop)`` of every block, in task order."""
        out, start = [], 0
        for k in self.counts:
            for r in range(self.repetitions):
                for role in _ROLES:
                    for kind in _KINDS:
                        stop = start + self.size(role)
                        out.append((k, r, role, kind, start, stop))
                        start = stop
        return out

    @property
    def num_tasks(self) -> int:
        """Runs in total."""
        return len(self.counts) * 2 * self.repetitions * (self.num_runs + self.num_tuning_runs)

    def task_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Per task: k (int64) and whether it is an alternative run (bool)."""
        ks = np.empty(self.num_tasks, dtype=np.int64)
        alt = np.empty(self.num_tasks, dtype=bool)
        for k, _, _, kind, a, b in self.blocks():
            ks[a:b] = k
            alt[a:b] = kind == "alternative"
        return ks, alt


@dataclasses.dataclass(frozen=True, eq=False)
class _PlanTask:
    """Task function of :func:`dpaudit.engine.run_tasks`: task i is run ``(alt[i], ks[i])``."""

    runs: Any
    ks: np.ndarray
    alternative: np.ndarray

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        k = int(self.ks[index])
        out = self.runs(bool(self.alternative[index]), k, seed)
        return self._checked(out, k)

    def _checked(self, out: Any, k: int) -> np.ndarray:
        out = np.asarray(out, dtype=np.float64)
        want = k + len(self.runs.extras)
        if out.shape != (want,):
            raise ValueError(f"the run function returned shape {out.shape}, expected ({want},)")
        return out

    @property
    def group_size(self) -> int | None:
        """The run function's group (runs trained at once), or None: one run per task."""
        return getattr(self.runs, "group_size", None)

    def run_group(self, indices: Sequence[int], seeds: Sequence) -> list[np.ndarray]:
        """Runs ``indices`` together (the engine's groups; ``runs.run_group``)."""
        idx = np.asarray(indices)
        outs = self.runs.run_group(self.alternative[idx].tolist(), self.ks[idx].tolist(), seeds)
        return [self._checked(o, int(k)) for o, k in zip(outs, self.ks[idx], strict=True)]


@dataclasses.dataclass(frozen=True, eq=False)
class _Statistics:
    """Per k: arrays (R, runs, k) of statistics and (R, runs, E) extras, per role × kind."""

    stats: dict[tuple[int, str, str], np.ndarray]
    extras: dict[tuple[int, str, str], np.ndarray]


def collect_statistics(
    runs: CanaryRuns,
    plan: RunPlan,
    *,
    rng: RngLike,
    executor: str | Executor = "serial",
    workers: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: ProgressLike = None,
) -> tuple[_Statistics, TaskRun]:
    """Every run of the plan as one :func:`~dpaudit.engine.run_tasks` call, then sorted into
    blocks (statistics and extras per ``(k, role, kind)``, stacked over repetitions)."""
    ks, alt = plan.task_table()
    task = _PlanTask(runs, ks, alt)
    out = run_tasks(
        task, plan.num_tasks, rng=rng, executor=executor, workers=workers,
        checkpoint=checkpoint, progress=progress, description="training runs",
    )  # fmt: skip
    stats: dict[tuple[int, str, str], list] = {}
    extras: dict[tuple[int, str, str], list] = {}
    for k, _, role, kind, a, b in plan.blocks():
        block = np.stack(out.results[a:b])
        stats.setdefault((k, role, kind), []).append(block[:, :k])
        extras.setdefault((k, role, kind), []).append(block[:, k:])
    return (
        _Statistics({c: np.stack(v) for c, v in stats.items()},
                    {c: np.stack(v) for c, v in extras.items()}),
        out,
    )  # fmt: skip


# ------------------------------------------------------------------------------- evaluation


@dataclasses.dataclass(frozen=True)
class CanaryCountAudit(ResultMixin):
    """Everything measured with k canaries per run.

    Attributes:
        num_canaries: k.
        methods: the interval methods audited.
        bounds: method → one :class:`~dpaudit.bounds.LiDPResult` per repetition (all n runs,
            τ tuned on that repetition's tuning runs).
        thresholds: method → (R,) the τ each repetition chose.
        curve_method: the interval of the curve (CP for k = 1).
        curve_by_repetition: (R, grid) ε lower bound of the first n' runs.
        curve_thresholds: (R, grid) τ tuned for each n'.
        curve_mean: (grid,) mean over repetitions.
        curve_std: (grid,) standard deviation over repetitions (ddof = 1; 0 for R = 1).
        alternative: (R, n, k) statistics of the included canaries (audited runs).
        null: (R, n, k) statistics of fresh canaries (audited runs).
        tuning_alternative: (R, n_tune, k) the same on the tuning runs.
        tuning_null: (R, n_tune, k).
        extras: name → mean over every run of this k (e.g. the final training loss).
    """

    num_canaries: int
    methods: tuple[str, ...]
    bounds: dict[str, tuple[LiDPResult, ...]]
    thresholds: dict[str, np.ndarray]
    curve_method: str
    curve_by_repetition: np.ndarray
    curve_thresholds: np.ndarray
    curve_mean: np.ndarray
    curve_std: np.ndarray
    alternative: np.ndarray
    null: np.ndarray
    tuning_alternative: np.ndarray
    tuning_null: np.ndarray
    extras: dict[str, float]

    def epsilons(self, method: str) -> np.ndarray:
        """(R,) the ε lower bound of each repetition with ``method``."""
        return np.array([b.epsilon for b in self.bounds[method]])


@dataclasses.dataclass(frozen=True)
class GainRecord(ResultMixin):
    """Runs needed by k canaries per run vs 1 to reach the same ε lower bound.

    Attributes:
        num_canaries: k.
        target_epsilon: the ε both must reach.
        runs_needed_baseline: runs k = 1 needs (mean curve, log-linear interpolation;
            None if never reached).
        runs_needed: runs k needs.
        gain: baseline / k's runs (None if undefined; a lower bound when k reaches the target
            at the first grid point).
        gain_interval: 90 % percentile bootstrap over repetitions (None with R = 1).
    """

    num_canaries: int
    target_epsilon: float
    runs_needed_baseline: float | None
    runs_needed: float | None
    gain: float | None
    gain_interval: tuple[float, float] | None


@dataclasses.dataclass(frozen=True)
class LiDPRunsAudit(ResultMixin):
    """The LiDP audit of a mechanism run with canaries (module notes).

    Attributes:
        counts: canary counts k.
        num_runs: audited runs n per kind, k and repetition.
        num_tuning_runs: tuning runs per kind, k and repetition.
        repetitions: R.
        delta: δ of the bounds.
        confidence_level: 1 − β of every bound.
        variance: fourth-order variance form.
        run_grid: run counts of the curves.
        audits: one :class:`CanaryCountAudit` per k.
        gains: one :class:`GainRecord` per k > 1 (empty unless k = 1 is among the counts).
        extras: names of the runs' extra values.
        num_tasks: runs in total.
        computed_runs: runs computed in this call.
        resumed_runs: runs read from the checkpoint.
        executor: where the runs ran.
        workers: workers used.
        runs_seconds: wall time of the runs in this call.
        seed: the root seed.
    """

    counts: tuple[int, ...]
    num_runs: int
    num_tuning_runs: int
    repetitions: int
    delta: float
    confidence_level: float
    variance: str
    run_grid: np.ndarray
    audits: tuple[CanaryCountAudit, ...]
    gains: tuple[GainRecord, ...]
    extras: tuple[str, ...]
    num_tasks: int
    computed_runs: int
    resumed_runs: int
    executor: str
    workers: int
    runs_seconds: float
    seed: int | None

    def audit(self, num_canaries: int) -> CanaryCountAudit:
        """The audit with k canaries per run (KeyError if absent)."""
        for a in self.audits:
            if a.num_canaries == num_canaries:
                return a
        raise KeyError(f"no audit with {num_canaries} canaries per run")


def _std(x: np.ndarray) -> np.ndarray:
    return x.std(axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1:])


def _bounds_of(tune: tuple, audit: tuple, methods, common, num: int) -> tuple[dict, dict]:
    """Per method: τ tuned on the tuning runs, bound on all audited runs (one repetition)."""
    bounds, taus = {}, {}
    for m in methods:
        tau = tune_threshold(*tune, method=m, **common, num_thresholds=num)
        taus[m] = tau
        bounds[m] = threshold_bound(*audit, tau, method=m, **common)
    return bounds, taus


def _curve(
    tune: tuple, audit: tuple, grid: np.ndarray, method: str, common, num: int, last
) -> tuple:
    """ε and τ at every n' of the grid; the last point (n' = n) is the entry's bound."""
    n, n_tune = audit[0].shape[0], tune[0].shape[0]
    eps, taus = np.empty(grid.size), np.empty(grid.size)
    for i, g in enumerate(grid):
        if g == n and last is not None:
            eps[i], taus[i] = last
            continue
        g_tune = max(2, round(int(g) * n_tune / n))
        taus[i] = tune_threshold(tune[0][:g_tune], tune[1][:g_tune], method=method, **common,
                                 num_thresholds=num)  # fmt: skip
        eps[i] = threshold_bound(audit[0][:g], audit[1][:g], taus[i], method=method,
                                 **common).epsilon  # fmt: skip
    return eps, taus


def _audit_one_count(
    k: int, data: _Statistics, s: LiDPAuditSettings, grid: np.ndarray, common, extras
) -> CanaryCountAudit:
    t_alt, t_null = data.stats[(k, "tuning", "alternative")], data.stats[(k, "tuning", "null")]
    alt, null = data.stats[(k, "audit", "alternative")], data.stats[(k, "audit", "null")]
    methods, cm = s.methods_for(k), s.curve_method_for(k)
    reps = alt.shape[0]
    bounds = {m: [] for m in methods}
    taus = {m: np.empty(reps) for m in methods}
    curve, curve_tau = np.empty((reps, grid.size)), np.empty((reps, grid.size))
    for r in range(reps):
        tune, audit = (t_alt[r], t_null[r]), (alt[r], null[r])
        b, t = _bounds_of(tune, audit, methods, common, s.num_thresholds)
        for m in methods:
            bounds[m].append(b[m])
            taus[m][r] = t[m]
        last = (b[cm].epsilon, t[cm]) if cm in b else None
        curve[r], curve_tau[r] = _curve(tune, audit, grid, cm, common, s.num_thresholds, last)
    mean_extras = {}
    for i, name in enumerate(extras):
        vals = np.concatenate([v[..., i].ravel() for c, v in data.extras.items() if c[0] == k])
        mean_extras[name] = float(np.mean(vals))
    return CanaryCountAudit(
        num_canaries=k, methods=methods, bounds={m: tuple(v) for m, v in bounds.items()},
        thresholds=taus, curve_method=cm, curve_by_repetition=curve, curve_thresholds=curve_tau,
        curve_mean=curve.mean(axis=0), curve_std=_std(curve), alternative=alt, null=null,
        tuning_alternative=t_alt, tuning_null=t_null, extras=mean_extras,
    )  # fmt: skip


def _gains(audits, grid, target, seed) -> tuple[GainRecord, ...]:
    base = next((a for a in audits if a.num_canaries == 1), None)
    if base is None:
        return ()
    out = []
    for j, a in enumerate(audits):
        if a.num_canaries == 1:
            continue
        tgt, need_b, need_k, gain = sample_complexity_gain(grid, base.curve_mean, a.curve_mean,
                                                           target)  # fmt: skip
        interval = None
        if gain is not None:
            interval = gain_interval(child_seed(seed, j), grid, base.curve_by_repetition,
                                     a.curve_by_repetition, target)  # fmt: skip
        out.append(GainRecord(a.num_canaries, tgt, need_b, need_k, gain, interval))
    return tuple(out)


def evaluate_statistics(
    data: _Statistics,
    plan: RunPlan,
    settings: LiDPAuditSettings,
    *,
    delta: float,
    extras: tuple[str, ...] = (),
    rng: RngLike = 0,
) -> tuple[tuple[CanaryCountAudit, ...], tuple[GainRecord, ...], np.ndarray]:
    """Bounds, curves and gains from collected statistics (no run is made here)."""
    grid = resolve_run_grid(settings.run_grid, plan.num_runs)
    common = {"delta": delta, "confidence_level": settings.confidence_level,
              "variance": settings.variance}  # fmt: skip
    audits = tuple(_audit_one_count(k, data, settings, grid, common, extras) for k in plan.counts)
    gains = _gains(audits, grid, settings.target_epsilon, as_seed_sequence(rng))
    return audits, gains, grid


def audit_canary_runs(
    runs: CanaryRuns,
    counts: Sequence[int],
    settings: LiDPAuditSettings,
    *,
    delta: float,
    rng: RngLike,
    executor: str | Executor = "serial",
    workers: int = 1,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: ProgressLike = None,
) -> LiDPRunsAudit:
    """The LiDP audit of ``runs`` with each canary count (module notes).

    Args:
        runs: the run function (:class:`CanaryRuns`), picklable for parallel executors.
        counts: canary counts k ≥ 1 per run (distinct; include 1 for the gain).
        settings: :class:`LiDPAuditSettings`.
        delta: δ of the bounds (the claim's δ).
        rng: root seed (keyword-only); child 0 seeds the runs, child 1 the bootstrap.
        executor, workers: where the runs go (:func:`dpaudit.engine.run_tasks`).
        checkpoint: the runs' journal (resume an interrupted audit).
        progress: a callback ``(done, total, description)`` over runs, True, or None.

    Returns:
        :class:`LiDPRunsAudit`.

    Raises:
        TypeError, ValueError: bad counts, methods too demanding for some k, bad δ — before
            any run.

    Example:
        >>> s = LiDPAuditSettings(num_runs=50, methods=("clopper-pearson", "wilson1"),
        ...                       curve_method="wilson1")
        >>> res = audit_canary_runs(GaussianSumQueryRuns(0.5, 10**6), (1, 8), s, delta=1e-5,
        ...                         rng=0)
        >>> a = res.audit(8)
        >>> a.alternative.shape, res.num_tasks
        ((1, 50, 8), 300)
        >>> [round(float(res.audit(k).epsilons(m)[0]), 3) for k, m in [(1, "clopper-pearson"),
        ...                                                             (8, "wilson1")]]
        [0.897, 1.3]
        >>> round(res.gains[0].gain, 2)  # runs to reach the 1-canary bound: 50 vs 31.6
        1.58
    """
    if not isinstance(runs, CanaryRuns):
        raise TypeError(f"runs must be a CanaryRuns (extras, __call__), got {type(runs).__name__}")
    if not isinstance(settings, LiDPAuditSettings):
        raise TypeError(f"settings must be LiDPAuditSettings, got {type(settings).__name__}")
    ks = tuple(check_positive_int("num_canaries", k) for k in counts)
    if not ks or len(set(ks)) != len(ks):
        raise ValueError(f"counts must list distinct canary counts, got {tuple(counts)!r}")
    settings.check_counts(ks)
    delta = check_delta(delta)
    root = as_seed_sequence(rng)
    plan = RunPlan(ks, settings.repetitions, settings.num_runs, settings.tuning_runs)
    data, out = collect_statistics(
        runs, plan, rng=child_seed(root, 0), executor=executor, workers=workers,
        checkpoint=checkpoint, progress=progress,
    )  # fmt: skip
    audits, gains, grid = evaluate_statistics(
        data, plan, settings, delta=delta, extras=tuple(runs.extras), rng=child_seed(root, 1)
    )
    return LiDPRunsAudit(
        counts=ks, num_runs=plan.num_runs, num_tuning_runs=plan.num_tuning_runs,
        repetitions=plan.repetitions, delta=delta, confidence_level=settings.confidence_level,
        variance=settings.variance, run_grid=grid, audits=audits, gains=gains,
        extras=tuple(runs.extras), num_tasks=plan.num_tasks, computed_runs=out.computed_tasks,
        resumed_runs=out.resumed_tasks, executor=out.executor, workers=out.workers,
        runs_seconds=out.wall_seconds, seed=seed_entropy(rng),
    )  # fmt: skip


# --------------------------------------------------------------- a mechanism with known ε


@dataclasses.dataclass(frozen=True)
class GaussianSumQueryRuns:
    """The Gaussian sum query as a run function: ε known, runs cheap (the coverage check).

    ``M(D) = Σ_{x∈D} x + N(0, σ² I_d)`` over vectors of norm ≤ 1 is (1/σ)-GDP (Dong, Roth &
    Su 2022, arXiv:1905.02383, Cor. 2.13); canaries uniform on the unit sphere, statistic
    ``⟨y, c⟩`` (Pillutla et al. 2023, arXiv:2305.18447, "Auditing a Gaussian mechanism"). One
    run is simulated exactly by
    :func:`~dpaudit.experiments.lidp_gaussian.simulation.lidp_gaussian_statistics`.

    Attributes:
        sigma: σ > 0.
        dim: d ≥ 1.

    Example:
        >>> runs = GaussianSumQueryRuns(1.0, 1000)
        >>> runs(True, 4, np.random.SeedSequence(0)).shape
        (4,)
    """

    sigma: float
    dim: int
    extras: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_positive("sigma", self.sigma)
        check_positive_int("dim", self.dim)

    def __call__(
        self, alternative: bool, num_canaries: int, seed: np.random.SeedSequence
    ) -> np.ndarray:
        st = lidp_gaussian_statistics(self.sigma, self.dim, num_canaries, 1, rng=seed)
        return (st.alternative if alternative else st.null)[0]
