"""The benchmark suite's mechanisms against their published definitions (naive oracles)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.systems import MECHANISMS, MechanismSpec
from dpaudit.systems.dp_mechanisms import (
    geometric_pmf,
    naive_laplace,
    naive_laplace_producible,
    rappor_bits,
    suite,
)

DP_SNIPER = [
    "laplace", "truncated-geometric", "noisy-hist1", "noisy-hist2", "report-noisy-max1",
    "report-noisy-max2", "report-noisy-max3", "report-noisy-max4", "svt1", "svt2", "svt3",
    "svt4", "svt5", "svt6", "rappor", "one-time-rappor", "laplace-parallel", "svt34-parallel",
    "prefix-sum", "numerical-svt",
]  # fmt: skip


def test_the_twenty_mechanisms_of_dp_sniper_are_registered_with_claims_and_sources():
    assert list(MECHANISMS.names("dp-sniper")) == DP_SNIPER
    for name in DP_SNIPER:
        spec = MECHANISMS.get(name)
        assert spec.claimed_epsilon > 0 and spec.source
        assert spec.published_lower is not None  # Bichsel et al. 2021 reference results
        out = spec.sample(np.ones(spec.dimensions), 7, np.random.default_rng(0))
        assert out.ndim == 2 and out.shape[0] == 7 and np.all(np.isfinite(out))
        one = spec(np.ones(spec.dimensions), np.random.default_rng(0))
        assert one.shape == (out.shape[1],)
    known_bad = {n for n in DP_SNIPER if not MECHANISMS.get(n).private}
    assert known_bad == {"noisy-hist2", "report-noisy-max3", "report-noisy-max4", "svt3",
                         "svt4", "svt5", "svt6", "svt34-parallel"}  # fmt: skip


def test_geometric_pmf_matches_balcer_vadhan_and_its_epsilon_is_the_theorem_s():
    # GeoSample's privacy (Balcer & Vadhan 2018, arXiv:1709.05396, Thm 4.7): ln(1 + 2^-k),
    # k = ceil(ln(2/eps)); at eps = 0.1, k = 3 and eps = ln(9/8).
    means = []
    for c in range(6):
        p = np.array(geometric_pmf(c, 5, 3))
        np.testing.assert_allclose(p.sum(), 1.0, rtol=0, atol=1e-12)
        means.append(float(p @ np.arange(6)))
    assert np.all(np.diff(means) > 0)  # a larger count shifts the output up
    spec = MECHANISMS.get("truncated-geometric")
    np.testing.assert_allclose(spec.claimed_epsilon, math.log(9 / 8), rtol=1e-12)
    np.testing.assert_allclose(spec.true_epsilon, math.log(9 / 8), rtol=1e-12)
    out = spec.sample(np.array([2.0]), 200_000, np.random.default_rng(1))[:, 0]
    freq = np.bincount(out.astype(int), minlength=6) / out.size
    np.testing.assert_allclose(freq, geometric_pmf(2, 5, 3), atol=0.004)
    with pytest.raises(ValueError, match="count must be in"):
        geometric_pmf(6, 5, 3)


def _laplace(g, scale, shape):
    e1 = g.standard_exponential(shape)
    return scale * (e1 - g.standard_exponential(shape))


def _svt1_oracle(x, rho, nu, t, c=1):
    """Lyu et al. 2017, Alg. 1, one run at a time."""
    out, count = [], 0
    for xi, ni in zip(x, nu, strict=True):
        if count >= c:
            out.append(-1.0)
            continue
        above = xi + ni >= rho + t
        out.append(1.0 if above else 0.0)
        count += above
    return out


def test_svt1_matches_a_loop_over_queries():
    spec = MECHANISMS.get("svt1")
    x = np.r_[np.ones(5), np.zeros(5)]
    out = spec.sample(x, 2000, np.random.default_rng(3))
    g = np.random.default_rng(3)  # same stream: rho (size, 1), then nu (size, 10),
    rho = _laplace(g, 20.0, (2000, 1))  # each Laplace as a difference of exponentials
    nu = _laplace(g, 40.0, (2000, 10))
    expected = [_svt1_oracle(x, rho[i, 0], nu[i], 0.5) for i in range(2000)]
    np.testing.assert_array_equal(out, np.array(expected))
    assert np.all((out == 1).sum(axis=1) <= 1)


def test_noisy_max_variants_report_index_or_value():
    g = np.random.default_rng(0)
    idx = MECHANISMS.get("report-noisy-max1").sample(np.array([0, 0, 200.0, 0, 0]), 500, g)
    assert np.mean(idx[:, 0] == 2) > 0.8
    val = MECHANISMS.get("report-noisy-max4").sample(np.ones(5), 500, g)
    assert np.all(val >= 1.0)  # exponential noise is one-sided: the output reveals the input


def test_rappor_bits_and_claims():
    bits = rappor_bits(1)
    assert 1 <= bits.sum() <= 4 and bits.size == 20
    np.testing.assert_array_equal(bits, rappor_bits(1))
    # Erlingsson et al. 2014: eps_inf = 2h ln((1 - f/2)/(f/2)), h = 4, f = 0.95
    np.testing.assert_allclose(MECHANISMS.get("one-time-rappor").claimed_epsilon,
                               8 * math.log(0.525 / 0.475), rtol=1e-12)  # fmt: skip


def test_suite_at_another_epsilon_scales_claims_and_true_values():
    at_one = {s.name: s for s in suite(1.0)}
    assert at_one["laplace"].true_epsilon == 1.0
    assert at_one["noisy-hist2"].true_epsilon == 1.0  # scale eps: true eps = 1/eps
    assert at_one["svt4"].true_epsilon == pytest.approx(1.75)  # (1 + 6c)/4 eps, c = 1
    assert all(s.published_lower is None for s in at_one.values())
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        suite(0.0)


def test_naive_float_laplace_is_caught_by_mironov_membership_test():
    g = np.random.default_rng(0)
    zero = naive_laplace(np.array([0.0]), 50_000, g)
    one = naive_laplace(np.array([1.0]), 50_000, g)
    assert naive_laplace_producible(zero).mean() == 1.0
    assert naive_laplace_producible(one).mean() < 0.6
    assert MECHANISMS.get("naive-float-laplace").true_epsilon == math.inf


def test_spec_validation_names_the_argument():
    def sample(db, size, rng):
        return np.zeros((size, 1))

    with pytest.raises(ValueError, match="claimed_epsilon must be a positive finite"):
        MechanismSpec("m", sample, 0.0, 1, "test")
    with pytest.raises(ValueError, match="claimed_epsilon must be a positive finite"):
        MechanismSpec("m", sample, -1.0, 1, "test")
    with pytest.raises(TypeError, match="sample must be callable"):
        MechanismSpec("m", None, 1.0, 1, "test")
    with pytest.raises(ValueError, match="dimensions must be a positive int"):
        MechanismSpec("m", sample, 1.0, 0, "test")
