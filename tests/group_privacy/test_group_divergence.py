"""Exact group divergences of the noisy argmax against naive oracles.

The oracle is independent of dpaudit's quadrature: the reachable set is built by applying
one-teacher moves m times (a set of tuples), the output probabilities by
``scipy.integrate.quad`` of ``Q_c = ∫ φ(x − v_c) ∏_{i≠c} Φ(x − v_i) dx`` (Chadha et al. 2024,
arXiv:2402.09403, Eq. 4), and the divergence by its definition.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special

from dpaudit.divergence import worst_case_group_renyi, worst_case_neighbour_renyi
from dpaudit.mechanisms import (
    gaussian_group_rdp,
    gaussian_renyi,
    generic_group_rdp,
    group_histograms,
    normalise_group_bound,
)


def _moves(h: tuple[int, ...], relation: str) -> set[tuple[int, ...]]:
    out = set()
    c = len(h)
    if relation == "replace":
        for a, b in itertools.permutations(range(c), 2):
            if h[a] >= 1:
                v = list(h)
                v[a] -= 1
                v[b] += 1
                out.add(tuple(v))
    else:
        for a in range(c):
            v = list(h)
            v[a] += 1
            out.add(tuple(v))
            if h[a] >= 1:
                v = list(h)
                v[a] -= 1
                out.add(tuple(v))
    return out


def _reachable(h, m, relation="replace"):
    frontier = {tuple(int(x) for x in h)}
    seen = set(frontier)
    for _ in range(m):
        frontier = {n for f in frontier for n in _moves(f, relation)} - seen
        seen |= frontier
    seen.discard(tuple(int(x) for x in h))
    return seen


_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _q(h, sigma):
    v = np.asarray(h, dtype=float) / sigma
    out = []
    for c in range(v.size):
        others = np.delete(v, c)

        def f(x, c=c, others=others):  # φ(x − v_c)·Π Φ(x − v_j), written out (scipy.special)
            return math.exp(-0.5 * (x - v[c]) ** 2) / _SQRT_2PI * np.prod(special.ndtr(x - others))

        val, _ = integrate.quad(f, v[c] - 12, v[c] + 12, epsabs=1e-15, epsrel=1e-13, limit=400)
        out.append(val)
    return np.asarray(out)


def _renyi(p, q, a):
    return math.log(float(np.sum(p**a * q ** (1 - a)))) / (a - 1)


CASES = [
    ((3, 1), 1.0, 1),
    ((3, 1), 1.0, 3),
    ((2, 2, 0), 1.5, 2),
    ((4, 1, 1), 2.0, 3),
    ((1, 1, 1, 1), 2.0, 3),
]


@pytest.mark.parametrize(("votes", "sigma", "m"), CASES)
def test_group_histograms_match_repeated_moves(votes, sigma, m):
    for relation in ("replace", "add-remove"):
        got = {tuple(int(x) for x in r) for r in group_histograms(votes, m, relation)}
        assert got == _reachable(votes, m, relation)
        assert len(group_histograms(votes, m, relation)) == len(got)  # each once


@pytest.mark.parametrize(("votes", "sigma", "m"), CASES)
def test_worst_case_group_renyi_matches_brute_force(votes, sigma, m):
    orders = np.array([1.5, 2.0, 5.0, 10.0])
    qh = _q(votes, sigma)
    qs = {n: _q(n, sigma) for n in _reachable(votes, m)}
    want = [max(max(_renyi(qh, q, a), _renyi(q, qh, a)) for q in qs.values()) for a in orders]
    got = worst_case_group_renyi(votes, sigma, orders, distance=m)
    np.testing.assert_allclose(got.epsilons, want, rtol=1e-10, atol=1e-12)
    assert got.num_histograms == len(qs)
    for k, a in enumerate(orders):  # the reported maximiser attains the maximum
        n = tuple(int(x) for x in got.neighbours[k])
        p, q = (qh, qs[n]) if got.directions[k] == "forward" else (qs[n], qh)
        assert _renyi(p, q, a) == pytest.approx(want[k], rel=1e-10)


def test_distance_one_is_the_single_point_worst_case():
    orders = [2.0, 10.0, 50.0]
    a = worst_case_group_renyi([30, 12, 5, 0], 4.0, orders, distance=1)
    b = worst_case_neighbour_renyi([30, 12, 5, 0], 4.0, orders)
    np.testing.assert_allclose(a.epsilons, b.epsilons, rtol=1e-12)


def test_m_squared_rule_is_exact_for_the_gaussian_release():
    """The m² rule is the worst case of the Gaussian release N(H, σ²I) over the histograms at
    distance m (max ‖H − H′‖₂ = m√2), and an upper bound on the argmax's group RDP."""
    orders = np.array([2.0, 8.0, 32.0])
    sigma = 1.5
    for votes, m in (((3, 1, 0), 1), ((3, 1, 0), 2), ((4, 2, 1, 0), 3)):
        h = np.asarray(votes, dtype=float)
        sq = max(float(np.sum((h - np.asarray(n)) ** 2)) for n in _reachable(votes, m))
        exact_release = gaussian_renyi(orders, sigma=sigma, sensitivity=math.sqrt(sq))
        rule = gaussian_group_rdp(orders, sigma=sigma, distance=m)
        np.testing.assert_allclose(exact_release, rule, rtol=1e-12)
        np.testing.assert_allclose(rule, orders * m * m / sigma**2, rtol=1e-12)
        argmax = worst_case_group_renyi(votes, sigma, orders, distance=m).epsilons
        assert np.all(argmax <= rule * (1 + 1e-9))
        go, ge = generic_group_rdp(orders, orders / sigma**2, distance=m)
        idx = np.searchsorted(orders, go)
        inner = worst_case_group_renyi(votes, sigma, go, distance=m).epsilons
        assert np.all(inner <= ge + 1e-12), (idx, inner, ge)


