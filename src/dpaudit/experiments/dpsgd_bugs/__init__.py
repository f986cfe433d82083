"""Catch the DP-SGD implementation bugs that shipped (``dpaudit audit dp-sgd-bugs``).

* :mod:`.audits` — :data:`BUG_AUDITS`: per bug, the setting, pair, statistic and run counts.
* :mod:`.settings` — :class:`DPSGDBugsSettings`.
* :mod:`.pipeline` — :func:`audit_dpsgd_bugs`, :func:`audit_bug`.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.dpsgd_bugs.audits import BUG_AUDITS, BugAudit
from dpaudit.experiments.dpsgd_bugs.pipeline import (
    WORKFLOW,
    BugAuditDetail,
    audit_bug,
    audit_dpsgd_bugs,
    choose_threshold,
)
from dpaudit.experiments.dpsgd_bugs.settings import DPSGDBugsSettings

__all__ = [
    "BUG_AUDITS",
    "WORKFLOW",
    "BugAudit",
    "BugAuditDetail",
    "DPSGDBugsSettings",
    "audit_bug",
    "audit_dpsgd_bugs",
    "choose_threshold",
]

WORKFLOWS.register(
    "dp-sgd-bugs",
    Workflow(
        name="dp-sgd-bugs",
        settings=DPSGDBugsSettings,
        run=audit_dpsgd_bugs,
        summary="Catalogue of DP-SGD implementation bugs (shuffled batches, floored batch "
        "size, weighted sampler, batch clipping, noise scale): white-box multi-run audits "
        "against the library's own accountant, with the correct implementation as control.",
        report="dpaudit.report:generic_report",
        source="Chua et al. 2024, arXiv:2403.17673; Opacus issues #80, #571, #813, #819",
    ),
)
