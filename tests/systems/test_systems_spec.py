"""PrivatePredictionSpec: PATE / CaPC configurations validated before training."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpaudit.systems import ConfidentGNMax, GNMax, PrivatePredictionSpec
from dpaudit.systems.data import load_dataset, load_digits


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


def test_pate_and_capc_build(digits):
    pate = PrivatePredictionSpec("pate", num_teachers=10, aggregator=GNMax(sigma=1.0))
    api = pate.build(digits.X_train, digits.y_train, rng=0)
    assert api.ensemble.scheme == "random" and api.ensemble.num_teachers == 10
    capc = PrivatePredictionSpec(
        "capc", num_teachers=4, aggregator=GNMax(sigma=1.0), teachers_per_query=3
    )
    api2 = capc.build(digits.X_train, digits.y_train, rng=0)
    assert api2.ensemble.scheme == "contiguous" and api2.teachers_per_query == 3
    np.testing.assert_array_equal(api2.votes(digits.X_test[:5], rng=0).sum(axis=1), np.full(5, 3))
    parties = [np.arange(0, 300), np.arange(300, 700)]
    api3 = PrivatePredictionSpec("capc", num_teachers=2, aggregator=GNMax(sigma=1.0)).build(
        digits.X_train, digits.y_train, parties=parties
    )
    np.testing.assert_array_equal(api3.ensemble.partitions[1], parties[1])
    with pytest.raises(ValueError, match="parties"):
        pate.build(digits.X_train, digits.y_train, parties=parties)
    with pytest.raises(ValueError, match="num_teachers"):
        PrivatePredictionSpec("capc", num_teachers=3, aggregator=GNMax(sigma=1.0)).build(
            digits.X_train, digits.y_train, parties=parties
        )


def test_bad_configs_fail_before_training(digits):
    made = []

    def factory(seed):
        made.append(seed)
        return LogisticRegression()

    agg = GNMax(sigma=40.0)
    with pytest.raises(ValueError, match="teachers_per_query"):
        PrivatePredictionSpec("pate", 250, agg, teachers_per_query=251, estimator=factory)
    with pytest.raises(ValueError, match="sigma"):
        PrivatePredictionSpec("pate", 250, GNMax(sigma=0.0), estimator=factory)
    with pytest.raises(ValueError, match="sigma2"):
        ConfidentGNMax(threshold=200, sigma1=150, sigma2=-40)
    with pytest.raises(ValueError, match="name"):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="algorithm"):
        PrivatePredictionSpec("promptpate", 250, agg)
    with pytest.raises(ValueError, match="num_teachers"):
        PrivatePredictionSpec("pate", 0, agg)
    with pytest.raises(ValueError, match="estimator"):
        PrivatePredictionSpec("pate", 10, agg, estimator="svm")
    with pytest.raises(TypeError, match="aggregator"):
        PrivatePredictionSpec("pate", 10, "gnmax")
    spec = PrivatePredictionSpec("pate", 2000, agg, estimator=factory)
    with pytest.raises(ValueError, match="num_teachers"):
        spec.check_num_points(digits.num_train)
    with pytest.raises(ValueError, match="num_teachers"):
        spec.build(digits.X_train, digits.y_train)
    assert made == []