def test_group_loss_grows_slower_than_m_squared_at_these_histograms():
    """The exact functional: at a tie, moving m votes multiplies the argmax's RDP by far less
    than m² once the output is nearly decided (the answer to App. C's first question)."""
    orders = np.array([2.0])
    e = [
        worst_case_group_renyi([10, 10, 0], 4.0, orders, distance=m).epsilons[0] for m in (1, 2, 3)
    ]
    assert e[0] < e[1] < e[2]
    assert e[2] / e[0] < 9.0


def test_normalisation_rules():
    o, e = normalise_group_bound([2.0, 3.0, 4.0], [0.9, 1.2, 1.8], distance=3, rule="generic")
    np.testing.assert_allclose(o, [8.0, 12.0, 16.0])
    np.testing.assert_allclose(e, np.array([0.9, 1.2, 1.8]) / 9.0)
    o, e = normalise_group_bound([2.0], [0.9], distance=3, rule="teacher")
    assert e.tolist() == [0.9]
    o, e = normalise_group_bound([1.5, 2.0], [0.4, 0.9], distance=1, rule="generic")
    assert o.tolist() == [1.5, 2.0] and e.tolist() == [0.4, 0.9]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: group_histograms([2, 1], 0), "distance must be a positive integer, got 0"),
        (lambda: group_histograms([2, 1], 1.5), "distance"),
        (lambda: group_histograms([2, 1], 1, "swap"), "relation"),
        (lambda: group_histograms([2.5, 1], 1), "whole vote counts"),
        (lambda: worst_case_group_renyi([2, 1], 0.0, [2.0], distance=1), "sigma"),
        (lambda: worst_case_group_renyi([2, 1], 1.0, [0.5], distance=1), "orders"),
        (lambda: normalise_group_bound([2.0], [0.1], distance=2, rule="x"), "rule"),
        (lambda: generic_group_rdp([2.0, 4.0], [0.1], distance=2), "one value per order"),
        (lambda: gaussian_group_rdp([2.0], sigma=1.0, distance=-1), "distance"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
