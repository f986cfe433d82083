"""Restarting the bets of a betting e-process when the witness changes (issue 41: the
sequential mechanism audit re-chooses its event before each epoch): the wealth is kept, the
bets learn afresh, and the test keeps its level."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.bounds import BettingEProcess, DPClaimEProcess


def test_a_restart_bets_like_a_fresh_process_from_the_wealth_reached():
    rng = np.random.default_rng(0)
    z1, z2 = rng.uniform(-1, 0.5, (2, 300)), rng.uniform(-0.8, 1.0, (2, 400))
    e = BettingEProcess([-1.0, -1.0])
    e.update(z1)
    reached = e.log_wealth.copy()
    e.restart_bets()
    e.update(z2)
    fresh = BettingEProcess([-1.0, -1.0])
    fresh.update(z2)
    np.testing.assert_allclose(e.log_wealth, reached + fresh.log_wealth, rtol=1e-12)
    assert e.count == 700


def test_a_seeded_restart_bets_the_seed_at_once():
    """Seeded with mean 0.1 and second moment 0.2 (weight 10) the first bet is
    (10·0.1)/(10·0.2 + 0.25)·… = 1.0/2.25 of the scale, clipped at 0.5: 0.444."""
    e = BettingEProcess([-2.0])
    e.restart_bets(mean=[0.2], second=[0.8], weight=10)  # z/scale: mean 0.1, second 0.2
    e.update(np.array([[1.0]]))  # y = 0.5
    assert math.isclose(e.log_wealth[0], math.log1p(0.5 * 1.0 / 2.25), rel_tol=1e-12)


def test_restarts_keep_the_level_looking_after_every_observation():
    """1,000 null streams at the boundary (P⁺ = e^ε P⁻), the bets restarted every 50
    observations (a new event each time, as the audit does): the fraction that ever
    reaches 1/β stays ≤ β + 3 SE."""
    rng = np.random.default_rng(41)
    eps, streams, beta = 1.0, 1000, 0.05
    q = 0.5 * math.exp(-eps)
    e = BettingEProcess(np.full(streams, -math.exp(eps)))
    ever = np.zeros(streams, bool)
    for _ in range(40):
        pos = rng.random((streams, 50)) < 0.5
        neg = rng.random((streams, 50)) < q
        ever |= e.update(pos - math.exp(eps) * neg, threshold=math.log(1 / beta)) >= 0
        e.restart_bets()
    assert ever.mean() <= beta + 3 * math.sqrt(beta * (1 - beta) / streams)


def test_dp_claim_restart_seeds_each_column_from_the_rates():
    e = DPClaimEProcess(0.5, epsilons=[0.0, 0.5, 1.0])
    e.restart_bets(0.6, 0.2, weight=50)
    state = e.update(np.ones(20, bool), np.zeros(20, bool))
    assert state.log_e_value > math.log(5)  # bets at once on a strong event
    e.restart_bets()
    with pytest.raises(ValueError, match="p_pos"):
        e.restart_bets(1.5, 0.2, weight=1)


def test_restart_argument_checks():
    e = BettingEProcess([-1.0])
    with pytest.raises(ValueError, match="weight"):
        e.restart_bets(weight=-1)
    with pytest.raises(ValueError, match="mean and second"):
        e.restart_bets(weight=2)
    with pytest.raises(ValueError, match="mean and second must have 1"):
        e.restart_bets(mean=[0.1, 0.2], second=[0.3, 0.3], weight=2)
