"""The Lifted-DP audit of DP-SGD, k random canaries per training run, runs as engine tasks
(processes or Ray), resumable (Pillutla et al. 2023, arXiv:2305.18447).

* :mod:`.settings` — :class:`LiDPDPSGDSettings`.
* :mod:`.runs` — many training runs as engine tasks and their audit.
* :mod:`.batched` — the runs trained many at once (``training.trainer = "batched"``).
* :mod:`.pipeline` — :func:`run_lidp_dpsgd`, the stages in order.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.lidp_dpsgd.batched import BatchedDPSGDCanaryRuns
from dpaudit.experiments.lidp_dpsgd.pipeline import (
    JOURNAL,
    SYSTEM,
    WORKFLOW,
    DPSGDCanaryRuns,
    Layout,
    LiDPDPSGDDetail,
    build_runs,
    check_layout,
    draw_layout,
    load_data,
    pool_images,
    resolve_executor,
    run_lidp_dpsgd,
)
from dpaudit.experiments.lidp_dpsgd.runs import (
    LIDP_METHODS,
    METHOD_MIN_CANARIES,
    CanaryCountAudit,
    CanaryRuns,
    GainRecord,
    GaussianSumQueryRuns,
    LiDPAuditSettings,
    LiDPRunsAudit,
    RunPlan,
    audit_canary_runs,
    check_methods,
    collect_statistics,
    evaluate_statistics,
)
from dpaudit.experiments.lidp_dpsgd.settings import (
    EXECUTOR_NAMES,
    TRAINERS,
    ExecutionSettings,
    LiDPCanarySettings,
    LiDPDataSettings,
    LiDPDPSGDSettings,
    LiDPTrainingSettings,
)

__all__ = [
    "EXECUTOR_NAMES",
    "JOURNAL",
    "LIDP_METHODS",
    "METHOD_MIN_CANARIES",
    "SYSTEM",
    "TRAINERS",
    "WORKFLOW",
    "BatchedDPSGDCanaryRuns",
    "CanaryCountAudit",
    "CanaryRuns",
    "DPSGDCanaryRuns",
    "ExecutionSettings",
    "GainRecord",
    "GaussianSumQueryRuns",
    "Layout",
    "LiDPAuditSettings",
    "LiDPCanarySettings",
    "LiDPDPSGDDetail",
    "LiDPDPSGDSettings",
    "LiDPDataSettings",
    "LiDPRunsAudit",
    "LiDPTrainingSettings",
    "RunPlan",
    "audit_canary_runs",
    "build_runs",
    "check_layout",
    "check_methods",
    "collect_statistics",
    "draw_layout",
    "evaluate_statistics",
    "load_data",
    "pool_images",
    "resolve_executor",
    "run_lidp_dpsgd",
]

WORKFLOWS.register(
    "lidp-dp-sgd",
    Workflow(
        name="lidp-dp-sgd",
        settings=LiDPDPSGDSettings,
        run=run_lidp_dpsgd,
        summary="Lifted-DP audit of DP-SGD: k random canaries per training run, many runs on "
        "local processes or Ray, ε lower bounds (CP, Wilson 1/2/4) next to the claim.",
        report="dpaudit.report.lidp:DPSGD_REPORT",
        config="lidp-dp-sgd",
        source="Pillutla et al. 2023, arXiv:2305.18447",
    ),
)
