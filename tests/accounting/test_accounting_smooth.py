"""Smooth sensitivity of the data-dependent RDP and the GNSS release (Papernot et al. 2018,
arXiv:1802.08908, App. B; reference values of the PATE scripts), preconditions C5/C6, a
brute-force check of the local sensitivity, agreement with an mpmath implementation of Alg. 3–5
on 220 random cases where float64 underflows (issue 13), bad and extreme input."""

from __future__ import annotations

import itertools
import json
import math
import pathlib

import mpmath as mp
import numpy as np
import pytest
from scipy import special

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

# ---------------------------------------------------------------------------------------------
# The mpmath oracle: Papernot et al. 2018 (arXiv:1802.08908) App. B, Alg. 3–5, from the paper's
# formulas at 60 significant digits. mpmath numbers have an unbounded exponent, so q, q0, q1,
# B_L and B_U are plain probabilities here (no log-space care, no underflow).
# ---------------------------------------------------------------------------------------------
_MP_DPS = 60


def mp_dd(q, sigma, lam):
    """Thm 6 with Prop. 10's parameters: (1/(λ−1))·log((1−q)·A^{λ−1} + q·B^{λ−1})."""
    mu2 = sigma * mp.sqrt(-mp.log(q))
    mu1 = mu2 + 1
    eps1, eps2 = mu1 / sigma**2, mu2 / sigma**2
    a = (1 - q) / (1 - (q * mp.exp(eps2)) ** ((mu2 - 1) / mu2))
    b = mp.exp(eps1) / q ** (1 / (mu1 - 1))
    return mp.log((1 - q) * a ** (lam - 1) + q * b ** (lam - 1)) / (lam - 1)


def mp_log_q0(sigma, lam):
    """Alg. 3 step 1: ub = min(−(1+1/σ)², −((λ−0.99)/σ)², −1/σ²); bracket; root of DD − λ/σ²."""
    ind = lam / sigma**2
    ub = min(-((1 + 1 / sigma) ** 2), -(((lam - mp.mpf("0.99")) / sigma) ** 2), -1 / sigma**2)

    def g(x):
        return mp_dd(mp.exp(x), sigma, lam) - ind

    if g(ub) < 0:
        return ub
    lb = 2 * ub
    while g(lb) > 0:
        lb *= mp.mpf("1.5")
        if lb < -10000:
            raise ValueError("no crossing")
    return mp.findroot(g, (lb, ub), solver="anderson")


def mp_sf_inverse(p):
    """w with Φ̄(w) = p: Newton on log Φ̄(w) = log p from the float estimate."""
    target = mp.log(p)
    w = mp.mpf(-float(special.ndtri_exp(float(target))))
    for _ in range(100):
        tail = mp.ncdf(-w)
        step = (mp.log(tail) - target) / (-mp.npdf(w) / tail)
        w -= step
        if abs(step) <= abs(w) * mp.mpf(10) ** (5 - mp.mp.dps):
            return w
    raise AssertionError("Newton did not converge")


def mp_b(q, sigma, m, sign):
    """Prop. 13: B_L (sign = +1) and B_U (sign = −1, capped at 1); 0 ↦ 0."""
    if q == 0:
        return mp.mpf(0)
    w = mp_sf_inverse(q / (m - 1))
    out = (m - 1) * mp.ncdf(-(w + sign * mp.sqrt(2) / sigma))
    return min(mp.mpf(1), out)


class MpBeta:
    """β(q) and LS(q) of Alg. 3."""

    def __init__(self, sigma, lam, m):
        self.sigma, self.lam, self.m = mp.mpf(sigma), mp.mpf(lam), m
        self.ind = self.lam / self.sigma**2
        self.q0 = mp.exp(mp_log_q0(self.sigma, self.lam))
        self.q1 = mp_b(self.q0, self.sigma, m, +1)

    def beta(self, q):
        if q == 0:
            return mp.mpf(0)
        return self.ind if q >= self.q0 else mp_dd(q, self.sigma, self.lam)

    def ls(self, q):
        if self.q1 <= q <= self.q0:
            q = self.q1
            up = self.ind  # B_U(q1) = B_U(B_L(q0)) = q0 by Prop. 13's definitions
        else:
            up = self.beta(mp_b(q, self.sigma, self.m, -1))
        b = self.beta(q)
        return max(up - b, b - self.beta(mp_b(q, self.sigma, self.m, +1)))


