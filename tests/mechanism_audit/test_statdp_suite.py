"""StatDP's benchmark list (Ding et al. 2018, CCS) and the closed-form true ε of the suite."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.experiments import MechanismAuditSettings, audit_mechanism, replay_witness
from dpaudit.systems import MECHANISMS
from dpaudit.systems.dp_mechanisms import (
    noisy_max_true_epsilon,
    rappor_true_epsilon,
    statdp_suite,
)

STATDP = [
    "statdp-noisy-max-v1a", "statdp-noisy-max-v1b", "statdp-noisy-max-v2a",
    "statdp-noisy-max-v2b", "statdp-histogram", "statdp-histogram-eps", "statdp-svt",
    "statdp-isvt1", "statdp-isvt2", "statdp-isvt3", "statdp-isvt4",
]  # fmt: skip
INCORRECT = {
    "statdp-noisy-max-v1b", "statdp-noisy-max-v2b", "statdp-histogram-eps", "statdp-isvt1",
    "statdp-isvt2", "statdp-isvt3", "statdp-isvt4",
}  # fmt: skip


def test_statdp_list_is_registered_with_claims_sources_and_outputs():
    assert list(MECHANISMS.names("statdp")) == STATDP
    assert {n for n in STATDP if not MECHANISMS.get(n).private} == INCORRECT
    for name in STATDP:
        spec = MECHANISMS.get(name)
        assert spec.claimed_epsilon == 0.7 and "StatDP" in spec.source
        out = spec.sample(np.ones(spec.dimensions), 9, np.random.default_rng(0))
        assert out.shape == (9, 2 if name == "statdp-isvt4" else 1)
        assert np.all(np.isfinite(out))
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        statdp_suite(0.0)


# ------------------------------------------------------------------ naive oracles (one run)


def _pattern(d):
    return [i < d // 2 for i in range(d)]


def _isvt3_once(q, eps, t, g):
    """StatDP's iSVT3, one run, as published (loop with break; Hamming with zip_longest)."""
    rho = g.laplace(0, 4.0 / eps)
    out = []
    for x in q:
        above = x + g.laplace(0, 4.0 / (3.0 * eps)) > t + rho
        out.append(above)
        if above:
            break
    ref = _pattern(len(q))
    return sum(1 for i in range(len(q)) if i >= len(out) or out[i] != ref[i])


def _isvt4_once(q, eps, t, g):
    rho = g.laplace(0, 2.0 / eps)
    below = 0
    for x in q:
        v = x + g.laplace(0, 2.0 / eps)
        if v > t + rho:
            return below, v
        below += 1
    return below, -1000.0


@pytest.mark.parametrize("name", ["statdp-isvt3", "statdp-isvt4"])
def test_vectorised_statdp_variants_match_a_loop_in_distribution(name):
    spec, n, eps = MECHANISMS.get(name), 20_000, 0.7
    q = np.r_[np.ones(5), np.zeros(5)]
    fast = spec.sample(q, n, np.random.default_rng(1))[:, 0]
    g = np.random.default_rng(2)
    once = _isvt3_once if name == "statdp-isvt3" else _isvt4_once
    slow = np.array([np.atleast_1d(once(q, eps, 1.0, g))[0] for _ in range(n)], dtype=float)
    support = np.union1d(fast, slow)
    f = np.array([np.mean(fast == v) for v in support])
    s = np.array([np.mean(slow == v) for v in support])
    np.testing.assert_allclose(f, s, atol=0.02)  # 20,000 runs each: s.e. ≤ 0.005


def test_statdp_audits_refute_exactly_the_incorrect_variants():
    for name in STATDP:
        s = MechanismAuditSettings(mechanism=name, train_samples=10_000, select_samples=10_000,
                                   samples=100_000, seed=0)  # fmt: skip
        e = audit_mechanism(s).entries[0]
        assert e.gap.refutes_claim == (name in INCORRECT), (name, e.lower_bound.epsilon)
        spec = MECHANISMS.get(name)
        if spec.true_epsilon is not None:
            assert e.lower_bound.epsilon <= spec.true_epsilon
        if name == "statdp-isvt1":  # outputs only one input produces: rerun the witness
            w = e.detail  # the event, or its complement, never happens on one of the inputs
            assert w.count_a == 0 or w.count_b == w.samples, w
            assert replay_witness(w, samples=50_000, rng=5).epsilon > 5.0


# ------------------------------------------------------------------ closed-form true epsilon


def test_rappor_true_epsilon_is_the_papers_when_filters_can_be_disjoint():
    # Erlingsson et al. 2014, §3.1: eps_1 = h ln(q*(1-p*)/(p*(1-q*))),
    # eps_inf = 2h ln((1-f/2)/(f/2))
    f, p, q, h = 0.75, 0.45, 0.55, 4
    q_star, p_star = 0.5 * f * (p + q) + (1 - f) * q, 0.5 * f * (p + q) + (1 - f) * p
    eps_one = h * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))
    np.testing.assert_allclose(rappor_true_epsilon(f, p, q), eps_one, rtol=1e-12)
    np.testing.assert_allclose(rappor_true_epsilon(0.95), 8 * math.log(0.525 / 0.475),
                               rtol=1e-12)  # fmt: skip
    # on a domain of two values whose filters share bits, less than the paper's bound
    assert rappor_true_epsilon(0.95, low=0, high=1) <= rappor_true_epsilon(0.95)
    assert MECHANISMS.get("rappor").true_epsilon == pytest.approx(eps_one, rel=1e-12)


def _p_index0(q, noise, scale):
    """P[argmax = 0] of report noisy max, by quadrature over candidate 0's noisy value."""
    dist = stats.laplace(scale=scale) if noise == "laplace" else stats.expon(scale=scale)

    def integrand(x):
        return dist.pdf(x - q[0]) * np.prod([dist.cdf(x - v) for v in q[1:]])

    lo = q[0] - 60 * scale if noise == "laplace" else q[0]
    return integrate.quad(integrand, lo, q[0] + 60 * scale, limit=400, points=list(q))[0]


def test_noisy_max_true_epsilon_is_reached_exactly_or_in_the_limit():
    eps = 1.0
    assert noisy_max_true_epsilon(eps) == eps
    a, b = [1.0] * 5, [0.0] + [2.0] * 4
    # exponential noise (memoryless): the ratio on index 0 is exactly e^eps
    ratio = math.log(_p_index0(a, "exponential", 2 / eps) / _p_index0(b, "exponential", 2 / eps))
    np.testing.assert_allclose(ratio, eps, rtol=1e-6)
    # Laplace noise: below eps, and approaching it as the gap between the candidates grows
    ratios = []
    for gap in (0.0, 4.0, 12.0):
        a = [1.0] + [1.0 + gap] * 4
        b = [0.0] + [2.0 + gap] * 4
        ratios.append(math.log(_p_index0(a, "laplace", 2 / eps) / _p_index0(b, "laplace", 2 / eps)))
    assert ratios[0] < ratios[1] < ratios[2] <= eps + 1e-9
    assert ratios[2] > 0.99 * eps
