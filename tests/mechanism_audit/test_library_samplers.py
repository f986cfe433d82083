"""Floating-point tests of the DP libraries' Laplace samplers (issue 31, item 3).

Mironov 2012 (CCS) breaks the textbook sampler ``x + s·(−b·ln U)`` because the outputs input
0 can produce are a sparse, known set of doubles that ``1 + noise`` mostly leaves. The same
membership test (:func:`naive_laplace_producible`) is run here on OpenDP's and python-dp's
samplers: it separates the two inputs of the naive sampler completely, and hits the outputs of
the libraries' inputs 0 and 1 equally often. python-dp's noise lies on a power-of-two grid
(its "granularity") that integer inputs do not leave, so no output of input 1 is one that
input 0 cannot produce. The libraries draw from OS entropy (not seedable): the statistical
checks use tolerances that a correct sampler fails with probability below 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.systems import MECHANISMS
from dpaudit.systems.dp_mechanisms import naive_laplace_producible

N = 4000
# |r0 − r1| of two independent binomial rates of N draws exceeds this with probability < 1e-6
# (normal approximation with the worst-case variance 1/4; z = 4.9).
TOLERANCE = 4.9 * math.sqrt(2 * 0.25 / N)


def _outputs(name: str, x: float) -> np.ndarray:
    spec = MECHANISMS.get(name)
    return spec.sample(np.array([x]), N, np.random.default_rng(0))[:, 0]


def _granularity(values: np.ndarray) -> np.ndarray:
    """The largest power of two of which each nonzero double is an integer multiple."""
    v = values[values != 0]
    mantissa, exponent = np.frexp(v)
    m = np.abs(mantissa * 2.0**53).astype(np.int64)
    trailing = np.log2((m & -m).astype(float)).astype(int)  # lowest set bit
    return np.ldexp(1.0, exponent - 53 + trailing)


def _membership_rates(name: str) -> tuple[float, float]:
    r0 = float(naive_laplace_producible(_outputs(name, 0.0)[:, None]).mean())
    r1 = float(naive_laplace_producible(_outputs(name, 1.0)[:, None]).mean())
    return r0, r1


def test_mironov_membership_test_separates_the_naive_sampler():
    r0, r1 = _membership_rates("naive-float-laplace")
    assert r0 == 1.0  # every output of input 0 is a value the sampler can produce
    assert r1 < 0.5  # most outputs of input 1 are not: the event only input 1 reaches


@pytest.mark.parametrize(
    ("name", "module"), [("opendp-laplace", "opendp"), ("pydp-laplace", "pydp")]
)
def test_library_laplace_samplers_resist_the_membership_test(name, module):
    pytest.importorskip(module)
    r0, r1 = _membership_rates(name)
    assert abs(r0 - r1) <= TOLERANCE, (name, r0, r1)


@pytest.mark.parametrize(
    ("name", "module"), [("opendp-laplace", "opendp"), ("pydp-laplace", "pydp")]
)
def test_library_laplace_samplers_have_the_claimed_scale(name, module):
    pytest.importorskip(module)
    spec = MECHANISMS.get(name)
    out = _outputs(name, 0.0)
    # Kolmogorov-Smirnov against Laplace(0, 1/eps): a correct sampler fails with p < 1e-6.
    p = stats.kstest(out, stats.laplace(scale=1.0 / spec.claimed_epsilon).cdf).pvalue
    assert p > 1e-6, (name, p)


def test_pydp_noise_lies_on_a_power_of_two_grid_that_integer_inputs_keep():
    pytest.importorskip("pydp")
    g0 = _granularity(_outputs("pydp-laplace", 0.0))
    grid = float(g0.min())
    assert grid >= 2.0**-45  # a coarse grid, not the full resolution of doubles
    out1 = _outputs("pydp-laplace", 1.0)
    # every output of input 1 is a multiple of input 0's grid: none lies where input 0 cannot
    np.testing.assert_array_equal(np.mod(out1, grid), 0.0)
    # the naive sampler's outputs of input 0 have no such grid: their resolution follows the
    # magnitude (relative precision), down to far finer steps
    naive = _granularity(_outputs("naive-float-laplace", 0.0))
    assert float(naive.min()) < grid * 2.0**-10