def mp_q_union(votes, sigma):
    """Prop. 7: Σ_{i≠i*} Φ̄((n_{i*} − n_i)/(√2σ)), i* the first argmax, capped at 1 − 1/m."""
    istar = max(range(len(votes)), key=lambda i: (votes[i], -i))
    total = mp.fsum(
        mp.ncdf(-(mp.mpf(votes[istar]) - votes[i]) / (mp.sqrt(2) * sigma))
        for i in range(len(votes))
        if i != istar
    )
    return min(total, 1 - mp.mpf(1) / len(votes))


def mp_local_sensitivity(votes, num_teachers, sigma, lam):
    """Alg. 4–5: the plateau everywhere, then walk the histogram towards the plateau."""
    with mp.workdps(_MP_DPS):
        bf = MpBeta(sigma, lam, len(votes))
        res = [bf.ls(bf.q1)] * num_teachers
        s = mp.mpf(sigma)
        q = mp_q_union(votes, s)
        if bf.q1 <= q <= bf.q0:
            return res, bf
        cur = sorted(votes, reverse=True)
        res[0] = bf.ls(q)
        d = 0
        if q > bf.q0:
            while q > bf.q0 and cur[1] > 0 and d + 1 < num_teachers:
                d += 1
                cur[0] += 1
                cur[1] -= 1
                cur = sorted(cur, reverse=True)
                q = mp_q_union(cur, s)
                res[d] = bf.ls(q)
        else:
            while q < bf.q1 and d + 1 < num_teachers:
                d += 1
                cur[0] -= 1
                cur[1] += 1
                cur = sorted(cur, reverse=True)
                q = mp_q_union(cur, s)
                res[d] = bf.ls(q)
        return res, bf


#: issue 13: (votes, N_T, σ, λ) where q0/q1 underflowed or B_U(q1) landed an ulp below q0
ISSUE_CASES = [
    ([100.0, 0.0], 100, 1.0, 50.0),
    ([0.0, 50.0, 0.0], 50, 0.356956, 50.0),
    ([0.0, 0.0, 10.0], 10, 1.02475, 2.0),
]

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


# -- agreement with the mpmath oracle of Alg. 3–5 (issue 13, item 2) --------------------------
_REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "data" / "smooth_sensitivity_mpmath.json"


def _reference_cases() -> list[dict]:
    return json.loads(_REFERENCE.read_text())["cases"]


def _expand(case: dict) -> np.ndarray:
    out = np.full(case["num_teachers"], float(case["plateau"]))
    for d, value in case["visited"]:
        out[d] = float(value)
    return out


def _scaled_error(got: np.ndarray, want: np.ndarray, sigma: float, order: float) -> float:
    """|Δ| / (|LS| + λ/σ²): LS is a difference of β values of size up to λ/σ², so float64
    resolves it to about 1e-16 of λ/σ² (not of LS itself when LS is far smaller)."""
    return float(np.max(np.abs(got - want) / (np.abs(want) + order / sigma**2)))


def test_local_sensitivity_agrees_with_mpmath_on_random_cases():
    """220 seeded random (votes, σ, λ) cases + the issue's three, half with σ ≤ 1 and 45% with
    λ ≥ 20 (q0, q1 often far below 1e-308): LS at every distance, log q0 and log q1.
    Observed: scaled LS error ≤ 1.1e-14, log q0 / log q1 relative error ≤ 2.7e-13."""
    cases = _reference_cases()
    assert len(cases) >= 200
    assert sum(c["sigma"] <= 1 for c in cases) >= 100 and sum(c["order"] >= 20 for c in cases) >= 90
    underflow = 0
    for case in cases:
        votes, n_t, sigma, lam = case["votes"], case["num_teachers"], case["sigma"], case["order"]
        got = gnmax_local_sensitivity(votes, n_t, sigma, lam)
        assert _scaled_error(got, _expand(case), sigma, lam) < 1e-11, case
        p = gnmax_plateau(sigma, lam, len(votes))
        assert p.log_q0 == pytest.approx(float(case["log_q0"]), rel=1e-11, abs=0)
        assert p.log_q1 == pytest.approx(float(case["log_q1"]), rel=1e-11, abs=0)
        underflow += p.log_q1 < -745.2  # q1 itself is below the smallest float64
    assert underflow >= 20  # the regime of the bug is well covered


@pytest.mark.parametrize("index", [0, 1, 2, 3, 50, 117])
def test_cached_reference_is_the_oracle_in_this_file(index):
    """The cached values are what mp_local_sensitivity (above) computes: regenerate with
    tests/data/make_smooth_sensitivity_reference.py after changing the oracle."""
    case = _reference_cases()[index]
    res, _ = mp_local_sensitivity(case["votes"], case["num_teachers"], case["sigma"], case["order"])
    want = np.array([float(x) for x in res])
    np.testing.assert_allclose(_expand(case), want, rtol=1e-20, atol=0)


