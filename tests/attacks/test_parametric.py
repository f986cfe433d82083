"""Parametric histogram models (Chadha et al. 2024 §5.1–5.2): exact output distributions against
brute-force oracles, samplers against the exact distributions, estimation, and the models
against direct simulation of retraining on real data (digits)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks import multinomial_output_probabilities
from dpaudit.attacks._multinomial import _multinomial_pair_output
from dpaudit.attacks.parametric import (
    CaPCHistogramModel,
    PATEHistogramModel,
    estimate_capc_model,
    estimate_pate_model,
    flip_estimate,
    transition_matrix,
)
from dpaudit.engine import run_blocks
from dpaudit.mechanisms import NoisyArgmaxBlock, argmax_probabilities
from dpaudit.systems import retrain_with_points, train_instantiations

# --------------------------------------------------------------------------------- oracles


def _compositions(total: int, parts: int):
    for cut in itertools.combinations(range(total + parts - 1), parts - 1):
        prev, out = -1, []
        for c in (*cut, total + parts - 1):
            out.append(c - prev - 1)
            prev = c
        yield np.array(out)


def brute_multinomial(p, k, sigma, offset=None):
    """Σ_h Mult(h; k, p) Q(h + offset), by enumeration (naive slow oracle)."""
    p = np.asarray(p, dtype=float)
    off = np.zeros(p.size) if offset is None else np.asarray(offset, dtype=float)
    total = np.zeros(p.size)
    for h in _compositions(k, p.size):
        w = stats.multinomial.pmf(h, k, p) if k else 1.0
        if w > 0:
            total += w * argmax_probabilities(h + off, sigma)
    return total


def brute_capc(tp, q, j, k, sigma, neighbour):
    """E[Q(H)] for k random teachers of m voting independently (naive oracle)."""
    tp = np.array(tp, dtype=float)
    if neighbour:
        tp[j] = q
    m, c = tp.shape
    total = np.zeros(c)
    subsets = list(itertools.combinations(range(m), k))
    for sub in subsets:
        for votes in itertools.product(range(c), repeat=k):
            w = np.prod([tp[t, v] for t, v in zip(sub, votes, strict=True)])
            if w == 0:
                continue
            h = np.bincount(votes, minlength=c).astype(float)
            total += w * argmax_probabilities(h, sigma) / len(subsets)
    return total


# ------------------------------------------------------------------- exact output distributions


@pytest.mark.parametrize(
    ("p", "k", "sigma", "offset"),
    [
        ([0.5, 0.3, 0.2], 6, 1.0, None),
        ([0.7, 0.2, 0.1, 0.0], 5, 0.7, [0, 0, 0, 1]),
        ([0.25, 0.25, 0.25, 0.25], 4, 2.0, [1, 0, 0, 0]),
        ([0.0, 0.9, 0.1], 7, 0.4, [0, 0, 1]),
        ([0.6, 0.4], 0, 1.0, [0, 1]),
    ],
)
def test_multinomial_output_matches_brute_force(p, k, sigma, offset):
    got = multinomial_output_probabilities(p, k, sigma, offset=offset)
    want = brute_multinomial(p, k, sigma, offset)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    assert abs(got.sum() - 1.0) < 1e-12


@pytest.mark.parametrize(
    ("votes", "sigma"),
    [([250, 0, 0, 0, 0, 0, 0, 0, 0, 0], 40.0), ([0, 0, 30, 0], 4.0), ([0, 12, 0], 0.5)],
)
def test_point_mass_equals_argmax_probabilities(votes, sigma):
    k = int(sum(votes))
    p = np.array(votes) / k
    np.testing.assert_allclose(
        multinomial_output_probabilities(p, k, sigma), argmax_probabilities(votes, sigma),
        rtol=1e-11, atol=1e-14,
    )  # fmt: skip


def test_paper_scale_multinomial_is_a_distribution():
    p = np.array([0.14, 0, 0.19, 0, 0.01, 0, 0.66, 0, 0, 0])
    got = multinomial_output_probabilities(p, 249, 40.0)
    assert abs(got.sum() - 1.0) < 1e-12 and np.all(got > 0)
    # Mean of Q over multinomial draws (independent check, 5-sigma band).
    gen = np.random.default_rng(0)
    q = argmax_probabilities(gen.multinomial(249, p, size=4000), 40.0)
    np.testing.assert_array_less(np.abs(q.mean(0) - got), 5 * q.std(0) / np.sqrt(4000) + 1e-9)


def test_pate_model_output_distributions_match_oracle():
    p, q = [0.6, 0.3, 0.1], [0.1, 0.2, 0.7]
    m, k, sigma = 6, 4, 1.5
    model = PATEHistogramModel(p, q, m, k)
    got = model.output_distributions(sigma)
    want_s = brute_multinomial(p, k, sigma)
    a = np.stack([brute_multinomial(p, k - 1, sigma, np.eye(3)[y]) for y in range(3)])
    want_n = (k / m) * (np.array(q) @ a) + (1 - k / m) * want_s
    np.testing.assert_allclose(got[0], want_s, atol=1e-12)
    np.testing.assert_allclose(got[1], want_n, atol=1e-12)
    same = PATEHistogramModel(p, p, m, k).output_distributions(sigma)
    np.testing.assert_array_equal(same[0], same[1])


@pytest.mark.parametrize(
    ("p", "q", "k", "sigma"),
    [
        ([0.5, 0.3, 0.2], [0.0, 0.0, 1.0], 5, 1.0),
        ([0.7, 0.0, 0.3], [0.1, 0.6, 0.3], 4, 0.6),  # q on a class no teacher votes for
        ([0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], 4, 2.0),  # ties in p
        ([0.05, 0.9, 0.05], [0.2, 0.3, 0.5], 6, 0.4),
        ([0.6, 0.4], [0.6, 0.4], 7, 1.5),
    ],
)
def test_pair_output_matches_brute_force(p, q, k, sigma):
    """Both rows of the one-pass dual computation against enumeration of Mult(k − 1, p) plus
    one vote from p (row 0) or q (row 1)."""
    got = _multinomial_pair_output(tuple(p), tuple(q), k - 1, sigma)
    a = np.stack([brute_multinomial(p, k - 1, sigma, np.eye(len(p))[y]) for y in range(len(p))])
    np.testing.assert_allclose(got[0], np.array(p) @ a, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(got[1], np.array(q) @ a, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)


def test_pair_output_matches_one_offset_at_a_time():
    """The one-pass computation equals the per-offset reference (one Poissonised product per
    added vote, :func:`multinomial_output_probabilities`) at paper-like sizes, to 1e-12
    absolute (the quadrature's rounding floor), with the same tail probabilities."""
    gen = np.random.default_rng(3)
    for _ in range(12):
        c = int(gen.integers(2, 11))
        p = gen.dirichlet(np.full(c, gen.choice([0.1, 1.0, 5.0])))
        p[gen.random(c) < 0.2] = 0.0
        if np.count_nonzero(p) < 2:
            continue
        p /= p.sum()
        q = np.eye(c)[gen.integers(c)] if gen.random() < 0.5 else gen.dirichlet(np.ones(c))
        k, sigma = int(gen.choice([10, 50, 250])), float(gen.choice([2.0, 10.0, 40.0]))
        got = _multinomial_pair_output(tuple(p.tolist()), tuple(q.tolist()), k - 1, sigma)
        ys = np.flatnonzero((p > 0) | (q > 0))
        a = np.zeros((c, c))
        for y in ys:
            a[y] = multinomial_output_probabilities(p, k - 1, sigma, offset=np.eye(c)[y])
        np.testing.assert_allclose(got, np.stack([p @ a, q @ a]), rtol=0, atol=1e-12)


def test_capc_model_output_distributions_match_oracle():
    tp = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.2, 0.8], [0.3, 0.3, 0.4]]
    q = [0.0, 0.0, 1.0]
    for k in (4, 3):
        model = CaPCHistogramModel(tp, q, 1, k)
        got = model.output_distributions(1.2)
        np.testing.assert_allclose(got[0], brute_capc(tp, q, 1, k, 1.2, False), atol=1e-12)
        np.testing.assert_allclose(got[1], brute_capc(tp, q, 1, k, 1.2, True), atol=1e-12)


