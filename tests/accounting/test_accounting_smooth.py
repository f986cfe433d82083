"""Smooth sensitivity of the data-dependent RDP and the GNSS release (formulas.md §1.6,
reference values §1.8 items 4–5), preconditions C5/C6, a brute-force check of the local
sensitivity, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accounting import (
    gnmax_local_sensitivity,
    gnmax_plateau,
    gnmax_rdp,
    gnss_rdp,
    gnss_release,
    pate_local_sensitivity,
    smooth_sensitivity,
    smooth_sensitivity_conditions,
    threshold_local_sensitivity,
    threshold_rdp,
)

THREE = np.array([[230, 15, 5] + [0] * 7, [150, 60, 40] + [0] * 7, [120, 110, 20] + [0] * 7])


def test_gnmax_local_sensitivity_reference_small():
    ls = gnmax_local_sensitivity([10, 0, 0], 10, 0.5, 1.5)
    want = [3.13503646e-17, 1.60178280e-08, 5.90681786e-03] + [5.99981308] * 7
    np.testing.assert_allclose(ls, want, rtol=1e-8)


def test_gnmax_local_sensitivity_reference_large():
    ls = gnmax_local_sensitivity([1000, 500, 300, 200, 0], 2000, 250, 10)
    assert ls.shape == (2000,)
    assert np.all(ls[:298] == 0)
    np.testing.assert_allclose(ls[298:300], [2.77693450548e-7, 2.10853979548e-6], rtol=1e-9)
    np.testing.assert_allclose(ls[300:], 2.73113623988e-6, rtol=1e-9)


def test_threshold_local_sensitivity_reference():
    ls = threshold_local_sensitivity([20, 10, 0], 30, 16, 2, 10)
    want = [0, 0, 0, 1.48454129e-4, 1.47826870e-2, 3.94153241e-2, 6.45775697e-2,
            9.01543247e-2, 1.16054002e-1, 1.42180452e-1, 1.42180452e-1, 1.48454129e-4,
            1.47826870e-2, 3.94153241e-2, 6.45775697e-2, 9.01543266e-2, 1.16054000e-1,
            1.42180452e-1, 1.68302106e-1, 1.93127860e-1] + [0] * 10  # fmt: skip
    # the reference values carry ~2e-8 relative noise from computing log(1−p) as
    # log1mexp(log p); ours uses log Φ(·) directly, so the two symmetric sides agree exactly
    np.testing.assert_allclose(ls, want, rtol=5e-8, atol=0)


def test_threshold_local_sensitivity_brute_force():
    """ls[d] = max over max-counts within distance d of |R[v±1] − R[v]| (table of R by hand)."""
    n_t, t, s1, lam = 40, 25.0, 3.0, 8.0
    r = np.array([threshold_rdp([v, 0], t, s1, [lam])[0] for v in range(n_t + 1)])
    ls = threshold_local_sensitivity([31, 9], n_t, t, s1, lam)
    for d in range(n_t):
        cands = []
        for v in (31 + d, 31 - d):
            if 0 <= v <= n_t:
                nb = [abs(r[v + e] - r[v]) for e in (-1, 1) if 0 <= v + e <= n_t]
                cands.append(max(nb))
        want = max(cands) if d < max(31, n_t - 31) else 0.0
        assert ls[d] == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_gnss_end_to_end_item5():
    p = gnmax_plateau(40, 20, 10)
    assert p.log_q0 == pytest.approx(-3.1568730, abs=5e-8)
    assert p.log_q1 == pytest.approx(-3.2603128, abs=5e-8)
    rho = float(gnmax_rdp(THREE, 40, [20.0]).sum())
    assert rho == pytest.approx(0.025249052, abs=5e-10)
    ls = pate_local_sensitivity(THREE, num_teachers=250, sigma=40, order=20)
    assert smooth_sensitivity(ls, 0.02) == pytest.approx(8.6821206e-4, rel=1e-7)
    r = gnss_release(rho, ls, 20, 1e-8, beta=0.02, rng=0)
    assert r.sigma_s == pytest.approx(28.835356, rel=1e-7)
    assert r.gnss_cost == pytest.approx(0.088441465, rel=1e-8)
    assert r.epsilon_data_dependent == pytest.approx(0.99475856, rel=1e-8)
    assert r.epsilon_expected == pytest.approx(1.0832000, rel=1e-7)
    assert r.noise_std == pytest.approx(0.025035204, rel=1e-7)
    assert r.selection == "explicit" and r.seed == 0
    # the released value is the expectation plus noise_std·Z with the seeded Z
    z = float(np.random.default_rng(np.random.SeedSequence(0)).standard_normal())
    assert r.epsilon_released == pytest.approx(r.epsilon_expected + r.noise_std * z, rel=1e-14)


def test_gnss_reference_rule_picks_the_best_beta():
    rho = float(gnmax_rdp(THREE, 40, [20.0]).sum())
    ls = pate_local_sensitivity(THREE, num_teachers=250, sigma=40, order=20)
    auto = gnss_release(rho, ls, 20, 1e-8, rng=1)
    assert auto.selection == "none"
    scores = []
    for k in range(30, 50):
        r = gnss_release(rho, ls, 20, 1e-8, beta=k / 100 / 20, rng=1)
        scores.append(rho + r.gnss_cost + 2 * r.noise_std)
    best = 0.30 + 0.01 * int(np.argmin(scores))
    assert auto.beta == pytest.approx(best / 20, rel=1e-12)


def test_gnss_rdp_reference_and_domain():
    assert gnss_rdp(0.02, 10.0, 20.0) == pytest.approx(0.2715684157, abs=5e-11)
    # σ_s = ∞ (zero smooth sensitivity) leaves only the β term
    assert gnss_rdp(0.01, math.inf, 10.0) == pytest.approx(
        (0.1 - 0.5 * math.log(0.8)) / 9, rel=1e-14
    )
    with pytest.raises(ValueError, match="order"):
        gnss_rdp(0.05, 10.0, 10.0)  # λ = 1/(2β)
    with pytest.raises(ValueError, match="beta"):
        gnss_rdp(0.0, 10.0, 10.0)
    with pytest.raises(ValueError, match="sigma_s"):
        gnss_rdp(0.01, 0.0, 10.0)
    with pytest.raises(ValueError, match="order"):
        gnss_rdp(0.01, 1.0, 1.0)


def test_zero_local_sensitivity_needs_no_noise():
    r = gnss_release(0.5, np.zeros(10), 10, 1e-5, rng=0)
    assert r.noise_std == 0.0 and r.sigma_s == math.inf and r.smooth_sensitivity == 0.0
    assert r.epsilon_released == r.epsilon_expected


def test_smooth_sensitivity_definition():
    ls = np.array([0.1, 0.5, 0.2, 3.0])
    for beta in (0.01, 0.5, 2.0):
        want = max(math.exp(-beta * d) * x for d, x in enumerate(ls))
        assert smooth_sensitivity(ls, beta) == pytest.approx(want, rel=1e-15)


def test_conditions_c5_c6_reference():
    a = smooth_sensitivity_conditions(20, 10, 25)
    b = smooth_sensitivity_conditions(30, 10, 25)
    assert (a.c5, a.c6) == (True, False)
    assert (b.c5, b.c6) == (True, True)


def test_pate_local_sensitivity_sums_steps():
    t, s1 = 100.0, 20.0
    w = np.array([1.0, 0.0, 0.5])
    tot = pate_local_sensitivity(
        THREE, num_teachers=250, sigma=40, order=20, threshold=t, sigma1=s1, weights=w
    )
    want = sum(
        threshold_local_sensitivity(row, 250, t, s1, 20)
        + wi * gnmax_local_sensitivity(row, 250, 40, 20)
        for row, wi in zip(THREE, w, strict=True)
    )
    np.testing.assert_allclose(tot, want, rtol=1e-14)


def test_bad_input():
    with pytest.raises(ValueError, match="votes"):
        gnmax_local_sensitivity([[1, 2], [3, 4]], 10, 1.0, 2.0)
    with pytest.raises(ValueError, match="num_teachers"):
        gnmax_local_sensitivity([5, 1], 0, 1.0, 2.0)
    with pytest.raises(ValueError, match="sigma"):
        gnmax_local_sensitivity([5, 1], 10, -1.0, 2.0)
    with pytest.raises(ValueError, match="order"):
        gnmax_local_sensitivity([5, 1], 10, 1.0, 1.0)
    with pytest.raises(ValueError, match="threshold"):
        threshold_local_sensitivity([5, 1], 10, -2.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="num_teachers"):
        threshold_local_sensitivity([50, 1], 10, 2.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="num_classes"):
        gnmax_plateau(10.0, 5.0, 1)
    with pytest.raises(ValueError, match="beta"):
        smooth_sensitivity([0.1], -1.0)
    with pytest.raises(ValueError, match="local_sensitivity"):
        smooth_sensitivity([-0.1], 1.0)
    with pytest.raises(ValueError, match="rho_total"):
        gnss_release(-1.0, [0.1], 10, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        gnss_release(1.0, [0.1], 10, 0.0)
    with pytest.raises(ValueError, match="sigma_s"):
        gnss_release(1.0, [0.1], 10, 1e-5, sigma_s=3.0)
    with pytest.raises(ValueError, match="threshold"):
        pate_local_sensitivity(THREE, num_teachers=250, sigma=40, order=20, threshold=10.0)
    with pytest.raises(ValueError, match="weights"):
        pate_local_sensitivity(THREE, num_teachers=250, sigma=40, order=20, weights=[2.0, 0, 0])
