"""Exact noisy-argmax probabilities against mpmath at 50 digits, invariances, bad input."""

from __future__ import annotations

import functools
import json
import pathlib

import mpmath as mp
import numpy as np
import pytest
from scipy import special

from dpaudit.mechanisms import (
    argmax_probabilities,
    argmax_probabilities_jacobian,
    log_argmax_probabilities,
)


@functools.cache
def mp_log_q(votes: tuple[float, ...], sigma: float, c: int) -> mp.mpf:
    """log Q_c(H) by mpmath quadrature at 50 digits (paper 000 Eq. 4).

    The integrand is centred at its mode (found by mpmath's root finder) and split at
    multiples of its local scale so tanh-sinh sees a smooth bump on each piece.
    """
    with mp.workdps(50):
        v = [mp.mpf(x) / mp.mpf(sigma) for x in votes]
        others = [v[j] for j in range(len(v)) if j != c]

        def g(x):
            return (
                -((x - v[c]) ** 2) / 2
                - mp.log(mp.sqrt(2 * mp.pi))
                + mp.fsum(mp.log(mp.ncdf(x - w)) for w in others)
            )

        def dg(x):
            return -(x - v[c]) + mp.fsum(mp.npdf(x - w) / mp.ncdf(x - w) for w in others)

        m = mp.findroot(dg, (v[c] + max(v)) / 2 + mp.mpf("0.1"))
        gm = g(m)
        s = 1 / mp.sqrt(-mp.diff(g, m, 2))
        pts = [m + k * s for k in (-60, -20, -8, -3, 0, 3, 8, 20, 60, 400)]
        return gm + mp.log(mp.quad(lambda x: mp.exp(g(x) - gm), pts))


CASES = [
    ((200, 30, 20), 40.0),  # worked example of formulas.md §1.8 item 7
    ((14, 12, 10, 8, 6), 2.0),  # paper 000 App. B
    ((13, 13, 10, 8, 6), 2.0),  # ties
    ((5, 5, 5, 5), 1.0),  # all tied
    ((1, 0), 0.3),  # C = 2
    ((4, 7, 6, 8, 4, 2, 0, 214, 4, 1), 40.0),  # real MNIST histogram (paper 003)
    ((19, 7, 31, 7, 78, 4, 90, 10, 3, 1), 40.0),  # low consensus
    ((4, 7, 6, 8, 4, 2, 0, 214, 4, 1), 5.0),  # probabilities down to 1e-201
    ((10, 9.5, 3), 1e3),  # huge σ
    ((3, 2, 1), 0.05),  # tiny σ, probabilities down to 1e-176
    ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), 0.7),
    ((2.5, -1.25, 0.0), 0.8),  # real-valued and negative votes
]


REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "data" / "noisy_argmax_mpmath.json"


def _stored_cases():
    data = json.loads(REFERENCE.read_text())
    return [(c["votes"], c["sigma"], c["classes"], c["log_q"]) for c in data["cases"]]


@pytest.mark.parametrize(("votes", "sigma", "classes", "log_q"), _stored_cases())
def test_matches_stored_mpmath_references(votes, sigma, classes, log_q):
    """Against 50-digit mpmath values (tests/data/make_noisy_argmax_reference.py)."""
    lq = log_argmax_probabilities(votes, sigma)[classes]
    ref = np.array([float(x) for x in log_q])
    # ≤ 1e-9 relative on probabilities (absolute on logs) wherever Q ≥ 1e-300.
    keep = ref > np.log(1e-300)
    np.testing.assert_allclose(lq[keep], ref[keep], rtol=0, atol=1e-9)
    q = argmax_probabilities(votes, sigma)[classes]
    np.testing.assert_allclose(q, np.exp(ref), rtol=0, atol=1e-12)


def test_stored_references_cover_the_required_cases():
    cases = _stored_cases()
    sizes = {len(v) for v, *_ in cases}
    assert {2, 10, 100} <= sizes and len(cases) >= 10
    sigmas = [s for _, s, *_ in cases]
    assert min(sigmas) <= 0.05 and max(sigmas) >= 1e3
    assert min(min(float(x) for x in lq) for *_, lq in cases) < np.log(1e-170)


@pytest.mark.parametrize(("votes", "sigma"), [((200, 30, 20), 40.0), ((13, 13, 10, 8, 6), 2.0)])
def test_matches_live_mpmath(votes, sigma):
    lq = log_argmax_probabilities(votes, sigma)
    ref = np.array([float(mp_log_q(tuple(map(float, votes)), sigma, c)) for c in range(len(votes))])
    np.testing.assert_allclose(lq, ref, rtol=0, atol=1e-12)


