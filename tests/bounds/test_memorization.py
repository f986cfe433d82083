"""Label-memorization bound (paper 004, App. B; Theorem B.1)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import (
    Bonferroni,
    Explicit,
    Split,
    clopper_pearson,
    label_memorization_audit,
    label_memorization_epsilon,
    label_memorization_sweep,
)


def logit(p):
    return math.log(p / (1 - p))


def test_clopper_pearson_bound_and_theorem_b1():
    res = label_memorization_epsilon(400, 330, confidence_level=0.95)
    low = clopper_pearson(330, 400, confidence_level=0.95, alternative="greater").low
    assert res.cgr_interval.low == pytest.approx(low, abs=1e-12)
    assert res.epsilon == pytest.approx(logit(low), abs=1e-12)
    assert res.estimate == pytest.approx(logit(330 / 400), abs=1e-12)
    assert res.correct_guess_rate == pytest.approx(0.825)


def test_perfect_attacker_never_nan():
    res = label_memorization_epsilon(100, 100)
    assert res.estimate == math.inf
    assert res.epsilon == pytest.approx(logit(0.05 ** (1 / 100)), abs=1e-12)
    c1 = np.full(50, 0.9)
    c2 = np.full((50, 8), 0.01)
    for averaged in (False, True):
        for se in ("reliability", "ratio"):
            r = label_memorization_audit(c1, c2, averaged=averaged, standard_error=se)
            assert r.estimate == math.inf
            assert math.isfinite(r.epsilon) and r.epsilon > 0
            assert not math.isnan(r.correct_guess_rate)
            assert json.loads(r.to_json())["estimate"] == "inf"
    avg = label_memorization_audit(c1, c2, averaged=True)
    assert avg.degenerate_fallback and avg.cgr_interval.low == pytest.approx(0.05 ** (1 / 50))


def test_no_guesses_and_all_wrong():
    r = label_memorization_epsilon(0, 0)
    assert (r.epsilon, r.estimate, r.correct_guess_rate) == (0.0, 0.0, 0.5)
    c1 = np.full(10, 0.1)
    c2 = np.full((10, 3), 0.2)
    for averaged in (False, True):
        abstain = label_memorization_audit(c1, c2, threshold=0.5, averaged=averaged)
        assert (
            abstain.num_guesses == 0
            and abstain.epsilon == 0.0
            and abstain.correct_guess_rate == 0.5
        )
        wrong = label_memorization_audit(c1, c2, threshold=0.0, averaged=averaged)
        assert wrong.num_correct == 0 and wrong.epsilon == 0.0 and wrong.estimate == 0.0


def test_guess_rule_abstention_and_ties():
    c1 = np.array([0.9, 0.6, 0.3, 0.45, 0.2])
    c2 = np.array([0.05, 0.6, 0.7, 0.1, 0.1])
    r = label_memorization_audit(c1, c2, threshold=0.5)
    # canary 0 correct; 1 tie → wrong; 2 wrong; 3, 4 abstain (both below 0.5)
    assert (r.num_guesses, r.num_correct) == (3, 1)
    # the basic variant uses column 0 only
    r2 = label_memorization_audit(c1, np.column_stack([c2, np.zeros(5)]), threshold=0.5)
    assert (r2.num_guesses, r2.num_correct) == (3, 1)


def authors_averaged(c1, c2, threshold, z):
    """The authors' computation (memorization_attack/attack.py), one-sided, without the flip."""
    guesses = c1[:, None] > c2
    dont_know = np.maximum(c1[:, None], c2) < threshold
    weights = np.sum(~dont_know, axis=-1).astype(float)
    accs = np.sum(guesses & ~dont_know, axis=-1) / np.maximum(weights, 1)
    accs, weights = accs[weights > 0], weights[weights > 0]
    weights /= weights.sum()
    mean = np.sum(accs * weights)
    var = np.sum(weights * (accs - mean) ** 2) / (1 - np.sum(weights**2))
    return mean, mean - z * np.sqrt(var / len(accs))


