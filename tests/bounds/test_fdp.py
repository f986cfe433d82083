"""f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2024; paper 001 Alg. 2; formulas.md §3)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import special, stats

from dpaudit.bounds import (
    Explicit,
    Split,
    fdp_one_run_epsilon,
    fdp_one_run_epsilon_from_scores,
    fdp_one_run_sweep,
    fdp_rejects,
)
from dpaudit.conversions._gdp import gdp_epsilon


def naive_margin(mu, m, ng, nc, tau, k):
    """Slow oracle: the recursion of formulas.md §3, run to its end, no shortcuts."""
    r = tau * nc / m
    h = tau * (ng - nc) / m
    for i in range(nc - 1, -1, -1):
        binv = (k - 1) * special.ndtr(special.ndtri(r) - mu) if r < 1 else (k - 1) * 1.0
        h_new = max(h, binv)
        r = min(1.0, r + (i / (ng - i)) * (h_new - h))
        if h_new == h:
            break
        h = h_new
    return r + h - ng / m


def naive_mu_star(m, ng, nc, tau, k):
    """Bisection on the naive sign down to 1e-11 (rejected set is [0, μ*))."""
    if naive_margin(0.0, m, ng, nc, tau, k) <= 0:
        return 0.0
    lo, hi = 0.0, 40.0
    while hi - lo > 1e-11:
        mid = (lo + hi) / 2
        if naive_margin(mid, m, ng, nc, tau, k) > 0:
            lo = mid
        else:
            hi = mid
    return lo


# formulas.md §3 (m = 1000, τ = 0.05, δ = 1e-5): (n_g, n_c, K) → μ*, ε
REFERENCE = [
    (100, 95, 2, 0.786812, 3.323300),
    (1000, 700, 2, 0.357211, 1.371980),
    (10, 10, 2, 0.322963, 1.227553),
    (100, 95, 3, 0.991756, 4.335436),
    (1000, 700, 3, 0.620453, 2.538953),
]


@pytest.mark.parametrize(("ng", "nc", "k", "mu", "eps"), REFERENCE)
def test_reference_values(ng, nc, k, mu, eps):
    res = fdp_one_run_epsilon(1000, ng, nc, set_size=k, delta=1e-5)
    assert res.mu == pytest.approx(mu, abs=6e-7)
    # The listed ε come from μ* rounded the other side of a 1e-6 search tolerance.
    assert res.epsilon == pytest.approx(eps, abs=2e-6)
    assert res.conversion == "gaussian-profile"
    assert res.epsilon == pytest.approx(gdp_epsilon(res.mu, 1e-5), abs=1e-12)


@pytest.mark.parametrize(
    ("m", "ng", "nc", "k"),
    [
        (1000, 100, 95, 2),
        (1000, 1000, 700, 2),
        (400, 200, 150, 4),
        (1000, 30, 30, 2),
        (5000, 900, 640, 2),
    ],
)
def test_mu_matches_naive_oracle_and_is_continuous(m, ng, nc, k):
    res = fdp_one_run_epsilon(m, ng, nc, set_size=k)
    ref = naive_mu_star(m, ng, nc, 0.05, k)
    assert res.mu == pytest.approx(ref, abs=3e-9)
    assert res.tolerance <= 1e-6
    # the reported μ is rejected, μ + 2·tolerance is not: a continuous root, not a grid point
    assert fdp_rejects(m, ng, nc, res.mu, set_size=k)
    assert not fdp_rejects(m, ng, nc, res.mu + 2 * res.tolerance + 1e-12, set_size=k)


def random_games(rng, count, max_m):
    """``count`` random (m, n_g, n_c, K, μ) with 50 ≤ m < ``max_m``."""
    for _ in range(count):
        m = int(rng.integers(50, max_m))
        ng = int(rng.integers(1, m + 1))
        nc = int(rng.integers(0, ng + 1))
        yield m, ng, nc, int(rng.integers(2, 5)), float(rng.uniform(0, 3))


def test_rejection_test_agrees_with_naive_recursion_everywhere():
    rng = np.random.default_rng(11)
    for m, ng, nc, k, mu in random_games(rng, 40, 800):
        expected = naive_margin(mu, m, ng, nc, 0.05, k) > 0
        assert fdp_rejects(m, ng, nc, mu, set_size=k) == expected


def test_compiled_loop_equals_the_python_loop():
    """numba's compiled margin (SciPy's ndtri) and the Python loop (AS 241): same sign on a
    random grid, the same μ* to the search tolerance, and the Python loop when numba is absent."""
    pytest.importorskip("numba")
    from dpaudit.bounds import _fdp
    from dpaudit.bounds._fdp_kernel import compiled_margin

    fast = compiled_margin(_fdp._margin_loop)
    assert fast is not None
    rng = np.random.default_rng(5)
    for m, ng, nc, k, mu in random_games(rng, 300, 5000):
        tau = float(rng.choice([0.05, 0.01, 0.2]))
        a, b = fast(mu, m, ng, nc, tau, k), _fdp._python_margin(mu, m, ng, nc, tau, k)
        assert (a > 0) == (b > 0)
        assert a == pytest.approx(b, abs=1e-12)
    for m, ng, nc, k in [(1000, 100, 95, 2), (5000, 900, 640, 2), (400, 200, 150, 4)]:
        compiled = fdp_one_run_epsilon(m, ng, nc, set_size=k).mu
        assert compiled == pytest.approx(naive_mu_star(m, ng, nc, 0.05, k), abs=3e-9)


def test_without_numba_the_python_loop_gives_the_same_bound(monkeypatch):
    from dpaudit.bounds import _fdp

    expected = fdp_one_run_epsilon(1000, 1000, 700, delta=1e-5)
    monkeypatch.setattr(_fdp, "compiled_margin", lambda loop: None)
    res = fdp_one_run_epsilon(1000, 1000, 700, delta=1e-5)
    assert res.mu == pytest.approx(expected.mu, abs=2e-9)
    assert res.mu == pytest.approx(0.357211, abs=6e-7)


def test_pure_dp_conversion_at_delta_zero():
    res = fdp_one_run_epsilon(1000, 100, 95)
    assert res.conversion == "pure-dp"
    half = res.mu / 2
    assert res.epsilon == pytest.approx(
        math.log(stats.norm.cdf(half) / stats.norm.cdf(-half)), rel=1e-12
    )
    # ε-DP ⇒ μ_ε-GDP with μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)): G_μ passes through the kink of f_{ε,0}
    eps = 1.3
    mu = 2 * stats.norm.ppf(math.exp(eps) / (1 + math.exp(eps)))
    alphas = np.linspace(1e-6, 1 - 1e-6, 2001)
    g = stats.norm.cdf(stats.norm.ppf(1 - alphas) - mu)
    f = np.maximum.reduce(
        [np.zeros_like(alphas), 1 - math.exp(eps) * alphas, math.exp(-eps) * (1 - alphas)]
    )
    assert np.all(g <= f + 1e-12)


def test_edge_cases():
    assert fdp_one_run_epsilon(1000, 0, 0).epsilon == 0.0
    assert fdp_one_run_epsilon(1000, 100, 0).mu == 0.0  # all wrong
    assert fdp_one_run_epsilon(1000, 100, 50).mu == 0.0  # chance level
    allc = fdp_one_run_epsilon(1000, 300, 300, delta=1e-5)
    assert 0 < allc.mu < 40 and math.isfinite(allc.epsilon)
    assert fdp_one_run_epsilon(1, 1, 1).mu == 0.0
    assert not fdp_rejects(1000, 0, 0, 0.1)


def test_monotonicity():
    mus = [fdp_one_run_epsilon(1000, 200, nc).mu for nc in range(120, 201, 10)]
    assert np.all(np.diff(mus) >= 0) and mus[-1] > mus[0]
    by_k = [fdp_one_run_epsilon(1000, 200, 150, set_size=k).mu for k in (2, 3, 5)]
    assert np.all(np.diff(by_k) > 0)
    by_level = [
        fdp_one_run_epsilon(1000, 200, 180, confidence_level=c).mu for c in (0.8, 0.95, 0.99)
    ]
    assert np.all(np.diff(by_level) < 0)


def test_from_scores():
    scores = np.array([[3.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 2.0], [1.0, 0.9, 0.0]])
    inserted = np.array([0, 2, 2, 1])
    res = fdp_one_run_epsilon_from_scores(scores, inserted, num_guesses=3)
    # margins 3, 0.5, 2, 0.1 → guesses on slots 0, 2, 1: correct, correct, wrong
    assert (res.num_guesses, res.num_correct, res.set_size, res.num_canaries) == (3, 2, 3, 4)


def test_result_serialises():
    data = json.loads(fdp_one_run_epsilon(1000, 100, 95, delta=1e-5).to_json())
    assert data["mu_interval"]["high"] == "inf" and data["set_size"] == 2


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="num_guesses"):
        fdp_one_run_epsilon(100, 101, 10)  # n_g > m
    with pytest.raises(ValueError, match="num_correct"):
        fdp_one_run_epsilon(100, 10, 11)
    with pytest.raises(ValueError, match="num_canaries"):
        fdp_one_run_epsilon(0, 0, 0)
    with pytest.raises(ValueError, match="set_size"):
        fdp_one_run_epsilon(100, 10, 9, set_size=1)
    with pytest.raises(ValueError, match="delta"):
        fdp_one_run_epsilon(100, 10, 9, delta=-1e-5)
    with pytest.raises(ValueError, match="confidence_level"):
        fdp_one_run_epsilon(100, 10, 9, confidence_level=0.0)
    with pytest.raises(ValueError, match="mu"):
        fdp_rejects(100, 10, 9, -0.1)
    with pytest.raises(ValueError, match="scores"):
        fdp_one_run_epsilon_from_scores(np.zeros((3, 1)), [0, 0, 0], num_guesses=1)
    with pytest.raises(ValueError, match="inserted"):
        fdp_one_run_epsilon_from_scores(np.zeros((3, 2)), [0, 2, 0], num_guesses=1)
    with pytest.raises(ValueError, match="inserted"):
        fdp_one_run_epsilon_from_scores(np.zeros((3, 2)), [0, 1], num_guesses=1)
    with pytest.raises(ValueError, match="num_guesses"):
        fdp_one_run_epsilon_from_scores(np.zeros((3, 2)), [0, 1, 0], num_guesses=4)


def test_sweep_matches_single_points_and_bonferroni_brute_force():
    rng = np.random.default_rng(5)
    m = 400
    ins = rng.integers(0, 2, m)
    sc = rng.normal(size=(m, 2))
    sc[np.arange(m), ins] += 1.5
    res = fdp_one_run_sweep(sc, ins, delta=1e-5)
    assert res.values.size == 40 and res.mus.shape == (40,)
    for j in (0, 9, 25, 39):
        single = fdp_one_run_epsilon(
            m, int(res.num_guesses[j]), int(res.num_correct[j]), delta=1e-5
        )
        assert res.mus[j] == pytest.approx(single.mu, abs=2e-9)
    brute = max(
        fdp_one_run_epsilon(m, int(a), int(b), confidence_level=1 - 0.05 / 40).mu
        for a, b in zip(res.num_guesses, res.num_correct, strict=True)
    )
    assert res.mu == pytest.approx(brute, abs=2e-9)
    assert res.epsilon <= res.uncorrected_max_epsilon
    assert res.selection.strategy == "bonferroni"
    split = fdp_one_run_sweep(sc, ins, delta=1e-5, selection=Split(), rng=2)
    assert split.test_num_canaries == 200 and split.mu is not None
    assert split.selection.strategy == "split" and split.seed == 2
    fixed = fdp_one_run_sweep(sc, ins, delta=1e-5, selection=Explicit(int(res.values[9])))
    single = fdp_one_run_epsilon(m, int(res.num_guesses[9]), int(res.num_correct[9]), delta=1e-5)
    assert fixed.mu == pytest.approx(single.mu, abs=2e-9)
    assert fixed.selection.strategy == "explicit"


@pytest.mark.parametrize(
    "m, ng, nc", [(100_000, 5_800, 5_660), (100_000, 900, 830), (1000, 100, 95), (1000, 10, 10)]
)
def test_noise_grid_convention_matches_a_walk_over_the_grid(m, ng, nc):
    """``bench_one_run_table1.noise_grid_epsilon`` (PrivacyGuard's ``FDPAnalysisNode``
    convention) against the slow oracle that convention is: walk the noise levels
    0.001 + 0.01·i upwards, testing μ = 1/noise, and take ε at the first rejected one."""
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_one_run_table1 import DELTA, noise_grid_epsilon

    i = 0
    while not fdp_rejects(m, ng, nc, 1.0 / (0.001 + 0.01 * i)):
        i += 1
    walked = gdp_epsilon(1.0 / (0.001 + 0.01 * i), DELTA)
    continuous = fdp_one_run_epsilon(m, ng, nc, delta=DELTA).epsilon
    assert noise_grid_epsilon(continuous) == pytest.approx(walked, rel=1e-12)
    assert walked <= continuous


def test_one_tailed_slots_guess_in_for_the_highest_scores_only():
    """``bench_one_run_table1.one_tailed_slots``: every guess is "in", made on the k
    highest-scoring canaries, so the sweep's bound at k is the single bound of (k guesses,
    the included among the top k) — checked by hand at every point of a small sweep."""
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_one_run_table1 import one_tailed_slots

    g = np.random.default_rng(5)
    inc = g.random(400) < 0.5
    s = inc + 0.7 * g.normal(size=400)
    slots, ins = one_tailed_slots(s, inc)
    grid = np.array([5, 20, 60, 150, 400])
    sweep = fdp_one_run_sweep(slots, ins, guess_counts=grid, delta=1e-5,
                              selection=Split(), rng=0)  # fmt: skip
    top = np.argsort(-s, kind="stable")
    for k, mu in zip(grid, sweep.mus, strict=True):
        one = fdp_one_run_epsilon(400, int(k), int(inc[top[:k]].sum()), delta=1e-5)
        assert mu == pytest.approx(one.mu, abs=2e-9)
