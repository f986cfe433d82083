"""Bring your own model: every lower bound from canary scores computed elsewhere (one-run and
independent designs; Steinke, Nasr & Jagielski 2023, arXiv:2305.08846; Mahloujifar, Melis &
Chaudhuri 2024, arXiv:2410.22235).

* :mod:`.pipeline` — :class:`ScoresAuditSettings`, :func:`audit_scores` (files) and
  :func:`audit_canary_scores` (arrays).
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.canary_scores.pipeline import (
    DESIGNS,
    WORKFLOW,
    ScoresAuditSettings,
    audit_canary_scores,
    audit_scores,
    read_mask,
    read_scores,
)

__all__ = [
    "DESIGNS",
    "WORKFLOW",
    "ScoresAuditSettings",
    "audit_canary_scores",
    "audit_scores",
    "read_mask",
    "read_scores",
]

WORKFLOWS.register(
    "scores",
    Workflow(
        name="scores",
        settings=ScoresAuditSettings,
        run=audit_scores,
        summary="Bring your own model: Clopper-Pearson, GDP, one-run and f-DP lower bounds from "
        "canary scores (CSV/NPY), with every choice paid for.",
        report="dpaudit.report.dpsgd:SCORES_REPORT",
        source="Steinke et al. 2023, arXiv:2305.08846; Mahloujifar et al. 2024, arXiv:2410.22235",
    ),
)
