"""Audit federated learning with user-level DP (``dpaudit audit federated``).

* :mod:`.settings` — :class:`FederatedSettings` (data, DP-FedAvg, canary clients, bounds).
* :mod:`.pipeline` — :func:`audit_federated`: one training run with canary clients; per
  threat model a valid one-run bound, Andrew et al.'s ε estimate and the claim.
* :mod:`.lidp` — :func:`lidp_canary_clients`: the Lifted-DP bound (Pillutla et al. 2023,
  arXiv:2305.18447) from n runs per side with k canary clients each.
"""

import dataclasses
from typing import Any

from dpaudit._results import AuditResult
from dpaudit._rng import child_seed
from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.federated.lidp import LiDPCanaryDetail, lidp_canary_clients
from dpaudit.experiments.federated.pipeline import (
    WORKFLOW,
    FederatedDetail,
    RunSummary,
    audit_federated,
    load_clients,
)
from dpaudit.experiments.federated.settings import (
    FederatedAuditSettings,
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
)

__all__ = [
    "WORKFLOW",
    "FederatedAuditSettings",
    "FederatedCanarySettings",
    "FederatedDataSettings",
    "FederatedDetail",
    "FederatedSettings",
    "FederatedTrainingSettings",
    "LiDPCanaryDetail",
    "RunSummary",
    "audit_federated",
    "lidp_canary_clients",
    "load_clients",
    "run_federated",
]


def run_federated(
    settings: FederatedSettings | None = None,
    *,
    data: Any = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """The workflow: :func:`audit_federated`'s one training run, and with
    ``audit.lidp_trials = n > 0`` the Lifted-DP entry of :func:`lidp_canary_clients` (2n more
    runs, its own seeds) appended to its entries."""
    s = settings if settings is not None else FederatedSettings()
    if data is None:
        data = load_clients(s.data, rng=child_seed(s.seed, 0))
    result = audit_federated(s, data=data, progress=progress, checkpoint=checkpoint)
    if not s.audit.lidp_trials:
        return result
    lidp = lidp_canary_clients(s, trials=s.audit.lidp_trials, threshold=s.audit.lidp_threshold,
                               data=data)  # fmt: skip
    return dataclasses.replace(result, entries=(*result.entries, lidp))


WORKFLOWS.register(
    "federated",
    Workflow(
        name="federated",
        settings=FederatedSettings,
        run=run_federated,
        summary="DP-FedAvg with canary clients, or user-level DP-SGD with canary users: one "
        "training run, valid one-run bounds (Steinke et al., f-DP) for the all-iterates and "
        "final-model threat models, with Andrew et al.'s one-shot ε estimate, the user-level "
        "claim and the example-level one beside them.",
        report="dpaudit.report.federated:REPORT",
        source="Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar 2024, arXiv:2302.03098",
    ),
)
