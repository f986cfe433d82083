"""Subsampled Gaussian via dp-accounting (formulas.md §6) and label DP (§7): reference
values, the integer-order series in mpmath, agreement with dp-accounting's accountant."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    RDPCurve,
    gaussian_label_rdp,
    laplace_label_epsilon,
    private_knn_epsilon,
    private_knn_rdp,
    randomized_response,
    randomized_response_epsilon,
    subsampled_gaussian_rdp,
)

dp_accounting = pytest.importorskip("dp_accounting")


def mp_subsampled_rdp(q, z, alpha):
    """Mironov, Talwar, Zhang 2019 §3.3, integer α: log(A_α)/(α − 1) at 50 digits."""
    with mp.workdps(50):
        q, z = mp.mpf(q), mp.mpf(z)
        a = mp.fsum(
            mp.binomial(alpha, j)
            * (1 - q) ** (alpha - j)
            * q**j
            * mp.e ** ((j * j - j) / (2 * z * z))
            for j in range(alpha + 1)
        )
        return float(mp.log(a) / (alpha - 1))


def test_reference_rdp_values():
    c = subsampled_gaussian_rdp(0.01, 1.1, [2.0, 2.5, 8.0, 32.0])
    np.testing.assert_allclose(
        c.epsilons, [1.2851008e-4, 1.6215220e-4, 5.8407034e-4, 8.4694164], rtol=1e-7
    )


@pytest.mark.parametrize(
    ("q", "z"), [(0.01, 1.1), (0.15, 40 / math.sqrt(2)), (0.5, 2.0), (0.001, 0.8)]
)
def test_integer_orders_match_mpmath_series(q, z):
    alphas = [2, 3, 5, 12, 40]
    got = subsampled_gaussian_rdp(q, z, [float(a) for a in alphas]).epsilons
    np.testing.assert_allclose(got, [mp_subsampled_rdp(q, z, a) for a in alphas], rtol=1e-9)


def test_edge_rates():
    assert np.all(subsampled_gaussian_rdp(0.0, 1.0, [2.0, 10.0]).epsilons == 0)
    np.testing.assert_allclose(
        subsampled_gaussian_rdp(1.0, 2.0, [2.0, 10.0]).epsilons, [2 / 8, 10 / 8]
    )
    np.testing.assert_allclose(
        subsampled_gaussian_rdp(0.3, 3.0, [2.0, 10.0], count=7).epsilons,
        7 * subsampled_gaussian_rdp(0.3, 3.0, [2.0, 10.0]).epsilons,
        rtol=1e-14,
    )


def test_reference_epsilons():
    grid = np.array(dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=float)
    c = subsampled_gaussian_rdp(0.01, 1.1, grid, count=1000).to_dp(1e-5)
    assert c.epsilon == pytest.approx(1.711770, abs=5e-7) and c.order == 9.6
    # DEFAULT_ORDERS contains dp-accounting's grid, so the same optimum is found
    assert subsampled_gaussian_rdp(0.01, 1.1, count=1000).to_dp(1e-5).epsilon == pytest.approx(
        1.711770, abs=5e-7
    )
    knn = private_knn_rdp(sampling_rate=0.15, sigma=40, num_queries=1000)
    assert knn.to_dp(1e-5).epsilon == pytest.approx(0.657837, abs=5e-7)
    assert knn.to_dp(1e-5).order == 25
    screen = subsampled_gaussian_rdp(0.15, 40, count=1000)
    assert screen.to_dp(1e-5).epsilon == pytest.approx(0.451878, abs=5e-7)
    both = private_knn_rdp(
        sampling_rate=0.15, sigma=40, sigma1=40, num_queries=1000, num_answered=600
    )
    assert both.to_dp(1e-5).epsilon == pytest.approx(0.692262, abs=5e-7)
    assert both == screen + subsampled_gaussian_rdp(0.15, 40 / math.sqrt(2), count=600)


@pytest.mark.parametrize(
    ("q", "z", "z1", "nq", "na"),
    [(0.15, 40, 40, 1000, 600), (0.01, 1.1, None, 1000, None), (0.2, 30, 10, 300, 10)],
)
def test_agreement_with_dp_accounting_public_api(q, z, z1, nq, na):
    """Our curve + our conversion vs dp-accounting's own accountant and conversion."""
    ours = private_knn_rdp(sampling_rate=q, sigma=z, sigma1=z1, num_queries=nq, num_answered=na)
    theirs = private_knn_epsilon(
        1e-5, sampling_rate=q, sigma=z, sigma1=z1, num_queries=nq, num_answered=na
    )
    conv = ours.to_dp(1e-5)
    assert conv.epsilon == pytest.approx(theirs.epsilon, rel=1e-12)
    assert conv.order == theirs.order
    # independently: an accountant composed by hand with the dp-accounting API
    acct = dp_accounting.rdp.RdpAccountant(orders=DEFAULT_ORDERS.tolist())
    events = []
    if z1 is not None:
        events.append(
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z1)), nq
            )
        )
    events.append(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z / math.sqrt(2))),
            nq if na is None else na,
        )
    )
    acct.compose(dp_accounting.ComposedDpEvent(events))
    assert acct.get_epsilon(1e-5) == pytest.approx(conv.epsilon, rel=1e-12)


