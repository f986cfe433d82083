"""The anytime-valid layer: betting e-processes against naive loops, Ville's bound on null
streams (type-I error when looking after every observation), coverage of the ε confidence
sequence, power, and argument checks.

The ``expectation`` package (0.6.x) needs Python ≥ 3.12 and ``confseq`` 0.0.11 has no wheel
and does not build here, so the reference implementations are the naive per-observation
loops below, written from the papers' recursions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import BettingEProcess, DPClaimEProcess, epsilon_grid


def _naive_agrapa(y, max_bet=0.5):
    """aGRAPA (Waudby-Smith & Ramdas 2023, §B.3) one observation at a time: the bet is the
    regularised past mean over the regularised past second moment, truncated to [0, c]."""
    log_w, s1, s2, path = 0.0, 0.0, 0.0, []
    for t, v in enumerate(y):
        mean, second = s1 / (t + 1), (s2 + 0.25) / (t + 1)
        bet = min(max(mean / second, 0.0), max_bet)
        log_w += math.log1p(bet * v)
        path.append(log_w)
        s1, s2 = s1 + v, s2 + v * v
    return np.array(path)


def _naive_ons(y, max_bet=0.5):
    """Online Newton step betting (Cutkosky & Orabona 2018, arXiv:1802.06293)."""
    log_w, bet, a, path = 0.0, 0.0, 1.0, []
    for v in y:
        gain = 1.0 + bet * v
        log_w += math.log(gain)
        path.append(log_w)
        g = v / gain
        a += g * g
        bet = min(max(bet + 2.0 / (2.0 - math.log(3.0)) * g / a, 0.0), max_bet)
    return np.array(path)


@pytest.mark.parametrize(("strategy", "naive"), [("agrapa", _naive_agrapa), ("ons", _naive_ons)])
def test_betting_matches_naive_loop_whatever_the_batches(strategy, naive):
    rng = np.random.default_rng(3)
    y = np.clip(rng.normal(0.05, 0.4, 700), -1.0, 1.0)
    ref = naive(y)
    for cuts in ([700], [1, 99, 600], [350, 350], [7] * 100):
        e = BettingEProcess([-1.0], strategy=strategy)
        start, maxima = 0, []
        for c in cuts:
            e.update(y[None, start : start + c])
            start += c
            maxima.append(e.max_log_wealth[0])
        np.testing.assert_allclose(e.log_wealth[0], ref[-1], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(e.max_log_wealth[0], max(0.0, ref.max()), rtol=1e-12)


def test_compiled_and_numpy_agrapa_give_the_same_paths(monkeypatch):
    """The numba loop (one pass) and the NumPy prefix-sum version: the same log-wealth paths,
    maxima and crossings on several columns, batches and a seeded restart, to rounding."""
    import dpaudit.bounds._sequential as seq

    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    low = -np.array([1.0, 1.2, 2.5])
    z = [np.clip(rng.normal(0.03, 0.5, (3, n)), low[:, None], 1.0) for n in (1, 40, 900, 3)]

    def run():
        e, crossings = BettingEProcess(low), []
        for i, batch in enumerate(z):
            if i == 2:
                e.restart_bets(mean=[0.1, 0.0, -0.2], second=[0.3, 0.2, 0.5], weight=5)
            crossings.append(e.update(batch, threshold=1.0))
        return e, np.array(crossings)

    compiled, cross_c = run()
    monkeypatch.setattr(seq, "compiled_agrapa", lambda: None)
    numpy_, cross_n = run()
    np.testing.assert_allclose(compiled.log_wealth, numpy_.log_wealth, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled.max_log_wealth, numpy_.max_log_wealth, rtol=1e-12)
    np.testing.assert_array_equal(cross_c, cross_n)
    assert compiled.count == numpy_.count == sum(b.shape[1] for b in z)
    assert np.all(compiled.max_log_wealth > 0.0)  # some evidence grows: the paths are not trivial


def test_betting_scale_and_crossing_index():
    y = np.clip(np.random.default_rng(4).normal(0.1, 0.5, 300), -1, 1)
    ref = _naive_agrapa(y)
    e = BettingEProcess([-3.0])  # the same stream, scaled by 3: the same wealth
    first = e.update(3.0 * y[None], threshold=math.log(20))
    np.testing.assert_allclose(e.log_wealth[0], ref[-1], rtol=1e-12)
    assert first[0] == int(np.argmax(ref >= math.log(20)))


def _null_streams(streams, n, q, ratio, rng):
    """Paired event indicators with P(positive) = ratio · P(negative): at the claim exactly."""
    pos = rng.random((streams, n)) < ratio * q
    neg = rng.random((streams, n)) < q
    return pos.astype(float), neg.astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["agrapa", "ons"])
def test_type_one_error_looking_after_every_observation(strategy):
    """1,000 seeded null streams at the boundary of the claim (Laplace's tightest event:
    P(X ≥ 1 | a′=1) = e^ε P(Y ≥ 1 | a=0), ε = 1), each looked at after every observation:
    the fraction that ever rejects stays below β + 3 standard errors (Ville's inequality)."""
    eps, beta, streams = 1.0, 0.05, 1000
    n = 4000 if strategy == "agrapa" else 400
    pos, neg = _null_streams(streams, n, 0.5 * math.exp(-eps), math.exp(eps),
                             np.random.default_rng(11))  # fmt: skip
    e = BettingEProcess(np.full(streams, -math.exp(eps)), strategy=strategy)
    first = e.update(pos - math.exp(eps) * neg, threshold=math.log(1 / beta))
    rate = float(np.mean(first >= 0))
    assert rate <= beta + 3 * math.sqrt(beta * (1 - beta) / streams)


@pytest.mark.slow
def test_confidence_sequence_coverage_on_laplace():
    """Laplace with b = 1/ε (true ε = 1) through its tightest event, and a weaker one: the
    anytime lower bound exceeds the true ε (at any time up to 3,000 pairs) in at most
    the 99.9 % binomial quantile of 200 seeded repetitions."""
    eps, beta, reps = 1.0, 0.1, 200
    rng = np.random.default_rng(12)
    exceed = 0
    for _ in range(reps):
        x = rng.laplace(1.0, 1 / eps, 3000) >= 0.5  # M(a′), a′ = 1
        y = rng.laplace(0.0, 1 / eps, 3000) >= 0.5
        e = DPClaimEProcess(eps, epsilons=np.linspace(0, 2, 41), confidence_level=1 - beta)
        worst = max(e.update(x[i : i + 500], y[i : i + 500]).epsilon for i in range(0, 3000, 500))
        exceed += worst > eps
    assert exceed <= stats.binom.ppf(0.999, reps, beta)


def test_confidence_sequence_on_the_grid_and_monotone():
    rng = np.random.default_rng(5)
    e = DPClaimEProcess(0.5, epsilons=np.linspace(0, 3, 31))
    bounds = [e.update(rng.random(100) < 0.9, rng.random(100) < 0.1).epsilon for _ in range(20)]
    assert all(b in np.round(np.linspace(0, 3, 31), 12) or b == 0.5 for b in np.round(bounds, 12))
    assert bounds == sorted(bounds)  # a running bound: it never decreases
    assert 1.5 < bounds[-1] < math.log(9)  # true ε of the event: log(0.9/0.1) = 2.197


def test_power_and_rejection_time():
    """A mechanism at ε = log 9 against a claim of 0.5 is caught within a hundred pairs."""
    rng = np.random.default_rng(0)
    r = DPClaimEProcess(0.5).update(rng.random(400) < 0.9, rng.random(400) < 0.1)
    assert r.rejects_claim and r.rejected_at < 100
    assert r.max_log_e_value >= math.log(20)
    assert r.observations == 400


def test_a_rejected_claim_gives_a_bound_above_it():
    """Rejecting the claim shows ε > claim: with no grid point between the claim and a value
    that is not rejected, the point added just above the claim still puts the bound above it
    (so the entry's gap refutes the claim whenever the test rejects it)."""
    rng = np.random.default_rng(0)
    e = DPClaimEProcess(0.5, epsilons=[0.0, 0.5, 5.0])
    r = e.update(rng.random(400) < 0.9, rng.random(400) < 0.1)  # true ε = log 9 < 5
    assert r.rejects_claim and 0.5 < r.epsilon < 0.5 + 1e-8
    assert e.epsilons.size == 4
    assert DPClaimEProcess(1.0).epsilons.size == epsilon_grid(1.0).size + 1


def test_delta_enters_the_statistic():
    """(ε, δ) with δ = 0.3 covers P 0.9 vs 0.5 at ε = log(1.2): no rejection of ε = 0.2."""
    rng = np.random.default_rng(1)
    e = DPClaimEProcess(0.2, delta=0.3, epsilons=[0.0, 0.2])
    r = e.update(rng.random(5000) < 0.9, rng.random(5000) < 0.5)
    assert not r.rejects_claim
    r0 = DPClaimEProcess(0.2, epsilons=[0.0, 0.2]).update(
        rng.random(5000) < 0.9, rng.random(5000) < 0.5
    )
    assert r0.rejects_claim


def test_epsilon_grid():
    np.testing.assert_allclose(epsilon_grid(1.0, points=5), [0.0, 0.75, 1.0, 1.5, 2.25, 3.0])
    assert epsilon_grid(0.3, points=3, top=1.0).tolist() == [0.0, 0.3, 0.5, 1.0]
    with pytest.raises(ValueError, match="points"):
        epsilon_grid(1.0, points=1)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        epsilon_grid(-1.0)
    with pytest.raises(ValueError, match="top"):
        epsilon_grid(1.0, top=math.inf)


def test_argument_checks():
    with pytest.raises(ValueError, match="lower"):
        BettingEProcess([0.5])
    with pytest.raises(ValueError, match="strategy"):
        BettingEProcess([-1.0], strategy="kelly")
    with pytest.raises(ValueError, match="max_bet"):
        BettingEProcess([-1.0], max_bet=1.0)
    with pytest.raises(ValueError, match="shape"):
        BettingEProcess([-1.0, -1.0]).update(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="below the declared lower bound"):
        BettingEProcess([-1.0]).update(np.full((1, 3), -2.0))
    e = DPClaimEProcess(1.0)
    with pytest.raises(ValueError, match="positives must lie in"):
        e.update([1.5], [0.0])
    with pytest.raises(ValueError, match="same length"):
        e.update([1.0, 0.0], [0.0])
    with pytest.raises(ValueError, match="claimed_epsilon"):
        DPClaimEProcess(math.nan)
    with pytest.raises(ValueError, match="confidence_level"):
        DPClaimEProcess(1.0, confidence_level=1.0)
    with pytest.raises(ValueError, match="epsilons"):
        DPClaimEProcess(1.0, epsilons=[-1.0, 1.0])
    with pytest.raises(TypeError, match="positives"):
        e.update(["a"], [0.0])


def test_docstring_examples():
    from doctest_support import module_examples

    result = module_examples("dpaudit.bounds._sequential")
    assert result.attempted > 0 and result.failed == 0