def test_issue13_underflow_cases():
    """The three faults of issue 13 item 2, against the mpmath oracle's values."""
    assert gnmax_local_sensitivity([100, 0], 100, 1.0, 50.0).max() == pytest.approx(
        0.0632681155082414, rel=1e-11
    )  # was 0.0: q0 = e^-2401.98 underflowed, so q1 = 0 and the plateau vanished
    p = gnmax_plateau(1.0, 50.0, 2)
    assert p.log_q1 == pytest.approx(-2500.915038635, rel=1e-12)  # was −inf
    ls = gnmax_local_sensitivity([0, 50, 0], 50, 0.356956, 50.0)
    np.testing.assert_allclose(ls[:3], [0.0, 0.4835957555473622, 0.4835957555473622], rtol=1e-11)
    # was [392.41, 0, 0]: B_U(q) and B_L(q) underflowed to 0 and β(0) = 0 was read
    # log q0 equals its starting bound, where β jumps from DD to λ/σ²: B_U(q1) = q0 exactly
    ls = gnmax_local_sensitivity([0, 0, 10], 10, 1.02475, 2.0)
    assert ls[3:] == pytest.approx([1.734963816234051] * 7, rel=1e-12)  # was 1.2141


def test_conditions_grid_stays_in_log_space():
    """σ = 1, m = 2, λ = 50: q1 = e^-2500.9. The C6 grid used to be −inf (exp underflow); now
    the verdicts on a 60-point grid agree with mpmath's on the same grid."""
    s, m, lam, n = 1.0, 2, 50.0, 60
    r = smooth_sensitivity_conditions(s, m, lam, num_points=n, span=30.0)
    assert math.isfinite(r.log_q1) and r.log_q1 == pytest.approx(-2500.915038635, rel=1e-12)
    with mp.workdps(40):
        grid5 = [r.log_q0 - 30.0 + 30.0 * i / (n - 1) for i in range(n)]
        dd5 = [mp_dd(mp.exp(x), s, lam) for x in grid5]
        grid6 = [r.log_q1 - 30.0 + 30.0 * i / (n - 1) for i in range(n)]
        f6 = [
            mp_dd(mp_b(mp.exp(x), mp.mpf(s), m, -1), s, lam) - mp_dd(mp.exp(x), s, lam)
            for x in grid6
        ]
    assert r.c5 == all(b >= a for a, b in itertools.pairwise(dd5))
    assert r.c6 == all(b >= a for a, b in itertools.pairwise(f6))


@pytest.mark.parametrize("sigma", [1e-300, 1e300])
def test_extreme_sigma_is_a_clear_value_error(sigma):
    """λ/σ² outside float64 (σ² underflows or overflows): a ValueError naming σ, never a
    ZeroDivisionError / OverflowError (issue 13 item 4)."""
    with pytest.raises(ValueError, match=r"sigma=.*float64"):
        gnmax_plateau(sigma, 20, 10)
    with pytest.raises(ValueError, match=r"sigma=.*float64"):
        gnmax_local_sensitivity([10, 0, 0], 10, sigma, 20)
    with pytest.raises(ValueError, match=r"sigma=.*float64"):
        smooth_sensitivity_conditions(sigma, 10, 20)
    with pytest.raises(ValueError, match=r"sigma1=.*float64"):
        threshold_local_sensitivity([5, 3], 10, 4, sigma, 20)
    # GNSS with a huge noise multiplier is just its β term (σ_s² overflows to ∞)
    assert gnss_rdp(0.01, 1e300, 10.0) == pytest.approx((0.1 - 0.5 * math.log(0.8)) / 9, rel=1e-14)


def test_very_small_sigma_stays_in_log_space():
    """σ = 1e-3: log q1 = −4.004e8, against the oracle; σ = 1e-100 (q0 = e^-3.6e202, beyond
    mpmath's exponent range): finite, ordered, positive plateau."""
    res, bf = mp_local_sensitivity([10.0, 0.0, 0.0], 10, 1e-3, 20.0)
    got = gnmax_local_sensitivity([10, 0, 0], 10, 1e-3, 20.0)
    assert _scaled_error(got, np.array([float(x) for x in res]), 1e-3, 20.0) < 1e-12
    with mp.workdps(30):
        assert gnmax_plateau(1e-3, 20.0, 3).log_q1 == pytest.approx(float(mp.log(bf.q1)), rel=1e-13)
    p = gnmax_plateau(1e-100, 20.0, 10)
    assert math.isfinite(p.log_q0) and math.isfinite(p.log_q1) and p.log_q1 < p.log_q0
    ls = gnmax_local_sensitivity([10, 0, 0], 10, 1e-100, 20.0)
    assert np.all(np.isfinite(ls)) and ls.max() > 0