def test_supports_are_exact_distributions():
    model = PATEHistogramModel([0.5, 0.3, 0.2], [0.5, 0.3, 0.2], 5, 5)
    sup = model.support()
    assert sup.dropped_mass < 1e-12
    pmf = [stats.multinomial.pmf(h, 5, [0.5, 0.3, 0.2]) for h in sup.votes]
    np.testing.assert_allclose(sup.probabilities, pmf, rtol=1e-10)
    assert len(sup.votes) == 21  # all compositions of 5 into 3 parts
    small = model.support(max_support=4)
    assert len(small.votes) <= 4
    assert abs(small.probabilities.sum() + small.dropped_mass - 1.0) < 1e-12
    capc = CaPCHistogramModel([[0.5, 0.5], [1.0, 0.0], [0.2, 0.8]], [0.0, 1.0], 0, 2)
    csup = capc.support()
    assert abs(csup.probabilities.sum() - 1.0) < 1e-12 and csup.dropped_mass == 0.0
    assert np.all(csup.votes.sum(axis=1) == 2)


# ----------------------------------------------------------------------------------- samplers


@pytest.mark.parametrize("neighbour", [False, True])
def test_samplers_agree_with_exact_output_distributions(neighbour):
    sigma = 2.0
    models = [
        PATEHistogramModel([0.6, 0.3, 0.1, 0.0], [0.1, 0.3, 0.1, 0.5], 12, 9),
        CaPCHistogramModel(
            [[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0, 0.2, 0.8, 0], [1, 0, 0, 0], [0, 1, 0, 0]],
            [0, 0, 0, 1],
            1,
            4,
        ),
    ]
    n = 400_000
    for seed, model in enumerate(models):
        pbar = model.output_distributions(sigma)[int(neighbour)]
        counts = run_blocks(
            NoisyArgmaxBlock(model.sampler(neighbour=neighbour), sigma),
            n, rng=seed, block_size=2**17,
        ).counts  # fmt: skip
        chi2 = float(np.sum((counts - n * pbar) ** 2 / (n * pbar)))
        assert stats.chi2.sf(chi2, pbar.size - 1) > 1e-4, (type(model).__name__, counts / n, pbar)


