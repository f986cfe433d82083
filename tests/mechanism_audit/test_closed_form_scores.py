"""Closed-form log-likelihood ratios, the suite's own pairs, pair screening, and the faster
samplers (Laplace as a difference of exponentials, SVT2's threshold redraws)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks import MechanismAttack
from dpaudit.experiments import MechanismAuditSettings, audit_mechanism, replay_witness
from dpaudit.systems import MECHANISMS, MechanismSpec
from dpaudit.systems.dp_mechanisms import rappor_bits, rappor_true_epsilon
from dpaudit.systems.dp_mechanisms._suite import _lap, _svt2


def _rappor_loglik(report, value, q_star, p_star):
    """Product of the per-bit Bernoulli probabilities (Erlingsson et al. 2014, §3.1)."""
    one = np.where(rappor_bits(value) == 1.0, q_star, p_star)
    return float(np.sum(np.where(report == 1.0, np.log(one), np.log(1.0 - one))))


@pytest.mark.parametrize(
    ("name", "q_star", "p_star"),
    [("rappor", 0.5125, 0.4875), ("one-time-rappor", 1 - 0.95 / 2, 0.95 / 2)],
)
def test_rappor_llr_is_the_log_ratio_of_bit_products_and_peaks_at_the_true_epsilon(
    name, q_star, p_star
):
    spec = MECHANISMS.get(name)
    a, b = np.array([0.0]), np.array([3.0])  # Bloom filters {0, 6, 16, 17} and 4 others
    assert np.sum(rappor_bits(0) != rappor_bits(3)) == 8
    reports = spec.sample(b, 200, np.random.default_rng(0))
    got = spec.log_likelihood_ratio(reports, a, b)
    want = [_rappor_loglik(r, 3, q_star, p_star) - _rappor_loglik(r, 0, q_star, p_star)
            for r in reports]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    best = np.where(rappor_bits(3) == 1.0, 1.0, 0.0)  # report = b's filter: the top ratio
    top = float(spec.log_likelihood_ratio(best[None, :], a, b)[0])
    assert top == pytest.approx(spec.true_epsilon, abs=1e-12)
    f = 0.75 if name == "rappor" else 0.95
    pq = (0.45, 0.55) if name == "rappor" else (None, None)
    assert top == pytest.approx(rappor_true_epsilon(f, *pq), abs=1e-12)
    assert ((0.0,), (3.0,)) in spec.pairs and len(spec.pairs) == 20


def test_prefix_sum_llr_is_the_laplace_log_ratio_of_the_increments():
    spec = MECHANISMS.get("prefix-sum")
    a, b = np.ones(10), np.r_[2.0, np.zeros(9)]
    out = spec.sample(b, 500, np.random.default_rng(1))
    x = np.diff(out, axis=1, prepend=0.0)
    want = (stats.laplace.logpdf(x, loc=b, scale=10.0)
            - stats.laplace.logpdf(x, loc=a, scale=10.0)).sum(axis=1)  # fmt: skip
    np.testing.assert_allclose(spec.log_likelihood_ratio(out, a, b), want, atol=1e-9)
    assert np.max(spec.log_likelihood_ratio(out, a, b)) <= spec.true_epsilon + 1e-12


def test_laplace_parallel_llr_is_the_sum_of_20_laplace_log_ratios():
    spec = MECHANISMS.get("laplace-parallel")
    a, b = np.array([1.0]), np.array([2.0])
    out = spec.sample(a, 500, np.random.default_rng(2))
    want = (stats.laplace.logpdf(out, loc=2.0, scale=200.0)
            - stats.laplace.logpdf(out, loc=1.0, scale=200.0)).sum(axis=1)  # fmt: skip
    np.testing.assert_allclose(spec.log_likelihood_ratio(out, a, b), want, atol=1e-9)
    top = spec.log_likelihood_ratio(np.full((1, 20), 5.0), a, b)[0]  # all 20 beyond a′
    assert top == pytest.approx(spec.true_epsilon, abs=1e-12)


def test_llr_attack_scores_round_away_floating_point_ties():
    # The clipped Laplace log-ratio sits exactly at its clip level on half-lines; without
    # rounding, the last bits of ``a + noise`` decided membership of those ties and an audit
    # of prefix-sum reported ε ≈ 8.5 (true ε = 1) on a 10^6-sample run.
    spec = MECHANISMS.get("prefix-sum")
    a, b = np.r_[2.0, np.ones(9)], np.ones(10)
    att = MechanismAttack("llr", llr=spec.log_likelihood_ratio, pair_a=a, pair_b=b)
    g = np.random.default_rng(0)
    sa, sb = att.scores(spec.sample(a, 50_000, g)), att.scores(spec.sample(b, 50_000, g))
    assert np.mean(sa == 0.1) == pytest.approx(np.mean(sb == 0.1) * math.exp(-0.1), abs=0.01)
    assert np.mean(sb == 0.1) == pytest.approx(0.5, abs=0.01)  # P[noise ≤ 0]
    assert "closed-form log-likelihood ratio" in att.describe()
    with pytest.raises(ValueError, match="log-likelihood ratio function"):
        MechanismAttack("llr").scores(np.zeros((1, 10)))


@pytest.mark.parametrize(("name", "lo", "hi"), [("prefix-sum", 0.6, 1.0), ("rappor", 0.2, 0.4)])
def test_closed_form_audits_stay_below_the_true_epsilon_and_replay(name, lo, hi):
    s = MechanismAuditSettings(mechanism=name, train_samples=1000, select_samples=200_000,
                               samples=1_000_000, screen_samples=20_000, seed=2)  # fmt: skip
    e = audit_mechanism(s).entries[0]
    w = e.detail
    assert w.attack == "llr" and e.adversary == "dp-sniper-llr"
    assert lo <= e.lower_bound.epsilon <= hi <= e.exact.epsilon + 1e-12
    assert "screened" in e.selections[0].detail and "nothing fitted" in e.selections[1].detail
    assert w.model.llr is None  # the function is not part of the stored witness
    assert replay_witness(w, samples=200_000, rng=5).epsilon <= e.exact.epsilon
    if name == "rappor":  # a pair whose filters differ in 7 or 8 bits (0.35 or 0.4)
        va, vb = int(w.database_a[0]), int(w.database_b[0])
        assert np.sum(rappor_bits(va) != rappor_bits(vb)) >= 7


def test_screening_keeps_the_best_pairs_and_is_reproducible():
    base = dict(mechanism="report-noisy-max2", train_samples=5000, select_samples=40_000,
                samples=200_000, seed=4)  # fmt: skip
    screened = audit_mechanism(MechanismAuditSettings(screen_samples=10_000, **base))
    again = audit_mechanism(MechanismAuditSettings(screen_samples=10_000, **base))
    full = audit_mechanism(MechanismAuditSettings(screen_pairs=0, **base))
    e, f = screened.entries[0], full.entries[0]
    assert e.lower_bound.epsilon == again.entries[0].lower_bound.epsilon
    assert "screened on 5000 training and 10000 selection" in e.selections[0].detail
    assert "screened" not in f.selections[0].detail
    # both find a pair where the ratio on one index is e^0.1 (true ε 0.1)
    assert 0.05 <= e.lower_bound.epsilon <= 0.1 and 0.05 <= f.lower_bound.epsilon <= 0.1
    with pytest.raises(ValueError, match="screen_samples"):
        MechanismAuditSettings(screen_samples=0)


def test_laplace_noise_as_a_difference_of_exponentials_is_laplace():
    x = _lap(np.random.default_rng(0), 10.0, 200_000)
    assert stats.kstest(x, stats.laplace(scale=10.0).cdf).pvalue > 1e-4
    y = _lap(np.random.default_rng(0), 10.0, (100_000, 2))
    assert y.shape == (100_000, 2) and abs(np.corrcoef(y.T)[0, 1]) < 0.02


def _svt2_oracle(x, eps, c, t, g):
    """Lyu et al. 2017, Alg. 2, one run at a time with numpy's own Laplace sampler."""
    eps1 = eps2 = eps / 2.0
    rho, out, count = g.laplace(0, c / eps1), [], 0
    for xi in x:
        if count >= c:
            out.append(-1.0)
            continue
        above = xi + g.laplace(0, 2 * c / eps2) >= rho + t
        out.append(1.0 if above else 0.0)
        if above:
            count += 1
            rho = g.laplace(0, c / eps1)
    return tuple(out)