# ------------------------------------------------------------------ issue 28


def test_issue28_teachers_cap_refuses_before_allocating():
    import time
    import tracemalloc

    from dpaudit.accounting import _smooth

    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=r"num_teachers=1000000000.*MAX_TEACHERS"):
            gnmax_local_sensitivity([200, 30, 20], 10**9, 40.0, 20.0)
        with pytest.raises(ValueError, match=r"num_teachers=1000000000.*MAX_TEACHERS"):
            threshold_local_sensitivity([200, 30, 20], 10**9, 150.0, 50.0, 20.0)
        with pytest.raises(ValueError, match=r"num_teachers=1000000000.*MAX_TEACHERS"):
            pate_local_sensitivity([[200, 30, 20]], num_teachers=10**9, sigma=40.0, order=20.0)
        with pytest.raises(ValueError, match=r"1000 rows and num_teachers=1000000.*MAX_LS_WORK"):
            pate_local_sensitivity(
                np.tile([200.0, 30.0, 20.0], (1000, 1)), num_teachers=10**6, sigma=40.0,
                order=20.0,
            )  # fmt: skip
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 2.0
    assert peak < 50 * 2**20
    assert _smooth.MAX_TEACHERS == 10**6


def test_issue28_teachers_cap_can_be_raised(monkeypatch):
    from dpaudit.accounting import _smooth

    monkeypatch.setattr(_smooth, "MAX_TEACHERS", 100)
    with pytest.raises(ValueError, match="MAX_TEACHERS"):
        gnmax_local_sensitivity([10, 0, 0], 101, 0.5, 1.5)
    monkeypatch.setattr(_smooth, "MAX_TEACHERS", 101)
    assert gnmax_local_sensitivity([10, 0, 0], 101, 0.5, 1.5).shape == (101,)


@pytest.mark.parametrize(
    "call",
    [
        lambda: gnmax_local_sensitivity([200, 30, 20], 10, 40.0, 20.0),
        lambda: pate_local_sensitivity([[200, 30, 20]], num_teachers=10, sigma=40.0, order=20.0),
        lambda: pate_local_sensitivity(
            [[5, 3, 2], [200, 30, 20]], num_teachers=10, sigma=40.0, order=20.0
        ),
    ],
)
def test_issue28_votes_summing_above_the_teachers_are_refused(call):
    with pytest.raises(ValueError, match=r"votes must sum to at most num_teachers=10.*250"):
        call()


def test_issue28_votes_summing_to_the_teachers_are_accepted():
    assert gnmax_local_sensitivity([6.0, 3.0, 1.0], 10, 2.0, 5.0).shape == (10,)
    assert gnmax_local_sensitivity([6.0, 3.0, 0.0], 10, 2.0, 5.0).shape == (10,)  # abstentions


def _threshold_ls_loop(votes, n_t, threshold, sigma1, order):
    """The loop the vectorised tabulation replaced (bit-identity reference)."""
    from dpaudit.accounting._gnmax import rdp_gn_flat

    v = np.asarray(votes, dtype=np.float64)
    c = int(np.round(v.max()))
    counts = np.arange(n_t + 1, dtype=np.float64)
    z = (counts - threshold) / sigma1
    log_q = np.minimum(special.log_ndtr(z), special.log_ndtr(-z))
    r = rdp_gn_flat(log_q, math.sqrt(2.0) * sigma1, np.array([order]), with_masks=False).rdp[:, 0]
    step = np.abs(np.diff(r))
    ls_v = np.zeros(n_t + 1)
    ls_v[:-1] = step
    ls_v[1:] = np.maximum(ls_v[1:], step)
    out = np.zeros(n_t)
    for d in range(max(c, n_t - c)):
        best = 0.0
        if c + d <= n_t:
            best = max(best, ls_v[c + d])
        if c - d >= 0:
            best = max(best, ls_v[c - d])
        out[d] = best
    return out


@pytest.mark.parametrize(
    "args",
    [
        ([20, 10, 0], 30, 16.0, 2.0, 10.0),
        ([200, 30, 20], 250, 150.0, 50.0, 20.0),
        ([0, 0, 0], 7, 3.0, 1.0, 2.0),
        ([7, 0], 7, 3.0, 1.0, 2.0),
        ([1000, 500, 300, 200, 0], 2000, 250.0, 10.0, 40.0),
        ([3, 1], 5000, 2500.0, 1e-3, 80.0),
    ],
)
def test_issue28_vectorised_threshold_tabulation_is_bit_identical(args):
    np.testing.assert_array_equal(threshold_local_sensitivity(*args), _threshold_ls_loop(*args))