def test_sampler_shapes():
    s = PATEHistogramModel([0.5, 0.5], [0.0, 1.0], 4, 3).sampler(neighbour=True)
    h = s(np.random.default_rng(0), 1000)
    assert h.shape == (1000, 2) and np.all(h.sum(axis=1) == 3)
    c = CaPCHistogramModel([[0.5, 0.5], [1, 0], [0, 1]], [0, 1], 0, 2).sampler()
    h = c(np.random.default_rng(0), 1000)
    assert h.shape == (1000, 2) and np.all(h.sum(axis=1) == 2)


# ---------------------------------------------------------------------------------- estimation


def test_transition_matrix_and_paired_estimator():
    k_hat = transition_matrix([0, 0, 0, 1], [2, 2, 0, 1], 3)
    np.testing.assert_allclose(k_hat, [[1 / 3, 0, 2 / 3], [0, 1, 0], [0, 0, 1]])
    preds = np.array([[0, 0, 0, 1, 2], [0, 0, 1, 1, 2]])
    model = estimate_pate_model(preds, [0, 0, 0, 1], [2, 2, 0, 1], num_classes=3)
    p = np.array([5, 3, 2]) / 10
    np.testing.assert_allclose(model.probabilities, p)
    np.testing.assert_allclose(model.neighbour_probabilities, p @ k_hat)
    assert model.num_teachers == 5 and model.teachers_per_query == 5
    est = model.estimation
    assert (est.num_instantiations, est.num_votes) == (2, 10)
    assert (est.flips.num_flips, est.flips.num_retrainings) == (2, 4)
    direct = estimate_pate_model(
        preds, [0, 0, 0, 1], [2, 2, 0, 1], num_classes=3, neighbour_estimator="direct"
    )
    np.testing.assert_allclose(direct.neighbour_probabilities, [0.25, 0.25, 0.5])
    # No vote changed: the paired estimate is exactly P (no spurious leakage).
    same = estimate_pate_model(preds, [0, 1, 2], [0, 1, 2], num_classes=3)
    np.testing.assert_array_equal(same.probabilities, same.neighbour_probabilities)


