"""Proportion intervals: Clopper–Pearson tails, Goodman / Sison–Glaz, bootstrap of counts."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import special, stats

from dpaudit.bounds import (
    BootstrapInterval,
    SimultaneousIntervals,
    _bootstrap,
    _intervals,
    bootstrap_counts,
    clopper_pearson,
    clopper_pearson_arrays,
    multinomial_intervals,
)
from dpaudit.bounds._intervals import (
    _sison_glaz_nu,
    _sison_glaz_nu_upto,
    _sison_glaz_row,
    cp_one_sided,
    sison_glaz_rows,
)
from dpaudit.errors import MissingDependencyError

# --------------------------------------------------------------------------------------------
# Clopper–Pearson
# --------------------------------------------------------------------------------------------


def test_clopper_pearson_matches_scipy_binomtest():
    for k, n in [(0, 10), (3, 10), (10, 10), (400, 500), (50, 500)]:
        ci = clopper_pearson(k, n, confidence_level=0.9)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        np.testing.assert_allclose([ci.low, ci.high], [ref.low, ref.high], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("alternative", ["greater", "less"])
@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (400, 500), (50, 500)])
def test_clopper_pearson_one_sided_matches_scipy_and_beta_quantiles(k, n, alternative):
    ci = clopper_pearson(k, n, confidence_level=0.9, alternative=alternative)
    ref = stats.binomtest(k, n, alternative=alternative).proportion_ci(
        confidence_level=0.9, method="exact"
    )
    np.testing.assert_allclose([ci.low, ci.high], [ref.low, ref.high], rtol=1e-10, atol=1e-15)
    # closed form: the whole 0.1 in one tail, the other end trivial
    if alternative == "greater":
        assert ci.high == 1.0
        beta_lo = stats.beta.ppf(0.1, k, n - k + 1) if k > 0 else 0.0
        assert ci.low == pytest.approx(beta_lo, rel=1e-10, abs=1e-15)
    else:
        assert ci.low == 0.0
        beta_hi = stats.beta.ppf(0.9, k + 1, n - k) if k < n else 1.0
        assert ci.high == pytest.approx(beta_hi, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize(
    "k, n, kwargs, match",
    [
        (11, 10, {}, r"^k must be <= n"),
        (-1, 10, {}, r"^k must be non-negative"),
        (0, 0, {}, r"^n must be a positive integer"),
        (0, -5, {}, r"^n must be non-negative"),
        (3, 10, {"confidence_level": 0.0}, r"^confidence_level"),
        (3, 10, {"confidence_level": 1.0}, r"^confidence_level"),
        (3, 10, {"confidence_level": 1.5}, r"^confidence_level"),
        (3, 10, {"confidence_level": -0.1}, r"^confidence_level"),
        (3, 10, {"alternative": "two_sided"}, r"^alternative"),
        (3, 10, {"alternative": "upper"}, r"^alternative"),
    ],
)
def test_clopper_pearson_bad_input(k, n, kwargs, match):
    with pytest.raises(ValueError, match=match):
        clopper_pearson(k, n, **kwargs)


def test_one_sided_tails_agree_with_clopper_pearson_arrays():
    k = np.array([0, 1, 7, 50, 99, 100])
    lo, hi = cp_one_sided(k, 100, 0.025)
    ref_lo, ref_hi = clopper_pearson_arrays(k, 100, confidence_level=0.95)
    np.testing.assert_allclose(lo, ref_lo, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hi, ref_hi, rtol=1e-12, atol=1e-15)


def test_one_sided_bounds_of_repeated_counts_are_solved_once_with_the_same_bits(monkeypatch):
    """Long arrays are reduced to their distinct (k, n, tail) triples: the bits are those of
    every entry solved on its own (broadcast shapes and per-row tails kept)."""
    from dpaudit.bounds import _intervals

    g = np.random.default_rng(3)
    n = 50.0 * g.integers(1, 9, size=(40, 60)) + 1
    k = np.minimum(10.0 * g.integers(0, 45, size=(40, 60)), n)
    tail = np.where(g.random((40, 1)) < 0.5, 0.025, 1e-9)
    fast = cp_one_sided(k, n, tail)
    monkeypatch.setattr(_intervals, "_DEDUPLICATE_FROM", 10**9)
    slow = cp_one_sided(k, n, tail)
    for a, b in zip(fast, slow, strict=True):
        assert a.shape == (40, 60)
        np.testing.assert_array_equal(a, b)


def test_one_sided_tails_keep_precision_far_out():
    # Beta quantiles at tails below 1e-16 (p-values): compare with mpmath's incomplete beta.
    k, n, tail = 40, 100, 1e-20
    lo, hi = cp_one_sided(k, n, tail)
    mp.mp.dps = 40
    assert float(mp.betainc(k, n - k + 1, 0, float(lo), regularized=True)) == pytest.approx(
        tail, rel=1e-8
    )
    assert float(mp.betainc(k + 1, n - k, float(hi), 1, regularized=True)) == pytest.approx(
        tail, rel=1e-8
    )


# --------------------------------------------------------------------------------------------
# Goodman and Sison–Glaz
# --------------------------------------------------------------------------------------------

_SMALL_CASES = [
    [40, 35, 25],
    [5, 0, 3, 12],
    [500, 300, 100, 70, 30],
    [1, 1],
    [0, 7],
    [3000, 2000, 1000, 500, 300, 150, 50],
    [6, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
]


@pytest.mark.parametrize("method", ["goodman", "sison-glaz"])
@pytest.mark.parametrize("counts", _SMALL_CASES)
def test_multinomial_intervals_match_statsmodels(counts, method):
    ours = multinomial_intervals(counts, method=method, confidence_level=0.9)
    ref = multinomial_intervals(counts, method=method, confidence_level=0.9, engine="statsmodels")
    np.testing.assert_allclose(ours.low, ref.low, atol=1e-9)
    np.testing.assert_allclose(ours.high, ref.high, atol=1e-9)
    assert isinstance(ours, SimultaneousIntervals) and ours.asymptotic


def test_goodman_closed_form_by_hand():
    # Goodman (1965): chi2 quantile at 1 - beta/K, Wilson-type roots.
    counts = np.array([40, 35, 25])
    n, k, beta = 100, 3, 0.05
    chi2 = stats.chi2.ppf(1 - beta / k, 1)
    p = counts / n
    lo = (2 * n * p + chi2 - np.sqrt(chi2 * (chi2 + 4 * n * p * (1 - p)))) / (2 * (chi2 + n))
    ci = multinomial_intervals(counts)
    np.testing.assert_allclose(ci.low, lo, rtol=1e-13)
    np.testing.assert_allclose(ci.low, [0.29123405, 0.24678572, 0.1618308], atol=1e-8)


def test_multinomial_intervals_batch_equals_rows():
    batch = np.array([[40, 35, 25], [10, 80, 10]])
    for method in ("goodman", "sison-glaz"):
        both = multinomial_intervals(batch, method=method)
        for i in range(2):
            one = multinomial_intervals(batch[i], method=method)
            np.testing.assert_allclose(both.low[i], one.low, rtol=1e-14)
            np.testing.assert_allclose(both.high[i], one.high, rtol=1e-14)


def _nu_statsmodels_mpmath(c: int, counts, n: int) -> float:
    """statsmodels' ν(c) formula (factorial moments) evaluated at 50 digits: an oracle."""
    mp.mp.dps = 50

    def cdf(x, lam):
        if x < 0:
            return mp.mpf(0)
        return mp.gammainc(x + 1, lam, mp.inf, regularized=True)

    def interval(b, a, lam):
        return cdf(a, lam) - cdf(b - 1, lam)

    mus, m2s, m3s, m4s, boxes = [], [], [], [], []
    for lam_i in counts:
        lam = mp.mpf(int(lam_i))
        b, a = max(int(lam_i) - c, 0), min(int(lam_i) + c, n)
        box = interval(b, a, lam)
        fm = [
            lam**r * (1 - (interval(a - r + 1, a, lam) - interval(b - r, b - 1, lam)) / box)
            for r in range(1, 5)
        ]
        mu = fm[0]
        mu2 = fm[1] + mu - mu**2
        mu3 = fm[2] + fm[1] * (3 - 3 * mu) + mu - 3 * mu**2 + 2 * mu**3
        mu4 = (
            fm[3]
            + fm[2] * (6 - 4 * mu)
            + fm[1] * (7 - 12 * mu + 6 * mu**2)
            + mu
            - 4 * mu**2
            + 6 * mu**3
            - 3 * mu**4
        )
        mus.append(mu)
        m2s.append(mu2)
        m3s.append(mu3)
        m4s.append(mu4)
        boxes.append(box)
    s2 = sum(m2s)
    g1 = sum(m3s) / s2**1.5
    g2 = (sum(m4s) - 3 * sum(m**2 for m in m2s)) / s2**2
    x = (n - sum(mus)) / mp.sqrt(s2)
    phi = mp.exp(-(x**2) / 2) / mp.sqrt(2 * mp.pi)
    f = phi * (
        1
        + g1 * (x**3 - 3 * x) / 6
        + g2 * (x**4 - 6 * x**2 + 3) / 24
        + g1**2 * (x**6 - 15 * x**4 + 45 * x**2 - 15) / 72
    )
    f = f / mp.sqrt(s2)
    pmf_nn = mp.exp(-n) * mp.power(n, n) / mp.factorial(n)
    prod = mp.mpf(1)
    for box in boxes:
        prod *= box
    return float(prod * f / pmf_nn)


