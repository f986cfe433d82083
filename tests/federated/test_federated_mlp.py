"""DP-FedAvg's MLP option: the local update against finite differences of the loss, He-normal
initialisation, the run's initial parameters used by the final-model adversary, the audit end to
end, and the option refused where it does not apply."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
)
from dpaudit.systems import DPFedAvg, FedAvgCell
from dpaudit.systems.federated import (
    dirichlet_split,
    initial_parameters,
    local_update,
    num_parameters,
    predict_logits,
)

pytest.importorskip("dp_accounting")


def _loss(theta, X, y, k, h):
    z = predict_logits(theta, X, k, h)
    z = z - z.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(y.size), y]))


def test_mlp_step_is_minus_the_finite_difference_gradient():
    """One local step of size η is −η ∇L: central differences of the mean cross-entropy (step
    1e-6) agree to 1e-8."""
    g = np.random.default_rng(0)
    f, k, h = 5, 3, 4
    X, y = g.normal(size=(7, f)), g.integers(0, k, 7)
    theta = initial_parameters(f, k, h, rng=1) + 0.1 * g.normal(size=num_parameters(f, k, h))
    lr = 1e-3
    step = local_update(theta, X, y, k, steps=1, lr=lr, hidden=h)
    eye = np.eye(theta.size) * 1e-6
    numeric = [(_loss(theta + e, X, y, k, h) - _loss(theta - e, X, y, k, h)) / 2e-6 for e in eye]
    np.testing.assert_allclose(-step / lr, numeric, atol=1e-8)
    # more steps keep descending the loss
    many = theta + local_update(theta, X, y, k, steps=50, lr=0.5, hidden=h)
    assert _loss(many, X, y, k, h) < _loss(theta, X, y, k, h)


def test_he_initialisation():
    """W₁ ~ N(0, 2/f) and W₂ ~ N(0, 2/h) (He et al. 2015), biases 0; softmax regression at 0."""
    f, k, h = 400, 10, 300
    theta = initial_parameters(f, k, h, rng=0)
    assert theta.size == f * h + h + h * k + k
    w1, b1 = theta[: f * h], theta[f * h : f * h + h]
    w2, b2 = theta[f * h + h : -k], theta[-k:]
    np.testing.assert_allclose(w1.var(), 2 / f, rtol=0.02)
    np.testing.assert_allclose(w2.var(), 2 / h, rtol=0.05)
    assert not b1.any() and not b2.any()
    assert not initial_parameters(f, k).any()


def test_mlp_run_records_its_start_and_is_seeded():
    g = np.random.default_rng(0)
    data = dirichlet_split(g.normal(size=(60, 4)), g.integers(0, 3, 60), 6, alpha=1.0, rng=0)
    cell = FedAvgCell(rounds=3, clients_per_round=6, population=6, sampling="all", hidden=5)
    system = DPFedAvg(cell)
    assert system.dimension(data) == 4 * 5 + 5 + 5 * 3 + 3
    run = system.train(data, rng=0)
    again = DPFedAvg(cell).train(data, rng=0)
    np.testing.assert_array_equal(run.final, again.final)
    np.testing.assert_allclose(run.final_delta, run.deltas.astype(np.float64).sum(axis=0),
                               atol=1e-5)  # fmt: skip
    assert run.initial is not None and np.any(run.initial)
    assert 0.0 <= system.accuracy(run.final, data.features[0], data.labels[0], 3) <= 1.0


def test_mlp_audit_end_to_end_and_the_option_belongs_to_dp_fedavg():
    """An honest MLP run (hidden 16, every client in each of 5 rounds, σ = 2.5) with 200 canary
    clients: the bound stays below the exact ε; ``hidden`` is refused for user-dp-sgd."""
    s = FederatedSettings(
        data=FederatedDataSettings(num_clients=20, examples=400, features=50),
        training=FederatedTrainingSettings(rounds=5, sampling="all", clients_per_round=None,
                                           noise_multiplier=2.5, hidden=16),
        canaries=FederatedCanarySettings(count=200),
    )  # fmt: skip
    r = audit_federated(s)
    assert r.detail.dimension == 50 * 16 + 16 + 16 * 10 + 10
    for e in r.entries:
        assert e.lower_bound.epsilon <= e.exact.epsilon <= e.claim.epsilon
    with pytest.raises(ValueError, match=r"training\.hidden=16 does not apply"):
        FederatedSettings(system="user-dp-sgd", training=FederatedTrainingSettings(hidden=16))
    with pytest.raises(ValueError, match="hidden"):
        FedAvgCell(hidden=-1)
