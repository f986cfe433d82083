"""User-level DP-SGD and canary users: gradients against a naive oracle, one step against a
naive implementation, the claims of both units against dp-accounting and μ-GDP, the audit with
canary users between the example- and the user-level claim, the planted bug refuted in one run,
honest runs never refuted, bad input refused before training."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpaudit._rng import as_generator, as_seed_sequence
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
)
from dpaudit.systems import SYSTEMS, UserDPSGD, UserDPSGDCell
from dpaudit.systems.federated import FederatedData, dirichlet_split, softmax_gradients

pytest.importorskip("dp_accounting")

DELTA = 1e-5


def _data(n: int = 24, users: int = 4, f: int = 3, seed: int = 0) -> FederatedData:
    g = np.random.default_rng(seed)
    return dirichlet_split(g.normal(size=(n, f)), g.integers(0, 3, n), users, alpha=1.0, rng=0)


def _naive_gradient(theta: np.ndarray, x: np.ndarray, y: int, k: int) -> np.ndarray:
    """One example's cross-entropy gradient of softmax regression, written out."""
    f = x.size
    w, b = theta[: f * k].reshape(f, k), theta[f * k :]
    z = x @ w + b
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    r = p - np.eye(k)[y]
    return np.concatenate([np.outer(x, r).ravel(), r])


def test_softmax_gradients_match_the_written_out_gradient():
    g = np.random.default_rng(1)
    X, y = g.normal(size=(7, 5)), g.integers(0, 4, 7)
    theta = g.normal(size=5 * 4 + 4)
    r, norms = softmax_gradients(theta, X, y, 4)
    for i in range(7):
        full = _naive_gradient(theta, X[i], int(y[i]), 4)
        np.testing.assert_allclose(np.concatenate([np.outer(X[i], r[i]).ravel(), r[i]]), full,
                                   rtol=1e-12, atol=1e-14)  # fmt: skip
        np.testing.assert_allclose(norms[i], np.linalg.norm(full), rtol=1e-12)


def _clip(v: np.ndarray, c: float) -> np.ndarray:
    return v * min(1.0, c / np.linalg.norm(v))


@pytest.mark.parametrize("variant", ["correct", "per-example-clipping"])
def test_one_step_matches_a_naive_implementation(variant):
    """Full participation, one step: the delta is −η(Σ clipped + canaries + noise)/m, with the
    noise the run's own first draw; per-user or per-example clipping written out."""
    data, c, eta, n_c, s = _data(), 0.3, 0.7, 3, 0.8
    cell = UserDPSGDCell(rounds=1, clients_per_round=6, population=6, sampling="all",
                         clip_norm=c, noise_multiplier=1.5, learning_rate=eta, max_examples=4,
                         canary_examples=n_c, variant=variant)  # fmt: skip
    can = np.eye(2, data.dimension, dtype=np.float32)
    run = UserDPSGD(cell).train(data, can, [True, False], canary_scale=s, rng=5)
    theta = np.zeros(data.dimension)
    total = np.zeros(data.dimension)
    for X, y in zip(data.features, data.labels, strict=True):
        grads = [_naive_gradient(theta, X[j], int(y[j]), 3) for j in range(min(4, y.size))]
        if variant == "correct":
            total += _clip(np.sum(grads, axis=0), c)
        else:
            total += np.sum([_clip(gr, c) for gr in grads], axis=0)
    canary = [-s * c * can[0].astype(np.float64)] * n_c
    total += _clip(np.sum(canary, axis=0), c) if variant == "correct" else np.sum(canary, axis=0)
    noise = as_generator(as_seed_sequence(5)).normal(0.0, 1.5 * c, data.dimension)
    expected = -eta * (total + noise) / 6
    np.testing.assert_allclose(run.deltas[0], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(run.final, expected, rtol=1e-12, atol=1e-15)


def _rdp_epsilon(q: float, z: float, rounds: int) -> float:
    import dp_accounting as dpa

    acct = dpa.rdp.RdpAccountant()
    acct.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), rounds)
    return acct.get_epsilon(DELTA)


