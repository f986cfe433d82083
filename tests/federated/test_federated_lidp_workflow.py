"""The Lifted-DP bound inside the federated workflow (``audit.lidp_trials``): appended to the
one-run entries from the same clients, off by default, refused before any run when the canary
clients are too few for its intervals."""

from __future__ import annotations

import dataclasses

import pytest

from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.federated import (
    FederatedAuditSettings,
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
    lidp_canary_clients,
    run_federated,
)

pytest.importorskip("dp_accounting")


def _settings(trials: int, k: int = 8) -> FederatedSettings:
    return FederatedSettings(
        seed=4,
        data=FederatedDataSettings(num_clients=10, examples=200, features=100),
        training=FederatedTrainingSettings(rounds=3, sampling="all", clients_per_round=None,
                                           noise_multiplier=2.5),
        canaries=FederatedCanarySettings(count=k),
        audit=FederatedAuditSettings(lidp_trials=trials),
    )  # fmt: skip


def test_the_workflow_appends_the_lifted_dp_entry():
    s = _settings(3)
    assert WORKFLOWS.get("federated").run is run_federated
    res = run_federated(s)
    one_run = audit_federated(s)
    assert [e.adversary for e in res.entries[:-1]] == [e.adversary for e in one_run.entries]
    assert [e.lower_bound.epsilon for e in res.entries[:-1]] == [
        e.lower_bound.epsilon for e in one_run.entries
    ]
    lidp = res.entries[-1]
    assert lidp.adversary.endswith("Lifted DP") and lidp.detail.trials == 3
    assert lidp.lower_bound.epsilon == lidp_canary_clients(s, trials=3).lower_bound.epsilon


def test_off_by_default_and_refused_with_too_few_canaries():
    s = _settings(0)
    assert len(run_federated(s).entries) == len(audit_federated(s).entries)
    with pytest.raises(ValueError, match="at least 4 canary clients"):
        _settings(3, k=2)
    with pytest.raises(ValueError, match="lidp_trials"):
        FederatedAuditSettings(lidp_trials=-1)
    with pytest.raises(ValueError, match="lidp_threshold"):
        dataclasses.replace(FederatedAuditSettings(), lidp_threshold=float("inf"))
