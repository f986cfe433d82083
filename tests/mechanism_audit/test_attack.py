"""The attack pieces: input patterns, features, scores, event choice, checked samplers."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks import (
    EventCounts,
    batch_sampler,
    choose_event,
    choose_threshold,
    fit_mechanism_attack,
    input_patterns,
    output_features,
)


def test_statdp_patterns_single_and_component_wise():
    single = input_patterns(5)
    assert len(single) == 4  # one above, one below, both orders
    for a, b in single:
        assert np.sum(a != b) == 1 and np.max(np.abs(a - b)) == 1
    cw = input_patterns(10, component_wise=True)
    assert len(cw) == 16  # 8 patterns of Ding et al. 2018, both orders
    for a, b in cw:
        assert np.max(np.abs(a - b)) == 1
    clipped = input_patterns(1, low=0, high=1)  # "one below" (2) clipped onto 1: dropped
    assert [(a.tolist(), b.tolist()) for a, b in clipped] == [([1.0], [0.0]), ([0.0], [1.0])]
    with pytest.raises(ValueError, match="dimensions"):
        input_patterns(0)


def test_output_features_one_hot_flags():
    x = np.array([[1.0, -1.0, 0.0], [-1.0, 2.0, -1.0]])
    f = output_features(x, (-1.0,))
    np.testing.assert_array_equal(f, [[1, 0, 0, 0, 1, 0], [0, 2, 0, 1, 0, 1]])
    np.testing.assert_array_equal(output_features(x), x)


def test_counts_attack_is_the_log_ratio_of_counts():
    a = np.array([[0.0]] * 30 + [[1.0]] * 70)
    b = np.array([[0.0]] * 70 + [[1.0]] * 30)
    att = fit_mechanism_attack(a, b)
    assert att.kind == "counts"
    s = att.scores(np.array([[0.0], [1.0], [5.0]]))
    # half a count (0.5/100) added to each rate
    np.testing.assert_allclose(s[:2], [np.log(0.705 / 0.305), np.log(0.305 / 0.705)])
    assert s[2] == 0.0  # unseen output
    with pytest.raises(ValueError, match="differ in width"):
        fit_mechanism_attack(a, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="kind must be one of"):
        fit_mechanism_attack(a, b, kind="mlp")


def test_logistic_attack_and_event_choice_on_a_gaussian_shift():
    g = np.random.default_rng(0)
    a, b = g.normal(0, 1, (6000, 1)), g.normal(1, 1, (6000, 1))
    att = fit_mechanism_attack(a[:3000], b[:3000], kind="logistic")
    assert att.kind == "logistic" and att.weights[0] > 0
    att, proj = choose_event(att, a[3000:], b[3000:], n_eval=100_000)
    # A Gaussian shift has no finite pure-DP epsilon: deep-tail events have large ratios, and
    # the candidate grid reaches them (the projected bound at 10^5 fresh samples).
    assert np.isfinite(att.threshold) and 0.5 < proj < 4.0
    # The same choice from the scores (what the pipeline does with chunked selection sets).
    again, proj2 = choose_threshold(att, att.scores(a[3000:]), att.scores(b[3000:]),
                                    n_eval=100_000)  # fmt: skip
    assert again.threshold == att.threshold and proj2 == proj
    assert "features(output)" in att.describe()
    inside = att.contains(np.array([[10.0], [-10.0]]))
    assert inside.tolist() == [True, False]


def test_event_counts_depend_only_on_the_seed():
    def sample(db, size, rng):
        return db[0] + rng.laplace(0, 1.0, (size, 1))

    g = np.random.default_rng(0)
    att = fit_mechanism_attack(sample(np.zeros(1), 2000, g), sample(np.ones(1), 2000, g))
    att, _ = choose_event(att, sample(np.zeros(1), 2000, g), sample(np.ones(1), 2000, g),
                          n_eval=10_000)  # fmt: skip
    ec = EventCounts(sample, np.zeros(1), np.ones(1), att)
    c1 = ec(5000, np.random.SeedSequence(7))
    c2 = ec(5000, np.random.SeedSequence(7))
    np.testing.assert_array_equal(c1, c2)
    assert c1[1] > c1[0]


def test_batch_sampler_checks_every_output():
    s = batch_sampler(lambda db, rng: [db[0], rng.random()])
    assert s(np.zeros(1), 4, np.random.default_rng(0)).shape == (4, 2)
    with pytest.raises(TypeError, match="must be a number or a fixed-length sequence"):
        batch_sampler(lambda db, rng: {1, 2})(np.zeros(1), 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="must be a number or a fixed-length sequence"):
        batch_sampler(lambda db, rng: {"a": 1})(np.zeros(1), 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="not numeric"):
        batch_sampler(lambda db, rng: ["x"])(np.zeros(1), 2, np.random.default_rng(0))
    flip = iter([1.0, [1.0, 2.0]])
    with pytest.raises(TypeError, match="changed its output type"):
        batch_sampler(lambda db, rng: next(flip))(np.zeros(1), 2, np.random.default_rng(0))

    def boom(db, rng):
        raise RuntimeError("kaput")

    with pytest.raises(ValueError, match=r"mechanism raised RuntimeError.*kaput"):
        batch_sampler(boom)(np.zeros(1), 1, np.random.default_rng(0))
    with pytest.raises(TypeError, match="mechanism must be callable"):
        batch_sampler(3)