def test_sison_glaz_nu_matches_high_precision_oracle_at_large_counts():
    # At n = 10^5 statsmodels' double-precision moments cancel ~15 digits; ours sum directly.
    counts = np.array([72507, 22216, 4639, 595, 43])
    n = int(counts.sum())
    for c in (150, 300, 450):
        assert _sison_glaz_nu(c, counts, n) == pytest.approx(
            _nu_statsmodels_mpmath(c, counts, n), rel=1e-7
        )


def test_sison_glaz_width_sane_at_ten_million_where_statsmodels_fails():
    # statsmodels finds c ≈ 160 here (intervals ~10x too narrow: its ν(c) exceeds 1 at small
    # c from cancellation); the stable version gives a half-width of a few s.d. of a cell.
    p = np.array([0.725, 0.222, 0.0464, 0.00595, 0.000428])
    n = 10**7
    counts = np.round(p * n).astype(np.int64)
    ci = multinomial_intervals(counts, method="sison-glaz")
    half = (counts / counts.sum() - ci.low)[0] * counts.sum()
    sd_max = np.sqrt(n * p[0] * (1 - p[0]))
    assert 1.5 * sd_max < half < 4 * sd_max


def _random_multinomials(seed: int, reps: int, totals) -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(reps):
        k = int(rng.integers(2, 11))
        p = rng.dirichlet(np.full(k, float(rng.choice([0.2, 1.0, 5.0]))))
        counts = rng.multinomial(int(rng.choice(totals)), p)
        cases.append((counts, float(rng.choice([0.01, 0.05, 0.1, 0.3]))))
    return cases