def test_c1000_sums_to_one_and_ties_uniform():
    q = argmax_probabilities(np.zeros(1000), 3.0)
    np.testing.assert_allclose(q, 1e-3, rtol=1e-10)
    rng = np.random.default_rng(1)
    votes = rng.integers(0, 50, size=1000).astype(float)
    q = argmax_probabilities(votes, 4.0)
    assert abs(q.sum() - 1) <= 1e-12


def test_two_class_closed_form():
    from scipy.stats import norm

    d = np.linspace(-30, 30, 61)
    votes = np.stack([d, np.zeros_like(d)], axis=1)
    lq = log_argmax_probabilities(votes, 1.0)
    np.testing.assert_allclose(lq[:, 0], norm.logcdf(d / np.sqrt(2)), rtol=1e-12, atol=1e-15)


def test_permutation_and_shift_invariance():
    rng = np.random.default_rng(0)
    votes = rng.integers(0, 60, size=10).astype(float)
    q = argmax_probabilities(votes, 9.0)
    perm = rng.permutation(10)
    np.testing.assert_allclose(argmax_probabilities(votes[perm], 9.0), q[perm], atol=1e-14)
    # Paper 003 Thm 2: adding a constant to every count leaves Q unchanged.
    np.testing.assert_allclose(argmax_probabilities(votes + 123.25, 9.0), q, atol=1e-14)


@pytest.mark.parametrize("sigma", [40.0, 10.0, 2.0, 0.7, 1e3])
def test_integer_and_real_votes_agree(sigma):
    """Integer votes take the tabulated (lattice) path, shifted ones the direct one; by
    shift invariance (paper 003 Thm 2) they must agree."""
    rng = np.random.default_rng(4)
    votes = rng.multinomial(250, rng.dirichlet(np.full(10, 0.3)), size=300).astype(float)
    lq_int = log_argmax_probabilities(votes, sigma)
    lq_real = log_argmax_probabilities(votes + 0.5, sigma)
    np.testing.assert_allclose(np.exp(lq_int), np.exp(lq_real), rtol=0, atol=1e-13)
    keep = lq_real > np.log(1e-300)
    np.testing.assert_allclose(lq_int[keep], lq_real[keep], rtol=0, atol=1e-11)


def test_sigma_to_zero_gives_plurality():
    q = argmax_probabilities([3, 9, 4, 9, 1], 1e-4)
    np.testing.assert_allclose(q, [0, 0.5, 0, 0.5, 0], atol=1e-12)


# σ → 0. The losers' log-probabilities are ~−gap²/4 (standardised units): finite and exact
# to ~1e-16 relative while representable, −inf once below every double. Warnings are errors,
# so these also check that no ConvergenceWarning is raised for probabilities below 1e-300.
@pytest.mark.parametrize(
    ("votes", "sigma"),
    [((3, 2, 1), 1e-8), ((1, 1, 0), 1e-7), ((5, 4, 4, 0), 1e-9), ((3, 2, 1, 0.5), 1e-7)],
)
def test_tiny_sigma_matches_live_mpmath(votes, sigma):
    lq = log_argmax_probabilities(votes, sigma)
    ref = np.array([float(mp_log_q(tuple(map(float, votes)), sigma, c)) for c in range(len(votes))])
    winners = ref > -1.0
    np.testing.assert_allclose(lq[winners], ref[winners], rtol=0, atol=1e-12)
    np.testing.assert_allclose(lq[~winners], ref[~winners], rtol=1e-12)


@pytest.mark.parametrize("sigma", [1e-2, 1e-6, 1e-9, 1e-12, 1e-50, 1e-100, 1e-150])
def test_tiny_sigma_between_rigorous_bounds(sigma):
    """``∏_j P(Y_i > Y_j) ≤ Q_i ≤ min_j P(Y_i > Y_j)`` (Harris's inequality: the events
    ``{Y_i > Y_j}`` are all increasing in ``Y_i`` and decreasing in the others)."""
    votes = np.array([3.0, 9.0, 4.0, 9.0, 1.0, 8.5])
    lq = log_argmax_probabilities(votes, sigma)
    pair = special.log_ndtr((votes[:, None] - votes[None, :]) / (sigma * np.sqrt(2)))
    np.fill_diagonal(pair, 0.0)
    lower, upper = pair.sum(axis=1), pair.min(axis=1)
    slack = 1e-12 * np.abs(lower) + 1e-12
    assert np.all(lq >= lower - slack) and np.all(lq <= upper + slack)
    assert lq[2] > lq[0] > lq[4]  # farther below the top, less likely
    np.testing.assert_allclose(np.exp(lq), [0, 0.5, 0, 0.5, 0, 0], atol=1e-12)