@pytest.mark.parametrize(
    ("variant", "user_z", "example_z"),
    [("correct", 4.0, 2.0), ("per-example-clipping", 4.0 / 8, 2.0),
     ("example-level-claim", 4.0 / 8, 2.0)],
)  # fmt: skip
def test_claims_of_both_units_are_dp_accountings(variant, user_z, example_z):
    """Poisson q = 0.1, σ = 4, T = 50, n_max = 8: the user-level multiplier is σ (per-user
    clipping) or σ/n_max (per-example); the example-level one σ/2 under both (an example moves
    its user's clipped sum by up to 2C; under per-example clipping, by displacing another at
    the cap); the bug reports the example-level accountant's σ. dp-accounting's own RDP
    accountant is the reference (1 %: the default order grids differ)."""
    cell = UserDPSGDCell(rounds=50, clients_per_round=10, population=100, noise_multiplier=4.0,
                         max_examples=8, canary_examples=8, variant=variant)  # fmt: skip
    system = UserDPSGD(cell)
    user = system.unit_claim("user", DELTA).epsilon
    example = system.unit_claim("example", DELTA).epsilon
    np.testing.assert_allclose(user, _rdp_epsilon(0.1, user_z, 50), rtol=0.01)
    np.testing.assert_allclose(example, _rdp_epsilon(0.1, example_z, 50), rtol=0.01)
    reported = system.claim(delta=DELTA).epsilon
    if variant == "example-level-claim":  # an example-level accountant's σ, charging C
        np.testing.assert_allclose(reported, _rdp_epsilon(0.1, 4.0, 50), rtol=0.01)
        assert reported < example < user
    else:
        assert reported == user
    names = [c.analysis for c in system.comparison_claims(DELTA)]
    assert names[0] == "accountant (RDP), example-level, valid"
    assert ("accountant (RDP), user-level, valid" in names) == (variant == "example-level-claim")


def test_exact_epsilon_under_full_participation_is_gdp():
    """All users every step: the composed Gaussian, μ = √T·n_max/σ under per-example clipping
    (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13: ε at δ for μ = 1 is 4.377178 at 1e-5,
    the value the two-Gaussian estimate is tested against too)."""
    cell = UserDPSGDCell(rounds=4, clients_per_round=10, population=10, sampling="all",
                         noise_multiplier=16.0, max_examples=8, canary_examples=8,
                         variant="per-example-clipping")  # fmt: skip
    exact = UserDPSGD(cell).exact_claim(DELTA)
    np.testing.assert_allclose(exact.epsilon, 4.377178, atol=1e-5)  # μ = 2·8/16 = 1
    assert exact.epsilon <= UserDPSGD(cell).claim(delta=DELTA).epsilon
    poisson = UserDPSGDCell(rounds=4, clients_per_round=5, population=10)
    assert UserDPSGD(poisson).exact_claim(DELTA) is None


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"canary_examples": 9, "max_examples": 8}, "canary_examples"),
     ({"sampling": "all", "clients_per_round": 5, "population": 10}, "population"),
     ({"sampling": "fixed", "claim_sampling": "poisson"}, "claim_sampling"),
     ({"clients_per_round": 11, "population": 10}, "clients_per_round"),
     ({"variant": "noise-divided-twice"}, "variant"), ({"learning_rate": 0.0}, "learning_rate"),
     ({"max_examples": 0}, "max_examples")],
)  # fmt: skip
def test_cell_refuses_bad_settings(kwargs, name):
    with pytest.raises(ValueError, match=name):
        UserDPSGDCell(**kwargs)


def test_training_refuses_bad_input_before_any_step():
    system = UserDPSGD(UserDPSGDCell(rounds=10**9, clients_per_round=3, population=6))
    data = _data()
    can = np.eye(2, data.dimension, dtype=np.float32)
    for name, call in [
        ("data", lambda: system.train(np.zeros((3, 3)), rng=0)),
        ("population", lambda: system.train(data, rng=0)),
        ("canaries", lambda: system.train(data, 2 * can, rng=0)),
        ("included", lambda: system.train(data, can, [True], rng=0)),
        ("canary_scale", lambda: system.train(data, can, canary_scale=0.0, rng=0)),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):
            call()
    with pytest.raises(TypeError, match="settings"):
        UserDPSGD(FederatedSettings())
    with pytest.raises(ValueError, match="unit"):
        system.unit_claim("group", DELTA)


# ------------------------------------------------------------------------ the audit, canary users


def _settings(variant="correct", sigma=2.5, *, seed=0, count=500, examples=16, sampling="all",
              rounds=5) -> FederatedSettings:  # fmt: skip
    m = None if sampling == "all" else 10
    return FederatedSettings(
        system="user-dp-sgd",
        seed=seed,
        data=FederatedDataSettings(num_clients=20, examples=400, features=500),
        training=FederatedTrainingSettings(rounds=rounds, sampling=sampling, clients_per_round=m,
                                           noise_multiplier=sigma, variant=variant,
                                           max_examples=examples),
        canaries=FederatedCanarySettings(count=count, examples=examples),
    )  # fmt: skip


def test_canary_users_sit_between_the_example_and_the_user_level_claim():
    """Example-level DP-SGD with users sampled as units (σ = 20, 5 steps, every user every
    step), 500 canary users of 16 examples: the example-level guarantee (0.90) is exceeded by
    the valid bound of one run (3.07 and 3.93 at seed 0, 95 %), which stays below the
    user-level guarantee (9.37, multiplier σ/16). Both claims are printed in the entry."""
    for e in audit_federated(_settings("per-example-clipping", 20.0)).entries:
        example = e.claim_of("accountant (RDP), example-level, valid")
        assert e.claim.analysis.startswith("accountant (RDP), user-level")
        assert example.epsilon < e.lower_bound.epsilon < e.claim.epsilon
        assert e.lower_bound.epsilon <= e.exact.epsilon
        assert not e.gap.refutes_claim
        assert e.adversary.startswith("500 canary users of 16 examples")


