"""Refined guess-count sweeps : the best guess count at every scale.

The paper metric of Mahloujifar, Melis & Chaudhuri (2024, arXiv:2410.22235, Table 1) is the
best bound over the guess counts; ``refine=True`` evaluates a data-independent log-spaced grid
(:func:`dpaudit.bounds.geometric_guess_counts`) and then every count near its best point. These
tests check the refinement against an independent brute force over *every* guess count on the
same scores, that the valid (split) bound pays for the whole two-stage choice, and coverage on
a mechanism with known ε.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import (
    Bonferroni,
    Explicit,
    MultiSplit,
    Split,
    default_guess_counts,
    fdp_one_run_sweep,
    geometric_guess_counts,
    one_run_bounds,
    one_run_sweep,
)
from dpaudit.bounds._one_run_max import membership_slots
from dpaudit.bounds._sweep import REFINE_MAX_POINTS, refine_values


def gaussian_canaries(m: int, sigma: float, seed: int):
    """Members score N(1, σ²), non-members N(0, σ²); inclusion independent with prob. ½."""
    gen = np.random.default_rng(seed)
    inc = gen.random(m) < 0.5
    return inc + sigma * gen.normal(size=m), inc


def test_geometric_grid():
    g = geometric_guess_counts(100_000)
    assert g[0] == 1 and g[-1] == 100_000 and np.all(np.diff(g) > 0)
    assert g.size <= 256
    ratios = g[1:] / g[:-1]
    assert np.max(ratios[g[1:] > 100]) < 1.06  # dense at every scale above 100
    assert geometric_guess_counts(5, 100).tolist() == [1, 2, 3, 4, 5]
    assert geometric_guess_counts(50, 1).tolist() == [50]
    assert geometric_guess_counts(50, 3, min_count=10).tolist() == [10, 22, 50]
    with pytest.raises(ValueError, match="min_count"):
        geometric_guess_counts(10, min_count=11)
    with pytest.raises(ValueError):
        geometric_guess_counts(0)


def test_refine_values_neighbourhood():
    vals = np.array([10, 20, 40, 80])
    eps = np.array([0.1, 0.5, 0.3, 0.0])
    assert refine_values(vals, eps, 100).tolist() == [*range(11, 20), *range(21, 40)]
    assert refine_values(vals, np.array([0.0, 0.0, 0.0, 1.0]), 100).tolist() == list(
        range(41, 80)
    ) + list(range(81, 101))
    wide = refine_values(np.array([1, 10_000]), np.array([1.0, 0.0]), 10_000)
    assert wide.size <= REFINE_MAX_POINTS and wide.min() >= 2 and wide.max() <= 9_999


@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_refined_paper_metric_reaches_brute_force(sigma):
    """On the same scores the refined best guess count is within 2 % of the best over every
    guess count 1..m (the old linear grid is not, at σ = 0.5)."""
    m, delta = 2000, 1e-5
    s, inc = gaussian_canaries(m, sigma, seed=7)
    slots, ins = membership_slots(s, inc)
    every = np.arange(1, m + 1)
    brute_st = one_run_sweep(s, inc, guess_counts=every, delta=delta, selection=Explicit(1))
    brute_fdp = fdp_one_run_sweep(
        slots, ins, guess_counts=every, delta=delta, selection=Explicit(1)
    )
    b = one_run_bounds(
        s, inc, delta=delta, guess_counts=geometric_guess_counts(m), refine=True, rng=0
    )
    for got, want in [(b.steinke, brute_st), (b.fdp, brute_fdp)]:
        best = want.uncorrected_max_epsilon
        assert got.uncorrected_max_epsilon <= best + 1e-6  # root-search tolerances
        assert got.uncorrected_max_epsilon >= 0.98 * best
        assert got.values.size < m / 4  # far fewer points than the brute force
    # the coarse grid alone (no refinement) is never better than the refined sweep
    coarse = one_run_bounds(s, inc, delta=delta, guess_counts=geometric_guess_counts(m), rng=0)
    assert b.fdp.uncorrected_max_epsilon >= coarse.fdp.uncorrected_max_epsilon


def test_refine_keeps_defaults_and_adds_points():
    s, inc = gaussian_canaries(2000, 1.0, seed=3)
    plain = one_run_sweep(s, inc, delta=1e-5, selection=Split(), rng=4)
    again = one_run_sweep(s, inc, delta=1e-5, selection=Split(), rng=4, refine=False)
    assert plain.epsilon == again.epsilon
    np.testing.assert_array_equal(plain.epsilons, again.epsilons)
    ref = one_run_sweep(s, inc, delta=1e-5, selection=Split(), rng=4, refine=True)
    assert set(plain.values.tolist()) <= set(ref.values.tolist())
    assert ref.values.size > plain.values.size
    assert ref.uncorrected_max_epsilon >= plain.uncorrected_max_epsilon
    assert np.all(np.diff(ref.values) > 0)
    assert ref.selection_epsilons is None and ref.selection.strategy == "split"
    # the per-point arrays line up with the refined grid (f-DP μ included)
    slots, ins = membership_slots(s, inc)
    f = fdp_one_run_sweep(slots, ins, delta=1e-5, selection=Split(), rng=4, refine=True)
    assert f.mus.shape == f.values.shape == f.epsilons.shape == f.num_correct.shape
    j = int(np.argmax(f.epsilons))
    assert f.uncorrected_value == f.values[j]


def test_refined_split_uses_the_selection_part_only():
    """The valid bound's guess count is chosen on the selection half: changing the test
    half's scores leaves the chosen count unchanged."""
    m = 2000
    s, inc = gaussian_canaries(m, 0.5, seed=11)
    res = one_run_sweep(s, inc, delta=1e-5, selection=Split(), rng=5, refine=True)
    from dpaudit.bounds._selection import selection_generator, split_indices

    gen, _ = selection_generator(5)
    _, test_idx = split_indices(m, 0.5, gen, "canaries")
    s2 = s.copy()
    s2[test_idx] = np.random.default_rng(0).normal(size=test_idx.size)
    res2 = one_run_sweep(s2, inc, delta=1e-5, selection=Split(), rng=5, refine=True)
    assert res.selected_value == res2.selected_value
    assert res.test_num_canaries == res2.test_num_canaries == m - m // 2