@pytest.mark.parametrize(("counts", "beta"), _random_multinomials(31, 40, [3, 10, 50, 200, 1000]))
def test_sison_glaz_random_cases_match_statsmodels(counts, beta):
    # statsmodels' multinomial_proportions_confint(method="sison-glaz") is the reference
    # where its moments are accurate (n ≲ 10^4): the same half-width c (lower limits
    # p̂ − c/n agree to rounding) and the same γ up to statsmodels' own rounding.
    from statsmodels.stats.proportion import multinomial_proportions_confint

    with np.errstate(all="ignore"):
        ref = np.clip(
            multinomial_proportions_confint(counts, alpha=beta, method="sison-glaz"), 0, 1
        )
    ours = multinomial_intervals(counts, confidence_level=1 - beta, method="sison-glaz")
    np.testing.assert_allclose(ours.low, ref[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.high, ref[:, 1], rtol=0, atol=1e-7)


@pytest.mark.parametrize(
    "counts",
    [
        [40, 35, 25],
        [5, 0, 3, 12],
        [0, 20],
        [6, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        [3000, 2000, 1000, 500, 300, 150, 50],
        [72507, 22216, 4639, 595, 43],
    ],
)
def test_sison_glaz_nu_upto_equals_per_c_summation(counts):
    # The one-pass cumulative evaluation against the direct per-c summation (the slow
    # reference), at every c up to past n or 3 s.d. of the largest cell.
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    cmax = min(n + 2, int(4 * np.sqrt(counts.max())) + 5)
    nu = _sison_glaz_nu_upto(counts, n, cmax)
    ref = [0.0] + [_sison_glaz_nu(c, counts, n) if c < n else 1.0 for c in range(1, cmax + 1)]
    # Both are double-precision evaluations of the same formula with differently rounded
    # Poisson log-weights (~1e-11 relative at n = 10^5; the one-pass form is the closer of
    # the two to the 50-digit oracle, see the next test).
    np.testing.assert_allclose(nu, ref, rtol=1e-10, atol=1e-300)
    table = special.gammaln(np.arange(n + 1) + 1.0)
    np.testing.assert_array_equal(_sison_glaz_nu_upto(counts, n, cmax, table), nu)


def test_sison_glaz_nu_upto_matches_high_precision_oracle_at_large_counts():
    counts = np.array([72507, 22216, 4639, 595, 43])
    nu = _sison_glaz_nu_upto(counts, int(counts.sum()), 450)
    for c in (150, 300, 450):
        assert nu[c] == pytest.approx(
            _nu_statsmodels_mpmath(c, counts, int(counts.sum())), rel=1e-7
        )


def test_sison_glaz_rows_dedup_table_and_short_first_scan(monkeypatch):
    rng = np.random.default_rng(3)
    rows = rng.multinomial(20_000, rng.dirichlet(np.ones(6), size=4))
    rows = np.concatenate([rows, rows[:2]])  # duplicates are computed once
    low, high = sison_glaz_rows(rows, 0.05)
    for i, row in enumerate(rows):
        one_low, one_high = _sison_glaz_row(row, 0.05)  # no table, no dedup
        np.testing.assert_array_equal(low[i], one_low)
        np.testing.assert_array_equal(high[i], one_high)
    # A first scan far too short is doubled until ν crosses 1 − β: same answer.
    monkeypatch.setattr(
        _intervals, "_sison_glaz_cmax_guesses", lambda rows, beta: np.ones(len(rows), np.int64)
    )
    short_low, short_high = sison_glaz_rows(rows, 0.05)
    np.testing.assert_array_equal(short_low, low)
    np.testing.assert_array_equal(short_high, high)


def _cmax_guess_one_row(counts, beta):
    """Naive oracle: the Bonferroni-normal starting half-width of one row, scalar bisection."""
    n = int(counts.sum())
    p = counts / n
    sd = np.sqrt(n * p * (1.0 - p))
    sd = sd[sd > 0]
    if sd.size == 0:
        return n
    lo = float(special.ndtri(1.0 - beta / 2.0)) * sd.max()
    hi = float(special.ndtri(1.0 - beta / (2.0 * sd.size))) * sd.max()
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if 2.0 * special.ndtr(-mid / sd).sum() > beta:
            lo = mid
        else:
            hi = mid
    return min(n, math.ceil(1.05 * hi) + 3)


def test_sison_glaz_cmax_guesses_match_row_by_row_bisection():
    rng = np.random.default_rng(5)
    for k in (2, 3, 7, 10):
        rows = np.vstack(
            [
                rng.multinomial(int(n), rng.dirichlet(np.full(k, 0.4)))
                for n in rng.integers(1, 10**6, 20)
            ]
            + [np.array([5] + [0] * (k - 1)), np.array([0] * (k - 1) + [1])]
        )
        for beta in (0.01, 0.05, 0.3):
            got = _intervals._sison_glaz_cmax_guesses(rows, beta)
            want = [_cmax_guess_one_row(r, beta) for r in rows]
            np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_sison_glaz_coverage_at_one_million():
    rng = np.random.default_rng(2024)
    p = np.array([0.725, 0.222, 0.0464, 0.00595, 0.000428])
    p = p / p.sum()
    reps, misses = 200, 0
    for _ in range(reps):
        ci = multinomial_intervals(rng.multinomial(10**6, p), method="sison-glaz")
        misses += bool(np.any((ci.low > p) | (ci.high < p)))
    assert misses <= stats.binom.ppf(0.999, reps, 0.05)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"counts": [-1, 3]}, "counts"),
        ({"counts": [1.5, 3]}, "counts"),
        ({"counts": [5]}, "counts"),
        ({"counts": [0, 0]}, "counts"),
        ({"counts": [[1, 2], [0, 0]]}, "counts"),
        ({"counts": [1, 2], "confidence_level": 1.0}, "confidence_level"),
        ({"counts": [1, 2], "confidence_level": 0.0}, "confidence_level"),
        ({"counts": [1, 2], "method": "wilson"}, "method"),
        ({"counts": [1, 2], "engine": "R"}, "engine"),
    ],
)
def test_multinomial_intervals_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        multinomial_intervals(**kwargs)


