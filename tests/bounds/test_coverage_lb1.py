"""Seeded coverage of the lower bounds on mechanisms whose true privacy is known.

For each audit and mechanism, 200 seeded repetitions; the bound may exceed its target in at
most a fraction β of them, plus binomial slack (the 99.9% quantile of Bin(200, β)). The
target is the tightest quantity the procedure estimates — the (ε, δ) or Rényi divergence of
the rejection set / partition actually used, computed from the exact output probabilities —
which is itself below the mechanism's true ε or RDP. Audits that choose their output set or
threshold (split, Bonferroni) are covered against the target of the set they chose (split)
or the best candidate (Bonferroni). The levels are 90% so that a miscalibrated bound shows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import (
    Bonferroni,
    Explicit,
    Split,
    epsilon_from_rejection_set,
    epsilon_from_scores,
    gdp_from_error_rates,
    rdp_audit,
    rdp_k_cut,
    rdp_two_cut,
)
from dpaudit.conversions import gdp_epsilon
from dpaudit.divergence import renyi_divergence
from dpaudit.mechanisms import argmax_probabilities, sample_argmax_counts_exact
from dpaudit.mechanisms.simple import (
    gaussian_epsilon,
    gaussian_renyi,
    randomized_response_probabilities,
    randomized_response_renyi,
    sample_gaussian_mechanism,
    sample_randomized_response_counts,
)

pytestmark = pytest.mark.slow

REPS = 200
LEVEL = 0.9
BETA = 1 - LEVEL
ALLOWED = int(stats.binom.ppf(0.999, REPS, BETA))  # 30 of 200 at β = 0.1
ORDERS = np.array([1.5, 2.0, 4.0, 10.0])


def _eps_of_set(tpr: np.ndarray, fpr: np.ndarray, delta: float) -> np.ndarray:
    """ε implied by the true TPR/FPR of O (both inequalities of paper 000 Eq. 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(tpr > delta, np.log(np.maximum(tpr - delta, 1e-300) / fpr), -np.inf)
        b = np.where(1 - fpr > delta, np.log((1 - fpr - delta) / (1 - tpr)), -np.inf)
    return np.maximum(np.maximum(a, b), 0.0)


def _bern(p: float) -> np.ndarray:
    return np.array([p, 1 - p])


# --------------------------------------------------------------------------------------------
# Gaussian mechanism: N(0,1) under S, N(1,1) under S′ (Δ/σ = 1)
# --------------------------------------------------------------------------------------------


def _gauss_rates(t):
    return stats.norm.sf(np.asarray(t) - 1.0), stats.norm.sf(np.asarray(t))  # TPR, FPR


def _gaussian_shift_audits(tag, n, strategy, delta):
    """``epsilon_from_scores`` on REPS seeded draws of n scores from N(1, 1) (in) and N(0, 1)."""
    for rep in range(REPS):
        rng = np.random.default_rng([tag, rep])
        pos = sample_gaussian_mechanism(1.0, 1.0, n, rng=rng)
        neg = sample_gaussian_mechanism(0.0, 1.0, n, rng=rng)
        yield epsilon_from_scores(
            pos, neg, selection=strategy, rng=rep, delta=delta, confidence_level=LEVEL
        )


@pytest.mark.parametrize(
    "strategy",
    [Explicit(1.5), Split(0.5), Bonferroni((0.0, 0.5, 1.0, 1.5, 2.0, 2.5))],
    ids=["explicit", "split", "bonferroni"],
)
def test_gaussian_epsdelta_coverage(strategy):
    delta, n = 1e-3, 3000
    truth = gaussian_epsilon(delta, sigma=1.0)
    if isinstance(strategy, Bonferroni):
        target_all = float(_eps_of_set(*_gauss_rates(strategy.candidates), delta).max())
    over_target = over_truth = 0
    eps = []
    for res in _gaussian_shift_audits(31, n, strategy, delta):
        if isinstance(strategy, Bonferroni):
            target = target_all
        else:
            target = float(_eps_of_set(*_gauss_rates(res.threshold), delta))
        over_target += res.epsilon > target
        over_truth += res.epsilon > truth
        eps.append(res.epsilon)
    assert over_target <= ALLOWED
    assert over_truth <= ALLOWED
    assert np.median(eps) > 0.5  # the audit does find leakage


@pytest.mark.parametrize(
    "strategy",
    [Explicit(0.5), Split(0.5), Bonferroni((0.0, 0.5, 1.0, 1.5))],
    ids=["explicit", "split", "bonferroni"],
)
def test_gaussian_gdp_mu_coverage(strategy):
    """The Gaussian-DP bound of the all-iterates and canary-score audits (Nasr et al. 2023):
    μ from the Clopper–Pearson TPR/FPR bounds of one threshold. For the shift N(1, 1) vs
    N(0, 1) every threshold set has Φ⁻¹(TPR) − Φ⁻¹(FPR) = 1 exactly, so the set's target and
    the truth coincide: μ = 1, ε = gdp_epsilon(1, δ). 200 scores a side (the audits' scale)."""
    delta, n = 1e-5, 200
    truth_eps = gdp_epsilon(1.0, delta)
    over_mu = over_eps = 0
    mus = []
    for res in _gaussian_shift_audits(33, n, strategy, delta):
        g = gdp_from_error_rates(res.tpr_lower, res.fpr_upper, delta)
        over_mu += g.mu > 1.0
        over_eps += g.epsilon > truth_eps
        mus.append(g.mu)
    assert over_mu <= ALLOWED and over_eps <= ALLOWED
    assert np.median(mus) > 0.3  # the bound does find leakage


def test_gaussian_rdp_two_cut_coverage():
    n, t = 20000, 0.5
    p_s, p_s2 = stats.norm.sf(t), stats.norm.sf(t - 1.0)  # μ₁ = output under S, μ₂ under S′
    target = renyi_divergence(_bern(p_s2), _bern(p_s), ORDERS)
    truth = gaussian_renyi(ORDERS, sigma=1.0)
    over = over_truth = 0
    for rep in range(REPS):
        rng = np.random.default_rng([32, rep])
        k1 = rng.binomial(n, p_s2)
        k2 = rng.binomial(n, p_s)
        res = rdp_two_cut(
            [k1, n - k1], [k2, n - k2], ORDERS, output_set=[0], confidence_level=LEVEL
        )
        over += bool(np.any(res.epsilons > target))
        over_truth += bool(np.any(res.epsilons > truth))
    assert over <= ALLOWED and over_truth <= ALLOWED


# --------------------------------------------------------------------------------------------
# Randomized response, C = 4, ε = 1: labels 0 (S) and 1 (S′)
# --------------------------------------------------------------------------------------------

RR_C, RR_EPS = 4, 1.0


def _rr_counts(rng, n):
    c_s = sample_randomized_response_counts(0, n, num_classes=RR_C, epsilon=RR_EPS, rng=rng)
    c_s2 = sample_randomized_response_counts(1, n, num_classes=RR_C, epsilon=RR_EPS, rng=rng)
    return c_s, c_s2


def test_randomized_response_epsdelta_coverage():
    # O = {output 1}: TPR = p, FPR = q, so the target log(p/q) is the true ε exactly.
    n = 20000
    over = 0
    for rep in range(REPS):
        c_s, c_s2 = _rr_counts(np.random.default_rng([41, rep]), n)
        res = epsilon_from_rejection_set(
            int(c_s[1]), n, int(c_s2[1]), n, delta=0.0, confidence_level=LEVEL
        )
        over += res.epsilon > RR_EPS
    assert over <= ALLOWED


@pytest.mark.parametrize(
    "method", ["two-cut-split", "k-cut-goodman", "k-cut-sison-glaz", "two-cut-bonferroni"]
)
def test_randomized_response_rdp_coverage(method):
    n = 50000
    truth = randomized_response_renyi(ORDERS, num_classes=RR_C, epsilon=RR_EPS)
    p1 = randomized_response_probabilities(0, num_classes=RR_C, epsilon=RR_EPS)
    p2 = randomized_response_probabilities(1, num_classes=RR_C, epsilon=RR_EPS)
    over = 0
    for rep in range(REPS):
        c_s, c_s2 = _rr_counts(np.random.default_rng([42, rep]), n)
        if method == "two-cut-split":
            res = rdp_audit(c_s, c_s2, ORDERS, confidence_level=LEVEL, rng=rep)
            o = list(res.candidates[int(res.chosen[0])][0])
            target = renyi_divergence(_bern(p1[o].sum()), _bern(p2[o].sum()), ORDERS)
        elif method == "two-cut-bonferroni":
            res = rdp_audit(c_s, c_s2, ORDERS, selection=Bonferroni(), confidence_level=LEVEL)
            target = np.max(
                [
                    renyi_divergence(
                        _bern(p1[list(c[0])].sum()), _bern(p2[list(c[0])].sum()), ORDERS
                    )
                    for c in res.candidates
                ],
                axis=0,
            )
        else:
            res = rdp_k_cut(c_s, c_s2, ORDERS, method=method[6:], confidence_level=LEVEL)
            target = truth  # finest partition: the k-cut is the divergence itself
        over += bool(np.any(res.epsilons > target))
        assert np.all(target <= truth + 1e-12)
    assert over <= ALLOWED


# --------------------------------------------------------------------------------------------
# Noisy argmax (paper 000 App. B pair), exact output probabilities
# --------------------------------------------------------------------------------------------

H = [14, 12, 10, 8, 6]
H_NEIGHBOUR = [13, 13, 10, 8, 6]
SIGMA = 2.0


@pytest.mark.parametrize(
    ("method", "n"),
    [
        ("two-cut-split", 10**6),
        ("two-cut-bonferroni", 10**6),
        ("k-cut-goodman-split", 10**6),
        ("k-cut-goodman", 10**6),
        ("k-cut-sison-glaz", 10**6),
    ],
)
def test_noisy_argmax_rdp_coverage(method, n):
    p1 = argmax_probabilities(H, SIGMA)
    p2 = argmax_probabilities(H_NEIGHBOUR, SIGMA)
    truth = renyi_divergence(p1, p2, ORDERS)
    over = 0
    for rep in range(REPS):
        c1 = sample_argmax_counts_exact(H, SIGMA, n, rng=np.random.SeedSequence([51, rep]))
        c2 = sample_argmax_counts_exact(
            H_NEIGHBOUR, SIGMA, n, rng=np.random.SeedSequence([52, rep])
        )
        if method == "two-cut-split":
            res = rdp_audit(c1, c2, ORDERS, confidence_level=LEVEL, rng=rep)
            o = list(res.candidates[int(res.chosen[0])][0])
            target = renyi_divergence(_bern(p1[o].sum()), _bern(p2[o].sum()), ORDERS)
        elif method == "two-cut-bonferroni":
            res = rdp_audit(c1, c2, ORDERS, selection=Bonferroni(), confidence_level=LEVEL)
            target = np.max(
                [
                    renyi_divergence(
                        _bern(p1[list(c[0])].sum()), _bern(p2[list(c[0])].sum()), ORDERS
                    )
                    for c in res.candidates
                ],
                axis=0,
            )
        elif method == "k-cut-goodman-split":
            res = rdp_audit(c1, c2, ORDERS, method="k-cut-goodman", confidence_level=LEVEL, rng=rep)
            part = res.candidates[int(res.chosen[0])]
            q1 = np.array([p1[list(cell)].sum() for cell in part])
            q2 = np.array([p2[list(cell)].sum() for cell in part])
            target = renyi_divergence(q1, q2, ORDERS)
        else:
            res = rdp_k_cut(c1, c2, ORDERS, method=method[6:], confidence_level=LEVEL)
            target = truth
        over += bool(np.any(res.epsilons > target))
    assert over <= ALLOWED
    assert math.isfinite(float(truth[-1]))
