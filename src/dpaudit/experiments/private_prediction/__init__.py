"""Audit private prediction end to end (Chadha et al. 2024, "Auditing Private Prediction",
arXiv:2402.09403): any registered private-prediction system × any registered adversary.

* :mod:`.settings` — :class:`PrivatePredictionSettings` (data, system, adversary, engine, audit).
* :mod:`.stages` — the stages as public functions with typed results.
* :mod:`.bound` — the 2-cut RDP audit of per-query counts and its composition.
* :mod:`.results` — per-adversary detail and the shared :class:`dpaudit.AuditEntry`.
* :mod:`.pipeline` — :func:`audit_private_prediction`, the stages in order.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.private_prediction.bound import QueryAudit, audit_distributions
from dpaudit.experiments.private_prediction.pipeline import (
    SUMMARY_ORDERS,
    audit_adversary,
    audit_private_prediction,
)
from dpaudit.experiments.private_prediction.results import (
    AdversaryAudit,
    EpsilonDisplay,
    OrderingCheck,
    PrivatePredictionDetail,
    QueryResults,
    make_entry,
)
from dpaudit.experiments.private_prediction.settings import (
    SAMPLERS,
    AdversarySettings,
    AuditSettings,
    DataSettings,
    EngineSettings,
    PrivatePredictionSettings,
    SystemSettings,
)

__all__ = [
    "SAMPLERS",
    "SUMMARY_ORDERS",
    "AdversaryAudit",
    "AdversarySettings",
    "AuditSettings",
    "DataSettings",
    "EngineSettings",
    "EpsilonDisplay",
    "OrderingCheck",
    "PrivatePredictionDetail",
    "PrivatePredictionSettings",
    "QueryAudit",
    "QueryResults",
    "SystemSettings",
    "audit_adversary",
    "audit_distributions",
    "audit_private_prediction",
    "make_entry",
]


def _check_data(settings: PrivatePredictionSettings) -> None:
    """What a run checks before any training: the dataset is there and holds the teachers and
    queries asked for (:func:`.stages.load_data`)."""
    from dpaudit.experiments.private_prediction.stages import load_data

    load_data(settings)


WORKFLOWS.register(
    "private-prediction",
    Workflow(
        name="private-prediction",
        settings=PrivatePredictionSettings,
        run=audit_private_prediction,
        summary="Audit private prediction (PATE, CaPC, Private-kNN, PromptPATE): RDP lower "
        "bound vs exact and claimed RDP.",
        report="dpaudit.report.private_prediction:REPORT",
        config="demo",
        check=_check_data,
        source="Chadha et al. 2024, arXiv:2402.09403",
    ),
)