def test_refine_with_multi_split():
    s, inc = gaussian_canaries(1500, 1.0, seed=2)
    res = one_run_sweep(s, inc, delta=1e-5, selection=MultiSplit(num_splits=3), rng=1, refine=True)
    assert res.selection.strategy == "multi-split" and res.epsilon >= 0


@pytest.mark.parametrize("selection", [Bonferroni(), Explicit(100), "bonferroni"])
def test_refine_needs_a_split(selection):
    s, inc = gaussian_canaries(500, 1.0, seed=0)
    with pytest.raises(ValueError, match="Split or MultiSplit"):
        one_run_sweep(s, inc, selection=selection, refine=True)
    if selection == "bonferroni":
        with pytest.raises(ValueError, match="Split or MultiSplit"):
            one_run_bounds(s, inc, delta=1e-5, selection="bonferroni", refine=True)


def test_default_grid_unchanged():
    assert default_guess_counts(100_000, 500)[:3].tolist() == [200, 400, 600]


@pytest.mark.slow
def test_refined_valid_bound_coverage_rr():
    """ε-DP randomized response membership (ε = 1 known): the refined split bounds of both
    procedures exceed ε in at most the binomial 0.999 quantile of Bin(200, β) repetitions,
    while the refined uncorrected maximum overshoots far more often."""
    reps, beta, eps, m = 200, 0.05, 1.0, 300
    keep = math.exp(eps) / (1 + math.exp(eps))
    allowed = int(stats.binom.ppf(0.999, reps, beta))
    rng = np.random.default_rng(2027)
    grid = geometric_guess_counts(m, 32)
    bad = {"steinke": 0, "fdp": 0, "uncorrected": 0}
    for rep in range(reps):
        inc = rng.random(m) < 0.5
        bit = np.where(rng.random(m) < keep, inc, ~inc)
        scores = bit + 0.5 * rng.random(m)  # released bit, ties broken at random
        slots, ins = membership_slots(scores, inc)
        st = one_run_sweep(scores, inc, guess_counts=grid, selection=Split(), rng=rep, refine=True)
        fdp = fdp_one_run_sweep(
            slots, ins, guess_counts=grid, selection=Split(), rng=rep, refine=True
        )
        bad["steinke"] += st.epsilon > eps
        bad["fdp"] += fdp.epsilon > eps
        bad["uncorrected"] += st.uncorrected_max_epsilon > eps
    print(f"refined coverage on RR(ε=1), {reps} reps: {bad} (allowed {allowed})")
    assert bad["steinke"] <= allowed and bad["fdp"] <= allowed
    assert bad["uncorrected"] > allowed
