"""Lifted-DP intervals (paper 002; formulas.md §4)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import clopper_pearson, lidp_epsilon, lidp_moments


def layout(k, blocks):
    """formulas.md §4 layout rule: row i has its ones at columns (i + j) mod k for j < count,
    i counted across the whole matrix (TPR blocks first, then FPR blocks)."""
    rows, i = [], 0
    for count, ones in blocks:
        for _ in range(count):
            row = np.zeros(k)
            row[[(i + j) % k for j in range(ones)]] = 1
            rows.append(row)
            i += 1
    return np.array(rows)


def example(k, tpr_blocks, fpr_blocks):
    allrows = layout(k, tpr_blocks + fpr_blocks)
    n_t = sum(c for c, _ in tpr_blocks)
    return allrows[:n_t], allrows[n_t:]


BIG = example(16, [(600, 12), (300, 8), (100, 4)], [(500, 2), (300, 1), (200, 0)])
SMALL = example(4, [(50, 3), (30, 2), (20, 1)], [(10, 1), (90, 0)])


@pytest.mark.parametrize(
    ("method", "eps", "tpr_lo", "fpr_hi"),
    [
        ("clopper-pearson", 1.783546, 0.5931486240, 0.0996716990),
        ("wilson1", 1.784354, 0.5945696046, 0.0998297754),
        ("wilson2", 1.927631, 0.6043037609, 0.0879201719),
        ("wilson4", 1.923267, 0.6027558686, 0.0880784807),
    ],
)
def test_reference_values_n1000_k16(method, eps, tpr_lo, fpr_hi):
    res = lidp_epsilon(*BIG, delta=1e-5, confidence_level=0.95, method=method)
    assert res.epsilon == pytest.approx(eps, abs=6e-7)
    assert res.tpr_interval.low == pytest.approx(tpr_lo, abs=1e-9)
    assert res.fpr_interval.high == pytest.approx(fpr_hi, abs=1e-9)
    assert res.fallbacks == ()


def test_reference_exact_variance_and_moments():
    res = lidp_epsilon(*BIG, delta=1e-5, variance="exact")
    assert res.epsilon == pytest.approx(1.925803, abs=6e-7)
    np.testing.assert_allclose(
        res.tpr_moments, (0.625, 0.405, 0.2664285714, 0.1747802198), atol=1e-10
    )
    np.testing.assert_allclose(res.fpr_moments, (0.08125, 0.0041666667, 0, 0), atol=1e-10)


@pytest.mark.parametrize(
    ("method", "eps"),
    [
        ("clopper-pearson", 1.701874),
        ("wilson1", 1.819193),
        ("wilson2", 1.850080),
        ("wilson4", 1.704943),
    ],
)
def test_reference_values_n100_k4(method, eps):
    assert lidp_epsilon(*SMALL, delta=1e-5, method=method).epsilon == pytest.approx(eps, abs=6e-7)


def test_moments_match_subset_oracle():
    """μ̂_ℓ = mean over rows of the mean over ℓ-subsets of columns of the product (unbiased)."""
    rng = np.random.default_rng(2)
    x = (rng.random((30, 6)) < rng.random((30, 1))).astype(float)
    got = lidp_moments(x)
    for ell in range(1, 5):
        subsets = list(itertools.combinations(range(6), ell))
        oracle = np.mean([np.mean([np.prod(row[list(s)]) for s in subsets]) for row in x])
        assert got.moments[ell - 1] == pytest.approx(oracle, abs=1e-12)
    assert math.isnan(lidp_moments(x[:, :2]).moments[2])


def test_wilson1_and_cp_match_direct_formulas():
    a, nul = SMALL
    n, beta_s = a.shape[0], 0.025
    z = stats.norm.ppf(1 - beta_s)
    mu = a.mean()
    roots = np.sort(np.roots([n + z * z, -(2 * n * mu + z * z), n * mu * mu]).real)
    lo = max(roots[0], mu - z * math.sqrt(0.25 / n))
    assert lidp_epsilon(a, nul, method="wilson1").tpr_interval.low == pytest.approx(lo, abs=1e-12)
    s = int(nul[:, 0].sum())
    cp = clopper_pearson(s, nul.shape[0], confidence_level=1 - beta_s, alternative="less").high
    assert lidp_epsilon(a, nul, method="clopper-pearson").fpr_interval.high == pytest.approx(
        cp, abs=1e-14
    )


def test_edge_cases():
    ones, zeros = np.ones((200, 8)), np.zeros((200, 8))
    res = lidp_epsilon(ones, zeros, delta=1e-5)
    assert math.isfinite(res.epsilon) and res.epsilon > 3
    # no signal: TPR_lo below FPR_hi → 0, and TPR_lo ≤ δ → 0
    assert lidp_epsilon(zeros, zeros).epsilon == 0.0
    assert lidp_epsilon(zeros, zeros, delta=0.5).epsilon == 0.0
    # k = 1 works for CP and W1
    assert lidp_epsilon(ones[:, :1], zeros[:, :1], method="wilson1").epsilon > 0
    assert lidp_epsilon(ones[:, :1], zeros[:, :1], method="clopper-pearson").epsilon > 0
    # more trials, tighter bound
    e = [
        lidp_epsilon(*example(8, [(n, 6)], [(n, 1)]), method="wilson4").epsilon
        for n in (50, 200, 800)
    ]
    assert e[0] < e[1] < e[2]
    data = json.loads(res.to_json())
    assert data["method"] == "wilson4" and data["confidence_interval"]["high"] == "inf"


def test_validation_names_the_argument():
    a, nul = SMALL
    with pytest.raises(ValueError, match="outcomes_alternative"):
        lidp_epsilon(a * 2, nul)
    with pytest.raises(ValueError, match="outcomes_null"):
        lidp_epsilon(a, nul[:, :3])
    with pytest.raises(ValueError, match="outcomes_null"):
        lidp_epsilon(a, nul[0])
    with pytest.raises(ValueError, match="method"):
        lidp_epsilon(a, nul, method="wilson3")
    with pytest.raises(ValueError, match="method"):
        lidp_epsilon(a[:, :3], nul[:, :3], method="wilson4")
    with pytest.raises(ValueError, match="method"):
        lidp_epsilon(a[:, :1], nul[:, :1], method="wilson2")
    with pytest.raises(ValueError, match="variance"):
        lidp_epsilon(a, nul, variance="approx")
    with pytest.raises(ValueError, match="delta"):
        lidp_epsilon(a, nul, delta=1.0)
    with pytest.raises(ValueError, match="confidence_level"):
        lidp_epsilon(a, nul, confidence_level=1.5)
    with pytest.raises(ValueError, match="outcomes"):
        lidp_moments([1, 0, 1])


@pytest.mark.parametrize("method", ["clopper-pearson", "wilson1", "wilson2", "wilson4"])
def test_the_threshold_sweep_equals_lidp_epsilon_at_every_threshold(method):
    """lidp_epsilon_sweep is the naive loop over thresholds, number for number."""
    from dpaudit.bounds import lidp_epsilon_sweep

    g = np.random.default_rng(7)
    alt, null = g.normal(1.5, 1.0, (150, 6)), g.normal(0.0, 1.0, (180, 6))
    taus = np.concatenate([np.linspace(-3.0, 5.0, 40), [alt.max(), null.min(), 9.0]])
    for variance in ("reference", "exact"):
        got = lidp_epsilon_sweep(alt, null, taus, delta=1e-5, confidence_level=0.9,
                                 method=method, variance=variance)  # fmt: skip
        want = [lidp_epsilon(alt >= t, null >= t, delta=1e-5, confidence_level=0.9,
                             method=method, variance=variance).epsilon for t in taus]  # fmt: skip
        assert got.tolist() == want
    assert got.max() > 1.0


def test_the_threshold_sweep_refuses_what_lidp_epsilon_refuses():
    from dpaudit.bounds import lidp_epsilon_sweep

    alt, null = np.ones((5, 4)), np.zeros((5, 3))
    with pytest.raises(ValueError, match="statistics_null must have as many canaries"):
        lidp_epsilon_sweep(alt, null, [0.5])
    with pytest.raises(ValueError, match="needs at least 4 canaries"):
        lidp_epsilon_sweep(alt[:, :3], null, [0.5])
    with pytest.raises(ValueError, match="thresholds must have 1 dimension"):
        lidp_epsilon_sweep(alt, np.zeros((5, 4)), [[0.5]])
    with pytest.raises(ValueError, match="statistics_alternative must contain only finite"):
        lidp_epsilon_sweep(np.full((5, 4), np.nan), np.zeros((5, 4)), [0.5])
