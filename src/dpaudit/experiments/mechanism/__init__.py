"""Black-box audit of DP mechanisms: DP-Sniper's classifier-threshold attack and exact counts
on StatDP's input patterns, bounded with exact Clopper–Pearson intervals on fresh samples
(Bichsel et al. 2021, IEEE S&P; Ding et al. 2018, CCS).

* :mod:`.settings` — :class:`MechanismAuditSettings`.
* :mod:`.pipeline` — :func:`audit_mechanism`, :class:`MechanismWitness`,
  :func:`replay_witness`.
* :mod:`.sequential` — the sequential mode (``mode="sequential"``): an anytime-valid test
  of the claim, pair and event re-chosen predictably before each epoch.

"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.mechanism.pipeline import (
    WORKFLOW,
    MechanismWitness,
    audit_mechanism,
    replay_witness,
    resolve_mechanism,
)
from dpaudit.experiments.mechanism.settings import MechanismAuditSettings

__all__ = [
    "WORKFLOW",
    "MechanismAuditSettings",
    "MechanismWitness",
    "audit_mechanism",
    "replay_witness",
    "resolve_mechanism",
]

WORKFLOWS.register(
    "mechanism",
    Workflow(
        name="mechanism",
        settings=MechanismAuditSettings,
        run=audit_mechanism,
        summary="Black-box DP mechanism audit: DP-Sniper classifier threshold or exact counts "
        "on StatDP input patterns, Clopper-Pearson bound on fresh samples, with a witness.",
        report="dpaudit.report:generic_report",
        source="Bichsel et al. 2021, IEEE S&P (DP-Sniper); Ding et al. 2018, CCS (StatDP)",
    ),
)
