"""Settings of the Gaussian sum-query LiDP experiment (Pillutla et al. 2023,
arXiv:2305.18447; :mod:`dpaudit.experiments.lidp_gaussian.pipeline`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_memory,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.experiments.lidp_gaussian.protocol import _check_grid
from dpaudit.experiments.lidp_gaussian.simulation import check_simulated_runs

__all__ = ["LiDPGaussianSettings"]

_METHODS = ("wilson1", "wilson2", "wilson4")
_VARIANCES = ("reference", "exact")

#: Fewest audited (and tuning) runs the experiment accepts. τ is tuned among thresholds
#: between the 10 % and 90 % quantiles of the tuning statistics
#: (:func:`~dpaudit.experiments.lidp_gaussian.protocol._tune`), which needs at least 10 runs
#: for either quantile to leave the sample's extremes, and the default run grid starts at
#: 10 runs (:func:`~dpaudit.experiments.lidp_gaussian.protocol._default_grid`). With fewer,
#: the tuned τ and the runs-needed curve are degenerate (one run: one statistic per audit).
MIN_RUNS = 10


@dataclasses.dataclass(frozen=True)
class LiDPGaussianSettings(ResultMixin):
    """Settings of the Gaussian sum-query experiment (defaults: the paper's ε ≈ 2 setting).

    Validated at construction (messages name the field); :func:`dpaudit._settings.from_mapping`
    reads them from TOML. See
    :func:`~dpaudit.experiments.lidp_gaussian.pipeline.run_lidp_gaussian` for the meaning of
    each field.
    """

    sigma: float = option(2.149, help="noise standard deviation σ of the sum query")
    dim: int = option(10**6, help="dimension d of the sum query")
    num_canaries: int = option(16, help="canaries per run k of the LiDP audit", flag="--canaries")
    num_runs: int = option(1000, help="audited runs per audit and repetition (≥ 10)", flag="--runs")
    num_repetitions: int = option(20, help="independent repetitions averaged", flag="--repetitions")
    num_tuning_runs: int | None = option(
        None, help="separate threshold-tuning runs (none: as many as --runs)", flag="--tuning-runs"
    )
    target_epsilon: float | None = option(
        None, help="ε both audits must reach (none: the 1-canary mean bound)", flag="--target"
    )
    delta: float = option(1e-5, help="δ of the bounds and of the true ε")
    confidence_level: float = option(0.95, help="confidence level 1 − β of every bound")
    method: str = option("wilson4", help="LiDP interval: wilson1, wilson2 or wilson4")
    variance: str = option("reference", help="fourth-order variance form: reference or exact")
    run_grid: tuple[int, ...] | None = option(
        None, help="run counts evaluated (none: 14 geometric points)"
    )
    seed: int | None = option(None, help="root seed (none: fresh entropy)")

    def __post_init__(self) -> None:
        put = object.__setattr__
        if self.seed is not None:
            put(self, "seed", check_nonneg_int("seed", self.seed))
        put(self, "sigma", check_positive("sigma", self.sigma))
        put(self, "dim", check_positive_int("dim", self.dim))
        k = check_positive_int("num_canaries", self.num_canaries)
        put(self, "num_canaries", k)
        n = check_positive_int("num_runs", self.num_runs)
        _check_min_runs("num_runs", n)
        put(self, "num_runs", n)
        put(self, "num_repetitions", check_positive_int("num_repetitions", self.num_repetitions))
        if self.num_tuning_runs is not None:
            n_tune = check_positive_int("num_tuning_runs", self.num_tuning_runs)
            _check_min_runs("num_tuning_runs", n_tune)
            put(self, "num_tuning_runs", n_tune)
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
        # every repetition simulates tuning and audited runs of both audits (1 and k canaries)
        per_audit = n + self.tuning_runs
        check_simulated_runs(
            2.0 * per_audit * self.num_repetitions,
            f"num_runs={n} (--runs) with {self.tuning_runs} tuning runs (--tuning-runs), "
            f"2 audits and num_repetitions={self.num_repetitions} (--repetitions)",
        )
        check_memory(
            32.0 * per_audit * k,
            f"num_runs={n} (--runs) with num_canaries={k} (--canaries)",
        )

    @property
    def tuning_runs(self) -> int:
        """Tuning runs per audit and repetition (``num_tuning_runs`` or ``num_runs``)."""
        return self.num_runs if self.num_tuning_runs is None else self.num_tuning_runs


def _check_min_runs(name: str, value: int) -> None:
    if value < MIN_RUNS:
        raise ValueError(
            f"{name} must be at least {MIN_RUNS} (τ is tuned between the 10 % and 90 % "
            f"quantiles of the runs' statistics and the run grid starts at {MIN_RUNS}), "
            f"got {value}"
        )