def test_averaged_variant_matches_authors_formula_and_ratio_form():
    rng = np.random.default_rng(4)
    c1 = rng.random(300)
    c2 = rng.random((300, 8)) * 0.8
    r = label_memorization_audit(c1, c2, threshold=0.6, averaged=True)
    z = stats.norm.ppf(0.95)
    mean, low = authors_averaged(c1, c2, 0.6, z)
    assert r.correct_guess_rate == pytest.approx(mean, abs=1e-12)
    assert r.correct_guess_rate == pytest.approx(r.num_correct / r.num_guesses, abs=1e-12)
    assert r.cgr_interval.low == pytest.approx(low, abs=1e-12)
    assert r.epsilon == pytest.approx(max(0.0, logit(low)), abs=1e-12)
    # ratio form: SE² = Σ m_i²(x_i − x̄)²/(Σ m_i)² · N/(N − 1)
    rr = label_memorization_audit(c1, c2, threshold=0.6, averaged=True, standard_error="ratio")
    guessed = np.maximum(c1[:, None], c2) >= 0.6
    m_i = guessed.sum(1)
    v_i = (guessed & (c1[:, None] > c2)).sum(1)
    keep = m_i > 0
    x = v_i[keep] / m_i[keep]
    n = keep.sum()
    se = math.sqrt(np.sum((m_i[keep] * (x - mean)) ** 2) / m_i.sum() ** 2 * n / (n - 1))
    assert rr.standard_error == pytest.approx(se, rel=1e-12)
    assert rr.num_guessed_canaries == n


def test_sweep_labels_uncorrected_and_pays_for_threshold_choice():
    rng = np.random.default_rng(1)
    c1 = rng.random(400) ** 0.5
    c2 = rng.random((400, 8)) * 0.9
    res = label_memorization_sweep(c1, c2, averaged=True)
    assert res.parameter == "threshold" and res.num_tests == 7
    singles = [
        label_memorization_audit(c1, c2, threshold=t, averaged=True).epsilon for t in res.values
    ]
    np.testing.assert_allclose(res.epsilons, singles)
    bonf = [
        label_memorization_audit(
            c1, c2, threshold=t, averaged=True, confidence_level=1 - 0.05 / 7
        ).epsilon
        for t in res.values
    ]
    assert res.epsilon == pytest.approx(max(bonf))
    assert res.uncorrected_max_epsilon == pytest.approx(max(singles)) and res.epsilon <= max(
        singles
    )
    assert res.selection.strategy == "bonferroni"
    assert res.selection.choice == "abstention threshold"
    split = label_memorization_sweep(c1, c2, selection=Split(), rng=3)
    assert split.test_num_canaries == 200 and split.selected_value in res.values
    assert split.selection.strategy == "split"
    fixed = label_memorization_sweep(c1, c2, averaged=True, selection=Explicit(0.7))
    assert fixed.epsilon == label_memorization_audit(c1, c2, threshold=0.7, averaged=True).epsilon
    grid = label_memorization_sweep(c1, c2, averaged=True, selection=Bonferroni([0.6, 0.7]))
    assert grid.num_tests == 2 and list(grid.values) == [0.6, 0.7]


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="num_correct"):
        label_memorization_epsilon(10, 11)
    with pytest.raises(ValueError, match="num_guesses"):
        label_memorization_epsilon(-1, 0)
    with pytest.raises(ValueError, match="confidence_level"):
        label_memorization_epsilon(10, 5, confidence_level=0.0)
    with pytest.raises(ValueError, match="alternative_confidence"):
        label_memorization_audit([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="canary_confidence"):
        label_memorization_audit([[0.1, 0.2]], [0.1])
    with pytest.raises(ValueError, match="canary_confidence"):
        label_memorization_audit([math.nan], [0.1])
    with pytest.raises(ValueError, match="threshold"):
        label_memorization_audit([0.1], [0.1], threshold=math.inf)
    with pytest.raises(ValueError, match="standard_error"):
        label_memorization_audit([0.1], [0.1], averaged=True, standard_error="bootstrap")
    with pytest.raises(TypeError, match="averaged"):
        label_memorization_audit([0.1], [0.1], averaged="yes")
    with pytest.raises(ValueError, match="thresholds"):
        label_memorization_sweep([0.1], [0.1], thresholds=[[0.5]])
    with pytest.raises(ValueError, match="selection"):
        label_memorization_sweep([0.1], [0.1], selection="max")
    with pytest.raises(TypeError, match="averaged"):
        label_memorization_sweep([0.1], [0.1], averaged=1)
    with pytest.raises(ValueError, match="standard_error"):
        label_memorization_sweep([0.1], [0.1], standard_error="x")
