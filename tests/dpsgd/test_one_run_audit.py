"""One-run bounds of score vectors: coverage on mechanisms with known ε, the slot game."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dpaudit.bounds import (
    default_guess_counts,
    fdp_one_run_sweep,
    membership_slots,
    one_run_bounds,
    one_run_sweep,
)
from dpaudit.conversions import gdp_epsilon

REPS = 200
BETA = 0.05
DELTA = 1e-5


def _gaussian_game(mu: float, m: int, seed: int):
    """Scores of a μ-GDP mechanism: N(μ, 1) for included canaries, N(0, 1) otherwise (each
    canary's score is a Gaussian mechanism of sensitivity μ in its own inclusion bit)."""
    g = np.random.default_rng(seed)
    inc = g.random(m) < 0.5
    return inc * mu + g.normal(size=m), inc


def _rr_game(eps: float, m: int, seed: int):
    """Randomized response: each canary's bit is reported truthfully w.p. e^ε/(1+e^ε)."""
    g = np.random.default_rng(seed)
    inc = g.random(m) < 0.5
    truthful = g.random(m) < special.expit(eps)
    return np.where(truthful == inc, 1.0, -1.0), inc


@pytest.mark.slow
def test_coverage_gaussian_scores():
    """ε_or, ε_or-fdp, ε_max and the f-DP μ exceed the truth of a μ-GDP mechanism in at most
    β of 200 seeded repetitions (the number of guesses paid for by a split in even
    repetitions, by Bonferroni in odd ones)."""
    mu = 1.5
    truth = gdp_epsilon(mu, DELTA)
    over = {"or": 0, "or-fdp": 0, "max": 0, "mu": 0}
    for rep in range(REPS):
        selection = "split" if rep % 2 == 0 else "bonferroni"
        s, inc = _gaussian_game(mu, 400, rep)
        b = one_run_bounds(s, inc, delta=DELTA, selection=selection, max_points=8, rng=rep)
        over["or"] += b.steinke.epsilon > truth
        over["or-fdp"] += b.fdp.epsilon > truth
        over["max"] += b.max_valid > truth
        over["mu"] += b.fdp.mu > mu
    assert all(v <= BETA * REPS for v in over.values()), over


@pytest.mark.slow
def test_coverage_randomized_response_near_tight():
    """Steinke et al.'s bound is nearly tight for randomized response (their §5): the valid
    bound stays below the true ε in at least 1 − β of 200 repetitions, while coming close."""
    eps = 1.0
    over, values = 0, []
    for rep in range(REPS):
        s, inc = _rr_game(eps, 2000, rep)
        res = one_run_sweep(s, inc, guess_counts=[500, 1000, 2000], delta=DELTA,
                            selection="bonferroni")  # fmt: skip
        over += res.epsilon > eps
        values.append(res.epsilon)
    assert over <= BETA * REPS
    assert np.mean(values) > 0.6 * eps  # not vacuous


def test_slots_reproduce_steinke_guesses():
    g = np.random.default_rng(0)
    inc = g.random(300) < 0.5
    s = inc + g.normal(size=300)
    grid = default_guess_counts(300, 30)
    slots, inserted = membership_slots(s, inc)
    st = one_run_sweep(s, inc, guess_counts=grid, delta=DELTA, selection="bonferroni")
    fdp = fdp_one_run_sweep(slots, inserted, guess_counts=grid, delta=DELTA,
                            selection="bonferroni")  # fmt: skip
    np.testing.assert_array_equal(st.num_guesses, fdp.num_guesses)
    np.testing.assert_array_equal(st.num_correct, fdp.num_correct)  # even k: k/2 top, k/2 bottom


def test_guess_grid_and_bad_inputs():
    assert default_guess_counts(5, 500).tolist() == [5]
    assert default_guess_counts(100, 5).tolist() == [20, 40, 60, 80, 100]
    # thinning only starts beyond 10·max_points: the unthinned grid below it
    for m in (9, 10, 45, 4999, 5000):
        np.testing.assert_array_equal(default_guess_counts(m, 500), default_guess_counts(m))
    assert default_guess_counts(5001, 500)[:2].tolist() == [20, 40]
    with pytest.raises(ValueError, match="max_points"):
        default_guess_counts(100, 0)
    s, inc = np.arange(10.0), np.arange(10) % 2
    with pytest.raises(ValueError, match="finite"):
        one_run_bounds(np.r_[s[:-1], np.nan], inc, delta=DELTA)
    with pytest.raises(ValueError, match="one entry per score"):
        one_run_bounds(s, inc[:-1], delta=DELTA)
    with pytest.raises(ValueError, match="0/1"):
        one_run_bounds(s, inc * 2, delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        one_run_bounds(s, inc, delta=0.0)
    with pytest.raises(ValueError, match="selection"):
        one_run_bounds(s, inc, delta=DELTA, selection="best")
    with pytest.raises(ValueError, match="at least 2"):
        one_run_bounds([1.0], [1], delta=DELTA)