def test_example_level_claim_read_as_user_level_is_refuted_in_one_run():
    """The planted bug: the same training, an example-level accountant's ε (0.42, multiplier σ)
    reported as user-level; one run's valid bound refutes it under both threat models (and
    exceeds the valid example-level 0.90); the valid user-level claim is printed
    beside it and is not exceeded."""
    for e in audit_federated(_settings("example-level-claim", 20.0)).entries:
        assert e.claim.analysis == "accountant (RDP), user-level (as reported), add/remove"
        assert e.gap.refutes_claim and e.lower_bound.epsilon > 5 * e.claim.epsilon
        user = e.claim_of("accountant (RDP), user-level, valid")
        assert e.lower_bound.epsilon < user.epsilon
        assert e.exact is None  # no exact value for a system whose claim is wrong


@pytest.mark.slow
def test_honest_user_level_runs_never_exceed_the_claim():
    """20 seeds of per-user clipping (σ = 2.5, all users every step) and 5 with Poisson user
    sampling (σ = 1, 20 steps); both threat models; each bound at 95 %."""
    cases = [_settings(seed=s) for s in range(20)]
    cases += [_settings(seed=s, sigma=1.0, sampling="poisson", rounds=20) for s in range(5)]
    seen = []
    for s in cases:
        for e in audit_federated(s).entries:
            assert not e.gap.refutes_claim, (s.seed, e.adversary, e.lower_bound.epsilon)
            if e.exact is not None:
                assert e.lower_bound.epsilon <= e.exact.epsilon <= e.claim.epsilon
            seen.append(e.lower_bound.epsilon)
    assert max(seen) > 0


def test_per_user_clipping_bounds_a_canary_user_by_one_clip():
    """The same canary users against per-user clipping at the example-level variant's user-level
    noise (σ = 20/16 = 1.25): the user-level claims agree (both 9.37), and the bound from
    canary users stays below it, as for the example-clipped run."""
    per_user = audit_federated(_settings("correct", 20.0 / 16)).entries[0]
    per_example = audit_federated(_settings("per-example-clipping", 20.0)).entries[0]
    np.testing.assert_allclose(per_user.claim.epsilon, per_example.claim.epsilon, rtol=1e-9)
    assert per_user.lower_bound.epsilon < per_user.claim.epsilon


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"system": "user-dp-sgd", "training": FederatedTrainingSettings(local_steps=3)},
      r"training\.local_steps=3 does not apply"),
     ({"canaries": FederatedCanarySettings(examples=8)}, r"canaries\.examples=8 does not apply"),
     ({"system": "user-dp-sgd",
       "training": FederatedTrainingSettings(variant="noise-divided-twice")}, "variant"),
     ({"system": "user-dp-sgd", "training": FederatedTrainingSettings(max_examples=4),
       "canaries": FederatedCanarySettings(examples=16)}, "canary_examples=16 exceeds"),
     ({"system": "user-dp-sgd", "data": FederatedDataSettings(num_clients=100),
       "training": FederatedTrainingSettings(sampling="all", clients_per_round=100)},
      "canary users")],
)  # fmt: skip
def test_settings_that_do_not_fit_the_system_are_refused_before_training(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FederatedSettings(**kwargs)


def test_registered_as_a_federated_system():
    assert "federated" in SYSTEMS.tags("user-dp-sgd")
    assert math.isfinite(SYSTEMS.get("user-dp-sgd")(UserDPSGDCell()).claim().epsilon)


def test_shipped_config_and_report_print_both_units():
    """``federated-user-level`` parses to the per-example-clipping run of the docs, and the
    workflow's report prints the reported claim and the example-level one beside it."""
    import io

    from rich.console import Console

    from dpaudit.experiments import WORKFLOWS
    from dpaudit.report.federated import render_federated

    s = WORKFLOWS.get("federated").load_settings("federated-user-level")
    expected = _settings("per-example-clipping", 20.0)
    assert (s.data, s.canaries) == (expected.data, expected.canaries)
    assert (s.system, s.training.variant, s.canaries.examples) == (
        "user-dp-sgd", "per-example-clipping", 16)  # fmt: skip
    result = audit_federated(dataclasses.replace(s, canaries=dataclasses.replace(
        s.canaries, count=40)))  # fmt: skip
    out = io.StringIO()
    render_federated(Console(file=out, width=200), result)
    text = out.getvalue()
    assert "claim: accountant (RDP), user-level, add/remove — ε = 9.368" in text
    assert "beside it: accountant (RDP), example-level, valid — ε = 0.897" in text