def test_missing_dependency_error_is_importerror():
    assert issubclass(MissingDependencyError, ImportError)


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def _diff(a, b):
    return a[:, 0] / a.sum(1) - b[:, 0] / b.sum(1)


def _two_stats(a, b):
    return np.stack([_diff(a, b), a[:, 1] / a.sum(1)], axis=-1)


def test_bootstrap_engines_agree():
    counts = [[60, 30, 10], [45, 40, 15]]
    kw = dict(n_resamples=4000, confidence_level=0.9, alternative="two-sided")
    a = bootstrap_counts(_two_stats, counts, engine="scipy", rng=1, **kw)
    b = bootstrap_counts(_two_stats, counts, engine="multinomial", rng=2, **kw)
    assert isinstance(a, BootstrapInterval) and a.asymptotic
    np.testing.assert_allclose(a.estimate, [0.15, 0.3], rtol=1e-12)
    np.testing.assert_allclose(a.low, b.low, atol=0.02)
    np.testing.assert_allclose(a.high, b.high, atol=0.02)
    # Percentile limits for a difference of proportions: estimate ± z·se (normal theory).
    se = np.sqrt(0.6 * 0.4 / 100 + 0.45 * 0.55 / 100)
    assert a.low[0] == pytest.approx(0.15 - 1.645 * se, abs=0.02)