def test_svt2_redraws_only_for_running_queries_and_matches_the_algorithm():
    # c = 2 exercises the redraw; the vectorised sampler and a loop over Lyu et al.'s Alg. 2
    # agree in distribution (chi-square over the output patterns).
    x, n = np.array([3.0, 0.0, 2.0, 0.0, 1.0]), 20_000
    vec = _svt2(1.0, 2, 1.0)(x, n, np.random.default_rng(0))
    g = np.random.default_rng(1)
    loop = [_svt2_oracle(x, 1.0, 2, 1.0, g) for _ in range(n)]
    assert np.all((vec == 1.0).sum(axis=1) <= 2)
    assert np.all(vec[np.cumsum(vec == 1.0, axis=1) - (vec == 1.0) >= 2] == -1.0)
    keys = sorted(set(map(tuple, vec.tolist())) | set(loop))
    cv = np.array([np.sum(np.all(vec == k, axis=1)) for k in keys])
    cl = np.array([loop.count(k) for k in keys])
    keep = (cv + cl) >= 20
    table = np.vstack([cv[keep], cl[keep]])
    assert stats.chi2_contingency(table).pvalue > 1e-4
    assert table.shape[1] >= 8


def test_spec_checks_pairs_and_llr():
    def sample(db, size, rng):
        return np.zeros((size, 1))

    with pytest.raises(ValueError, match="pairs must have 1 entries"):
        MechanismSpec("m", sample, 0.1, 1, "src", pairs=(((0.0, 1.0), (1.0, 1.0)),))
    with pytest.raises(TypeError, match="log_likelihood_ratio"):
        MechanismSpec("m", sample, 0.1, 1, "src", log_likelihood_ratio=3)
    assert list(itertools.islice(MechanismSpec("m", sample, 0.1, 1, "src").pairs, 1)) == []
