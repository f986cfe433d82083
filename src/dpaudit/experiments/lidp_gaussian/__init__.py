"""The Lifted-DP audit of a Gaussian sum query, 1 vs k canaries per run (Pillutla, Andrew,
Kairouz, McMahan, Oprea & Oh 2023, "Unleashing the Power of Randomization in Auditing
Differentially Private ML", arXiv:2305.18447).

* :mod:`.settings` — :class:`LiDPGaussianSettings`.
* :mod:`.simulation` — :func:`lidp_gaussian_statistics`, the exact simulation of the
  inner-product statistics.
* :mod:`.protocol` — threshold tuning and bounds, the run grid, runs needed and the
  sample-complexity gain (shared with the DP-SGD LiDP audit).
* :mod:`.pipeline` — :func:`audit_lidp_gaussian` (settings) and :func:`run_lidp_gaussian`
  (arguments).
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.lidp_gaussian.pipeline import (
    SYSTEM,
    LiDPExperimentResult,
    audit_lidp_gaussian,
    run_lidp_gaussian,
)
from dpaudit.experiments.lidp_gaussian.protocol import (
    NUM_THRESHOLDS,
    gain_interval,
    resolve_run_grid,
    sample_complexity_gain,
    threshold_bound,
    tune_threshold,
)
from dpaudit.experiments.lidp_gaussian.settings import LiDPGaussianSettings
from dpaudit.experiments.lidp_gaussian.simulation import (
    RUNS_PER_BLOCK,
    GaussianCanaryStatistics,
    lidp_gaussian_statistics,
)

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

WORKFLOWS.register(
    "lidp-gaussian",
    Workflow(
        name="lidp-gaussian",
        settings=LiDPGaussianSettings,
        run=audit_lidp_gaussian,
        summary="Lifted DP on a Gaussian sum query: runs needed by 1 canary/run vs k "
        "canaries/run to reach the same ε lower bound.",
        report="dpaudit.report.lidp:GAUSSIAN_REPORT",
        source="Pillutla et al. 2023, arXiv:2305.18447",
    ),
)