def test_bootstrap_one_sided_and_basic():
    res = bootstrap_counts(_diff, [[60, 40], [45, 55]], rng=0, n_resamples=2000)
    assert res.alternative == "greater" and np.isinf(res.high) and res.low < res.estimate
    less = bootstrap_counts(
        _diff, [[60, 40], [45, 55]], rng=0, n_resamples=2000, alternative="less", method="basic"
    )
    assert np.isneginf(less.low) and less.high > less.estimate
    big = bootstrap_counts(_diff, [[60000, 40000], [45000, 55000]], rng=0, n_resamples=500)
    assert big.engine == "multinomial" and big.seed == 0


def test_bootstrap_bca_runs_with_scipy_engine():
    res = bootstrap_counts(_diff, [[60, 40], [45, 55]], rng=0, n_resamples=1000, method="BCa")
    assert res.engine == "scipy" and 0 < res.low < 0.15


def test_bootstrap_bad_input():
    with pytest.raises(TypeError, match="statistic"):
        bootstrap_counts("mean", [[1, 2]])
    with pytest.raises(ValueError, match="counts"):
        bootstrap_counts(_diff, np.array([1, 2]))
    with pytest.raises(ValueError, match="counts"):
        bootstrap_counts(_diff, [])
    with pytest.raises(ValueError, match=r"counts\[1\]"):
        bootstrap_counts(_diff, [[1, 2], [0, 0]])
    with pytest.raises(ValueError, match=r"counts\[0\]"):
        bootstrap_counts(_diff, [[[1, 2]], [1, 2]])
    with pytest.raises(ValueError, match="confidence_level"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], confidence_level=1.5)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], n_resamples=0)
    with pytest.raises(ValueError, match="method"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], method="studentized")
    with pytest.raises(ValueError, match="alternative"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], alternative="up")
    with pytest.raises(ValueError, match="engine"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], engine="torch")
    with pytest.raises(ValueError, match="BCa"):
        bootstrap_counts(_diff, [[1, 2], [2, 1]], method="BCa", engine="multinomial")


