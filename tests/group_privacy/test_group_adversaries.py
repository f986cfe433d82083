"""The group adversaries and the audited-query selection on small real systems."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks import GROUP_ADVERSARIES, EnsembleTarget, KNNTarget, make_target
from dpaudit.data import load_digits
from dpaudit.experiments.group_privacy import (
    GroupPrivacySettings,
    PairedHistograms,
    select_queries,
)
from dpaudit.mechanisms import GNMax, argmax_probabilities
from dpaudit.systems import SYSTEMS, PrivateKNN, PrivateKNNOptions, PrivatePredictionCell


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


@pytest.fixture(scope="module")
def pate(digits):
    system = SYSTEMS.get("pate")(PrivatePredictionCell(teachers=5, sigma=2.0))
    return make_target(system, digits.X_train, digits.y_train, num_classes=10, rng=0)


def _split(d):
    pool = (d.X_test[:60], d.y_test[:60])
    return pool, d.X_test[60:160], d.X_test[160:260]


def test_pate_group_moves_only_its_teacher(pate, digits):
    assert isinstance(pate, EnsembleTarget)
    pool, proxy, queries = _split(digits)
    adv = GROUP_ADVERSARIES.get("pate-group")
    p = adv.craft(pate, 8, pool, proxy, rng=np.random.default_rng(0))
    assert p.group_size == 8 and p.X.shape == (8, 64) and np.all(p.y == p.y[0])
    h, h2 = pate.votes(queries), pate.poisoned_votes(p, queries)
    np.testing.assert_array_equal(h.sum(1), h2.sum(1))
    assert np.abs(h2 - h).sum(1).max() == 2  # one teacher's vote moves, nowhere more
    assert p.proxy_effect >= 1
    # the same seed sends any group size to the same teacher
    one = adv.craft(pate, 1, pool, proxy, rng=np.random.default_rng(0))
    assert p.teacher == one.teacher


def test_capc_teacher_flips_most_queries(digits):
    system = SYSTEMS.get("capc")(PrivatePredictionCell(teachers=5, sigma=2.0))
    target = make_target(system, digits.X_train, digits.y_train, num_classes=10, rng=0)
    pool, proxy, queries = _split(digits)
    p = GROUP_ADVERSARIES.get("capc-teacher").craft(
        target, 1, pool, proxy, rng=np.random.default_rng(0)
    )
    assert p.unit == "teacher" and p.group_size == len(target.teacher_data(p.teacher)[1])
    changed = np.any(target.votes(queries) != target.poisoned_votes(p, queries), axis=1)
    assert changed.mean() > 0.8  # a relabelled party disagrees with itself almost everywhere


def test_knn_group_stacks_votes(digits):
    knn = PrivateKNN(GNMax(2.0), PrivateKNNOptions(k=30, sampling_rate=1.0))
    target = make_target(knn, digits.X_train, digits.y_train, num_classes=10, rng=0)
    assert isinstance(target, KNNTarget)
    pool, proxy, _ = _split(digits)
    p = GROUP_ADVERSARIES.get("knn-group").craft(target, 3, pool, proxy, rng=None)
    h, h2 = target.votes(proxy), target.poisoned_votes(p, proxy)
    moved = np.abs(h2 - h).sum(1) // 2
    assert moved.max() == 3 and p.distance == 3
    np.testing.assert_array_equal(h2.sum(1), np.full(len(proxy), 30))


def test_knn_target_needs_sampling_rate_one(digits):
    knn = PrivateKNN(GNMax(2.0), PrivateKNNOptions(k=30, sampling_rate=0.5))
    with pytest.raises(ValueError, match="sampling_rate = 1"):
        make_target(knn, digits.X_train, digits.y_train, num_classes=10, rng=0)
    with pytest.raises(TypeError, match="system must be"):
        make_target(object(), digits.X_train, digits.y_train, num_classes=10, rng=0)


def test_pool_smaller_than_group_is_refused(pate, digits):
    pool, proxy, _ = _split(digits)
    with pytest.raises(ValueError, match="size must be at most the 60 pool rows, got 61"):
        GROUP_ADVERSARIES.get("pate-group").craft(
            pate, 61, pool, proxy, rng=np.random.default_rng(0)
        )


def test_select_queries_keeps_the_largest_exact_divergences():
    h = np.array([[10, 0], [5, 5], [6, 4], [9, 1]])
    h2 = np.array([[9, 1], [4, 6], [5, 5], [8, 2]])
    pair = PairedHistograms(None, h, h2, np.arange(4))
    s = GroupPrivacySettings(audited_queries=2, orders=(2.0, 4.0), report_order=2.0)
    kept = select_queries(pair, 2.0, s)
    p, q = argmax_probabilities(h.astype(float), 2.0), argmax_probabilities(h2.astype(float), 2.0)
    d2 = np.log((p**2 / q).sum(1))
    np.testing.assert_array_equal(kept.changed, np.sort(np.argsort(-d2)[:2]))
    assert kept.changed.tolist() == [1, 2]  # the contested votes, not the decided ones
