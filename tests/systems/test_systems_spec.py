"""PATE and CaPC as systems: configurations validated before training, registry, claims."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpaudit.data import load_dataset, load_digits
from dpaudit.systems import PATE, SYSTEMS, CaPC, ConfidentGNMax, GNMax, PrivatePredictionSystem


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


def test_pate_and_capc_build(digits):
    pate = PATE(num_teachers=10, mechanism=GNMax(sigma=1.0))
    api = pate.build(digits.X_train, digits.y_train, rng=0)
    assert api.ensemble.scheme == "random" and api.ensemble.num_teachers == 10
    capc = CaPC(num_teachers=4, mechanism=GNMax(sigma=1.0), teachers_per_query=3)
    api2 = capc.build(digits.X_train, digits.y_train, rng=0)
    assert api2.ensemble.scheme == "contiguous" and api2.teachers_per_query == 3
    np.testing.assert_array_equal(api2.votes(digits.X_test[:5], rng=0).sum(axis=1), np.full(5, 3))
    parties = [np.arange(0, 300), np.arange(300, 700)]
    api3 = CaPC(num_teachers=2, mechanism=GNMax(sigma=1.0)).build(
        digits.X_train, digits.y_train, parties=parties
    )
    np.testing.assert_array_equal(api3.ensemble.partitions[1], parties[1])
    with pytest.raises(ValueError, match="parties"):
        pate.build(digits.X_train, digits.y_train, parties=parties)
    with pytest.raises(ValueError, match="num_teachers"):
        CaPC(num_teachers=3, mechanism=GNMax(sigma=1.0)).build(
            digits.X_train, digits.y_train, parties=parties
        )


def test_bad_configs_fail_before_training(digits):
    made = []

    def factory(seed):
        made.append(seed)
        return LogisticRegression()

    agg = GNMax(sigma=40.0)
    with pytest.raises(ValueError, match="teachers_per_query"):
        PATE(250, agg, teachers_per_query=251, estimator=factory)
    with pytest.raises(ValueError, match="sigma"):
        PATE(250, GNMax(sigma=0.0), estimator=factory)
    with pytest.raises(ValueError, match="sigma2"):
        ConfidentGNMax(threshold=200, sigma1=150, sigma2=-40)
    with pytest.raises(ValueError, match="name"):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="unknown system"):
        SYSTEMS.get("promptpate-v0")
    with pytest.raises(ValueError, match="num_teachers"):
        PATE(0, agg)
    with pytest.raises(ValueError, match="estimator"):
        PATE(10, agg, estimator="svm")
    with pytest.raises(TypeError, match="mechanism"):
        PATE(10, "gnmax")
    spec = PATE(2000, agg, estimator=factory)
    with pytest.raises(ValueError, match="num_teachers"):
        spec.check_num_points(digits.num_train)
    with pytest.raises(ValueError, match="num_teachers"):
        spec.build(digits.X_train, digits.y_train)
    assert made == []


def test_systems_are_registered_and_state_their_claim():
    assert {"pate", "capc"} <= set(SYSTEMS.names())
    pate = PATE(20, GNMax(40.0))
    assert isinstance(pate, PrivatePredictionSystem)
    assert (pate.placement, pate.histogram_model) == ("random", "multinomial")
    capc = CaPC(20, GNMax(40.0))
    assert (capc.placement, capc.histogram_model) == ("chosen", "independent")
    c = pate.claim([2.0, 10.0], delta=1e-5)
    np.testing.assert_allclose(c.rdp.epsilons, [2 / 1600, 10 / 1600], rtol=1e-15)
    assert c.analysis == "data-independent" and c.epsilon > 0
    cg = PATE(20, ConfidentGNMax(200, 150, 40))
    np.testing.assert_allclose(cg.query_rdp([2.0]), [2 / (2 * 150**2) + 2 / 40**2], rtol=1e-15)


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((1, "gnmax"), ValueError, "num_teachers must be at least 2, got 1"),
        ((2.5, "gnmax"), TypeError, "num_teachers"),
        ((5, "laplace"), TypeError, "mechanism must be GNMax or ConfidentGNMax, got str"),
        ((5, "gnmax", 6), ValueError, r"teachers_per_query \(k\) must be at most num_teachers"),
        ((5, "gnmax", 0), ValueError, "teachers_per_query"),
    ],
)
def test_teacher_ensembles_share_one_check(args, exc, match):
    """PATE, CaPC and PromptPATE validate m, the aggregator and k through one function."""
    from dpaudit.systems._protocols import check_teacher_ensemble

    m, mech, *k = args
    mech = GNMax(4.0) if mech == "gnmax" else mech
    with pytest.raises(exc, match=match):
        check_teacher_ensemble(m, mech, *k)
    with pytest.raises(exc, match=match):
        PATE(num_teachers=m, mechanism=mech, teachers_per_query=k[0] if k else None)
    assert check_teacher_ensemble(np.int64(5), GNMax(4.0), 3) == (5, 3)
