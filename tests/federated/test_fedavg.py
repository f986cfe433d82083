"""DP-FedAvg (systems.federated): the claim, the training loop, its bugs, its input checks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpaudit.attacks import draw_canary_clients
from dpaudit.conversions import gdp_epsilon
from dpaudit.systems import FEDAVG_VARIANTS, SYSTEMS, DPFedAvg, FedAvgCell, FederatedData
from dpaudit.systems.federated import dirichlet_split, local_update

dpa = pytest.importorskip("dp_accounting")


def _data(n_clients=6, n=60, f=4, k=3, seed=0) -> FederatedData:
    g = np.random.default_rng(seed)
    return dirichlet_split(g.normal(size=(n, f)), g.integers(0, k, n), n_clients, alpha=1.0,
                           rng=seed)  # fmt: skip


# ------------------------------------------------------------------------------------ claim


def _reference_rdp_epsilon(q, z, rounds, delta):
    from dpaudit.accounting import DEFAULT_ORDERS

    acct = dpa.rdp.RdpAccountant(orders=list(DEFAULT_ORDERS))
    acct.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), rounds)
    return acct.get_epsilon(delta)


@pytest.mark.parametrize(("sampling", "m"), [("poisson", 50), ("all", 1000)])
def test_claim_is_dp_accountings(sampling, m):
    cell = FedAvgCell(rounds=30, clients_per_round=m, population=1000, sampling=sampling,
                      noise_multiplier=1.2)  # fmt: skip
    claim = DPFedAvg(cell).claim(delta=1e-6)
    ref = _reference_rdp_epsilon(m / 1000, 1.2, 30, 1e-6)
    np.testing.assert_allclose(claim.epsilon, ref, rtol=1e-9)
    assert "user-level" in claim.analysis and claim.delta == 1e-6


def test_claim_of_full_participation_is_above_the_exact_epsilon():
    for sigma in (0.5, 2.0, 8.0):
        fl = DPFedAvg(FedAvgCell(rounds=9, clients_per_round=10, population=10, sampling="all",
                                 noise_multiplier=sigma))  # fmt: skip
        exact = fl.exact_claim(1e-5).epsilon
        np.testing.assert_allclose(exact, gdp_epsilon(3.0 / sigma, 1e-5))
        assert exact <= fl.claim(delta=1e-5).epsilon <= 1.2 * exact + 0.05
    assert DPFedAvg(FedAvgCell()).exact_claim(1e-5) is None  # Poisson: no closed form


def test_fixed_size_claim_is_replace_one_without_replacement():
    fl = DPFedAvg(FedAvgCell(rounds=10, clients_per_round=20, population=200, sampling="fixed",
                             noise_multiplier=1.0))  # fmt: skip
    from dpaudit.accounting import DEFAULT_ORDERS

    acct = dpa.rdp.RdpAccountant(list(DEFAULT_ORDERS), dpa.NeighboringRelation.REPLACE_ONE)
    acct.compose(dpa.SampledWithoutReplacementDpEvent(200, 20, dpa.GaussianDpEvent(0.5)), 10)
    claim = fl.claim(delta=1e-5)
    np.testing.assert_allclose(claim.epsilon, acct.get_epsilon(1e-5), rtol=1e-9)
    assert "replace-one" in claim.analysis


def test_example_level_claim_is_far_below_the_user_level_one():
    cell = FedAvgCell(rounds=10, noise_multiplier=1.0, examples_per_client=20.0)
    user = DPFedAvg(cell).claim(delta=1e-5).epsilon
    bug = DPFedAvg(dataclasses.replace(cell, variant="example-level-accountant"))
    claim = bug.claim(delta=1e-5)
    np.testing.assert_allclose(claim.epsilon, _reference_rdp_epsilon(0.1, 20.0, 10, 1e-5),
                               rtol=1e-9)  # fmt: skip
    assert claim.epsilon < user / 10 and "as reported" in claim.analysis


# --------------------------------------------------------------------------------- training


def test_local_update_is_gradient_descent_on_the_cross_entropy():
    g = np.random.default_rng(1)
    X, y = g.normal(size=(8, 3)), g.integers(0, 4, 8)
    theta = g.normal(size=16)

    def loss(t):
        z = X @ t[:12].reshape(3, 4) + t[12:]
        return float(np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(8), y]))

    grad = np.array([(loss(theta + e) - loss(theta - e)) / 2e-6 for e in np.eye(16) * 1e-6])
    np.testing.assert_allclose(local_update(theta, X, y, 4, steps=1, lr=0.1), -0.1 * grad,
                               atol=1e-8)  # fmt: skip


def test_dirichlet_split_keeps_every_example_and_skews_labels():
    g = np.random.default_rng(2)
    X, y = g.normal(size=(1000, 2)), np.repeat(np.arange(10), 100)
    data = dirichlet_split(X, y, 20, alpha=0.1, rng=0)
    assert sum(lab.size for lab in data.labels) == 1000 and min(lab.size for lab in data.labels)
    top = [np.bincount(lab, minlength=10).max() / lab.size for lab in data.labels]
    iid = dirichlet_split(X, y, 20, alpha=1000.0, rng=0)
    top_iid = [np.bincount(lab, minlength=10).max() / lab.size for lab in iid.labels]
    assert np.mean(top) > 0.6 > 0.3 > np.mean(top_iid)


def test_training_is_seeded_and_full_participation_counts_every_round():
    data = _data()
    can = draw_canary_clients(4, data.dimension, rng=0)
    fl = SYSTEMS.get("dp-fedavg")(FedAvgCell(rounds=4, clients_per_round=10, population=10,
                                             sampling="all"))  # fmt: skip
    a = fl.train(data, can.directions, can.included, rng=7)
    b = fl.train(data, can.directions, can.included, rng=7)
    np.testing.assert_array_equal(a.deltas, b.deltas)
    np.testing.assert_allclose(a.final, a.deltas.astype(np.float64).sum(axis=0), atol=1e-5)
    assert a.participation.tolist() == [4] * 4 and a.participants.tolist() == [10] * 4


def _noise_only(variant, sigma=1.0, d_features=200):
    """Rounds with no clients' signal (one real client, lr tiny): the deltas are the noise."""
    data = _data(n_clients=1, n=5, f=d_features, k=2)
    cell = FedAvgCell(
        rounds=3, clients_per_round=10, population=1, sampling="all", noise_multiplier=sigma,
        client_learning_rate=1e-12, variant=variant,
    )  # fmt: skip
    return DPFedAvg(cell).train(data, rng=0).deltas.astype(np.float64)


