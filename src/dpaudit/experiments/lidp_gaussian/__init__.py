"""The Lifted-DP audit of a Gaussian sum query, 1 vs k canaries per run (Pillutla, Andrew,
Kairouz, McMahan, Oprea & Oh 2023, "Unleashing the Power of Randomization in Auditing
Differentially Private ML", arXiv:2305.18447).

* :mod:`.pipeline` — :class:`LiDPGaussianSettings`, :func:`audit_lidp_gaussian` (settings) and
  :func:`run_lidp_gaussian` (arguments).
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.lidp_gaussian.pipeline import (
    NUM_THRESHOLDS,
    RUNS_PER_BLOCK,
    SYSTEM,
    GaussianCanaryStatistics,
    LiDPExperimentResult,
    LiDPGaussianSettings,
    audit_lidp_gaussian,
    gain_interval,
    lidp_gaussian_statistics,
    resolve_run_grid,
    run_lidp_gaussian,
    sample_complexity_gain,
    threshold_bound,
    tune_threshold,
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