@pytest.mark.parametrize(
    ("votes", "sigma", "q"),
    [
        ([1e10, 0], 1e-300, [1, 0]),  # votes/σ overflows
        ([1e10, 0, 0], 1e-300, [1, 0, 0]),
        ([1e10, 1e10, 0, 5], 1e-300, [0.5, 0.5, 0, 0]),
        ([3, 9, 4, 9, 1], 1e-200, [0, 0.5, 0, 0.5, 0]),
        ([3, 2, 1], 1e-300, [1, 0, 0]),
        ([1e308, -1e308, 0], 1.0, [1, 0, 0]),  # the difference of votes overflows
        ([1e308, -1e308], 1.0, [1, 0]),
    ],
)
def test_overflowing_standardised_votes(votes, sigma, q):
    lq = log_argmax_probabilities(votes, sigma)
    np.testing.assert_allclose(np.exp(lq), q, rtol=0, atol=1e-12)
    # Losers are > 1e154 s.d. below the top: log Q_i < −1e308 is below every double.
    np.testing.assert_array_equal(lq[np.asarray(q) == 0], -np.inf)
    batch = log_argmax_probabilities(np.stack([votes, np.arange(len(votes))]), sigma)
    np.testing.assert_array_equal(batch[0], lq)
    _, jac = argmax_probabilities_jacobian(votes, sigma)
    assert not np.isnan(jac).any()


def test_batch_shapes_and_normalisation():
    rng = np.random.default_rng(2)
    votes = rng.integers(0, 250, size=(4, 3, 10)).astype(float)
    q = argmax_probabilities(votes, 40.0)
    assert q.shape == votes.shape
    np.testing.assert_allclose(q.sum(axis=-1), 1.0, atol=1e-12)
    for idx in np.ndindex(4, 3):
        np.testing.assert_allclose(q[idx], argmax_probabilities(votes[idx], 40.0), atol=1e-15)


