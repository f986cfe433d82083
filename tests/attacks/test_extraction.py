"""Vote-histogram extraction (paper 003): reconstruction, live attack, cost, attribute rule.

Oracles: closed forms (C = 2, where Q_1 = Φ((H_1 − H_0)/(√2σ)) and the likelihood is binomial),
brute-force grid searches over the simplex (C = 3), expected counts M·Q(H) for M → ∞,
finite differences, and the reference values of shared/formulas.md §1.8 and §7.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from dpaudit.attacks import (
    evaluate_attribute_inference,
    extract_histogram,
    extraction_privacy_cost,
    fixed_histogram_interface,
    flag_low_consensus,
    normalised_l1_error,
    project_to_simplex,
    reconstruct_histogram,
    reconstruct_histogram_paper,
    trapezoid_argmax_probabilities,
    vote_consensus,
)
from dpaudit.mechanisms import (
    argmax_probabilities,
    log_argmax_probabilities,
    sample_argmax_counts_exact,
)

H_HIGH = np.array([4, 7, 6, 8, 4, 2, 0, 214, 4, 1])  # paper 003 MNIST sample-1
H_LOW = np.array([19, 7, 31, 7, 78, 4, 90, 10, 3, 1])  # paper 003 MNIST sample-11


def expected_counts(votes, sigma, m):
    """Counts M·Q(H) rounded: the M → ∞ limit of the observed answers."""
    return np.round(m * argmax_probabilities(np.asarray(votes, float), sigma)).astype(np.int64)


# --------------------------------------------------------------------------- reconstruction


@pytest.mark.parametrize("objective", ["mle", "l2"])
@pytest.mark.parametrize(
    "votes",
    [
        [19, 7, 31, 7, 78, 4, 90, 10, 3, 1],
        [120, 60, 40, 20, 10],
        [50, 50, 50, 50, 50],
        [3, 200, 40, 7],
    ],
)
def test_exact_recovery_as_m_goes_to_infinity(votes, objective):
    counts = expected_counts(votes, 40.0, 10**12)
    r = reconstruct_histogram(
        counts, 40.0, int(np.sum(votes)), objective=objective, intervals="none"
    )
    assert r.converged
    assert r.error(votes) < 2e-3
    np.testing.assert_allclose(r.votes.sum(), np.sum(votes), rtol=1e-12)


def test_error_decreases_with_the_number_of_answers():
    errs = []
    for m in (10**3, 10**5, 10**7):
        e = [
            reconstruct_histogram(
                sample_argmax_counts_exact(h, 60.0, m, rng=k), 60.0, 250, intervals="none"
            ).error(h)
            for k, h in enumerate((H_HIGH, H_LOW))
        ]
        errs.append(np.mean(e))
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.01


def test_shift_invariance_paper_003_thm_2():
    # Q depends only on differences (Thm 2): the same answers with N + C·c teachers give the
    # estimate shifted by c in every class (here the estimate is interior).
    counts = sample_argmax_counts_exact([60, 50, 40, 30, 20], 30.0, 50_000, rng=3)
    a = reconstruct_histogram(counts, 30.0, 200, intervals="none")
    b = reconstruct_histogram(counts, 30.0, 200 + 5 * 7, intervals="none")
    assert a.votes.min() > 1.0
    np.testing.assert_allclose(b.votes - a.votes, 7.0, atol=2e-3)
    np.testing.assert_allclose(a.probabilities, b.probabilities, atol=1e-6)


def test_unobserved_classes_are_only_bounded():
    # Sample-1 at σ = 40: the small classes are rarely (or never) answered.
    counts = sample_argmax_counts_exact(H_HIGH, 40.0, 10_000, rng=0)
    assert np.any(counts == 0)
    r = reconstruct_histogram(counts, 40.0, 250)
    assert r.unobserved == tuple(np.flatnonzero(counts == 0).tolist())
    assert np.all(r.votes >= 0)
    np.testing.assert_allclose(r.votes.sum(), 250.0, rtol=1e-12)
    for c in r.unobserved:
        assert r.votes[c] == pytest.approx(0.0, abs=1e-6)
        assert r.intervals[c].low == 0.0
        assert 1.0 < r.intervals[c].high < 250.0
    # every interval holds its estimate, and the true top count is inside its interval
    for c in range(10):
        assert r.intervals[c].low <= r.votes[c] <= r.intervals[c].high
    assert r.intervals[7].contains(214)


def test_c2_closed_form():
    # C = 2: Q_1 = Φ((H_1 − H_0)/(√2σ)), so the MLE (= the L2 solution) solves
    # H_1 − H_0 = √2·σ·Φ⁻¹(n_1/M) with H_0 + H_1 = N.
    sigma, n_teachers = 25.0, 100
    for counts in ([700, 300], [9990, 10], [120, 880]):
        d = math.sqrt(2) * sigma * special.ndtri(counts[1] / sum(counts))
        expect = np.clip([(n_teachers - d) / 2, (n_teachers + d) / 2], 0, n_teachers)
        for objective in ("mle", "l2"):
            r = reconstruct_histogram(
                counts, sigma, n_teachers, objective=objective, intervals="none"
            )
            np.testing.assert_allclose(r.votes, expect, atol=1e-4)


def test_c2_boundary():
    # 100 answers, all class 0: the likelihood increases up to the vertex H = (N, 0)
    # (σ = 10 keeps Q_1 = Φ(−50/(√2·10)) ≈ 2e-4 > 0 there, so the slope is visible).
    r = reconstruct_histogram([100, 0], 10.0, 50, intervals="none")
    np.testing.assert_allclose(r.votes, [50.0, 0.0], atol=1e-6)


def _binomial_profile_interval(k, m, sigma, n_teachers, level):
    """Oracle for C = 2: the LR interval of p = Q_1 mapped to H_1 = (N + √2σΦ⁻¹(p))/2."""
    crit = stats.chi2.ppf(level, 1)
    p_hat = k / m

    def ll(p):
        return k * math.log(p) + (m - k) * math.log1p(-p)

    def g(p):
        return 2 * (ll(p_hat) - ll(p)) - crit

    p_lo = optimize.brentq(g, 1e-12, p_hat)
    p_hi = optimize.brentq(g, p_hat, 1 - 1e-12)
    to_h = lambda p: (n_teachers + math.sqrt(2) * sigma * special.ndtri(p)) / 2  # noqa: E731
    return to_h(p_lo), to_h(p_hi)


def test_c2_profile_interval_matches_binomial_likelihood_ratio_interval():
    k, m, sigma, n_teachers = 173, 1000, 30.0, 250
    r = reconstruct_histogram([m - k, k], sigma, n_teachers, confidence_level=0.9)
    lo, hi = _binomial_profile_interval(k, m, sigma, n_teachers, 0.9)
    assert r.intervals[1].low == pytest.approx(lo, abs=0.02)
    assert r.intervals[1].high == pytest.approx(hi, abs=0.02)
    # class 0 is N − class 1
    assert r.intervals[0].low == pytest.approx(n_teachers - hi, abs=0.02)
    assert r.intervals[0].high == pytest.approx(n_teachers - lo, abs=0.02)


def _grid_oracle(counts, sigma, n_teachers, step, objective):
    """Brute force over {H ≥ 0, ΣH = N} on a grid of the given step (C = 3)."""
    grid = np.arange(0.0, n_teachers + 1e-9, step)
    h0, h1 = np.meshgrid(grid, grid, indexing="ij")
    ok = h0 + h1 <= n_teachers + 1e-9
    cand = np.stack([h0[ok], h1[ok], n_teachers - h0[ok] - h1[ok]], axis=1)
    cand[:, 2] = np.maximum(cand[:, 2], 0.0)
    counts = np.asarray(counts, float)
    if objective == "mle":
        vals = -(log_argmax_probabilities(cand, sigma) @ counts)
    else:
        q = argmax_probabilities(cand, sigma)
        vals = np.sum((q - counts / counts.sum()) ** 2, axis=1)
    best = int(np.argmin(vals))
    return cand[best], vals[best]


@pytest.mark.parametrize("objective", ["mle", "l2"])
def test_c3_optimum_matches_a_grid_search(objective):
    counts = [310, 520, 170]
    sigma, n_teachers = 8.0, 30
    best, best_val = _grid_oracle(counts, sigma, n_teachers, 0.1, objective)
    r = reconstruct_histogram(counts, sigma, n_teachers, objective=objective, intervals="none")
    if objective == "mle":
        ours = -(log_argmax_probabilities(r.votes, sigma) @ np.asarray(counts, float))
    else:
        ours = np.sum((argmax_probabilities(r.votes, sigma) - np.asarray(counts) / 1000) ** 2)
    assert ours <= best_val + 1e-9
    np.testing.assert_allclose(r.votes, best, atol=0.15)


def test_c3_boundary_optimum_matches_a_grid_search():
    # class 2 never answered: the MLE sits on the face H_2 = 0.
    counts = [400, 600, 0]
    sigma, n_teachers = 5.0, 20
    best, best_val = _grid_oracle(counts, sigma, n_teachers, 0.1, "mle")
    r = reconstruct_histogram(counts, sigma, n_teachers, intervals="none")
    ours = -(log_argmax_probabilities(r.votes, sigma) @ np.asarray(counts, float))
    assert ours <= best_val + 1e-9
    assert r.votes[2] == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(r.votes, best, atol=0.15)


def _accurate_log_q(cand, sigma):
    """log Q with each row's dominant class as log1p(−Σ others): the naive oracle that keeps
    its accuracy when Q_k ≈ 1 (direct log Q_k has ~1e-15 absolute error there)."""
    lq = np.atleast_2d(log_argmax_probabilities(cand, sigma)).copy()
    rows = np.arange(lq.shape[0])
    k = lq.argmax(axis=1)
    q = np.exp(lq)
    q[rows, k] = 0.0
    lq[rows, k] = np.log1p(-q.sum(axis=1))
    return lq


@pytest.mark.parametrize(("num_classes", "sigma"), [(2, 1.0), (3, 0.5), (10, 5.0), (10, 40.0)])
def test_one_observed_class_likelihood_rises_all_the_way_to_the_vertex(num_classes, sigma):
    # The claim the solver relies on for a single observed class k, checked with the exact Q:
    # along every segment from a histogram H to N·e_k, Q_k(H) does not decrease.
    rng = np.random.default_rng(num_classes)
    for _ in range(40):
        h = rng.dirichlet(np.full(num_classes, 0.5)) * 250.0
        k = int(rng.integers(num_classes))
        vertex = np.zeros(num_classes)
        vertex[k] = 250.0
        path = h[None, :] + np.linspace(0.0, 1.0, 21)[:, None] * (vertex - h)[None, :]
        lq = _accurate_log_q(path, sigma)[:, k]
        assert np.all(np.diff(lq) >= -1e-12 * np.abs(lq[:-1]))


@pytest.mark.parametrize("objective", ["mle", "l2"])
@pytest.mark.parametrize(
    ("counts", "sigma", "expect"),
    [
        ([10_000, 0], 1.0, [250.0, 0.0]),
        ([10_000, 0, 0], 0.5, [250.0, 0.0, 0.0]),
        ([0, 0, 10_000, 0, 0], 5.0, [0.0, 0.0, 250.0, 0.0, 0.0]),
    ],
)
def test_every_answer_on_one_class_gives_the_vertex(counts, sigma, expect, objective):
    # All answers on one class: the likelihood increases up to N·e_k, where the other
    # classes' probabilities are ~1e-15 or smaller (the objective looked flat and SLSQP
    # stopped near its start, e.g. [130.6, 119.4] for the first case, yet "converged").
    r = reconstruct_histogram(counts, sigma, 250, objective=objective, intervals="none")
    assert r.converged
    np.testing.assert_allclose(r.votes, expect, atol=1e-9)


def test_profile_interval_with_probabilities_near_one_matches_the_closed_form():
    # C = 2, M = 10^17 answers all on class 0: the upper end h of class 1's interval solves
    # −2M·log Φ((N − 2h)/(√2σ)) = χ²₁(0.95), i.e. log Q_0 ≈ −1.9e-17 (below the resolution of
    # a log computed from Q_0 ≈ 1), so log Q_0 must come from the small Q_1 there.
    m, sigma, n_teachers = 10**17, 1.0, 20
    r = reconstruct_histogram([m, 0], sigma, n_teachers)
    crit = stats.chi2.ppf(0.95, 1)
    hi = optimize.brentq(
        lambda h: -2 * m * special.log_ndtr((n_teachers - 2 * h) / (math.sqrt(2) * sigma)) - crit,
        0.0,
        n_teachers / 2,
    )
    np.testing.assert_allclose(r.votes, [20.0, 0.0], atol=1e-9)
    assert r.intervals[1].low == 0.0
    assert r.intervals[1].high == pytest.approx(hi, abs=0.02)
    assert r.intervals[0].low == pytest.approx(n_teachers - hi, abs=0.02)


def _profile_deviance_oracle(counts, sigma, n_teachers, cls, h, ll_hat, starts=8):
    """2·(ℓ̂ − max_{H_cls = h} ℓ(H)) by multi-start Nelder–Mead over the other classes' share
    of N − h, with no class pinned or tied (the naive slow oracle of the profile)."""
    counts = np.asarray(counts, float)
    c = counts.size
    others = [i for i in range(c) if i != cls]
    best = -np.inf
    for s0 in np.random.default_rng(0).dirichlet(np.ones(c - 1), starts):

        def nll(x, others=others):
            x = np.abs(x)
            hist = np.empty(c)
            hist[cls] = h
            hist[others] = x / x.sum() * (n_teachers - h)
            return -float(log_argmax_probabilities(hist, sigma) @ counts)

        res = optimize.minimize(
            nll, s0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}
        )
        best = max(best, -res.fun)
    return 2.0 * (ll_hat - best)


def test_profile_endpoints_match_an_unconstrained_inner_optimisation():
    # The profile's inner fits pin the other unobserved classes at 0 when an unobserved class
    # is fixed, and tie the unobserved classes when an observed class is fixed (Prékopa +
    # symmetry). Checked against inner fits that assume neither. Here the tie matters: with
    # the top class fixed at its lower end, the unobserved classes take ~10 votes each
    # (pinning them at 0 instead narrows class 0's interval to [64.9, 68.2]).
    counts, sigma, n_teachers = [990, 10, 0, 0], 10.0, 100
    r = reconstruct_histogram(counts, sigma, n_teachers)
    assert r.converged
    np.testing.assert_allclose(r.votes[2:], 0.0, atol=1e-9)
    crit = stats.chi2.ppf(0.95, 1)
    ends = [(0, r.intervals[0].low), (0, r.intervals[0].high), (1, r.intervals[1].low)]
    ends += [(1, r.intervals[1].high), (2, r.intervals[2].high)]
    assert r.intervals[0].low < 60.0 and r.intervals[2].low == 0.0
    for cls, h in ends:
        dev = _profile_deviance_oracle(counts, sigma, n_teachers, cls, h, r.log_likelihood)
        # the search stops within 2e-3 (relative) of the root-deviance target
        assert math.sqrt(max(dev, 0.0)) == pytest.approx(math.sqrt(crit), rel=5e-3), (cls, h)


def test_l2_flat_direction_is_not_reported_as_converged_in_place():
    # Two tied observed classes, σ = 0.5: from the Gumbel start the unobserved class sits at
    # ~81 votes with Q ≈ 1e-8, where ‖Q − q̄‖² is ~1e-19 and flat to SLSQP; the minimiser puts
    # it at 0 (both objectives).
    for objective in ("mle", "l2"):
        r = reconstruct_histogram([5000, 5000, 0], 0.5, 250, objective=objective, intervals="none")
        assert r.converged
        np.testing.assert_allclose(r.votes, [125.0, 125.0, 0.0], atol=1e-6)


def test_c3_low_noise_optimum_matches_a_grid_search():
    # σ = 1: the unobserved class is ~15σ below the others at the optimum (Q ~ 1e-50), so
    # the likelihood cannot place it (the grid's argmin among its near-ties is arbitrary):
    # the MLE is at least as likely as the grid's best, puts it at 0, and the observed pair
    # matches the C = 2 closed form H_1 − H_0 = √2·σ·Φ⁻¹(n_1/M).
    counts = [300, 700, 0]
    sigma, n_teachers = 1.0, 30
    _best, best_val = _grid_oracle(counts, sigma, n_teachers, 0.05, "mle")
    r = reconstruct_histogram(counts, sigma, n_teachers, intervals="none")
    ours = -(log_argmax_probabilities(r.votes, sigma) @ np.asarray(counts, float))
    assert r.converged
    assert ours <= best_val + 1e-9
    assert r.votes[2] == pytest.approx(0.0, abs=1e-9)
    d = math.sqrt(2) * sigma * special.ndtri(0.7)
    np.testing.assert_allclose(r.votes[:2], [(n_teachers - d) / 2, (n_teachers + d) / 2], atol=1e-5)


def test_c100():
    rng = np.random.default_rng(11)
    votes = rng.multinomial(250, rng.dirichlet(np.full(100, 0.3)))
    counts = expected_counts(votes, 40.0, 10**12)
    r = reconstruct_histogram(counts, 40.0, 250, intervals="none")
    assert r.votes.shape == (100,)
    assert r.converged
    assert r.error(votes) < 5e-3
    np.testing.assert_allclose(r.votes.sum(), 250.0, rtol=1e-12)


def test_mle_is_at_least_as_likely_as_l2_and_the_paper_procedure():
    counts = sample_argmax_counts_exact(H_LOW, 40.0, 10_000, rng=5)
    logq = lambda h: log_argmax_probabilities(h, 40.0) @ counts  # noqa: E731
    mle = reconstruct_histogram(counts, 40.0, 250, intervals="none")
    l2 = reconstruct_histogram(counts, 40.0, 250, objective="l2", intervals="none")
    paper = reconstruct_histogram_paper(counts, 40.0, 250)
    assert logq(mle.votes) >= logq(l2.votes) - 1e-8
    assert logq(mle.votes) >= logq(np.clip(paper.votes, 0, None)) - 1e-8
    assert mle.log_likelihood == pytest.approx(logq(mle.votes), rel=1e-10)


def test_integer_rounding():
    counts = expected_counts(H_LOW, 40.0, 10**12)
    r = reconstruct_histogram(counts, 40.0, 250, intervals="none", round_to_integers=True)
    np.testing.assert_array_equal(r.integer_votes, H_LOW)
    counts = sample_argmax_counts_exact(H_HIGH, 40.0, 10_000, rng=1)
    r = reconstruct_histogram(counts, 40.0, 250, intervals="none", round_to_integers=True)
    assert r.integer_votes.sum() == 250
    assert np.all(r.integer_votes >= 0)
    assert np.abs(r.integer_votes - r.votes).max() < 3


def test_integer_rounding_ignores_last_bit_noise_between_equal_classes():
    """Classes with equal counts have equal estimates up to the optimiser's last bits; the
    rounding must not let those bits (which move with BLAS or library versions) decide
    which class gets the extra vote: ties go to the lower class index."""
    from dpaudit.attacks._reconstruct import _round_to_integers
    from dpaudit.attacks._reconstruct_solver import Objective

    counts = np.array([1, 0, 0, 0, 2, 2, 1, 9992, 1, 1])
    obj = Objective("mle", counts, 40.0, 0, None, None)
    fit = reconstruct_histogram(counts, 40.0, 250, intervals="none").votes
    assert fit[4] == pytest.approx(fit[5], rel=1e-9)
    got = set()
    for nudge in (-1e-12, 0.0, 1e-12):
        v = fit.copy()
        v[4], v[5] = fit[4] + nudge, fit[4] - nudge
        got.add(tuple(_round_to_integers(obj, v, 250).tolist()))
    assert len(got) == 1
    (votes,) = got
    assert sum(votes) == 250 and votes[4] == votes[5] + 1


def test_bootstrap_intervals_are_seeded():
    counts = sample_argmax_counts_exact([30, 20, 10], 10.0, 3000, rng=2)
    a = reconstruct_histogram(counts, 10.0, 60, intervals="bootstrap", num_bootstrap=30, rng=4)
    b = reconstruct_histogram(counts, 10.0, 60, intervals="bootstrap", num_bootstrap=30, rng=4)
    assert a.interval_method == "parametric-bootstrap"
    assert a.seed == 4
    assert [tuple(iv) for iv in a.intervals] == [tuple(iv) for iv in b.intervals]
    for iv, h in zip(a.intervals, [30, 20, 10], strict=True):
        assert iv.low < iv.high
        assert iv.low - 3 <= h <= iv.high + 3


def test_result_serialises_to_json():
    r = reconstruct_histogram([1, 0, 2, 9996, 1], 40.0, 250, round_to_integers=True)
    data = json.loads(r.to_json())
    assert data["objective"] == "mle"
    assert data["interval_method"] == "profile-likelihood"
    assert len(data["intervals"]) == 5
    assert data["selection"] == "none"


@pytest.mark.slow
def test_profile_interval_coverage():
    # 200 seeded repetitions (C = 3): each class's 95% profile interval covers the truth at
    # least as often as the 0.1% quantile of Bin(200, 0.95) allows (≈ 0.91).
    floor = stats.binom.ppf(0.001, 200, 0.95) / 200
    for votes, sigma, n_teachers, m in (([15, 10, 5], 10.0, 30, 1000),):
        hits = np.zeros(len(votes))
        for rep in range(200):
            counts = sample_argmax_counts_exact(votes, sigma, m, rng=1000 + rep)
            r = reconstruct_histogram(counts, sigma, n_teachers)
            hits += [iv.contains(h) for iv, h in zip(r.intervals, votes, strict=True)]
        assert np.all(hits / 200 >= floor), (votes, hits / 200)


# --------------------------------------------------------------------------- the paper's procedure


def test_trapezoid_q_is_close_to_exact_q():
    for votes, sigma in ((H_HIGH, 40.0), (H_LOW, 60.0), ([200, 30, 20], 40.0)):
        np.testing.assert_allclose(
            trapezoid_argmax_probabilities(votes, sigma),
            argmax_probabilities(np.asarray(votes, float), sigma),
            atol=2e-3,
        )


def test_trapezoid_jacobian_matches_finite_differences():
    h = np.array([20.0, 35.0, 10.0, 5.0])
    _, jac = trapezoid_argmax_probabilities(h, 10.0, jacobian=True)
    eps = 1e-5
    fd = np.stack(
        [
            (
                trapezoid_argmax_probabilities(h + eps * e, 10.0)
                - trapezoid_argmax_probabilities(h - eps * e, 10.0)
            )
            / (2 * eps)
            for e in np.eye(4)
        ],
        axis=1,
    )
    np.testing.assert_allclose(jac, fd, atol=1e-8)


def test_paper_procedure():
    counts = sample_argmax_counts_exact(H_LOW, 40.0, 10_000, rng=7)
    r = reconstruct_histogram_paper(counts, 40.0, 250)
    assert r.votes.sum() == pytest.approx(250.0)
    assert r.stop_reason in ("loss-increased", "tolerance", "negative", "max-iter")
    assert 1 <= r.iterations <= 100
    assert np.all(np.diff(r.losses) <= 0.0)  # accepted steps never increase the loss
    assert normalised_l1_error(H_LOW, r.votes) < 0.1


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"counts": [0, 0, 0]}, "counts"),
        ({"counts": [5]}, "counts"),
        ({"counts": [[1, 2], [3, 4]]}, "counts"),
        ({"counts": [1, -2, 3]}, "counts"),
        ({"counts": [1.5, 2, 3]}, "counts"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -1.0}, "sigma"),
        ({"num_teachers": 2}, "num_teachers"),
        ({"num_teachers": 0}, "num_teachers"),
        ({"objective": "l1"}, "objective"),
        ({"intervals": "wald"}, "intervals"),
        ({"confidence_level": 1.0}, "confidence_level"),
        ({"abstentions": -1}, "abstentions"),
        ({"threshold": 100.0}, "threshold"),
        ({"threshold": 100.0, "sigma1": -1.0}, "sigma1"),
        ({"num_bootstrap": 0}, "num_bootstrap"),
    ],
)
def test_reconstruct_rejects_bad_input(kwargs, match):
    args = {"counts": [5, 3, 2], "sigma": 10.0, "num_teachers": 30}
    args.update(kwargs)
    counts, sigma, n = args.pop("counts"), args.pop("sigma"), args.pop("num_teachers")
    with pytest.raises(ValueError, match=match):
        reconstruct_histogram(counts, sigma, n, **args)


def test_reconstruct_type_errors():
    with pytest.raises(TypeError, match="round_to_integers"):
        reconstruct_histogram([5, 3, 2], 10.0, 30, round_to_integers="yes")
    with pytest.raises(TypeError, match="sigma"):
        reconstruct_histogram([5, 3, 2], "10", 30)


def test_paper_procedure_rejects_bad_input():
    with pytest.raises(ValueError, match="counts"):
        reconstruct_histogram_paper([0, 0], 10.0, 30)
    with pytest.raises(ValueError, match="sigma"):
        reconstruct_histogram_paper([1, 2], 0.0, 30)
    with pytest.raises(ValueError, match="tolerance"):
        reconstruct_histogram_paper([1, 2], 10.0, 30, tolerance=-1.0)
    with pytest.raises(ValueError, match="votes"):
        trapezoid_argmax_probabilities([[1, 2], [3, 4]], 10.0)


# --------------------------------------------------------------------------- metrics


def test_normalised_l1_error():
    assert normalised_l1_error([200, 30, 20], [190, 40, 20]) == pytest.approx(0.04)
    assert normalised_l1_error([250, 0], [0, 250]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="estimated_votes"):
        normalised_l1_error([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="true_votes"):
        normalised_l1_error([0, 0], [1, 2])


def test_project_to_simplex_reference_values():
    # shared/formulas.md §7 (projection onto the simplex).
    np.testing.assert_allclose(
        project_to_simplex([0.9, 0.3, -0.2, 0.5]), [2 / 3, 1 / 15, 0.0, 4 / 15], atol=1e-7
    )
    np.testing.assert_allclose(project_to_simplex([1.7, -0.4, 0.1]), [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(project_to_simplex([0.4, 0.3, 0.1]), [7 / 15, 11 / 30, 1 / 6])
    np.testing.assert_allclose(project_to_simplex([5.0, 1.0], 4.0), [4.0, 0.0])


# --------------------------------------------------------------------------- live attack


def test_live_attack_against_gnmax_interface():
    from dpaudit.systems import GNMax

    api = fixed_histogram_interface(H_LOW, GNMax(sigma=40.0))
    res = extract_histogram(
        api, [0.0], num_queries=20_000, batch_size=5000, intervals="none", rng=0
    )
    assert res.num_sent == res.num_answered == 20_000
    assert res.stopped == "completed" and not res.budget_limited
    assert (res.sigma, res.num_teachers, res.num_classes) == (40.0, 250, 10)
    assert res.threshold is None and res.interface_epsilon is None
    # the counts are a draw of Multinomial(M, Q(H)): each class within 5 standard deviations
    q = argmax_probabilities(H_LOW.astype(float), 40.0)
    sd = np.sqrt(20_000 * q * (1 - q))
    assert np.all(np.abs(res.counts - 20_000 * q) < 5 * sd + 1)
    assert res.reconstruction.error(H_LOW) < 0.05


def test_live_attack_models_confident_gnmax_abstentions():
    from dpaudit.systems import ConfidentGNMax

    threshold, sigma1, sigma2 = 100.0, 30.0, 40.0
    api = fixed_histogram_interface(H_LOW, ConfidentGNMax(threshold, sigma1, sigma2))
    res = extract_histogram(api, [0.0], num_queries=6000, intervals="none", rng=1)
    assert (res.threshold, res.sigma1) == (threshold, sigma1)
    assert res.num_answered + res.num_abstained == res.num_sent == 6000
    assert res.counts.sum() == res.num_answered
    assert res.reconstruction.abstentions == res.num_abstained
    # answered with probability Φ((max H − T)/σ1) (noise on the max count only)
    p = special.ndtr((H_LOW.max() - threshold) / sigma1)
    assert abs(res.num_answered - 6000 * p) < 5 * math.sqrt(6000 * p * (1 - p))


def test_abstentions_inform_the_top_count():
    # Identical labelled answers; more abstentions mean a lower answer rate Φ((max H − T)/σ1),
    # hence a lower estimated top count.
    counts = [900, 100]
    kw = {"threshold": 200.0, "sigma1": 20.0, "intervals": "none"}
    few = reconstruct_histogram(counts, 40.0, 250, abstentions=10, **kw)
    many = reconstruct_histogram(counts, 40.0, 250, abstentions=5000, **kw)
    assert few.votes.max() > many.votes.max()
    # without the threshold model the abstentions carry no information: refused (issue 28)
    with pytest.raises(ValueError, match=r"abstentions=5000 needs .*threshold and sigma1"):
        reconstruct_histogram(counts, 40.0, 250, abstentions=5000, intervals="none")
    # with the model, the answer rate at the estimate matches the observed rate
    rate = special.ndtr((many.votes.max() - 200.0) / 20.0)
    assert rate == pytest.approx(1000 / 6000, abs=0.02)


def test_budget_limited_attack_stops_at_refusal():
    from dpaudit.accounting import PrivacyLedger
    from dpaudit.systems import ConfidentGNMax

    ledger = PrivacyLedger(ConfidentGNMax(200.0, 150.0, 40.0), delta=1e-5, epsilon_budget=0.6)
    api = fixed_histogram_interface(H_HIGH, ConfidentGNMax(200.0, 150.0, 40.0), ledger=ledger)
    res = extract_histogram(api, [0.0], num_queries=None, batch_size=64, intervals="none", rng=2)
    assert res.budget_limited and res.stopped == "refused"
    assert res.num_refused > 0
    assert res.num_sent == ledger.num_queries
    assert res.num_answered == ledger.num_answered
    assert res.num_abstained == ledger.num_queries - ledger.num_answered
    assert res.interface_epsilon == pytest.approx(ledger.epsilon())
    assert res.interface_epsilon <= 0.6
    # nothing more is answered after the refusal
    assert np.all(api.predict(np.zeros((5, 1)), rng=0) == -2)


def test_answer_caching_mitigation_makes_the_error_jump():
    from dpaudit.systems import GNMax

    plain = fixed_histogram_interface(H_LOW, GNMax(sigma=40.0))
    cached = fixed_histogram_interface(H_LOW, GNMax(sigma=40.0), cache=True)
    a = extract_histogram(plain, [0.0], num_queries=5000, intervals="none", rng=3)
    b = extract_histogram(cached, [0.0], num_queries=5000, intervals="none", rng=3)
    assert np.count_nonzero(b.counts) == 1  # only the first answer, repeated
    assert a.reconstruction.error(H_LOW) < 0.05
    assert b.reconstruction.error(H_LOW) > 0.5


def test_live_attack_with_a_plain_callable():
    gen_votes = np.array([10.0, 30.0, 5.0])

    def interface(X, *, rng):
        z = rng.standard_normal((len(X), 3)) * 8.0
        return np.argmax(gen_votes + z, axis=1)

    res = extract_histogram(
        interface,
        [1.0, 2.0],
        num_queries=3000,
        sigma=8.0,
        num_teachers=45,
        num_classes=3,
        intervals="none",
        rng=np.random.default_rng(0),
    )
    assert res.num_answered == 3000
    assert res.reconstruction.error(gen_votes) < 0.1


def test_live_attack_rejects_bad_input():
    from dpaudit.systems import GNMax

    api = fixed_histogram_interface([5, 3, 2], GNMax(sigma=40.0))
    with pytest.raises(ValueError, match="num_queries"):
        extract_histogram(api, [0.0], num_queries=0)
    with pytest.raises(ValueError, match="label"):  # class 2 is answered but C = 2 claimed
        extract_histogram(api, [0.0], num_queries=200, num_classes=2, rng=0)
    with pytest.raises(ValueError, match="sigma"):
        extract_histogram(
            lambda X, rng: np.zeros(len(X), int),
            [0.0],
            num_queries=5,
            num_teachers=3,
            num_classes=2,
        )
    with pytest.raises(ValueError, match="batch_size"):
        extract_histogram(api, [0.0], num_queries=10, batch_size=0)
    with pytest.raises(ValueError, match="query"):
        extract_histogram(api, [[0.0], [1.0]], num_queries=10)
    with pytest.raises(TypeError, match="interface"):
        extract_histogram(42, [0.0], num_queries=10, sigma=1.0, num_teachers=3, num_classes=2)
    with pytest.raises(ValueError, match="votes"):
        fixed_histogram_interface([1.5, 2], GNMax(sigma=1.0))


# --------------------------------------------------------------------------- privacy cost


def test_cost_reference_value_confident_gnmax():
    # shared/formulas.md §1.8 item 3: votes (230, 15, 5, 0×7), T = 150, σ1 = 20, σ2 = 40, λ = 10:
    # ρ1 = 3.212133164e-5, ρ2 = 1.227587674e-4. One answered query, realised cost ρ1 + ρ2,
    # converted at the single order λ = 10 (Balle et al. 2020, formulas.md §1.7).
    votes = [230, 15, 5] + [0] * 7
    lam, delta = 10.0, 1e-5
    c = extraction_privacy_cost(
        votes,
        sigma=40.0,
        num_queries=1,
        num_answered=1,
        threshold=150.0,
        sigma1=20.0,
        delta=delta,
        orders=[lam],
    )
    rho = 3.212133164e-5 + 1.227587674e-4
    expect = rho + math.log((lam - 1) / lam) - (math.log(delta) + math.log(lam)) / (lam - 1)
    assert c.epsilon_data_dependent == pytest.approx(expect, rel=1e-8)
    di = lam / (2 * 20.0**2) + lam / 40.0**2
    expect_di = di + math.log((lam - 1) / lam) - (math.log(delta) + math.log(lam)) / (lam - 1)
    assert c.epsilon_data_independent == pytest.approx(expect_di, rel=1e-10)


def test_cost_gnmax_composition_and_ordering():
    # §1.8 item 1: GNMax (230, 15, 5, 0×7), σ = 40, data-dependent RDP 1.227587674e-4 at λ = 10.
    votes = [230, 15, 5] + [0] * 7
    c = extraction_privacy_cost(
        votes, sigma=40.0, num_queries=1000, orders=[10.0], conversion="standard"
    )
    expect = 1000 * 1.227587674e-4 + math.log(1e5) / 9
    assert c.epsilon_data_dependent == pytest.approx(expect, rel=1e-8)
    assert c.epsilon_data_independent == pytest.approx(1000 * 10 / 1600 + math.log(1e5) / 9)
    full = extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=10_000)
    assert full.epsilon_data_dependent < full.epsilon_data_independent
    more = extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=20_000)
    assert more.epsilon_data_dependent > full.epsilon_data_dependent
    exp_ = extraction_privacy_cost(
        H_HIGH, sigma=40.0, num_queries=10_000, threshold=200.0, sigma1=150.0, accounting="expected"
    )
    real = extraction_privacy_cost(
        H_HIGH, sigma=40.0, num_queries=10_000, threshold=200.0, sigma1=150.0, num_answered=10_000
    )
    assert exp_.epsilon_data_dependent <= real.epsilon_data_dependent


def test_cost_rejects_bad_input():
    with pytest.raises(ValueError, match="delta"):
        extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=10, delta=0.0)
    with pytest.raises(ValueError, match="num_answered"):
        extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=10, num_answered=5)
    with pytest.raises(ValueError, match="num_answered"):
        extraction_privacy_cost(
            H_HIGH, sigma=40.0, num_queries=10, num_answered=11, threshold=200.0, sigma1=150.0
        )
    with pytest.raises(ValueError, match="sigma1"):
        extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=10, threshold=200.0)
    with pytest.raises(ValueError, match="accounting"):
        extraction_privacy_cost(H_HIGH, sigma=40.0, num_queries=10, accounting="maybe")
    with pytest.raises(ValueError, match="sigma"):
        extraction_privacy_cost(H_HIGH, sigma=-4.0, num_queries=10)


# --------------------------------------------------------------------------- attribute rule


def test_consensus_rule_against_naive_counts():
    rng = np.random.default_rng(0)
    top = rng.integers(100, 250, size=300)
    votes = np.stack([top, 250 - top], axis=1)
    member = rng.random(300) < 0.5
    r = evaluate_attribute_inference(votes, member)
    flags = [v.max() / 250 < 0.75 for v in votes]
    tp = sum(f and m for f, m in zip(flags, member, strict=True))
    fp = sum(f and not m for f, m in zip(flags, member, strict=True))
    fn = sum((not f) and m for f, m in zip(flags, member, strict=True))
    assert (r.true_positives, r.false_positives, r.false_negatives) == (tp, fp, fn)
    assert r.precision == pytest.approx(tp / (tp + fp))
    assert r.recall == pytest.approx(tp / (tp + fn))
    assert r.precision_interval.contains(r.precision)
    # exact Clopper–Pearson (beta quantiles)
    assert r.recall_interval.low == pytest.approx(stats.beta.ppf(0.025, tp, fn + 1))
    assert r.recall_interval.high == pytest.approx(stats.beta.ppf(0.975, tp + 1, fn))


def test_consensus_helpers_and_edge_cases():
    np.testing.assert_allclose(vote_consensus([[180, 70], [125, 125]]), [0.72, 0.5])
    assert flag_low_consensus([[187, 63], [188, 62]]).tolist() == [True, False]
    r = evaluate_attribute_inference([[240, 10], [230, 20]], [True, False])
    # nothing flagged: precision 0/0 is reported as 0 with the uninformative interval [0, 1]
    assert r.precision == 0.0 and r.recall == 0.0
    assert (r.precision_interval.low, r.precision_interval.high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="is_member"):
        evaluate_attribute_inference([[240, 10]], [True, False])
    with pytest.raises(ValueError, match="is_member"):
        evaluate_attribute_inference([[240, 10]], [2])
    with pytest.raises(ValueError, match="threshold"):
        flag_low_consensus([[1, 2]], threshold=1.5)
    with pytest.raises(ValueError, match="votes"):
        vote_consensus([[0, 0]])


def test_issue28_num_queries_above_max_queries_is_refused_before_sending():
    """num_queries=2**40 used to query for hours; max_queries now caps both modes."""
    import time

    from dpaudit.mechanisms import GNMax as GNMaxValue

    sent = []

    def predict(x, *, rng=None):
        sent.append(len(x))
        return np.zeros(len(x), dtype=np.int64)

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"num_queries=1099511627776 .*max_queries=1000000"):
        extract_histogram(
            predict, [0.0], num_queries=2**40, sigma=40.0, num_teachers=250, num_classes=3
        )
    assert time.perf_counter() - start < 2.0 and not sent
    api = fixed_histogram_interface([30, 200, 20], GNMaxValue(40.0))
    res = extract_histogram(api, [0.0], num_queries=2000, max_queries=2000, intervals="none", rng=0)
    assert res.num_answered == 2000
