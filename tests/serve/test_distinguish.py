"""The private-prediction adversaries over HTTP: a canary deployment (S′), crafting from a
live service, and the black-box RDP audit of two deployments — which catches a service that
publishes more noise than it adds (planted bug)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from serve_support import fixed_service

from dpaudit.attacks import craft_remote, distinguish_remote, remote_interface
from dpaudit.serve import ServiceServer, build_service, create_app


def _serve(svc):
    return ServiceServer(create_app(svc, access_log=False), lifetime=120)


def test_canary_deployment_changes_only_the_receiving_teacher(pate_settings, pate_data):
    s = pate_data
    x, wrong = s.X[0], (int(s.y[0]) + 1) % s.num_classes
    canary = dataclasses.replace(pate_settings.canary, features=tuple(x), label=wrong, teacher=3)
    plain = build_service(pate_settings, data=s)
    neighbour = build_service(dataclasses.replace(pate_settings, canary=canary), data=s)
    pa = plain.interface.ensemble.teacher_predictions(s.X[:200])
    pb = neighbour.interface.ensemble.teacher_predictions(s.X[:200])
    others = np.arange(pa.shape[1]) != 3
    np.testing.assert_array_equal(pa[:, others], pb[:, others])
    assert np.any(pa[:, 3] != pb[:, 3])  # the receiving teacher learnt the canary
    diff = np.abs(plain.interface.votes(s.X[:200]) - neighbour.interface.votes(s.X[:200]))
    assert diff.sum(axis=1).max() <= 2  # one teacher's vote moved at most
    with pytest.raises(ValueError, match=r"canary\.features"):
        bad = dataclasses.replace(canary, features=(0.0,))
        build_service(dataclasses.replace(pate_settings, canary=bad), data=s)


def test_crafting_from_a_live_service():
    svc = fixed_service(sigma=8.0, votes=[2, 20, 8])
    key = svc.ledger.add_client("a", 1e6)
    with _serve(svc) as srv, remote_interface(srv.url, key) as api:
        poison = craft_remote(api, [0.0], true_label=1, num_queries=3000, rng=0)
        natural = craft_remote(api, [0.0], true_label=1, crafter="natural")
    assert poison.crafter == "poisoning" and poison.label == 2 and poison.mislabelled
    assert natural.label == 1 and not natural.mislabelled


def _audit(claimed_sigma=None, seed=0):
    s, s2 = (
        fixed_service(sigma=1.0, votes=[10, 11, 9]),
        fixed_service(sigma=1.0, votes=[10, 10, 10]),
    )
    if claimed_sigma is not None:  # planted bug: publish more noise than is added
        for svc in (s, s2):
            info = svc.info()
            svc.info = lambda info=info: dataclasses.replace(info, sigma=claimed_sigma)
    k, k2 = s.ledger.add_client("a", 1e9), s2.ledger.add_client("a", 1e9)
    with (
        _serve(s) as srv,
        _serve(s2) as srv2,
        remote_interface(srv.url, k) as api,
        remote_interface(srv2.url, k2) as api2,
    ):
        return distinguish_remote(
            api, api2, [0.0], repetitions=4000, orders=[2.0, 4.0, 8.0], rng=seed
        )


def test_black_box_audit_of_two_deployments_stays_below_an_honest_claim():
    res = _audit()
    e = res.entries[0]
    assert res.workflow == "private-prediction-remote"
    assert e.detail["counts"].sum() == e.detail["counts_neighbour"].sum() == 4000
    assert np.any(e.lower_bound.rdp.epsilons > 0)  # the attack sees a difference
    assert not e.gap.refutes_claim  # σ = 1 published and used: α/σ² holds
    assert np.all(e.lower_bound.rdp.epsilons <= e.claim.rdp.epsilons)
    assert e.selections[0].strategy == "split"
    assert res.detail["budget"].num_queries == 4000


def test_black_box_audit_catches_a_service_with_less_noise_than_it_publishes():
    res = _audit(claimed_sigma=10.0)
    e = res.entries[0]
    assert e.gap.refutes_claim and e.gap.rdp_excess > 0
