"""The findings check of the private-prediction audit: interval routines against references,
coverage of the leakage intervals, verdicts and the multiplicity correction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.accounting import DEFAULT_ORDERS
from dpaudit.bounds import clopper_pearson, clopper_pearson_real
from dpaudit.experiments.private_prediction.findings import (
    FINDINGS,
    LeakageProfile,
    check_findings,
    composed_epsilon,
    kl_interval,
    leakage_interval,
    scale_max,
)

ORDERS = np.asarray(DEFAULT_ORDERS)
DELTA = 1e-6


def _kl(p, q):
    return sum(a * math.log(a / b) for a, b in ((p, q), (1 - p, 1 - q)) if a > 0)


@pytest.mark.parametrize(("mean", "n"), [(0.3, 40), (0.02, 500), (0.0, 50), (1.0, 12), (0.5, 7)])
def test_kl_interval_solves_its_equation_and_matches_a_grid(mean, n):
    lo, hi = kl_interval(mean, n, confidence_level=0.9)
    rhs = math.log(2 / 0.1) / n
    grid = np.linspace(1e-9, 1 - 1e-9, 200_001)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.nan_to_num(mean * np.log(mean / grid)) + np.nan_to_num(
            (1 - mean) * np.log((1 - mean) / (1 - grid))
        )
    inside = grid[kl <= rhs]
    assert lo <= mean <= hi
    np.testing.assert_allclose([lo, hi], [inside.min(), inside.max()], atol=2e-5)
    if lo > 0:
        np.testing.assert_allclose(_kl(mean, lo), rhs, rtol=1e-9)
    if hi < 1:
        np.testing.assert_allclose(_kl(mean, hi), rhs, rtol=1e-9)


def test_kl_interval_covers_means_of_bounded_variables():
    """Means of R variables in [0, 1] (fractions of a Beta law, not Bernoulli): the interval
    covers the true mean in at least 95 % of seeded repetitions."""
    gen = np.random.default_rng(3)
    a, b, r = 0.4, 6.0, 25
    mu = a / (a + b)
    cover = 0
    for _ in range(2000):
        x = gen.beta(a, b, size=r).mean()
        lo, hi = kl_interval(x, r, confidence_level=0.95)
        cover += lo <= mu <= hi
    assert cover / 2000 >= 0.95


def test_clopper_pearson_real_equals_the_library_at_integers():
    for k, n in [(0, 10), (3, 10), (10, 10), (57, 200)]:
        ref = clopper_pearson(k, n, confidence_level=0.9)
        np.testing.assert_allclose(
            clopper_pearson_real(k, n, confidence_level=0.9),
            (ref.low, ref.high),
            rtol=1e-12,
            atol=1e-15,
        )
    lo, hi = clopper_pearson_real(2.5, 10, confidence_level=0.9)  # between its neighbours
    below, above = (clopper_pearson_real(k, 10, confidence_level=0.9) for k in (2, 3))
    assert below[0] < lo < above[0] and below[1] < hi < above[1]
    with pytest.raises(ValueError, match="confidence_level"):
        kl_interval(0.5, 10, confidence_level=1.5)
    with pytest.raises(ValueError, match="n"):
        kl_interval(0.5, 0, confidence_level=0.9)


def _profile(kind, flips, trials, pbar, composition="repetitions", among=1, nq=1000):
    pbar = np.asarray(pbar, dtype=float)
    return LeakageProfile(kind, flips, trials, among, scale_max(pbar), pbar, composition, nq)


def _pair(top, shift):
    p = np.array([top, 1 - top - 0.01, 0.01])
    q = p + shift * np.array([-1.0, 1.0, 0.0])
    return np.stack([p, q])[None]


def test_composed_epsilon_is_monotone_in_the_flip_scale():
    gen = np.random.default_rng(0)
    for _ in range(5):
        p = gen.dirichlet(np.ones(6), size=4)
        q = gen.dirichlet(np.ones(6), size=4)
        prof = _profile("mean", 1.0, 10, np.stack([p, p + 0.2 * (q - p)], axis=1), "queries")
        eps = [composed_epsilon(prof, t, ORDERS, DELTA)[0] for t in np.linspace(0, 5, 11)]
        assert eps[0] == 0.0
        assert np.all(np.diff(eps) >= -1e-12)
    prof = _profile("binomial", 5, 10, _pair(0.7, 0.05))
    assert composed_epsilon(prof, 1.0, ORDERS, DELTA)[0] > 0
    empty = LeakageProfile("mean", 0.0, 10, 1, math.inf, np.zeros((0, 2, 3)), "queries", 5)
    assert composed_epsilon(empty, 2.0, ORDERS, DELTA)[0] == 0.0


def test_leakage_interval_covers_the_true_leakage():
    """The true model's ε (flip probability f) lies in the mapped interval in ≥ 95 % of
    seeded repetitions of R retrainings: the interval inherits the flip interval's
    coverage through a monotone map."""
    f, r = 0.3, 60
    direction = np.array([-0.1, 0.1, 0.0])
    p = np.array([0.6, 0.35, 0.05])

    def pbar_at(flip):
        return np.stack([p, p + (flip / f) * direction])[None]

    orders = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    truth = composed_epsilon(_profile("binomial", f * r, r, pbar_at(f)), 1.0, orders, DELTA)[0]
    gen = np.random.default_rng(1)
    cover = 0
    for _ in range(300):
        x = int(gen.binomial(r, f))
        prof = _profile("binomial", x, r, pbar_at(x / r))
        iv = leakage_interval(prof, 0.95, orders, DELTA)
        cover += iv.low - 1e-12 <= truth <= iv.high + 1e-12
    assert cover / 300 >= 0.93  # 0.95 up to the Monte-Carlo error of 300 repetitions


def _entries(flips):
    """Six profiles: adversarial sides binomial out of 400, natural ones fractions of 200."""
    out = []
    for (system, adversary), (x, shift) in flips.items():
        natural = adversary == "pois-natq"
        out.append(
            type(
                "Audit",
                (),
                {
                    "algorithm": system,
                    "adversary": adversary,
                    "profile": _profile(
                        "mean" if natural else "binomial",
                        x,
                        200 if natural else 400,
                        _pair(0.8, shift),
                        "queries" if natural else "repetitions",
                        nq=1000 if not natural else 1,
                    ),
                },
            )()
        )
    return out


def test_findings_verdicts_multiplicity_and_retrainings_needed():
    flips = {
        ("pate", "nat-advq"): (100, 0.02),
        ("pate", "pois-advq"): (300, 0.06),
        ("pate", "pois-natq"): (2.0, 0.0001),
        ("capc", "nat-advq"): (400, 0.2),
        ("capc", "pois-advq"): (400, 0.2),
        ("capc", "pois-natq"): (4.0, 0.02),
    }
    check = check_findings(_entries(flips), confidence_level=0.95, orders=ORDERS, delta=DELTA)
    assert check.num_intervals == 6 and check.correction == "bonferroni"
    assert [f.name for f in check.findings] == [name for name, *_ in FINDINGS]
    assert check.finding("pois-ge-nat").verdict == "confirmed"
    assert check.finding("capc-ge-pate").verdict == "confirmed"
    assert check.finding("natq-lt-advq").verdict == "confirmed"
    for f in check.findings:
        for c in f.comparisons:
            assert c.larger.level == pytest.approx(1 - 0.05 / 6)
            assert c.larger.low <= c.larger.epsilon <= c.larger.high
            assert c.ratio == pytest.approx(c.larger.low / c.smaller.high)
    # Pois-AdvQ below Nat-AdvQ: resolved the other way.
    flips[("pate", "pois-advq")] = (40, 0.008)
    check = check_findings(_entries(flips), confidence_level=0.95, orders=ORDERS, delta=DELTA)
    assert check.finding("pois-ge-nat").verdict == "contradicted"
    # Close flips: unresolved, with the retrainings that would separate the intervals.
    flips[("pate", "pois-advq")] = (110, 0.022)
    check = check_findings(_entries(flips), confidence_level=0.95, orders=ORDERS, delta=DELTA)
    comp = check.finding("pois-ge-nat").comparisons[0]
    assert comp.verdict == "unresolved" and comp.retrainings_needed > 400
    prof = {(a.algorithm, a.adversary): a.profile for a in _entries(flips)}
    level = 1 - 0.05 / 6
    n = comp.retrainings_needed
    big = leakage_interval(prof[("pate", "pois-advq")], level, ORDERS, DELTA, trials=n)
    small = leakage_interval(prof[("pate", "nat-advq")], level, ORDERS, DELTA, trials=n)
    assert big.low > small.high
    short = leakage_interval(prof[("pate", "pois-advq")], level, ORDERS, DELTA, trials=0.9 * n)
    small = leakage_interval(prof[("pate", "nat-advq")], level, ORDERS, DELTA, trials=0.9 * n)
    assert short.low <= small.high


def test_unconfirmed_worst_query_pays_for_its_selection():
    flips = {("pate", "nat-advq"): (100, 0.02), ("pate", "pois-advq"): (300, 0.06)}
    entries = _entries(flips)
    entries[1].profile = LeakageProfile(
        "binomial", 300, 400, 1000, math.inf, _pair(0.8, 0.06), "repetitions", 1000
    )
    check = check_findings(entries, confidence_level=0.95, orders=ORDERS, delta=DELTA)
    comp = check.finding("pois-ge-nat").comparisons[0]
    assert comp.larger.level == pytest.approx(1 - 0.05 / (2 * 1000))
    assert comp.smaller.level == pytest.approx(1 - 0.05 / 2)
    assert check.finding("capc-ge-pate").verdict == "not checked"
    lo, hi = comp.larger.flip_interval
    ref = stats.beta.ppf(0.05 / 4000, 300, 101)
    assert lo == pytest.approx(ref, rel=1e-9) and hi < 1


def test_worst_query_tie_break_is_finite_and_close_to_the_plug_in():
    """The tie-break of the worst-query choice (selection halves only) stays finite where a
    side has no count in the output set, and is the plug-in divergence for large counts."""
    from dpaudit.bounds import two_cut_plug_in
    from dpaudit.experiments.private_prediction.bound import _smoothed_plug_in

    c1, c2 = np.array([50_000, 30_000, 20_000]), np.array([45_000, 35_000, 20_000])
    plug = two_cut_plug_in(c1, c2, np.array([10.0]), output_set=[0])[0]
    np.testing.assert_allclose(_smoothed_plug_in(c1, c2, (0,), 10.0), plug, rtol=1e-3)
    assert np.isinf(two_cut_plug_in([3, 7, 0], [0, 10, 0], np.array([10.0]), output_set=[0])[0])
    small = _smoothed_plug_in(np.array([3, 7, 0]), np.array([0, 10, 0]), (0,), 10.0)
    assert 0 < small < np.inf
    assert abs(_smoothed_plug_in(np.array([0, 10, 0]), np.array([0, 10, 0]), (0,), 10.0)) < 1e-12
