"""The Lifted-DP bound with canary clients (experiments.federated.lidp)."""

from __future__ import annotations

import pytest

from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    lidp_canary_clients,
)

pytest.importorskip("dp_accounting")


def _settings(variant="correct", sigma=2.5, seed=0, k=16) -> FederatedSettings:
    return FederatedSettings(
        seed=seed,
        data=FederatedDataSettings(num_clients=10, examples=200, features=200),
        training=FederatedTrainingSettings(rounds=5, sampling="all", clients_per_round=None,
                                           noise_multiplier=sigma, variant=variant),
        canaries=FederatedCanarySettings(count=k),
    )  # fmt: skip


@pytest.mark.slow
def test_lidp_bound_stays_below_the_exact_epsilon_on_honest_runs():
    for seed in range(5):
        e = lidp_canary_clients(_settings(seed=seed), trials=60)
        assert 0 <= e.lower_bound.epsilon <= e.exact.epsilon <= e.claim.epsilon
        assert e.detail.mean_alternative > 0.5 > abs(e.detail.mean_null)  # μ ≈ 0.89 apart
        assert e.selections[0].strategy == "explicit"


@pytest.mark.slow
def test_lidp_refutes_the_noise_bug():
    e = lidp_canary_clients(_settings("noise-divided-twice", sigma=8.3), trials=100)
    assert e.gap.refutes_claim and e.exact is None
    honest = lidp_canary_clients(_settings("correct", sigma=8.3), trials=100)
    assert not honest.gap.refutes_claim


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"trials": 0}, "trials"), ({"threshold": float("inf")}, "threshold"),
     ({"method": "wilson9"}, "method")],
)  # fmt: skip
def test_bad_input_is_refused_before_any_run(kwargs, name):
    args = {"trials": 10} | kwargs
    with pytest.raises(ValueError, match=name):
        lidp_canary_clients(_settings(), **args)
