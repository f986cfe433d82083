"""The torch trainer of the label-DP systems: determinism, targets, augmentations, PATE-FM."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit.data import load_dataset  # noqa: E402
from dpaudit.mechanisms import ABSTAIN, ConfidentGNMax  # noqa: E402
from dpaudit.systems.label_dp import (  # noqa: E402
    ALIBI,
    PATEFM,
    ConsistencySettings,
    LabelTargets,
    TrainingSettings,
    train_network,
    train_semi_supervised,
)
from dpaudit.systems.label_dp._augment import strong_augment, weak_augment  # noqa: E402

TINY = TrainingSettings(hidden=(64,), epochs=4, batch_size=64)


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", seed=0)


def test_same_seed_same_model_other_seed_other_model(digits):
    t = LabelTargets.hard(digits.y_train, 10)
    a = train_network(digits.X_train, t, image_shape=(8, 8), training=TINY, rng=3)
    b = train_network(digits.X_train, t, image_shape=(8, 8), training=TINY, rng=3)
    c = train_network(digits.X_train, t, image_shape=(8, 8), training=TINY, rng=4)
    pa, pb, pc = (m.predict_proba(digits.X_test) for m in (a, b, c))
    np.testing.assert_array_equal(pa, pb)
    assert np.abs(pa - pc).max() > 1e-4
    assert a.accuracy(digits.X_test, digits.y_test) > 0.7
    np.testing.assert_allclose(pa.sum(axis=1), 1.0, atol=1e-6)


def test_cnn_and_sgd(digits):
    t = LabelTargets.hard(digits.y_train, 10)
    tr = TrainingSettings(model="cnn", epochs=3, batch_size=32, optimizer="sgd",
                          learning_rate=0.05)  # fmt: skip
    net = train_network(digits.X_train, t, image_shape=(8, 8), training=tr, rng=0)
    assert net.accuracy(digits.X_test, digits.y_test) > 0.5
    with pytest.raises(ValueError, match="needs image data"):
        train_network(digits.X_train, t, training=tr, rng=0)


def test_model_prior_targets_follow_the_model():
    # With the model's own prior and a flat likelihood the posterior is the model's output:
    # training is a fixed point and the loss cannot move the network towards any class.
    t = LabelTargets.bayesian(np.zeros((32, 3)), "model")
    assert t.uses_model_prior
    u = LabelTargets.bayesian(np.log([[0.7, 0.2, 0.1]] * 32), "uniform")
    np.testing.assert_allclose(u.soft[0], [0.7, 0.2, 0.1])
    with pytest.raises(ValueError, match="exactly one"):
        LabelTargets()
    with pytest.raises(ValueError, match="rows summing to 1"):
        LabelTargets(soft=np.ones((2, 3)))


def test_progress_reports_epochs(digits):
    seen = []
    t = LabelTargets.hard(digits.y_train[:100], 10)
    train_network(digits.X_train[:100], t, training=TINY, rng=0,
                  progress=lambda d, n, what: seen.append((d, n, what)))  # fmt: skip
    assert [s[0] for s in seen] == [0, 1, 2, 3, 4] and seen[-1][1] == 4


def test_augmentations_shapes_ranges_and_seeds():
    x = torch.rand(16, 1, 28, 28)
    g = torch.Generator().manual_seed(0)
    w = weak_augment(x, g)
    s = strong_augment(x, g)
    assert w.shape == s.shape == x.shape
    assert float(s.min()) >= 0.0 and float(s.max()) <= 1.0
    assert torch.equal(weak_augment(x, torch.Generator(), max_shift=0, flip=False), x)
    again = weak_augment(x, torch.Generator().manual_seed(0))
    assert torch.equal(w, again)
    # a shift keeps the image content: the pixel mass moves, it is not resampled
    one = torch.zeros(1, 1, 28, 28)
    one[0, 0, 14, 14] = 1.0
    moved = weak_augment(one, torch.Generator().manual_seed(1), flip=False)
    assert float(moved.sum()) == 1.0


def test_semi_supervised_switch_and_errors(digits):
    idx = np.arange(60)
    t = LabelTargets.hard(digits.y_train[idx], 10)
    off = ConsistencySettings(enabled=False)
    on = ConsistencySettings(flip=False, confidence=0.5)
    common = {"steps": 20, "image_shape": (8, 8), "training": TINY, "rng": 0}
    a = train_semi_supervised(digits.X_train[idx], t, digits.X_train, consistency=off, **common)
    b = train_semi_supervised(digits.X_train[idx], t, digits.X_train, consistency=on, **common)
    assert np.abs(a.predict_proba(digits.X_test) - b.predict_proba(digits.X_test)).max() > 0
    with pytest.raises(ValueError, match="needs image data"):
        train_semi_supervised(digits.X_train[idx], t, digits.X_train, steps=5, image_shape=None,
                              training=TINY, consistency=on)  # fmt: skip
    with pytest.raises(ValueError, match="steps must be a positive"):
        train_semi_supervised(digits.X_train[idx], t, digits.X_train, steps=0, image_shape=(8, 8))


def test_alibi_fit_and_training_settings_errors(digits):
    fit = ALIBI(0.5, training=TINY).fit(digits.X_train, digits.y_train, num_classes=10,
                                        image_shape=(8, 8), rng=0)  # fmt: skip
    assert fit.system == "alibi" and fit.claim.epsilon == 4.0
    assert 0.2 < fit.detail["released_label_agreement"] < 0.8
    bad = (
        ({"epochs": 0}, "epochs"),
        ({"model": "vit"}, "model must be one of"),
        ({"momentum": 1.0}, "momentum"),
        ({"device": "tpu"}, "device"),
    )
    for kwargs, match in bad:
        with pytest.raises(ValueError, match=match):
            TrainingSettings(**kwargs)


def test_pate_fm_queries_use_confident_gnmax_on_the_max_vote(digits):
    mech = ConfidentGNMax(threshold=3, sigma1=1.0, sigma2=0.5)
    pate = PATEFM(num_teachers=5, mechanism=mech, queries=200, answers=40, teacher_steps=40,
                  student_steps=20, training=TINY,
                  consistency=ConsistencySettings(enabled=False))  # fmt: skip
    teachers = pate.train_teachers(digits.X_train, digits.y_train, num_classes=10,
                                   image_shape=(8, 8), rng=0)  # fmt: skip
    asked = pate.query(teachers, digits.X_train, rng=1)
    assert asked.num_answered == 40 and asked.labels[-1] != ABSTAIN  # stops at K answers
    np.testing.assert_array_equal(asked.votes.sum(axis=1), 5)
    # the same noise through the mechanism value gives the same answers
    from dpaudit._rng import block_seeds

    order, noise = block_seeds(1, 2)
    rows = np.random.default_rng(order).permutation(digits.num_train)[:200]
    full = mech.answer(teachers.votes(digits.X_train[rows]), rng=noise)
    np.testing.assert_array_equal(full[: asked.num_queries], asked.labels)
    fit = pate.fit(digits.X_train, digits.y_train, num_classes=10, image_shape=(8, 8), rng=2,
                   teachers=teachers)  # fmt: skip
    rel, dd, di = fit.claims
    assert rel.analysis.startswith("data-dependent, smooth-sensitivity release")
    assert fit.detail["num_answered"] == 40
    # Independent oracle for the data-independent claim: every query pays the threshold
    # check, a Gaussian mechanism of sensitivity 1 on the max vote (α/(2σ1²)); every answered
    # one pays GNMax (α/σ2², L2 sensitivity √2; Papernot et al. 2018 Prop. 8); ε by the
    # standard conversion min_α ρ(α) + log(1/δ)/(α − 1).
    lam = np.asarray(di.rdp.orders)
    queries, answered = fit.detail["num_queries"], fit.detail["num_answered"]
    rho = queries * lam / (2 * 1.0**2) + answered * lam / 0.5**2
    np.testing.assert_allclose(di.rdp.epsilons, rho, rtol=1e-12)
    assert di.epsilon == pytest.approx(np.min(rho + np.log(1 / pate.delta) / (lam - 1)), rel=1e-9)
    assert 0 < dd.epsilon <= di.epsilon