def test_planted_noise_bug_divides_the_noise_by_m_again():
    correct, bug = _noise_only("correct"), _noise_only("noise-divided-twice")
    np.testing.assert_allclose(correct.std(), 1.0 / 10, rtol=0.05)  # σC/m, d = 402 per round
    np.testing.assert_allclose(bug.std(), 1.0 / 100, rtol=0.05)


def test_clip_after_noise_leaves_big_canaries_unclipped():
    data = _data(n_clients=2, n=10, f=50, k=2)
    can = draw_canary_clients(1, data.dimension, inclusion=1.0, rng=0)
    out = {}
    for v in ("correct", "clip-after-noise"):
        cell = FedAvgCell(rounds=1, clients_per_round=3, population=3, sampling="all",
                          noise_multiplier=1e-6, client_learning_rate=1e-12, variant=v)  # fmt: skip
        out[v] = DPFedAvg(cell).train(data, can.directions, can.included, canary_scale=2.5,
                                      rng=0).deltas[0].astype(np.float64)  # fmt: skip
    c = can.directions[0].astype(np.float64)
    np.testing.assert_allclose(out["correct"] @ c, 1.0 / 3, rtol=1e-3)  # clipped to C, ÷ m
    np.testing.assert_allclose(out["clip-after-noise"] @ c, 2.5 / 3, rtol=1e-3)


def test_poisson_sampling_rate():
    data = _data(n_clients=10, n=50)
    fl = DPFedAvg(FedAvgCell(rounds=200, clients_per_round=3, population=30))
    can = draw_canary_clients(20, data.dimension, rng=0)
    run = fl.train(data, can.directions, can.included, rng=1)
    # each slot in a round w.p. 0.1: 200·30 Bernoulli draws, mean 600, sd ≈ 23
    assert abs(run.participants.sum() - 600) < 100
    assert abs(run.participation.mean() - 20) < 5


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"claim_sampling": "poisson", "sampling": "fixed"}, "claim_sampling"),
        ({"sampling": "all", "clients_per_round": 10, "population": 11}, "clients_per_round"),
        ({"clients_per_round": 12, "population": 11}, "clients_per_round"),
        ({"sampling": "shuffle"}, "sampling"),
        ({"noise_multiplier": 0.0}, "noise_multiplier"),
        ({"rounds": 0}, "rounds"),
        ({"variant": "nope"}, "variant"),
    ],
)
def test_cell_refuses_bad_settings(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FedAvgCell(**kwargs)


def test_training_refuses_bad_input_before_any_round():
    data = _data()
    fl = DPFedAvg(FedAvgCell(rounds=2, clients_per_round=3, population=8))
    good = draw_canary_clients(2, data.dimension, rng=0)
    bad = [
        ("data", lambda: fl.train(data.features, rng=0)),
        ("canaries", lambda: fl.train(data, good.directions[:, :5], rng=0)),
        ("canaries", lambda: fl.train(data, 2 * good.directions, rng=0)),
        ("included", lambda: fl.train(data, good.directions, [True], rng=0)),
        ("population", lambda: fl.train(data, rng=0)),
        ("canary_scale", lambda: fl.train(data, good.directions, canary_scale=0.0, rng=0)),
    ]
    for name, call in bad:
        with pytest.raises((ValueError, TypeError), match=name):
            call()
    nan, inf = good.directions.copy(), good.directions.copy()
    nan[0, 1], inf[1, 0] = np.nan, np.inf
    for broken in (nan, inf):  # one pass over the rows still names what failed
        with pytest.raises(ValueError, match="canaries must be finite"):
            fl.train(data, broken, rng=0)
    with pytest.raises(ValueError, match="canaries must be unit vectors"):
        fl.train(data, 2 * good.directions, rng=0)
    with pytest.raises(TypeError, match="settings"):
        DPFedAvg({"rounds": 2})


def test_variants_are_registered_with_their_bug():
    assert FEDAVG_VARIANTS.names()[0] == "correct"
    assert FEDAVG_VARIANTS.get("correct").bug is None
    assert all(FEDAVG_VARIANTS.get(n).bug for n in FEDAVG_VARIANTS.names()[1:])
    assert math.isfinite(DPFedAvg(FedAvgCell()).claim(delta=1e-5).epsilon)
