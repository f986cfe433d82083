"""Rényi divergences: direct formula, properties, exact noisy-argmax curves."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.divergence import (
    exact_renyi,
    neighbouring_histograms,
    renyi_divergence,
    renyi_divergence_from_log,
    worst_case_neighbour_renyi,
)
from dpaudit.mechanisms import argmax_probabilities

ORDERS = np.array([0.5, 1.0, 1.5, 2.0, 5.0, 20.0, 100.0, np.inf])


def direct(p, q, a):
    """Textbook formulas, evaluated naively in linear space."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    s = p > 0
    if a == 1:
        return float(np.sum(p[s] * np.log(p[s] / q[s])))
    if np.isinf(a):
        return float(np.max(np.log(p[s] / q[s])))
    return float(np.log(np.sum(p[s] ** a * q[s] ** (1 - a))) / (a - 1))


def test_matches_direct_formula():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        orders = ORDERS[ORDERS != 100.0]  # the naive formula overflows at α = 100
        got = renyi_divergence(p, q, orders)
        want = [direct(p, q, a) for a in orders]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


def test_nonnegative_monotone_and_zero_iff_equal():
    rng = np.random.default_rng(1)
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(4) * 0.5), rng.dirichlet(np.ones(4) * 0.5)
        d = renyi_divergence(p, q, ORDERS)
        assert np.all(d >= -1e-15)
        assert np.all(np.diff(d) >= -1e-12)
        assert np.all(d > 0)
        np.testing.assert_allclose(renyi_divergence(p, p, ORDERS), 0.0, atol=1e-14)


def test_support_mismatch_and_tiny_probabilities():
    d = renyi_divergence([0.5, 0.5], [1.0, 0.0], [0.5, 2.0, np.inf])
    assert np.isfinite(d[0]) and np.isinf(d[1]) and np.isinf(d[2])
    # Probabilities far below float range in linear space are fine in log space.
    lp = np.log([0.5, 0.5]) + np.array([0.0, 0.0])
    lq = np.array([np.log1p(-np.exp(-800.0)), -800.0])
    got = renyi_divergence_from_log(lp, lq, [2.0])
    # D_2 = log(0.25/(1 − e^-800) + 0.25·e^800) ≈ 800 + log(0.25)
    np.testing.assert_allclose(got, [800 + np.log(0.25)], rtol=1e-12)


def test_exact_renyi_matches_probabilities():
    h, h2 = [14, 12, 10, 8, 6], [13, 13, 10, 8, 6]
    p, q = argmax_probabilities(h, 2.0), argmax_probabilities(h2, 2.0)
    orders = ORDERS[ORDERS != 100.0]
    got = exact_renyi(h, h2, 2.0, orders)
    np.testing.assert_allclose(got, [direct(p, q, a) for a in orders], rtol=1e-9)
    batch = exact_renyi([h, h2], [h2, h], 2.0, [2.0])
    assert batch.shape == (2, 1)


def test_worst_case_below_data_independent_and_attained():
    orders = np.array([1.5, 2.0, 5.0, 10.0, 50.0])
    r = worst_case_neighbour_renyi([200, 30, 20], 40.0, orders)
    assert np.all(r.epsilons <= orders / 40.0**2)
    assert np.all(np.diff(r.epsilons) >= 0)
    for k, a in enumerate(orders):
        fwd = exact_renyi([200, 30, 20], r.neighbours[k], 40.0, [a])[0]
        rev = exact_renyi(r.neighbours[k], [200, 30, 20], 40.0, [a])[0]
        assert r.epsilons[k] == pytest.approx(fwd if r.directions[k] == "forward" else rev)
    assert set(r.to_dict()) >= {"orders", "epsilons", "neighbours", "directions"}


def test_neighbours():
    n = neighbouring_histograms([2, 0, 1])
    assert n.shape == (4, 3)  # moves from class 0 (2 ways) and class 2 (2 ways)
    assert np.all(n.sum(axis=1) == 3) and np.all(n >= 0)
    m = neighbouring_histograms([2, 0, 1], "add-remove")
    assert m.shape == (5, 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: renyi_divergence([0.5, 0.5], [0.5, 0.5], [0.0]), "orders"),
        (lambda: renyi_divergence([0.5, 0.5], [0.5, 0.5], [float("nan")]), "orders"),
        (lambda: renyi_divergence([0.6, 0.5], [0.5, 0.5], [2.0]), "p"),
        (lambda: renyi_divergence([0.5, 0.5], [-0.5, 1.5], [2.0]), "q"),
        (lambda: worst_case_neighbour_renyi([3, 1], 1.0, [0.5]), "orders"),
        (lambda: worst_case_neighbour_renyi([3, 1], 0.0, [2.0]), "sigma"),
        (lambda: worst_case_neighbour_renyi([3, 1], 1.0, [2.0], "swap"), "relation"),
        (lambda: exact_renyi([3, 1], [3, 1, 0], 1.0, [2.0]), "classes"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ issue 28: work caps


def test_issue28_many_classes_are_refused_before_any_quadrature():
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"votes with C=2000 classes \(3996001 neighbours"):
        worst_case_neighbour_renyi(np.arange(2000.0), 40.0, [2.0])
    assert time.perf_counter() - start < 2.0


def test_issue28_order_grids_are_capped(monkeypatch):
    import dpaudit.divergence as div

    with pytest.raises(ValueError, match=r"orders=<200000 orders>.*MAX_ORDERS"):
        renyi_divergence([0.5, 0.5], [0.25, 0.75], np.linspace(1.5, 100, 200_000))
    monkeypatch.setattr(div, "MAX_DIVERGENCE_TERMS", 5)
    with pytest.raises(ValueError, match=r"orders=<3 orders> over log_p of shape \(2,\)"):
        renyi_divergence([0.5, 0.5], [0.25, 0.75], [2.0, 3.0, 4.0])
    assert renyi_divergence([0.5, 0.5], [0.25, 0.75], [2.0, 3.0]).shape == (2,)