def test_capc_estimator():
    preds = np.array([[0, 1, 1], [0, 1, 2]])
    model = estimate_capc_model(preds, [1, 1], [0, 0], affected_teacher=1, num_classes=3)
    np.testing.assert_allclose(model.teacher_probabilities, [[1, 0, 0], [0, 1, 0], [0, 0.5, 0.5]])
    np.testing.assert_allclose(model.neighbour_probabilities, [1, 0, 0])
    assert model.affected_teacher == 1 and model.estimation.flips.num_flips == 2


def test_flip_estimate_is_clopper_pearson():
    fe = flip_estimate([0] * 20, [1] * 7 + [0] * 13, confidence_level=0.9)
    assert (fe.num_flips, fe.num_retrainings) == (7, 20)
    lo = stats.beta.ppf(0.05, 7, 14)
    hi = stats.beta.ppf(0.95, 8, 13)
    assert fe.interval.low == pytest.approx(lo, rel=1e-10)
    assert fe.interval.high == pytest.approx(hi, rel=1e-10)


def test_validation_errors():
    with pytest.raises(ValueError, match="probabilities"):
        multinomial_output_probabilities([0.5, 0.6], 3, 1.0)
    with pytest.raises(ValueError, match="num_votes"):
        multinomial_output_probabilities([0.5, 0.5], -1, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        multinomial_output_probabilities([0.5, 0.5], 3, 0.0)
    with pytest.raises(ValueError, match="offset"):
        multinomial_output_probabilities([0.5, 0.5], 3, 1.0, offset=[1, 0, 0])
    with pytest.raises(ValueError, match="teachers_per_query"):
        PATEHistogramModel([0.5, 0.5], [0.5, 0.5], 3, 4)
    with pytest.raises(ValueError, match="neighbour_probabilities"):
        PATEHistogramModel([0.5, 0.5], [0.5, 0.5, 0.0], 3, 3)
    with pytest.raises(ValueError, match="affected_teacher"):
        CaPCHistogramModel([[1, 0], [0, 1]], [1, 0], 2, 2)
    with pytest.raises(ValueError, match="teacher_probabilities"):
        CaPCHistogramModel([[0.7, 0.7], [0, 1]], [1, 0], 0, 2)
    with pytest.raises(ValueError, match="before"):
        estimate_pate_model([[0, 1]], [0, 3], [0, 0], num_classes=2)
    with pytest.raises(ValueError, match="after"):
        estimate_pate_model([[0, 1]], [0, 1], [0], num_classes=2)
    with pytest.raises(ValueError, match="neighbour_estimator"):
        estimate_pate_model([[0, 1]], [0], [0], num_classes=2, neighbour_estimator="bayes")
    with pytest.raises(ValueError, match="predictions"):
        estimate_pate_model([0, 1], [0], [0], num_classes=2)
    with pytest.raises(ValueError, match="affected_teacher"):
        estimate_capc_model([[0, 1]], [0], [0], affected_teacher=2, num_classes=2)
    with pytest.raises(ValueError, match="after"):
        flip_estimate([0, 1], [0])
    with pytest.raises(ValueError, match="max_support"):
        PATEHistogramModel([0.5, 0.5], [0.5, 0.5], 3, 3).support(max_support=0)


# ------------------------------------------------------- models vs direct simulation (digits)


@pytest.fixture(scope="module")
def digits():
    from dpaudit.data import load_digits

    return load_digits(seed=0)


def test_training_phase_and_retraining_touch_one_teacher(digits):
    inst = train_instantiations(
        digits.X_train, digits.y_train, digits.X_test[:5],
        partition="fixed", num_teachers=6, num_instantiations=2, rng=1,
    )  # fmt: skip
    assert inst.predictions.shape == (2, 5, 6) and inst.num_instantiations == 2
    # CaPC keeps the parties fixed across instantiations.
    for a, b in zip(inst.ensembles[0].partitions, inst.ensembles[1].partitions, strict=True):
        np.testing.assert_array_equal(a, b)
    pv = retrain_with_points(
        inst, digits.X_test[:2], [3, 4], num_retrainings=2, teachers=[2, 5], rng=0
    )
    assert len(pv) == 2 and pv[0].before.shape == (2, 1)
    assert pv[0].teacher.tolist() == [2, 2] and pv[0].instantiation.tolist() == [0, 1]
    # Oracle: retrain by hand through the systems API.
    for p_i, (label, j) in enumerate([(3, 2), (4, 5)]):
        for r in range(2):
            ens = inst.ensembles[r]
            x = digits.X_test[p_i]
            assert pv[p_i].before[r, 0] == ens.teachers[j].predict(x[None, :])[0]
            new = ens.with_point(x, label, partition=j)
            assert new.modified == (j,)
            assert pv[p_i].after[r, 0] == new.teachers[j].predict(x[None, :])[0]
    with pytest.raises(ValueError, match="partition"):
        train_instantiations(digits.X_train, digits.y_train, digits.X_test[:2], partition="knn",
                             num_teachers=3, num_instantiations=1)  # fmt: skip
    with pytest.raises(ValueError, match="teachers"):
        retrain_with_points(inst, digits.X_test[:1], [1], num_retrainings=1, teachers=[9])


def test_pate_model_agrees_with_direct_simulation_of_retraining(digits):
    """The model's E[H_S′] and affected-teacher law against full retraining from scratch."""
    from dpaudit.attacks.adversaries import craft_poison
    from dpaudit.systems import TeacherEnsemble

    m = 16
    X, y = digits.X_train, digits.y_train
    inst = train_instantiations(X, y, digits.X_test[:40], partition="random", num_teachers=m,
                                num_instantiations=3, rng=2)  # fmt: skip
    hist = np.stack([np.bincount(p, minlength=10) for p in inst.predictions[0]])
    q = int(np.argmin(hist.max(axis=1)))  # a query the teachers disagree on
    x = digits.X_test[q]
    point = craft_poison(x, hist[q], true_label=int(digits.y_test[q]))
    pv = retrain_with_points(inst, x[None, :], [point.label], num_retrainings=9, rng=3)[0]
    assert np.sum(pv.before != pv.after) >= 3  # the poison does flip teachers here
    model = estimate_pate_model(inst.predictions[:, q, :], pv.before[:, 0], pv.after[:, 0],
                                num_classes=10)  # fmt: skip
    model_mean = (m - 1) * model.probabilities + model.neighbour_probabilities
    # Direct simulation: retrain every teacher on S' = S + poison with a fresh random partition.
    X2 = np.concatenate([X, x[None, :]])
    y2 = np.concatenate([y, [point.label]])
    hists, affected = [], []
    for r in range(10):
        ens = TeacherEnsemble.fit(X2, y2, num_teachers=m, rng=100 + r)
        preds = ens.teacher_predictions(x[None, :])[0]
        hists.append(np.bincount(preds, minlength=10))
        affected.append(preds[ens.partition_of(len(y))])
    hists = np.array(hists)
    se = np.sqrt(hists.var(axis=0, ddof=1) / len(hists) + model_mean * (1 - model_mean / m) / 48)
    assert np.all(np.abs(hists.mean(axis=0) - model_mean) <= 4 * se + 0.35), (
        hists.mean(axis=0),
        model_mean,
    )
    # The affected teacher votes the poison label as often as the model says (CIs overlap).
    k_direct = int(np.sum(np.array(affected) == point.label))
    from dpaudit.bounds import clopper_pearson

    ci_direct = clopper_pearson(k_direct, len(affected), confidence_level=0.99)
    k_model = int(np.sum(pv.after[:, 0] == point.label))
    ci_model = clopper_pearson(k_model, pv.after.shape[0], confidence_level=0.99)
    assert ci_direct.low <= ci_model.high and ci_model.low <= ci_direct.high
    assert model.neighbour_probabilities[point.label] >= model.probabilities[point.label]


@pytest.mark.parametrize("estimator", ["logistic", "extra-trees"])
def test_capc_model_agrees_with_direct_simulation_of_retraining(digits, estimator):
    """CaPC (fixed parties, §5.2): the model's H_S′ against training every teacher from
    scratch on S′ = S + poison, the poison in the party the adversary chose. Deterministic
    teachers (L-BFGS logistic) must agree exactly; randomised ones (extra-trees, seeded per
    teacher) in law."""
    from dpaudit.attacks.adversaries import choose_party, craft_poison
    from dpaudit.bounds import clopper_pearson
    from dpaudit.systems import TeacherEnsemble, make_partition

    m, c = 8, 10
    X, y = digits.X_train, digits.y_train
    parties = make_partition(len(y), m, rng=5)
    queries = digits.X_test[:40]
    random_teachers = estimator == "extra-trees"
    ng = 8 if random_teachers else 2
    inst = train_instantiations(X, y, queries, partition="fixed", num_teachers=m,
                                num_instantiations=ng, estimator=estimator, parties=parties,
                                rng=2)  # fmt: skip
    hist = np.stack([np.bincount(p, minlength=c) for p in inst.predictions[0]])
    q = int(np.argmin(hist.max(axis=1)))  # a query the teachers disagree on
    x = queries[q]
    point = craft_poison(x, hist[q], true_label=int(digits.y_test[q]))
    j = choose_party(inst.predictions[0, q, :], point)
    pv = retrain_with_points(inst, x[None, :], [point.label], num_retrainings=ng, teachers=[j],
                             rng=3)[0]  # fmt: skip
    model = estimate_capc_model(inst.predictions[:, q, :], pv.before[:, 0], pv.after[:, 0],
                                affected_teacher=j, num_classes=c)  # fmt: skip
    law = np.array(model.teacher_probabilities)
    law[j] = model.neighbour_probabilities  # each teacher's vote law under S′
    # Direct simulation: all m teachers trained from scratch on S′ with fresh seeds.
    X2 = np.concatenate([X, x[None, :]])
    y2 = np.concatenate([y, [point.label]])
    parts2 = [np.append(p, len(y)) if i == j else p for i, p in enumerate(parties)]
    reps = 12 if random_teachers else 1
    votes = np.stack([
        TeacherEnsemble.fit(X2, y2, partition=parts2, estimator=estimator, rng=100 + r)
        .teacher_predictions(x[None, :])[0]
        for r in range(reps)
    ])  # fmt: skip
    if not random_teachers:
        # Every P_q^i (and P_q^{1′}) is a point mass, and H_S′ is exactly the retrained one.
        assert np.all(law.max(axis=1) == 1.0)
        np.testing.assert_array_equal(votes[0], law.argmax(axis=1))
        assert model.estimation.flips.num_flips in (0, ng)
        return
    assert np.sum(law.max(axis=1) < 1.0) > 0  # some teachers do vary with their seed
    direct = np.stack([np.bincount(v, minlength=c) for v in votes])
    model_mean = law.sum(axis=0)
    se = np.sqrt(direct.var(axis=0, ddof=1) / reps + (law * (1 - law)).sum(axis=0) / ng)
    assert np.all(np.abs(direct.mean(axis=0) - model_mean) <= 4 * se + 0.35), (
        direct.mean(axis=0),
        model_mean,
    )
    # Each teacher's vote for the poison label: model law against the direct frequencies.
    for i in range(m):
        k_direct = int(np.sum(votes[:, i] == point.label))
        ci = clopper_pearson(k_direct, reps, confidence_level=0.99)
        assert ci.low - 0.1 <= law[i, point.label] <= ci.high + 0.1, (i, k_direct, law[i])
