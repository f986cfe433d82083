"""(ε, δ) audits from confusion counts, rejection sets, error rates and raw scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import (
    Bonferroni,
    EpsDeltaAudit,
    Explicit,
    Split,
    epsilon_from_confusion,
    epsilon_from_error_rates,
    epsilon_from_rejection_set,
    epsilon_from_scores,
)


def _naive(tp, fn, fp, tn, delta, beta, k=2):
    """Oracle straight from Beta quantiles (paper 000 Eq. 1, FP/FN form)."""
    tail = beta / k
    tpr_lo = stats.beta.ppf(tail, tp, fn + 1) if tp > 0 else 0.0
    fpr_hi = stats.beta.ppf(1 - tail, fp + 1, tn) if tn > 0 else 1.0
    a = math.log((tpr_lo - delta) / fpr_hi) if tpr_lo > delta else -math.inf
    b = math.log((1 - fpr_hi - delta) / (1 - tpr_lo)) if 1 - fpr_hi > delta else -math.inf
    return tpr_lo, fpr_hi, max(a, b, 0.0)


def test_reference_values_issue():
    # Issue reference: (TP, FN, FP, TN) = (400, 100, 50, 450), δ = 1e-5, 95% split over two
    # one-sided Clopper–Pearson intervals.
    res = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5, confidence_level=0.95)
    assert res.tpr_lower == pytest.approx(0.7622, abs=5e-5)
    assert res.fpr_upper == pytest.approx(0.1297, abs=5e-5)
    assert res.epsilon == pytest.approx(1.7709, abs=5e-5)
    assert res.direction == "tpr/fpr"
    assert res.interval_level == pytest.approx(0.975)
    assert res.confidence_interval.low == res.epsilon and math.isinf(res.confidence_interval.high)
    assert res.fnr_upper == pytest.approx(1 - res.tpr_lower)
    assert res.tnr_lower == pytest.approx(1 - res.fpr_upper)


@pytest.mark.parametrize(
    "counts",
    [(400, 100, 50, 450), (30, 70, 2, 98), (100, 0, 0, 100), (5, 5, 5, 5), (900, 100, 600, 400)],
)
@pytest.mark.parametrize("delta", [0.0, 1e-5, 0.05])
def test_matches_naive_oracle(counts, delta):
    res = epsilon_from_confusion(*counts, delta=delta, confidence_level=0.9)
    tpr_lo, fpr_hi, eps = _naive(*counts, delta, 0.1)
    assert res.tpr_lower == pytest.approx(tpr_lo, rel=1e-10, abs=1e-14)
    assert res.fpr_upper == pytest.approx(fpr_hi, rel=1e-10)
    assert res.epsilon == pytest.approx(eps, rel=1e-10, abs=1e-14)


def test_second_direction_complement():
    # TNR/FNR direction wins when the attack's rejection set is rare under S but FN is small.
    res = epsilon_from_confusion(990, 10, 500, 500, delta=0.0)
    tpr_lo, fpr_hi, _ = _naive(990, 10, 500, 500, 0.0, 0.05)
    assert res.direction == "tnr/fnr"
    assert res.epsilon == pytest.approx(math.log((1 - fpr_hi) / (1 - tpr_lo)), rel=1e-12)


def test_orientation_either_catches_reversed_attack():
    # The attack is backwards (O is where S lands): "given" sees nothing, "either" pays β/4.
    given = epsilon_from_confusion(50, 450, 400, 100, delta=1e-5)
    either = epsilon_from_confusion(50, 450, 400, 100, delta=1e-5, orientation="either")
    assert given.epsilon == 0.0 and given.direction == "none"
    _, _, eps = _naive(400, 100, 50, 450, 1e-5, 0.05, k=4)
    assert either.epsilon == pytest.approx(eps, rel=1e-10)
    assert either.direction in {"fpr/tpr", "fnr/tnr"}
    assert either.tpr_upper is not None and either.fpr_lower is not None
    assert either.interval_level == pytest.approx(1 - 0.05 / 4)


def test_rejection_set_equals_confusion():
    a = epsilon_from_rejection_set(50, 500, 400, 500, delta=1e-5)
    b = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    assert a.epsilon == b.epsilon and (a.tp, a.fn, a.fp, a.tn) == (400, 100, 50, 450)


def test_error_rates_formula():
    # max{log((1−δ−FN)/FP), log((1−δ−FP)/FN)} (paper 000 §2.2).
    assert epsilon_from_error_rates(0.1, 0.2) == pytest.approx(math.log(0.8 / 0.1))
    assert epsilon_from_error_rates(0.3, 0.05, delta=0.01) == pytest.approx(math.log(0.69 / 0.05))
    assert epsilon_from_error_rates(0.6, 0.6) == 0.0
    assert math.isinf(epsilon_from_error_rates(0.0, 0.5))
    res = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    assert epsilon_from_error_rates(res.fpr_upper, res.fnr_upper, delta=1e-5) == pytest.approx(
        res.epsilon, rel=1e-12
    )


def test_result_serialises():
    res = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    data = json.loads(res.to_json())
    assert data["epsilon"] == pytest.approx(res.epsilon)
    assert data["confidence_interval"]["high"] == "inf"
    assert isinstance(res, EpsDeltaAudit)


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(7)
    return rng.normal(2.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000)


def test_explicit_threshold_counts(scores):
    pos, neg = scores
    res = epsilon_from_scores(pos, neg, selection=Explicit(1.0), delta=1e-5)
    tp, fp = int((pos >= 1.0).sum()), int((neg >= 1.0).sum())
    ref = epsilon_from_confusion(tp, pos.size - tp, fp, neg.size - fp, delta=1e-5)
    assert (
        res.epsilon == ref.epsilon and res.selection.strategy == "explicit" and res.threshold == 1.0
    )


def test_bonferroni_threshold_pays_for_candidates(scores):
    pos, neg = scores
    cands = (0.0, 0.5, 1.0, 1.5, 2.0)
    res = epsilon_from_scores(pos, neg, selection=Bonferroni(cands), delta=1e-5)
    best = 0.0
    for t in cands:
        tp, fp = int((pos >= t).sum()), int((neg >= t).sum())
        r = epsilon_from_confusion(
            tp, pos.size - tp, fp, neg.size - fp, delta=1e-5, confidence_level=1 - 0.05 / 5
        )
        best = max(best, r.epsilon)
    assert res.epsilon == pytest.approx(best, rel=1e-12)
    assert res.selection.strategy == "bonferroni" and res.n_candidates == 5
    assert res.interval_level == pytest.approx(1 - 0.05 / 10)


def test_split_threshold_bounds_held_out_part(scores):
    pos, neg = scores
    res = epsilon_from_scores(pos, neg, selection=Split(0.5), rng=3, delta=1e-5)
    again = epsilon_from_scores(pos, neg, selection=Split(0.5), rng=3, delta=1e-5)
    assert res == again and res.selection.strategy == "split" and res.seed == 3
    assert res.selection.choice == "threshold" and "seed 3" in res.selection.detail
    assert res.tp + res.fn == 2000 and res.fp + res.tn == 2000
    ref = epsilon_from_confusion(res.tp, res.fn, res.fp, res.tn, delta=1e-5)
    assert res.epsilon == ref.epsilon
    # N(2,1) vs N(0,1) has unbounded privacy loss: the best sets are in the tails (here the
    # left one, through the TNR/FNR inequality), far from the midpoint 1.
    assert abs(res.threshold - 1.0) > 1.0
    assert res.epsilon > 2.0
    fresh = epsilon_from_scores(pos, neg, selection=Split(0.3), delta=1e-5)
    assert isinstance(fresh.seed, int)
    # the recorded seed reproduces the unseeded run
    again = epsilon_from_scores(pos, neg, selection=Split(0.3), rng=fresh.seed, delta=1e-5)
    assert again.epsilon == fresh.epsilon and again.threshold == fresh.threshold
    # the default selection is a half split, and "split" is its shorthand
    default = epsilon_from_scores(pos, neg, rng=3, delta=1e-5)
    assert default == res == epsilon_from_scores(pos, neg, selection="split", rng=3, delta=1e-5)


def test_scores_bad_input(scores):
    pos, neg = scores
    with pytest.raises(TypeError, match="selection"):
        epsilon_from_scores(pos, neg, selection=1.0)
    with pytest.raises(ValueError, match="selection"):
        epsilon_from_scores(pos, neg, selection="best")
    with pytest.raises(ValueError, match="Bonferroni needs the candidate thresholds"):
        epsilon_from_scores(pos, neg, selection=Bonferroni())
    with pytest.raises(TypeError, match="candidates"):
        epsilon_from_scores(pos, neg, selection=Bonferroni([[0, 1]]))
    with pytest.raises(TypeError, match="threshold"):
        epsilon_from_scores(pos, neg, selection=Explicit([0.0, 1.0]))
    with pytest.raises(ValueError, match="positive_scores"):
        epsilon_from_scores([], neg, selection=Explicit(0.0))
    with pytest.raises(ValueError, match="negative_scores"):
        epsilon_from_scores(pos, [0.0, np.nan], selection=Explicit(0.0))
    with pytest.raises(ValueError, match="negative_scores"):
        epsilon_from_scores(pos, [[0.0, 1.0]], selection=Explicit(0.0))
    with pytest.raises(ValueError, match=r"Split\(fraction=0.5\).*positive_scores"):
        epsilon_from_scores([1.0], neg, selection=Split(0.5))
    with pytest.raises(ValueError, match="fraction"):
        Split(1.0)
    with pytest.raises(TypeError, match="seed"):
        Split(0.5, seed=1)  # randomness comes from the bound's rng, not the strategy
    with pytest.raises(ValueError, match="value"):
        Explicit(math.inf)
    with pytest.raises(ValueError, match="candidates"):
        Bonferroni(())
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_scores(pos, neg, selection=Explicit(0.0), delta=1.0)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((-1, 1, 1, 1), {}, "tp"),
        ((1, -1, 1, 1), {}, "fn"),
        ((1, 1, -2, 1), {}, "fp"),
        ((1, 1, 1, -3), {}, "tn"),
        ((0, 0, 1, 1), {}, "tp \\+ fn"),
        ((1, 1, 0, 0), {}, "fp \\+ tn"),
        ((1, 1, 1, 1), {"delta": 1.0}, "delta"),
        ((1, 1, 1, 1), {"delta": -0.1}, "delta"),
        ((1, 1, 1, 1), {"confidence_level": 1.0}, "confidence_level"),
        ((1, 1, 1, 1), {"confidence_level": 0.0}, "confidence_level"),
        ((1, 1, 1, 1), {"orientation": "both"}, "orientation"),
    ],
)
def test_confusion_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        epsilon_from_confusion(*args, **kwargs)


def test_confusion_type_errors():
    with pytest.raises(TypeError, match="tp"):
        epsilon_from_confusion(1.5, 1, 1, 1)
    with pytest.raises(TypeError, match="fn"):
        epsilon_from_confusion(1, "2", 1, 1)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((6, 5, 1, 5), "count must be <= n"),
        ((1, 5, 6, 5), "count_neighbour"),
        ((0, 0, 1, 5), "n must be a positive integer"),
        ((0, 5, 0, 0), "n_neighbour"),
        ((-1, 5, 1, 5), "count"),
    ],
)
def test_rejection_set_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        epsilon_from_rejection_set(*args)


def test_error_rates_bad_input():
    with pytest.raises(ValueError, match="fpr_upper"):
        epsilon_from_error_rates(1.2, 0.1)
    with pytest.raises(ValueError, match="fnr_upper"):
        epsilon_from_error_rates(0.1, -0.1)
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_error_rates(0.1, 0.1, delta=1.0)
