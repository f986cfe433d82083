"""Violation checks of claimed (ε, δ) and RDP guarantees, including a planted bug."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.bounds import (
    ViolationCheck,
    check_dp_claim,
    check_rdp_claim,
    compose_rdp_lower_bounds,
    epsilon_from_confusion,
    epsilon_from_rejection_set,
    per_query_confidence_level,
    rdp_audit,
    rdp_k_cut_bootstrap,
    rdp_two_cut,
)
from dpaudit.bounds._epsdelta import epsilon_at_beta
from dpaudit.divergence import exact_renyi
from dpaudit.mechanisms import sample_argmax_counts_exact
from dpaudit.mechanisms.simple import sample_randomized_response_counts

ORDERS = np.array([1.5, 2.0, 3.0, 5.0, 10.0, 20.0])
H = [14, 12, 10, 8, 6]
H_NEIGHBOUR = [13, 13, 10, 8, 6]
SIGMA = 2.0


def test_dp_claim_refuted_and_p_value_is_the_threshold():
    audit = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    check = check_dp_claim(audit, epsilon=1.0, delta=1e-5)
    assert isinstance(check, ViolationCheck)
    assert check.refuted and check.valid and check.claim == "dp"
    assert check.lower_bound == pytest.approx(audit.epsilon)
    assert check.margin == pytest.approx(audit.epsilon - 1.0)
    p = check.p_value
    assert 1e-16 < p < 0.05
    # at β just above p the same counts refute, just below they do not
    assert epsilon_at_beta(400, 100, 50, 450, 1e-5, p * 1.001, "given") > 1.0
    assert epsilon_at_beta(400, 100, 50, 450, 1e-5, p * 0.999, "given") <= 1.0
    assert json.loads(check.to_json())["evidence"]["tp"] == 400


def test_dp_claim_at_other_delta_and_not_refuted():
    audit = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    held = check_dp_claim(audit, epsilon=2.0, delta=1e-5)
    assert not held.refuted and held.p_value > 0.05
    # a larger claimed δ weakens the bound: ε_lb(δ) from the same TPR/FPR bounds
    big_delta = check_dp_claim(audit, epsilon=1.5, delta=0.2)
    expected = np.log((audit.tpr_lower - 0.2) / audit.fpr_upper)
    assert big_delta.lower_bound == pytest.approx(max(expected, 0.0))
    assert not big_delta.refuted


def test_dp_claim_planted_bug_randomized_response():
    # Claimed 1-DP randomized response that actually runs with ε = 2.
    n = 10**5
    c_s = sample_randomized_response_counts(0, n, num_classes=4, epsilon=2.0, rng=1)
    c_s2 = sample_randomized_response_counts(1, n, num_classes=4, epsilon=2.0, rng=2)
    # O = {output 1}: P(O | label 0) = q, P(O | label 1) = p.
    audit = epsilon_from_rejection_set(int(c_s[1]), n, int(c_s2[1]), n)
    assert check_dp_claim(audit, epsilon=1.0, delta=0.0).refuted
    assert not check_dp_claim(audit, epsilon=2.0, delta=0.0).refuted


def test_planted_bug_noisy_argmax_half_sigma_is_refuted():
    """GNMax run with σ/2 while claiming σ: refuted with 10^7 samples per side."""
    n = 10**7
    c1 = sample_argmax_counts_exact(H, SIGMA / 2, n, rng=101)
    c2 = sample_argmax_counts_exact(H_NEIGHBOUR, SIGMA / 2, n, rng=102)
    audit = rdp_audit(c1, c2, ORDERS, rng=103)
    # Claim 1: the exact divergence of this pair at the claimed σ (the tightest claim).
    exact_claim = exact_renyi(H, H_NEIGHBOUR, SIGMA, ORDERS)
    check = check_rdp_claim(audit, exact_claim)
    assert check.refuted and check.valid
    np.testing.assert_array_equal(check.refuted_orders, ORDERS)
    assert check.p_value == pytest.approx(1e-16)  # overwhelming evidence (p at the floor)
    # Claim 2: GNMax's data-independent RDP α/σ² (formulas.md §1.2), refuted at small orders.
    generic = check_rdp_claim(audit, ORDERS / SIGMA**2)
    assert generic.refuted and set(generic.refuted_orders) == {1.5, 2.0}


def test_correct_mechanism_not_refuted_in_50_seeds():
    exact_claim = exact_renyi(H, H_NEIGHBOUR, SIGMA, ORDERS)
    n = 10**7
    for seed in range(50):
        c1 = sample_argmax_counts_exact(H, SIGMA, n, rng=10_000 + seed)
        c2 = sample_argmax_counts_exact(H_NEIGHBOUR, SIGMA, n, rng=20_000 + seed)
        check = check_rdp_claim(rdp_audit(c1, c2, ORDERS, rng=seed), exact_claim)
        assert not check.refuted, seed
        assert check.p_value > 0.05


def test_rdp_claim_bonferroni_p_value_and_composed_curve():
    c1 = np.array([[900, 80, 20], [850, 100, 50]])
    c2 = np.array([[700, 250, 50], [650, 250, 100]])
    level = per_query_confidence_level(0.95, 2)
    audit = rdp_audit(c1[0], c2[0], ORDERS, selection="bonferroni")
    check = check_rdp_claim(audit, 0.05)
    assert check.refuted and 0 < check.p_value < 0.05
    curve = compose_rdp_lower_bounds(
        rdp_two_cut(c1, c2, ORDERS, output_set=[0], confidence_level=level)
    )
    comp = check_rdp_claim(curve, 0.1 * ORDERS)
    assert comp.confidence_level == pytest.approx(0.95) and comp.p_value is None
    assert comp.method == "two-cut"
    assert check_rdp_claim(curve, np.full(ORDERS.size, np.inf)).margin == -np.inf


def test_rdp_claim_asymptotic_audits_are_not_valid_evidence():
    c1 = np.array([900, 80, 20])
    c2 = np.array([700, 250, 50])
    boot = rdp_k_cut_bootstrap(c1, c2, ORDERS, rng=0, n_resamples=500)
    check = check_rdp_claim(boot, 0.01)
    assert check.refuted and not check.valid
    # not simultaneous over orders: union bound over the refuted orders
    assert check.confidence_level == pytest.approx(1 - ORDERS.size * 0.05)
    kcut = rdp_audit(c1, c2, ORDERS, method="k-cut-goodman", rng=0)
    assert not check_rdp_claim(kcut, 0.01).valid


def test_rdp_claim_bootstrap_refuted_at_one_order_pays_for_all_orders():
    # Which orders exceed the claim is decided after seeing the data, so the union bound
    # covers all 6 audited orders (1 − 6·0.05 = 0.70), not just the 1 refuted (0.95).
    c1 = np.array([900, 80, 20])
    c2 = np.array([700, 250, 50])
    boot = rdp_k_cut_bootstrap(c1, c2, ORDERS, rng=0, n_resamples=500)
    assert np.all(boot.epsilons > 0)
    claim = boot.epsilons + 1.0
    claim[0] = boot.epsilons[0] / 2  # refuted at α = 1.5 only
    check = check_rdp_claim(boot, claim)
    assert check.refuted and not check.valid
    np.testing.assert_array_equal(check.refuted_orders, [1.5])
    assert check.confidence_level == pytest.approx(0.70)
    assert "union bound over all orders" in check.note
    # a composed bootstrap curve is likewise paid for over all orders, and flagged
    curve = compose_rdp_lower_bounds(boot)
    assert not curve.valid_at_zero
    comp = check_rdp_claim(curve, claim)
    assert comp.confidence_level == pytest.approx(0.70) and not comp.valid


def test_bad_input():
    audit = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
    with pytest.raises(TypeError, match="audit"):
        check_dp_claim("audit", epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        check_dp_claim(audit, epsilon=-1.0, delta=0.0)
    with pytest.raises(ValueError, match="delta"):
        check_dp_claim(audit, epsilon=1.0, delta=1.0)
    rdp = rdp_two_cut([[90, 10], [80, 20]], [[70, 30], [60, 40]], ORDERS, output_set=[0])
    with pytest.raises(ValueError, match="audit"):
        check_rdp_claim(rdp, 1.0)
    with pytest.raises(TypeError, match="audit"):
        check_rdp_claim(audit, 1.0)
    single = rdp_two_cut([90, 10], [70, 30], ORDERS, output_set=[0])
    with pytest.raises(ValueError, match="claimed_epsilons"):
        check_rdp_claim(single, [1.0, 2.0])
    with pytest.raises(ValueError, match="claimed_epsilons"):
        check_rdp_claim(single, -1.0)
    with pytest.raises(ValueError, match="claimed_epsilons"):
        check_rdp_claim(single, np.full(ORDERS.size, np.nan))
