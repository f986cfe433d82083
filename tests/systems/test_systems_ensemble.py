"""Teacher ensembles (paper 000 Alg. 1 training phase) on real data (sklearn digits)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from dpaudit.data import load_digits
from dpaudit.systems import (
    TeacherEnsemble,
    fit_teacher,
    make_estimator,
    make_partition,
    retrain_with_points,
    train_instantiations,
)
from dpaudit.systems.private_prediction._ridge import RidgeTeacher

M = 12


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


@pytest.fixture(scope="module")
def ensemble(digits):
    return TeacherEnsemble.fit(digits.X_train, digits.y_train, num_teachers=M, rng=7)


def _naive_votes(ens, X, chosen=None):
    """Oracle: ask every (chosen) teacher about every query, one at a time."""
    out = np.zeros((X.shape[0], ens.num_classes), dtype=np.int64)
    for j in range(X.shape[0]):
        ids = range(ens.num_teachers) if chosen is None else chosen[j]
        for i in ids:
            out[j, int(ens.teachers[i].predict(X[j : j + 1])[0])] += 1
    return out


# ----------------------------------------------------------------------------- partitions


@pytest.mark.parametrize("scheme", ["random", "contiguous"])
def test_make_partition_disjoint_covering_balanced(scheme):
    parts = make_partition(103, 10, scheme=scheme, rng=1)
    allidx = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(103))
    sizes = [p.size for p in parts]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 103
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_make_partition_seeded():
    a = make_partition(50, 5, rng=3)
    b = make_partition(50, 5, rng=3)
    c = make_partition(50, 5, rng=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    contiguous = make_partition(5, 2, scheme="contiguous")
    assert [p.tolist() for p in contiguous] == [[0, 1, 2], [3, 4]]
    with pytest.raises(ValueError, match="num_parts"):
        make_partition(3, 4)
    with pytest.raises(ValueError, match="scheme"):
        make_partition(3, 2, scheme="shuffled")


def test_ensemble_partitions_disjoint_covering_and_seeded(digits, ensemble):
    n = digits.num_train
    np.testing.assert_array_equal(np.sort(np.concatenate(ensemble.partitions)), np.arange(n))
    again = TeacherEnsemble.fit(digits.X_train, digits.y_train, num_teachers=M, rng=7)
    other = TeacherEnsemble.fit(digits.X_train, digits.y_train, num_teachers=M, rng=8)
    for a, b in zip(ensemble.partitions, again.partitions, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ensemble.teacher_seeds == again.teacher_seeds
    assert not np.array_equal(ensemble.partitions[0], other.partitions[0])
    np.testing.assert_array_equal(ensemble.votes(digits.X_test), again.votes(digits.X_test))
    assert ensemble.scheme == "random" and ensemble.modified == ()


def test_capc_contiguous_and_explicit_parties(digits):
    X, y = digits.X_train[:240], digits.y_train[:240]
    ens = TeacherEnsemble.fit(X, y, num_teachers=4, partition="contiguous")
    assert [p.tolist() for p in ens.partitions] == [
        list(range(i * 60, (i + 1) * 60)) for i in range(4)
    ]
    parties = [np.arange(0, 100), np.arange(150, 240)]
    ens2 = TeacherEnsemble.fit(X, y, partition=parties, rng=0)
    assert ens2.scheme == "explicit" and ens2.num_teachers == 2
    np.testing.assert_array_equal(ens2.partitions[1], np.arange(150, 240))
    with pytest.raises(ValueError, match="disjoint"):
        TeacherEnsemble.fit(X, y, partition=[np.arange(0, 10), np.arange(5, 20)])
    with pytest.raises(ValueError, match="num_teachers"):
        TeacherEnsemble.fit(X, y, partition=parties, num_teachers=3)
    with pytest.raises(ValueError, match=r"partition\[0\]"):
        TeacherEnsemble.fit(X, y, partition=[np.arange(230, 250)])


# ----------------------------------------------------------------------------- votes


def test_votes_match_naive_oracle_and_sum_to_m(digits, ensemble):
    X = digits.X_test[:25]
    votes = ensemble.votes(X)
    np.testing.assert_array_equal(votes, _naive_votes(ensemble, X))
    np.testing.assert_array_equal(votes.sum(axis=1), np.full(25, M))
    preds = ensemble.teacher_predictions(X)
    assert preds.shape == (25, M)
    # the ensemble is far better than one teacher on digits
    assert (
        ensemble.plurality_accuracy(digits.X_test, digits.y_test)
        > ensemble.teacher_accuracy(digits.X_test, digits.y_test).mean()
    )


def test_votes_random_subsets_of_k(digits, ensemble):
    X = digits.X_test[:40]
    votes = ensemble.votes(X, teachers=5, rng=11)
    np.testing.assert_array_equal(votes.sum(axis=1), np.full(40, 5))
    np.testing.assert_array_equal(votes, ensemble.votes(X, teachers=5, rng=11))
    # reproduce the subsets the documented way and compare with the oracle
    keys = np.random.default_rng(11).random((40, M))
    chosen = np.argpartition(keys, 4, axis=1)[:, :5]
    np.testing.assert_array_equal(votes, _naive_votes(ensemble, X, chosen))
    assert len({tuple(sorted(c)) for c in chosen}) > 1  # a fresh subset per query
    np.testing.assert_array_equal(ensemble.votes(X, teachers=M, rng=0), ensemble.votes(X))


def test_votes_explicit_teacher_subsets(digits, ensemble):
    X = digits.X_test[:6]
    ids = np.array([0, 3, 5])
    np.testing.assert_array_equal(
        ensemble.votes(X, teachers=ids), _naive_votes(ensemble, X, [ids] * 6)
    )
    per_query = np.array([[i % M, (i + 1) % M] for i in range(6)])
    np.testing.assert_array_equal(
        ensemble.votes(X, teachers=per_query), _naive_votes(ensemble, X, per_query)
    )


def test_repeated_queries_are_predicted_consistently(digits, ensemble):
    X = digits.X_test[:5]
    rep = np.vstack([X, X[::-1], X[2:3]])
    np.testing.assert_array_equal(
        ensemble.teacher_predictions(rep),
        np.vstack(
            [ensemble.teacher_predictions(X)[i : i + 1] for i in [0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 2]]
        ),
    )
    assert ensemble.votes(X[0]).shape == (1, 10)


def test_votes_bad_input(digits, ensemble):
    X = digits.X_test[:3]
    with pytest.raises(ValueError, match="teachers"):
        ensemble.votes(X, teachers=M + 1, rng=0)
    with pytest.raises(ValueError, match="teachers"):
        ensemble.votes(X, teachers=0, rng=0)
    with pytest.raises(ValueError, match="teachers"):
        ensemble.votes(X, teachers=np.array([0, M]))
    with pytest.raises(ValueError, match="teachers"):
        ensemble.votes(X, teachers=np.array([1, 1]))
    with pytest.raises(ValueError, match="teachers"):
        ensemble.votes(X, teachers=np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match="X"):
        ensemble.votes(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="X"):
        ensemble.votes(np.full((1, 64), np.nan))


# ----------------------------------------------------------------------------- neighbours


def test_with_point_retrains_only_the_affected_teacher(digits, ensemble):
    x = digits.X_test[0]
    votes = ensemble.votes(digits.X_test)
    top2 = np.argsort(votes[0])[::-1]
    poison = int(top2[1])  # the query mislabelled with its second most common label
    j = 4
    neighbour = ensemble.with_point(x, poison, partition=j)
    assert neighbour.modified == (j,)
    assert neighbour.num_points == digits.num_train + 1
    assert neighbour.partitions[j].size == ensemble.partitions[j].size + 1
    assert neighbour.partitions[j][-1] == digits.num_train
    for i in range(M):
        if i != j:
            assert neighbour.teachers[i] is ensemble.teachers[i]
            np.testing.assert_array_equal(neighbour.partitions[i], ensemble.partitions[i])
    # the retrained teacher is exactly a fresh fit on its part plus the point, same seed
    rows = np.vstack([digits.X_train[ensemble.partitions[j]], x[None, :]])
    labels = np.append(digits.y_train[ensemble.partitions[j]], poison)
    oracle = make_estimator(None, seed=ensemble.teacher_seeds[j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        oracle.fit(rows, labels)
    via_api = fit_teacher(rows, labels, seed=ensemble.teacher_seeds[j])
    np.testing.assert_array_equal(via_api.predict(digits.X_test), oracle.predict(digits.X_test))
    np.testing.assert_array_equal(
        neighbour.teachers[j].predict(digits.X_test), oracle.predict(digits.X_test)
    )
    # the votes move by at most one teacher: L1 change ≤ 2 per query
    new_votes = neighbour.votes(digits.X_test)
    assert np.abs(new_votes - votes).sum(axis=1).max() <= 2
    np.testing.assert_array_equal(new_votes.sum(axis=1), np.full(digits.num_test, M))
    # the poisoned teacher memorises its point
    assert neighbour.teachers[j].predict(x[None, :])[0] == poison
    assert neighbour.partition_of(digits.num_train) == j
    xs, ys = neighbour.training_rows([digits.num_train])
    np.testing.assert_array_equal(xs[0], x)
    assert ys.tolist() == [poison]


def test_with_point_random_part_and_without_point(digits, ensemble):
    a = ensemble.with_point(digits.X_test[1], 2, rng=5)
    b = ensemble.with_point(digits.X_test[1], 2, rng=5)
    assert a.modified == b.modified and a.modified[0] == int(np.random.default_rng(5).integers(M))
    removed = a.without_point(digits.num_train)
    j = a.modified[0]
    np.testing.assert_array_equal(removed.partitions[j], ensemble.partitions[j])
    np.testing.assert_array_equal(
        removed.teachers[j].predict(digits.X_test), ensemble.teachers[j].predict(digits.X_test)
    )
    with pytest.raises(ValueError, match="partition"):
        ensemble.with_point(digits.X_test[0], 1, partition=M)
    with pytest.raises(ValueError, match="X_new"):
        ensemble.with_point(np.zeros(3), 1, partition=0)
    with pytest.raises(ValueError, match="y_new"):
        ensemble.with_point(digits.X_test[0], 10, partition=0)
    with pytest.raises(ValueError, match="index"):
        ensemble.without_point(10**6)


# ----------------------------------------------------------------------------- estimators


def test_estimator_specs(digits):
    X, y = digits.X_train[:200], digits.y_train[:200]
    trees = TeacherEnsemble.fit(
        X, y, num_teachers=3, estimator=ExtraTreesClassifier(n_estimators=5), rng=0
    )
    assert [t.random_state for t in trees.teachers] == list(trees.teacher_seeds)
    assert all(t.n_estimators == 5 for t in trees.teachers)
    made = []

    def factory(seed):
        made.append(seed)
        return LogisticRegression(max_iter=300)

    fac = TeacherEnsemble.fit(X, y, num_teachers=2, estimator=factory, rng=0)
    assert made == list(fac.teacher_seeds)
    assert make_estimator("random-forest", seed=4).n_estimators == 100
    with pytest.raises(TypeError, match="instance"):
        make_estimator(LogisticRegression)
    with pytest.raises(ValueError, match="estimator"):
        fit_teacher(X, y, estimator="svm")
    with pytest.raises(ValueError, match="seed"):
        fit_teacher(X, y, seed=-1)


def test_single_class_part_gives_constant_teacher(digits):
    X, y = digits.X_train, digits.y_train
    zeros = np.flatnonzero(y == 0)[:20]
    mixed = np.flatnonzero(y != 0)[:40]
    ens = TeacherEnsemble.fit(X, y, partition=[zeros, mixed], num_classes=10)
    np.testing.assert_array_equal(ens.teacher_predictions(digits.X_test[:7])[:, 0], np.zeros(7))


def test_bad_configs_fail_before_any_training(digits):
    X, y = digits.X_train, digits.y_train
    made = []

    def factory(seed):
        made.append(seed)
        return LogisticRegression()

    bad = [
        ({"num_teachers": X.shape[0] + 1}, "num_teachers"),
        ({"num_teachers": 0}, "num_teachers"),
        ({}, "num_teachers"),
        ({"num_teachers": 3, "partition": "by-party"}, "partition"),
        ({"num_teachers": 3, "n_jobs": 0}, "n_jobs"),
        ({"num_teachers": 3, "num_classes": 5}, "num_classes"),
    ]
    for kwargs, match in bad:
        with pytest.raises(ValueError, match=match):
            TeacherEnsemble.fit(X, y, estimator=factory, **kwargs)
    with pytest.raises(ValueError, match="estimator"):
        TeacherEnsemble.fit(X, y, num_teachers=3, estimator="svm")
    with pytest.raises(ValueError, match="y"):
        TeacherEnsemble.fit(X, y[:-1], num_teachers=3, estimator=factory)
    with pytest.raises(ValueError, match="y"):
        TeacherEnsemble.fit(X, -y - 1, num_teachers=3, estimator=factory)
    with pytest.raises(ValueError, match="X"):
        TeacherEnsemble.fit(X[:, :, None], y, num_teachers=3, estimator=factory)
    with pytest.raises(TypeError, match="n_jobs"):
        TeacherEnsemble.fit(X, y, num_teachers=3, n_jobs=1.5, estimator=factory)
    assert made == []


def test_parallel_training_equals_serial_with_progress(digits):
    X, y = digits.X_train[:400], digits.y_train[:400]
    serial = TeacherEnsemble.fit(X, y, num_teachers=4, rng=3)
    parallel = TeacherEnsemble.fit(X, y, num_teachers=4, rng=3, n_jobs=2, progress=True)
    np.testing.assert_array_equal(
        serial.teacher_predictions(digits.X_test), parallel.teacher_predictions(digits.X_test)
    )


# ------------------------------------------------------------------- bit-reproducibility


@pytest.mark.parametrize("estimator", ["logistic", "ridge"])
def test_training_and_retraining_are_bit_identical_whatever_n_jobs(digits, estimator):
    """Same seed ⇒ the same bits: teachers' parameters, votes and retrained votes, with one
    worker or two (one BLAS thread per fit in both)."""
    X, y = digits.X_train, digits.y_train
    q = digits.X_test[:40]
    runs = [
        train_instantiations(
            X,
            y,
            q,
            partition="random",
            num_teachers=8,
            num_instantiations=2,
            estimator=estimator,
            rng=5,
            n_jobs=n_jobs,
        )
        for n_jobs in (1, 2)
    ]
    np.testing.assert_array_equal(runs[0].predictions, runs[1].predictions)
    for a, b in zip(runs[0].ensembles[0].teachers, runs[1].ensembles[0].teachers, strict=True):
        assert a.coef_.tobytes() == b.coef_.tobytes()
    labels = (digits.y_test[:40] + 1) % 10
    paired = [
        retrain_with_points(run, q, labels, num_retrainings=6, rng=2, n_jobs=n_jobs)
        for run, n_jobs in zip(runs, (1, 2), strict=True)
    ]
    for a, b in zip(*paired, strict=True):
        np.testing.assert_array_equal(a.before, b.before)
        np.testing.assert_array_equal(a.after, b.after)
        np.testing.assert_array_equal(a.teacher, b.teacher)


# ------------------------------------------------------------------------ ridge teachers


def test_ridge_teacher_equals_sklearn_ridge_on_the_augmented_features(digits):
    from sklearn.linear_model import Ridge

    X, y = digits.X_train[:90], digits.y_train[:90]
    t = RidgeTeacher(alpha=3.0).fit(X, y)
    z = np.hstack([X, np.ones((90, 1))])
    targets = np.where(y[:, None] == t.classes_[None, :], 1.0, -1.0)
    ref = Ridge(alpha=3.0, fit_intercept=False, solver="cholesky").fit(z, targets)
    np.testing.assert_allclose(t.coef_, ref.coef_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(
        t.predict(digits.X_test),
        t.classes_[
            ref.predict(np.hstack([digits.X_test, np.ones((digits.X_test.shape[0], 1))])).argmax(
                axis=1
            )
        ],
    )
    assert make_estimator("ridge", seed=4).random_state == 4


def test_ridge_exact_update_equals_a_cold_refit(digits):
    X, y = digits.X_train[:70], digits.y_train[:70]
    keep = y != 9  # the added label 9 is new to the teacher: a new one-vs-rest column
    X, y = X[keep], y[keep]
    t = RidgeTeacher().fit(X, y)
    new_x, new_y = digits.X_test[:6], np.array([9, 3, 3, 0, 1, 9])
    for b in range(6):
        warm = t.with_rows(X, new_x[b], [new_y[b]])
        cold = RidgeTeacher().fit(np.vstack([X, new_x[b : b + 1]]), np.r_[y, new_y[b]])
        np.testing.assert_array_equal(warm.classes_, cold.classes_)
        np.testing.assert_allclose(
            warm.coef_, cold.coef_, rtol=0, atol=1e-9 * np.abs(cold.coef_).max()
        )
        np.testing.assert_array_equal(warm.predict(digits.X_test), cold.predict(digits.X_test))
    both = t.with_rows(X, new_x, new_y)  # several rows at once (Woodbury)
    cold = RidgeTeacher().fit(np.vstack([X, new_x]), np.r_[y, new_y])
    np.testing.assert_allclose(both.coef_, cold.coef_, rtol=0, atol=1e-9)
    classes, scores = t.updated_scores(X, new_x, new_y, digits.X_test[:30])
    _, own = t.updated_scores(X, new_x, new_y)
    for b in range(6):
        new = t.with_rows(X, new_x[b], [new_y[b]])
        cols = np.searchsorted(classes, new.classes_)
        ref = new.decision_function(digits.X_test[:30])
        np.testing.assert_allclose(scores[b][:, cols], ref, rtol=0, atol=1e-9)
        np.testing.assert_allclose(own[b][:, cols], new.decision_function(new_x[b]), atol=1e-9)
        others = np.setdiff1d(np.arange(classes.size), cols)
        assert np.all(scores[b][:, others] == -np.inf)
    assert not both.updatable
    with pytest.raises(ValueError, match="fitted by fit"):
        both.with_rows(X, new_x, new_y)
    with pytest.raises(ValueError, match="rows the teacher was fitted on"):
        t.with_rows(X[:-1], new_x, new_y)
    with pytest.raises(ValueError, match="alpha"):
        RidgeTeacher(alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="no parameter"):
        RidgeTeacher().set_params(beta=1)


def test_ensemble_exact_update_and_refit_agree(digits):
    ens = TeacherEnsemble.fit(
        digits.X_train, digits.y_train, num_teachers=6, estimator="ridge", rng=1
    )
    for i in range(8):
        x, label, j = digits.X_test[i], int((digits.y_test[i] + 2) % 10), i % 6
        warm = ens.with_point(x, label, partition=j)
        cold = ens.with_point(x, label, partition=j, exact_update=False)
        assert warm.modified == cold.modified == (j,)
        np.testing.assert_array_equal(warm.partitions[j], cold.partitions[j])
        np.testing.assert_array_equal(
            warm.teacher_predictions(digits.X_test), cold.teacher_predictions(digits.X_test)
        )


def test_retrainings_are_computed_once_and_cached(digits):
    q = digits.X_test[:10]
    inst = train_instantiations(
        digits.X_train,
        digits.y_train,
        q,
        partition="fixed",
        num_teachers=6,
        num_instantiations=3,
        estimator="ridge",
        rng=0,
    )
    # Fixed parts and a seed-independent estimator: one fit shared by every instantiation.
    assert inst.ensembles[0] is inst.ensembles[1] is inst.ensembles[2]
    labels = (digits.y_test[:10] + 1) % 10
    teachers = np.arange(10) % 6
    first = retrain_with_points(inst, q, labels, num_retrainings=5, teachers=teachers, rng=0)
    assert len(inst.retrain_cache) == 10  # 5 identical retrainings per point: one each
    again = retrain_with_points(inst, q, labels, num_retrainings=9, teachers=teachers, rng=3)
    assert len(inst.retrain_cache) == 10
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.after[0], b.after[0])
    for p in range(10):  # each equals an explicit retraining of its teacher
        j = int(teachers[p])
        new = inst.ensembles[0].with_point(q[p], int(labels[p]), partition=j, exact_update=False)
        assert int(new.teachers[j].predict(q[p : p + 1])[0]) == int(first[p].after[0, 0])
