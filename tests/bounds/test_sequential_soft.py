"""The DP claim's e-process on [0, 1]-valued witnesses (issue 41: the sequential mechanism
audit bets on ramps ``clip((score − t)/w, 0, 1)``, not only on events): against a naive
per-pair loop written from the recursion, seeded restarts with a witness's second moments,
and the level on null streams at the boundary of the claim.

Validity: for ``h`` in [0, 1], (ε, δ)-DP gives ``E h(M(a′)) ≤ e^ε E h(M(a)) + δ`` (layer
cake over the events ``{h > u}``), so ``h(X) − e^ε h(Y) − δ`` has mean ≤ 0 under the claim
(González, Dulce-Rubio, Ramdas & Ribero 2025, arXiv:2509.07055).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.bounds import BettingEProcess, DPClaimEProcess
from dpaudit.bounds import _sequential as seq


def _naive_claim(pos, neg, eps, delta, restarts=(), beta=0.05, max_bet=0.5):
    """One grid column of :class:`DPClaimEProcess`, pair by pair: aGRAPA (Waudby-Smith &
    Ramdas 2023, arXiv:2010.09686, §B.3) on ``z/(e^ε + δ)`` with ``z = h(X) − e^ε h(Y) − δ``,
    its sums reset at each restart ``(time, p⁺, p⁻, weight, q⁺, q⁻)`` to ``weight``
    pseudo-observations of the seed's mean and second moment of ``z``. Returns the
    log-wealth path and the first pair (1-based) at which it reached ``log(1/β)``."""
    f = math.exp(eps)
    scale = f + delta
    at = {r[0]: r[1:] for r in restarts}
    log_w, s1, s2, k, path, first = 0.0, 0.0, 0.0, 0.0, [], None
    for t in range(len(pos)):
        if t in at:
            pp, pn, weight, qp, qn = at[t]
            mean = pp - f * pn - delta
            second = qp - 2 * f * pp * pn + f * f * qn - 2 * delta * (pp - f * pn) + delta**2
            s1, s2, k = weight * mean / scale, weight * second / scale**2, weight
        y = (pos[t] - f * neg[t] - delta) / scale
        bet = min(max((s1 / (k + 1)) / ((s2 + 0.25) / (k + 1)), 0.0), max_bet)
        log_w += math.log1p(bet * y)
        path.append(log_w)
        if first is None and log_w >= math.log(1 / beta):
            first = t + 1
        s1, s2, k = s1 + y, s2 + y * y, k + 1
    return np.array(path), first


@pytest.mark.parametrize("compiled", [True, False])
def test_soft_witnesses_match_the_naive_loop(compiled, monkeypatch):
    """Ramp-like witness values (continuous in [0, 1], with exact 0s and 1s), δ > 0, in
    batches, with a plain and a seeded restart carrying second moments: the claim's
    log-wealth, its maximum and its rejection time are the naive loop's."""
    if not compiled:
        monkeypatch.setattr(seq, "compiled_paired_agrapa", lambda: None)
    rng = np.random.default_rng(11)
    n = 3000
    pos = np.clip(rng.normal(0.45, 0.35, n), 0.0, 1.0)
    neg = np.clip(rng.normal(0.25, 0.35, n), 0.0, 1.0)
    eps, delta = 0.3, 1e-3
    restarts = [(1000, 0.45, 0.25, 0.0, 0.3, 0.15), (2000, 0.45, 0.25, 40.0, 0.3, 0.15)]
    ref, first = _naive_claim(pos, neg, eps, delta, restarts)
    e = DPClaimEProcess(eps, delta, epsilons=[eps])
    for lo, hi in ((0, 7), (7, 1000), (1000, 2000), (2000, n)):
        if lo == 1000:
            e.restart_bets()
        if lo == 2000:
            e.restart_bets(0.45, 0.25, weight=40.0, q_pos=0.3, q_neg=0.15)
        state = e.update(pos[lo:hi], neg[lo:hi])
    np.testing.assert_allclose(state.log_e_value, ref[-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.max_log_e_value, max(0.0, ref.max()), rtol=1e-10)
    assert first is not None and state.rejected_at == first


def test_an_events_moments_are_the_default_second_moments():
    """An event's witness has ``h² = h``: passing ``q = p`` is the indicator restart, bit for
    bit (the audit's event epochs are unchanged)."""
    a, b = DPClaimEProcess(0.4, 1e-4), DPClaimEProcess(0.4, 1e-4)
    a.restart_bets(0.5, 0.2, weight=30)
    b.restart_bets(0.5, 0.2, weight=30, q_pos=0.5, q_neg=0.2)
    rng = np.random.default_rng(2)
    pos, neg = rng.random(500) < 0.5, rng.random(500) < 0.2
    assert a.update(pos, neg) == b.update(pos, neg)
    np.testing.assert_array_equal(a._process.log_wealth, b._process.log_wealth)


def test_soft_witness_restarts_keep_the_level_at_the_boundary():
    """1,000 null streams at the boundary of the claim for a soft witness: ``h(X)`` and
    ``h(Y)`` continuous in [0, 1] with ``E h(X) = e^ε E h(Y)`` exactly (Beta laws), the bets
    restarted every 100 pairs seeded with the true moments of the statistic, looked at
    after every pair: the fraction that ever reaches 1/β stays ≤ β + 3 SE."""
    rng = np.random.default_rng(41)
    eps, streams, beta, n = 0.5, 1000, 0.05, 2000
    f = math.exp(eps)
    ay, by = 1.0, 6.0  # h(Y) ~ Beta(1, 6): mean 1/7
    mean_x = f / 7.0
    ax, bx = 2.0, 2.0 * (1 - mean_x) / mean_x  # h(X) ~ Beta(2, ·) with mean e^ε/7
    qx = mean_x * (ax + 1) / (ax + bx + 1)
    qy = (1 / 7) * (ay + 1) / (ay + by + 1)
    mean = mean_x - f / 7  # 0: the boundary
    second = qx - 2 * f * mean_x / 7 + f * f * qy  # E (h(X) − e^ε h(Y))², independent
    e = BettingEProcess(np.full(streams, -f))
    ever = np.zeros(streams, bool)
    for _ in range(n // 100):
        e.restart_bets(np.full(streams, mean), np.full(streams, second), weight=50)
        x, y = rng.beta(ax, bx, (streams, 100)), rng.beta(ay, by, (streams, 100))
        ever |= e.update(x - f * y, threshold=math.log(1 / beta)) >= 0
    assert ever.mean() <= beta + 3 * math.sqrt(beta * (1 - beta) / streams)


def test_second_moment_checks():
    e = DPClaimEProcess(0.5)
    with pytest.raises(ValueError, match="q_pos"):
        e.restart_bets(0.5, 0.2, weight=5, q_pos=0.6)  # above p: not values in [0, 1]
    with pytest.raises(ValueError, match="q_neg"):
        e.restart_bets(0.5, 0.2, weight=5, q_pos=0.3, q_neg=0.01)  # below p²
    with pytest.raises(ValueError, match="positives"):
        e.update([1.2], [0.0])