# ----------------------------------------------------------- refused or computed correctly


def test_issue28_count_vectors_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match=r"same number of categories.*2 in counts\[0\] and 3"):
        bootstrap_counts(_diff, [[60, 40], [45, 50, 5]], rng=0)


@pytest.mark.parametrize(
    ("statistic", "error", "match"),
    [
        (lambda a, b: 1.0, ValueError, r"statistic must return shape \(1,\) or \(1, S\)"),
        (lambda a: a[:, 0], TypeError, r"statistic '<lambda>' failed on count batches"),
        (lambda *a: "x", TypeError, "statistic must return real numbers"),
        (
            lambda a, b: np.full(len(a), np.nan),
            ValueError,
            "statistic must return numbers, not NaN",
        ),
        (lambda a, b: a[:1, 0], ValueError, r"statistic must return shape \(50,\)"),
    ],
)
@pytest.mark.parametrize("engine", ["scipy", "multinomial"])
def test_issue28_bad_statistic_messages_name_it(statistic, error, match, engine):
    with pytest.raises(error, match=match):
        bootstrap_counts(statistic, [[60, 40], [45, 55]], rng=0, n_resamples=50, engine=engine)


def test_issue28_bootstrap_work_is_capped(monkeypatch):
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"n_resamples=10000 over 4000000 observations.*"):
        bootstrap_counts(_diff, [[10**6, 10**6], [10**6, 10**6]], engine="scipy", n_resamples=10**4)
    assert time.perf_counter() - start < 2.0
    monkeypatch.setattr(_bootstrap, "MAX_BOOTSTRAP_WORK", 399)
    with pytest.raises(ValueError, match=r"4 categories \(engine='multinomial'\).*BOOTSTRAP"):
        bootstrap_counts(_diff, [[60, 40], [45, 55]], engine="multinomial", n_resamples=100)
    monkeypatch.setattr(_bootstrap, "MAX_BOOTSTRAP_WORK", 400)
    bootstrap_counts(_diff, [[60, 40], [45, 55]], engine="multinomial", n_resamples=100)


def test_beta_quantiles_are_checked_against_the_forward_function():
    """scipy 1.17's incomplete-beta inverse returns 1.52× the true quantile at a = 1000,
    b ≈ 2·10⁸ (so the Clopper–Pearson *lower* bound of 1,000 in 2·10⁸ exceeded the
    estimate); the checked quantile matches mpmath there and scipy elsewhere."""
    import mpmath as mp
    from scipy import stats

    from dpaudit.bounds._beta import beta_isf, beta_ppf

    mp.mp.dps = 40
    k = 1000
    for n in (2e8, 1e9):  # Illinois: the same root as bisection to 20 digits, 1/4 the steps
        want = mp.findroot(
            lambda x, n=n: mp.betainc(k, n - k + 1, 0, x, regularized=True) - mp.mpf("0.025"),
            (0.5 * k / n, 1.0 * k / n), solver="illinois",
        )  # fmt: skip
        got = float(beta_ppf(0.025, k, n - k + 1))
        assert abs(got / float(want) - 1) < 1e-9
        low = clopper_pearson(k, int(n), alternative="greater", confidence_level=0.975).low
        assert abs(low / float(want) - 1) < 1e-9 and low < k / n
    g = np.random.default_rng(0)
    a, b, p = g.uniform(0.5, 500, 200), g.uniform(0.5, 1e6, 200), g.uniform(1e-12, 1, 200)
    np.testing.assert_allclose(beta_ppf(p, a, b), stats.beta.ppf(p, a, b), rtol=1e-9)
    np.testing.assert_allclose(beta_isf(p, a, b), stats.beta.isf(p, a, b), rtol=1e-9)
