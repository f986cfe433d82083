"""The sequential mechanism audit's ramp witnesses (issue 41): ``clip((score − t)/w, 0, 1)``
chosen, like the events, from the pools only; their moments from prefix sums against naive
sums; the audit's level on a mechanism at its true ε with ramps in play."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.experiments import MechanismAuditSettings, audit_mechanism
from dpaudit.experiments.mechanism import _ramps, sequential


def test_ramp_sums_are_the_naive_sums():
    """Σh and Σh² of every candidate ramp from prefix sums equal the sums of the witness
    values themselves, on continuous scores, on scores with ties (counts) and far from 0."""
    rng = np.random.default_rng(4)
    cases = [rng.normal(size=3000), rng.integers(0, 6, 2000).astype(float),
             1e3 + rng.normal(scale=0.01, size=1500)]  # fmt: skip
    for x in cases:
        x = np.sort(x)
        ts = np.unique(np.quantile(x, np.linspace(0, 1, 257)))
        lows, highs = _ramps._candidates(ts)
        low, high = ts[lows], ts[highs]
        assert low.size and np.all(high > low)
        h1, h2 = _ramps._sums(x, ts, lows, highs)
        for k in rng.choice(low.size, 60):
            h = _ramps.ramp_values(x, low[k], high[k], True)
            np.testing.assert_allclose(h1[k], h.sum(), rtol=1e-9, atol=1e-6)
            np.testing.assert_allclose(h2[k], (h * h).sum(), rtol=1e-9, atol=1e-6)


def test_ramp_moments_of_both_sides_and_of_an_event():
    """Backward, the witness is ``1 − h`` for a: its moments from the sums of ``h``; a ramp
    whose values are 0 and 1 only has the event's shrunk rates (``q = p``)."""
    rng = np.random.default_rng(7)
    xa, xb = rng.normal(0, 1, 800), rng.normal(0.5, 1, 600)
    low, high = -0.3, 0.4
    ha, hb = (_ramps.ramp_values(x, low, high, True) for x in (xa, xb))
    sums = [(h.sum(), (h * h).sum()) for h in (ha, hb)]
    p_pos, p_neg, n_pos, n_neg, q_pos, q_neg = _ramps.ramp_moments(sums[0], 800, sums[1], 600,
                                                                   False)  # fmt: skip
    ga = 1.0 - ha  # backward: a is the positive side, witness 1 − h
    pooled = (ga.sum() + (1 - hb).sum() + 1) / (1400 + 2)
    assert (n_pos, n_neg) == (800, 600)
    assert math.isclose(p_pos, (ga.sum() + 2 * pooled) / 802, rel_tol=1e-12)
    pooled_q = ((ga * ga).sum() + ((1 - hb) ** 2).sum() + 1) / 1402
    assert math.isclose(q_neg, (((1 - hb) ** 2).sum() + 2 * pooled_q) / 602, rel_tol=1e-12)
    assert p_pos**2 <= q_pos <= p_pos and p_neg**2 <= q_neg <= p_neg
    ka, kb = np.array([300.0]), np.array([420.0])  # an event: h ∈ {0, 1}, Σh² = Σh
    ramp = _ramps.ramp_moments((ka, ka), 800, (kb, kb), 600, True)
    event = sequential._shrunk(ka, 800, kb, 600, True)
    for r, e in zip(ramp[:4], event, strict=True):
        np.testing.assert_allclose(r, e, rtol=1e-12)
    np.testing.assert_allclose(ramp[4], event[0], rtol=1e-12)
    f = math.exp(0.2)
    np.testing.assert_allclose(_ramps.ramp_growth(*ramp, f, 0.0, 1.0),
                               sequential._growth(*event, f, 0.0, 1.0), rtol=1e-9)  # fmt: skip


def test_a_graded_likelihood_ratio_prefers_a_ramp(monkeypatch):
    """Scores whose log-likelihood ratio rises linearly over a long range (a′ = N(0.4, 1)
    against a = N(0, 1), claim ε = 0.05): the best witness found is a ramp, its estimated
    growth above the best event's, its fresh moments those of its values."""
    monkeypatch.setattr(sequential, "RAMPS", True)
    rng = np.random.default_rng(0)
    sa, sb = rng.normal(0, 1, 40_000), rng.normal(0.4, 1, 40_000)
    from dpaudit.attacks import MechanismAttack

    attack = MechanismAttack("llr", llr=lambda o, a, b: o[:, 0], pair_a=np.zeros(1),
                             pair_b=np.ones(1))  # fmt: skip
    att, forward, growth, fresh, high = sequential._split_event(
        attack, sa[:20_000], sb[:20_000], sa[20_000:], sb[20_000:], 0.05, 0.0, 1.0
    )
    event = sequential._split_event(attack, sa[:20_000], sb[:20_000], sa[20_000:],
                                    sb[20_000:], 0.05, 0.0, 1.0, ramps=False)  # fmt: skip
    assert high is not None and high > att.threshold and growth > event[2] > 0
    positive = sb[20_000:] if forward else sa[20_000:]  # backward: 1 − h on a's outputs
    h = _ramps.ramp_values(positive, att.threshold, high, forward)
    assert len(fresh) == 6 and abs(fresh[0] - h.mean()) < 1e-4


def test_ramps_are_bet_on_and_the_run_stays_predictable():
    """StatDP's iSVT4 with ramps: some epochs bet on a ramp (its values, not an event's
    indicators, reach the e-process), and the claim is still rejected."""
    bets = []
    bet = sequential._bet_ramp

    def spy(process, choice, out_a, out_b):
        bets.append(choice.high)
        return bet(process, choice, out_a, out_b)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(sequential, "RAMPS", True)
        m.setattr(sequential, "_bet_ramp", spy)
        res = audit_mechanism(MechanismAuditSettings(mechanism="statdp-isvt4", mode="sequential",
                                                     samples=200_000, seed=1))  # fmt: skip
    ramps = [e for e in res.timings["epochs"] if e["bet"] and e["ramp_to"] is not None]
    assert bets and len(bets) == len(ramps) and res.entries[0].detail.rejects_claim


@pytest.mark.slow
def test_honest_laplace_keeps_the_level_with_ramps(monkeypatch):
    """Laplace at exactly its claim (true ε = 0.1), 40 seeded audits of 20,000 samples per
    input with ramps in play (some epochs bet on one): the claim is rejected in at most 5
    of them (P(Bin(40, 0.05) ≥ 6) = 0.014), and no confidence sequence exceeds its true ε
    by more than that allows."""
    monkeypatch.setattr(sequential, "RAMPS", True)
    rejected, ramp_bets, above = 0, 0, 0
    for seed in range(40):
        s = MechanismAuditSettings(mechanism="laplace", mode="sequential", samples=20_000,
                                   seed=seed)  # fmt: skip
        res = audit_mechanism(s)
        e = res.entries[0]
        rejected += e.detail.rejects_claim
        above += e.lower_bound.epsilon > 0.1
        ramp_bets += sum(x["bet"] and x["ramp_to"] is not None for x in res.timings["epochs"])
    assert rejected <= 5 and above <= 5
    assert ramp_bets > 0
