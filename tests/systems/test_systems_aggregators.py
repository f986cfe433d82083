"""GNMax and Confident GNMax aggregators."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.accounting import mechanism_rdp
from dpaudit.data import load_digits
from dpaudit.systems import ABSTAIN, ConfidentGNMax, GNMax, TeacherEnsemble


@pytest.fixture(scope="module")
def digit_votes():
    ds = load_digits(seed=0)
    ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=15, rng=1)
    return ens.votes(ds.X_test)


def _binomial_ok(k, n, p, *, z=5.0):
    """|k − np| within z binomial standard deviations (z = 5: a false alarm has p ≈ 6e-7)."""
    return abs(k - n * p) <= z * np.sqrt(n * p * (1 - p)) + 1


def test_gnmax_tiny_sigma_is_plurality(digit_votes):
    labels = GNMax(sigma=1e-6).answer(digit_votes, rng=0)
    top = np.sort(digit_votes, axis=1)
    unique_max = top[:, -1] > top[:, -2]
    assert unique_max.sum() > 400
    np.testing.assert_array_equal(labels[unique_max], np.argmax(digit_votes, axis=1)[unique_max])
    # with ties, the answer is one of the tied top classes
    tied = ~unique_max
    maxima = digit_votes.max(axis=1)
    assert np.all(digit_votes[tied, labels[tied]] == maxima[tied])


def test_gnmax_frequencies_match_exact_noisy_argmax_probabilities():
    mech = pytest.importorskip("dpaudit.mechanisms")
    votes = np.array([6.0, 4.0, 2.0, 0.0])
    sigma = 2.5
    n = 40_000
    labels = GNMax(sigma=sigma).answer(np.tile(votes, (n, 1)), rng=123)
    counts = np.bincount(labels, minlength=4)
    q = mech.argmax_probabilities(votes, sigma)
    for c in range(4):
        assert _binomial_ok(counts[c], n, q[c]), (counts, n * q)


def test_confident_gnmax_threshold_step():
    votes = np.array([[200.0, 40.0, 10.0], [120.0, 100.0, 30.0], [60.0, 60.0, 130.0]])
    # noiseless limit: answered iff max ≥ T, then plurality
    agg = ConfidentGNMax(threshold=125.0, sigma1=1e-9, sigma2=1e-9)
    assert agg.answer(votes, rng=0).tolist() == [0, ABSTAIN, 2]
    # answered with probability Pr[max + N(0, σ1²) ≥ T] = Φ̄((T − max)/σ1) (formulas.md §1.5)
    agg = ConfidentGNMax(threshold=125.0, sigma1=10.0, sigma2=1e-9)
    n = 20_000
    labels = agg.answer(np.tile(votes[1], (n, 1)), rng=5)
    p_answer = stats.norm.sf((125.0 - 120.0) / 10.0)
    answered = labels != ABSTAIN
    assert _binomial_ok(int(answered.sum()), n, p_answer)
    assert set(labels[answered].tolist()) == {0}


def test_noise_only_on_the_max_count():
    """Threshold noise is one draw per query on max(votes), not per class (formulas.md §1.5)."""
    agg = ConfidentGNMax(threshold=50.0, sigma1=5.0, sigma2=1.0)
    votes = np.array([[48.0, 47.0, 47.0, 47.0]])
    noise = agg.draw_noise(1, 4, rng=0)
    assert noise["threshold"].shape == (1,)
    expected_answered = 48.0 + noise["threshold"][0] >= 50.0
    assert (agg.decide(votes, noise)[0] != ABSTAIN) == expected_answered


def test_answer_equals_decide_on_drawn_noise(digit_votes):
    for agg in (GNMax(sigma=3.0), ConfidentGNMax(threshold=12, sigma1=2.0, sigma2=3.0)):
        direct = agg.answer(digit_votes, rng=42)
        noise = agg.draw_noise(*digit_votes.shape, rng=42)
        np.testing.assert_array_equal(direct, agg.decide(digit_votes.astype(float), noise))


def test_shapes():
    assert GNMax(sigma=1.0).answer([0, 10, 0], rng=0).shape == ()
    assert GNMax(sigma=1.0).answer(np.zeros((2, 3, 4)), rng=0).shape == (2, 3)
    out = ConfidentGNMax(threshold=0, sigma1=1, sigma2=1).answer([[1, 2], [3, 4]], rng=0)
    assert out.dtype == np.int64 and out.shape == (2,)


def test_data_independent_rdp_of_the_mechanism_values():
    orders = np.array([1.5, 2.0, 32.0])
    np.testing.assert_allclose(
        mechanism_rdp(GNMax(sigma=40.0), orders), orders / 1600.0, rtol=1e-15
    )
    agg = ConfidentGNMax(threshold=200, sigma1=150.0, sigma2=40.0)
    np.testing.assert_allclose(
        mechanism_rdp(agg, orders), orders / (2 * 150.0**2) + orders / 40.0**2, rtol=1e-15
    )
    np.testing.assert_allclose(
        mechanism_rdp(agg, orders, answered=False), orders / (2 * 150.0**2), rtol=1e-15
    )
    with pytest.raises(ValueError, match="orders"):
        mechanism_rdp(GNMax(sigma=1.0), [1.0])


def test_bad_parameters():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="sigma"):
            GNMax(sigma=bad)
        with pytest.raises(ValueError, match="sigma1"):
            ConfidentGNMax(threshold=1.0, sigma1=bad, sigma2=1.0)
        with pytest.raises(ValueError, match="sigma2"):
            ConfidentGNMax(threshold=1.0, sigma1=1.0, sigma2=bad)
    with pytest.raises(ValueError, match="threshold"):
        ConfidentGNMax(threshold=float("nan"), sigma1=1.0, sigma2=1.0)
    with pytest.raises(TypeError, match="sigma"):
        GNMax(sigma="40")
    with pytest.raises(ValueError, match="votes"):
        GNMax(sigma=1.0).answer([[1, -1, 0]], rng=0)
    with pytest.raises(ValueError, match="votes"):
        GNMax(sigma=1.0).answer([5], rng=0)