def test_label_dp_reference_values():
    assert laplace_label_epsilon(0.5) == 4.0
    assert laplace_label_epsilon(0.7 / math.sqrt(2)) == pytest.approx(
        2 * math.sqrt(2) / 0.7, rel=1e-15
    )
    for s, eps, order in [
        (1.0, 7.077391578, 4.2),
        (2.0, 3.188991563, 7.2),
        (0.5, 16.512875947, 2.6),
    ]:
        conv = gaussian_label_rdp(s).to_dp(1e-5)
        assert conv.epsilon == pytest.approx(eps, abs=5e-9)
        assert conv.order == order
    rr = randomized_response(2.0, 10)
    assert rr.keep_probability == pytest.approx(0.4508530604, abs=5e-11)
    assert rr.other_probability == pytest.approx(0.0610163266, abs=5e-11)
    assert rr.keep_probability + 9 * rr.other_probability == pytest.approx(1.0, rel=1e-15)
    assert randomized_response_epsilon(rr.keep_probability, 10) == pytest.approx(2.0, rel=1e-13)


def test_label_dp_properties():
    # Gaussian on one-hot = Gaussian mechanism with Δ₂ = √2; noisings compose
    g = gaussian_label_rdp(1.5, count=3)
    expect = 3 * RDPCurve.gaussian(1.5, sensitivity=math.sqrt(2))
    np.testing.assert_allclose(g.epsilons, expect.epsilons, rtol=1e-14)
    np.testing.assert_allclose(g.epsilons, 3 * DEFAULT_ORDERS / 2.25, rtol=1e-15)
    # RR: the likelihood ratio of the two outputs is e^ε; uniform at ε = 0; huge ε stays finite
    for eps, c in [(0.0, 4), (1.3, 2), (700.0, 100)]:
        rr = randomized_response(eps, c)
        assert math.isfinite(rr.keep_probability)
        if eps < 700:
            assert rr.keep_probability / rr.other_probability == pytest.approx(
                math.exp(eps), rel=1e-13
            )
    assert randomized_response(0.0, 4).keep_probability == pytest.approx(0.25)
    assert randomized_response_epsilon(0.25, 4) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="sampling_rate"):
        subsampled_gaussian_rdp(1.5, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        subsampled_gaussian_rdp(0.1, 0.0)
    with pytest.raises(ValueError, match="count"):
        subsampled_gaussian_rdp(0.1, 1.0, count=-1)
    with pytest.raises(ValueError, match="orders"):
        subsampled_gaussian_rdp(0.1, 1.0, [])
    with pytest.raises(ValueError, match="num_answered"):
        private_knn_rdp(sampling_rate=0.1, sigma=1.0, sigma1=1.0, num_queries=5, num_answered=6)
    with pytest.raises(ValueError, match="sigma1"):
        private_knn_rdp(sampling_rate=0.1, sigma=1.0, num_queries=5, num_answered=3)
    with pytest.raises(ValueError, match="delta"):
        private_knn_epsilon(1.0, sampling_rate=0.1, sigma=1.0, num_queries=5)
    with pytest.raises(ValueError, match="scale"):
        laplace_label_epsilon(0.0)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_label_rdp(-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        randomized_response(-0.1, 3)
    with pytest.raises(ValueError, match="num_classes"):
        randomized_response(1.0, 1)
    with pytest.raises(ValueError, match="keep_probability"):
        randomized_response_epsilon(1.0, 3)
    with pytest.raises(ValueError, match="keep_probability"):
        randomized_response_epsilon(0.2, 3)


# ------------------------------------------------------------------ issue 28: work caps


def test_issue28_huge_order_grid_is_refused_before_any_work():
    """100,000 orders used to run for minutes in dp-accounting's series; now refused."""
    import time

    from dpaudit.accounting import _subsampled

    grid = np.linspace(1.01, 1000, 100_000)
    calls = [
        lambda: subsampled_gaussian_rdp(0.1, 2.0, grid),
        lambda: private_knn_rdp(sampling_rate=0.1, sigma=40.0, num_queries=10, orders=grid),
        lambda: private_knn_epsilon(
            1e-5, sampling_rate=0.1, sigma=40.0, num_queries=10, orders=grid
        ),
    ]
    for call in calls:
        start = time.perf_counter()
        with pytest.raises(ValueError, match=r"orders=<100000 orders.*MAX_SERIES_TERMS"):
            call()
        assert time.perf_counter() - start < 2.0
    assert _subsampled.MAX_SERIES_TERMS == 4_000_000


def test_issue28_series_cap_counts_terms_per_order_and_can_be_raised(monkeypatch):
    from dpaudit.accounting import _subsampled

    monkeypatch.setattr(_subsampled, "MAX_SERIES_TERMS", 10)
    subsampled_gaussian_rdp(0.1, 2.0, [2.0, 3.0])  # 3 + 4 terms
    with pytest.raises(ValueError, match=r"about 12 series terms.*cap of 10"):
        subsampled_gaussian_rdp(0.1, 2.0, [2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="about 2e\\+03 series terms"):
        subsampled_gaussian_rdp(0.1, 2.0, [2.5])  # a fractional order: up to 2000 terms
    # screening and aggregation are two events: twice the terms
    with pytest.raises(ValueError, match=r"for 2 event\(s\)"):
        private_knn_rdp(
            sampling_rate=0.1, sigma=40.0, sigma1=40.0, num_queries=10, orders=[2.0, 3.0]
        )
    monkeypatch.setattr(_subsampled, "MAX_SERIES_TERMS", 10**9)
    subsampled_gaussian_rdp(0.1, 2.0, [2.0, 3.0, 4.0])