def test_jacobian_matches_finite_differences():
    votes = np.array([30.0, 25.0, 10.0, 4.0])
    sigma = 6.0
    q, jac = argmax_probabilities_jacobian(votes, sigma)
    np.testing.assert_allclose(q, argmax_probabilities(votes, sigma), atol=1e-12)
    eps = 1e-4
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        fd = (argmax_probabilities(votes + e, sigma) - argmax_probabilities(votes - e, sigma)) / (
            2 * eps
        )
        np.testing.assert_allclose(jac[:, k], fd, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(jac.sum(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(jac.sum(axis=1), 0.0, atol=1e-12)


def _per_class_jacobian(votes, sigma):
    """The Jacobian with every class on its own grid (the robust per-class quadrature)."""
    from dpaudit.mechanisms import _quadrature as quad
    from dpaudit.mechanisms import noisy_argmax as na

    v, _ = na._standardise(votes, sigma)
    b, c = v.shape
    rows, cols = np.repeat(np.arange(b), c), np.tile(np.arange(c), b)
    log_q, ratio = quad.per_class_log_q(na._offsets(v, rows, cols), weights_mills=True)
    q = np.exp(log_q)
    jac = np.zeros((b * c, c))
    others = np.arange(c)[None, :] != cols[:, None]
    jac[others] = (-(q[:, None] * ratio) / sigma).reshape(-1)
    jac[np.arange(b * c), cols] = -jac.sum(axis=1)
    return q.reshape(b, c), jac.reshape(b, c, c)


def test_jacobian_on_the_shared_grid_equals_the_per_class_one():
    """The Jacobian's Mills-weighted integrals are taken on log Q's shared grid (per-class grids
    only where its checks fail): the same values as every class on its own grid, to 1e-12/σ,
    on 600 random histograms (integer and real votes, ties, C = 2…12, σ = 0.3…60)."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for trial in range(200):
        c, sigma = int(rng.integers(2, 13)), float(rng.choice([0.3, 1.0, 5.0, 20.0, 60.0]))
        votes = rng.integers(0, 200, size=(3, c)).astype(float)
        votes += rng.random((3, c)) * (trial % 2)
        votes[:, 1] = votes[:, 0] if trial % 5 == 0 else votes[:, 1]
        q_ref, jac_ref = _per_class_jacobian(votes, sigma)
        q, jac = argmax_probabilities_jacobian(votes, sigma)
        np.testing.assert_allclose(q, q_ref, rtol=1e-12, atol=1e-300)
        worst = max(worst, float(np.abs(jac - jac_ref).max()) * sigma)
    assert worst < 1e-11, worst


@pytest.mark.parametrize(
    ("votes", "sigma", "exc", "match"),
    [
        ([1, 2], 0.0, ValueError, "sigma"),
        ([1, 2], -1.0, ValueError, "sigma"),
        ([1, 2], float("nan"), ValueError, "sigma"),
        ([1, 2], "4", TypeError, "sigma"),
        ([1, float("nan")], 1.0, ValueError, "votes"),
        ([1, float("inf")], 1.0, ValueError, "votes"),
        ([[1, 2], [3]], 1.0, ValueError, "votes"),
        ([], 1.0, ValueError, "votes"),
        ([5], 1.0, ValueError, "votes"),
        ("12", 1.0, TypeError, "votes"),
    ],
)
def test_bad_input(votes, sigma, exc, match):
    with pytest.raises(exc, match=match):
        argmax_probabilities(votes, sigma)


# ------------------------------------------------------------------ issue 28: work caps


def test_issue28_huge_batch_is_refused_before_allocating():
    import time
    import tracemalloc

    votes = np.zeros((10**7, 10))  # calloc'd: no memory touched until written
    tracemalloc.start()
    start = time.perf_counter()
    try:
        for f in (argmax_probabilities, log_argmax_probabilities):
            with pytest.raises(ValueError, match=r"votes with shape \(10000000, 10\).*NODES"):
                f(votes, 40.0)
        with pytest.raises(ValueError, match=r"votes with 3000000 entries.*OFFSETS"):
            argmax_probabilities_jacobian(np.zeros((10**5, 30)), 40.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 2.0
    assert peak < 100 * 2**20


def test_issue28_quadrature_caps_can_be_raised(monkeypatch):
    from dpaudit.mechanisms import noisy_argmax

    votes = np.tile([200.0, 30.0, 20.0], (10, 1))
    ref = argmax_probabilities(votes, 40.0)
    nodes = 30 * noisy_argmax.shared_grid_nodes(3)
    monkeypatch.setattr(noisy_argmax, "MAX_QUADRATURE_NODES", nodes - 1)
    with pytest.raises(ValueError, match="MAX_QUADRATURE_NODES"):
        argmax_probabilities(votes, 40.0)
    monkeypatch.setattr(noisy_argmax, "MAX_QUADRATURE_NODES", nodes)
    np.testing.assert_array_equal(argmax_probabilities(votes, 40.0), ref)
    monkeypatch.setattr(noisy_argmax, "MAX_PER_CLASS_OFFSETS", 59)
    with pytest.raises(ValueError, match="MAX_PER_CLASS_OFFSETS"):
        argmax_probabilities_jacobian(votes, 40.0)
    monkeypatch.setattr(noisy_argmax, "MAX_PER_CLASS_OFFSETS", 60)
    assert argmax_probabilities_jacobian(votes, 40.0)[1].shape == (10, 3, 3)


def test_tied_classes_integrated_once_give_the_per_class_numbers_bit_for_bit():
    """The robust per-class quadrature integrates each distinct offset row once (tied classes):
    the same bits as integrating every class's row, on histograms full of ties."""
    from dpaudit.mechanisms import _quadrature as quad
    from dpaudit.mechanisms import noisy_argmax as na

    g = np.random.default_rng(0)
    checked = 0
    for _ in range(120):
        c = int(g.integers(3, 10))
        votes = g.integers(0, int(g.integers(2, 6)), size=(3, c)).astype(float)  # many ties
        v = na._standardise(votes, float(10 ** g.uniform(-2, 1.2)))[0].reshape(-1, c)
        got = na._log_q_standardised(v)
        rows, cols = np.nonzero(~quad.shared_grid_log_q(v, None)[1] & (v >= -quad.DEEP_GAP))
        if rows.size:
            want = quad.per_class_log_q(na._offsets(v, rows, cols))[0]
            assert np.array_equal(got[rows, cols], want)
            checked += rows.size
    assert checked > 100
