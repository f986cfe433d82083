"""The federated workflow: valid bounds on honest runs, planted bugs refuted in one run,
bad settings refused before training, and the workflow's registration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpaudit.experiments import WORKFLOWS, run_workflow
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
    load_clients,
)

pytest.importorskip("dp_accounting")


def _settings(variant="correct", sigma=2.5, *, scale=1.0, seed=0, count=1000, features=1000,
              sampling="all", rounds=5) -> FederatedSettings:  # fmt: skip
    m = None if sampling == "all" else 10
    return FederatedSettings(
        seed=seed,
        data=FederatedDataSettings(num_clients=20, examples=400, features=features),
        training=FederatedTrainingSettings(rounds=rounds, sampling=sampling, clients_per_round=m,
                                           noise_multiplier=sigma, variant=variant),
        canaries=FederatedCanarySettings(count=count, scale=scale),
    )  # fmt: skip


@pytest.mark.slow
def test_bounds_never_exceed_the_claim_over_honest_seeds():
    """20 seeds of the composed Gaussian (the tightest regime: every canary every round) and 5
    with Poisson sampling; both threat models; each bound at 95 % confidence."""
    cases = [_settings(seed=s, count=500, features=500) for s in range(20)]
    cases += [_settings(seed=s, count=500, features=500, sampling="poisson", sigma=1.0,
                        rounds=20) for s in range(5)]  # fmt: skip
    found = []
    for s in cases:
        for e in audit_federated(s).entries:
            assert e.lower_bound.epsilon_is_valid
            found.append(e.lower_bound.epsilon / e.claim.epsilon)
            assert not e.gap.refutes_claim, (s.seed, e.adversary, e.lower_bound.epsilon)
            if e.exact is not None:
                assert e.lower_bound.epsilon <= e.exact.epsilon <= e.claim.epsilon
    assert max(found) > 0  # the audits do see something


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "sigma", "scale"),
    [("noise-divided-twice", 8.3, 1.0), ("clip-after-noise", 8.3, 30.0),
     ("example-level-accountant", 1.0, 1.0)],
)  # fmt: skip
def test_each_planted_bug_is_refuted_in_one_training_run(variant, sigma, scale):
    r = audit_federated(_settings(variant, sigma, scale=scale))
    for e in r.entries:
        assert e.gap.refutes_claim, (e.adversary, e.lower_bound.epsilon, e.claim.epsilon)
        assert e.lower_bound.epsilon > 2 * e.claim.epsilon
        assert e.exact is None  # a buggy system has no exact ε to show
    control = audit_federated(_settings("correct", sigma, scale=scale))
    assert not any(e.gap.refutes_claim for e in control.entries)


def test_workflow_is_registered_and_derives_its_settings():
    wf = WORKFLOWS.get("federated")
    assert wf.settings is FederatedSettings and "arXiv:2302.03098" in wf.source
    s = wf.load_settings(
        **{"canaries.count": 50, "training.rounds": 2, "training.clients_per_round": 10,
           "data.num_clients": 10}
    )  # fmt: skip
    assert s.population == 60 and s.cell(mean_examples=3.0).population == 60
    r = run_workflow("federated", s)
    assert [e.detail.threat_model for e in r.entries] == ["all-iterates", "final-model"]
    e = r.entries[0]
    assert e.claim.epsilon > 0 and e.detail.estimate.assumption.endswith("NOT a lower bound")
    assert e.selections[0].strategy == "split"
    assert r.detail.canaries == 50 and r.detail.inserted == e.detail.estimate.num_canaries
    assert r.to_json()  # strict JSON


def test_max_statistic_uses_the_canaries_left_out_as_null():
    s = _settings(count=200, features=100, sampling="poisson", sigma=1.0, rounds=10)
    s = dataclasses.replace(s, canaries=FederatedCanarySettings(count=200, all_iterates="max"))
    e = audit_federated(s).entries[0]
    assert e.detail.statistic == "max" and e.detail.estimate.null == "unseen"
    assert e.detail.estimate.num_unseen == 200 - e.detail.estimate.num_canaries


@pytest.mark.parametrize(
    ("make", "name"),
    [
        # more canary clients than the slots of full participation allow
        (lambda: FederatedTrainingSettings(sampling="all", clients_per_round=100), None),
        # a claim for another sampler than the one used
        (lambda: FederatedTrainingSettings(sampling="fixed", claim_sampling="poisson"),
         "claim_sampling"),
        (lambda: FederatedCanarySettings(inclusion=1.0), "inclusion"),
        (lambda: FederatedCanarySettings(all_iterates="mean"), "all_iterates"),
        (lambda: FederatedDataSettings(num_clients=10, examples=5), "examples"),
        (lambda: FederatedTrainingSettings(sampling="poisson", clients_per_round=None),
         "clients_per_round"),
        (lambda: FederatedSettings(system="dp-sgd"), "system"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused_before_training(make, name):
    if name is None:  # the slot count is checked against the population in the settings
        t = make()
        with pytest.raises(ValueError, match="canary clients"):
            FederatedSettings(training=t)
        with pytest.raises(ValueError, match="clients_per_round"):
            FederatedSettings(training=t)
        return
    with pytest.raises(ValueError, match=name):
        make()


def test_preloaded_data_must_be_federated():
    with pytest.raises(TypeError, match="data"):
        audit_federated(_settings(count=10, features=10), data=(np.zeros((3, 3)), None))


def test_generated_clients_are_seeded():
    a, _ = load_clients(FederatedDataSettings(num_clients=5, examples=50), rng=0)
    b, _ = load_clients(FederatedDataSettings(num_clients=5, examples=50), rng=0)
    for x, y in zip(a.features, b.features, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", ["federated-fashion-mnist", "federated-composed-gaussian"])
def test_shipped_configs_parse(name):
    s = WORKFLOWS.get("federated").load_settings(name)
    assert s.name == name and s.canaries.count == 1000
    cell = s.cell(mean_examples=20.0)
    assert cell.population == s.population
    if cell.sampling == "all":  # the composed Gaussian's exact ε is 4 at δ = 1e-5
        from dpaudit.systems import DPFedAvg

        np.testing.assert_allclose(DPFedAvg(cell).exact_claim(1e-5).epsilon, 4.0, rtol=1e-4)


def test_canary_users_show_the_gap_between_example_and_user_level_claims():
    """One run, σ = 1, 20 examples per client on average: the bound from canary clients (whole
    users) is below the user-level claim and far above the example-level one beside it."""
    e = audit_federated(_settings("correct", 1.0, count=500, features=500)).entries[0]
    user, example = e.claim, e.claim_of("accountant (RDP), example-level, for comparison")
    assert example.epsilon < e.lower_bound.epsilon < user.epsilon
    assert not e.gap.refutes_claim
