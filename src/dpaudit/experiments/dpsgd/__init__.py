"""DP-SGD audited in one training run (Liu, Boglioni, Fu, Hu, Thaker & Wu, "Enhancing One-run
Privacy Auditing with Quantile Regression-Based Membership Inference"; Steinke, Nasr & Jagielski
2023, arXiv:2305.08846): canaries, baseline and quantile-regression scores, one-run and f-DP
bounds with the number of guesses paid for.

* :mod:`.settings` — :class:`DPSGDAuditSettings`.
* :mod:`.pipeline` — :func:`audit_dpsgd`, the stages in order.
* :mod:`.reproduction` — the Table 1–2 layouts of Liu et al. and their summary.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.dpsgd.pipeline import (
    BOUND_NAMES,
    WORKFLOW,
    CanaryScores,
    DPSGDAuditDetail,
    EntrySummary,
    Repetition,
    RunLayout,
    audit_dpsgd,
    bound_scores,
    draw_layout,
    load_pool,
    score_canaries,
)
from dpaudit.experiments.dpsgd.reproduction import (
    LAYOUTS,
    PAPER,
    Layout,
    layout_settings,
    main,
    reproduction_markdown,
    reproduction_summary,
    run_layouts,
)
from dpaudit.experiments.dpsgd.settings import (
    AttackSettings,
    AuditBoundSettings,
    CanarySettings,
    DataSettings,
    DPSGDAuditSettings,
)

__all__ = [
    "BOUND_NAMES",
    "LAYOUTS",
    "PAPER",
    "WORKFLOW",
    "AttackSettings",
    "AuditBoundSettings",
    "CanaryScores",
    "CanarySettings",
    "DPSGDAuditDetail",
    "DPSGDAuditSettings",
    "DataSettings",
    "EntrySummary",
    "Layout",
    "Repetition",
    "RunLayout",
    "audit_dpsgd",
    "bound_scores",
    "draw_layout",
    "layout_settings",
    "load_pool",
    "main",
    "reproduction_markdown",
    "reproduction_summary",
    "run_layouts",
    "score_canaries",
]

WORKFLOWS.register(
    "dp-sgd",
    Workflow(
        name="dp-sgd",
        settings=DPSGDAuditSettings,
        run=audit_dpsgd,
        summary="One-run black-box audit of DP-SGD: canaries, baseline vs QMIA scores, one-run "
        "and f-DP bounds with the number of guesses paid for, next to the accountant's claim.",
        report="dpaudit.report.dpsgd:DPSGD_REPORT",
        source="Liu et al. (one-run QMIA audits); Steinke et al. 2023, arXiv:2305.08846",
    ),
)
