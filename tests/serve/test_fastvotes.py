"""The serving fast path computes exactly the ensemble's votes, or is not used."""

from __future__ import annotations

import numpy as np

from dpaudit.data import load_digits
from dpaudit.mechanisms import GNMax
from dpaudit.serve.fastvotes import fast_votes
from dpaudit.systems import PrivatePredictor, TeacherEnsemble


def _parts(y):
    """Parts holding one class, two classes, and many classes."""
    rng = np.random.default_rng(0)
    idx = {c: np.flatnonzero(y == c) for c in range(10)}
    parts = [idx[0][:10], idx[1][:10]]  # constant teachers
    parts += [np.concatenate([idx[2][:15], idx[3][:15]]), np.concatenate([idx[4][:8], idx[5][:30]])]
    rest = np.setdiff1d(np.arange(y.size), np.concatenate(parts))
    parts += list(np.array_split(rng.permutation(rest)[:600], 6))
    return parts


def test_fast_votes_equal_the_ensemble_votes():
    ds = load_digits(seed=0)
    ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, partition=_parts(ds.y_train), rng=0)
    api = PrivatePredictor(ens, GNMax(1.0))
    fast = fast_votes(api)
    assert fast is not None
    X = np.vstack([ds.X_test, ds.X_test[:5], np.zeros((1, 64)), 16 * np.ones((1, 64))])
    np.testing.assert_array_equal(fast.votes(X), api.votes(X))
    np.testing.assert_array_equal(fast.votes(X[:1]), api.votes(X[:1]))


def test_fast_votes_are_not_used_where_they_do_not_apply():
    ds = load_digits(seed=0)
    trees = TeacherEnsemble.fit(
        ds.X_train[:200], ds.y_train[:200], num_teachers=4, estimator="extra-trees", rng=0
    )
    assert fast_votes(PrivatePredictor(trees, GNMax(1.0))) is None
    ens = TeacherEnsemble.fit(ds.X_train[:200], ds.y_train[:200], num_teachers=4, rng=0)
    assert fast_votes(PrivatePredictor(ens, GNMax(1.0), teachers_per_query=2)) is None
    assert fast_votes(object()) is None
