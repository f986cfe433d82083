"""DP-SGD audited in one training run (Liu, Boglioni, Fu, Hu, Thaker & Wu, "Enhancing One-run
Privacy Auditing with Quantile Regression-Based Membership Inference"; Steinke, Nasr & Jagielski
2023, arXiv:2305.08846): canaries, baseline and quantile-regression scores, one-run and f-DP
bounds with the number of guesses paid for.

* :mod:`.settings` — :class:`DPSGDAuditSettings`.
* :mod:`.threat_models` — :data:`THREAT_MODELS` (black-box, white-box) and
  :func:`audit_dpsgd`, which runs the one ``settings.threat_model`` names.
* :mod:`.pipeline` — the black-box stages in order.
* :mod:`.whitebox` — the white-box stages (canary gradients read at every step).
* :mod:`.worstcase` — the worst-case-initialised black-box stages (Annamalai & De
  Cristofaro 2024, arXiv:2405.14106: crafted θ₀ and target, many runs).
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
    audit_black_box,
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
    WhiteBoxSettings,
    WorstCaseInitSettings,
)
from dpaudit.experiments.dpsgd.threat_models import THREAT_MODELS, ThreatModel, audit_dpsgd
from dpaudit.experiments.dpsgd.whitebox import WhiteBoxDetail, audit_white_box
from dpaudit.experiments.dpsgd.worstcase import WorstCaseDetail, audit_worst_case_init

__all__ = [
    "BOUND_NAMES",
    "LAYOUTS",
    "PAPER",
    "THREAT_MODELS",
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
    "ThreatModel",
    "WhiteBoxDetail",
    "WhiteBoxSettings",
    "WorstCaseDetail",
    "WorstCaseInitSettings",
    "audit_black_box",
    "audit_dpsgd",
    "audit_white_box",
    "audit_worst_case_init",
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
        summary="One-run audit of DP-SGD, black-box (canaries, baseline vs QMIA scores) or "
        "white-box (canary gradients read at every step): one-run and f-DP bounds with the "
        "number of guesses paid for, next to the accountant's claim.",
        report="dpaudit.report.dpsgd:DPSGD_REPORT",
        source="Liu et al. (one-run QMIA audits); Steinke et al. 2023, arXiv:2305.08846",
    ),
)
