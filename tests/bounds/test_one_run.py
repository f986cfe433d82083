"""One-run audit (Steinke, Nasr & Jagielski 2023; paper 001 Alg. 1; formulas.md §2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from doctest_support import module_examples, run_examples, section_examples
from dpaudit.bounds import (
    Bonferroni,
    Explicit,
    Split,
    one_run_epsilon,
    one_run_epsilon_from_scores,
    one_run_p_value,
    one_run_sweep,
)


def naive_p_value(m, r, v, eps, delta):
    """Slow oracle: the formula of formulas.md §2 over the full range of i."""
    q = math.exp(eps) / (1 + math.exp(eps))
    beta_b = stats.binom.sf(v - 1, r, q)
    if v == 0:
        return 1.0
    i = np.arange(1, v + 1)
    totals = np.cumsum(stats.binom.pmf(v - i, r, q))  # running sums, added left to right
    alpha = float(np.max(totals / i))
    return min(1.0, beta_b + 2 * m * delta * alpha)


# formulas.md §2 reference values (m = 1000 unless given, β = 0.05), plus the paper's examples.
REFERENCE = [
    (1000, 100, 95, 0.0, 2.172434),
    (1000, 100, 95, 1e-5, 2.165176),
    (1000, 1000, 700, 0.0, 0.732011),
    (1000, 1000, 700, 1e-5, 0.731740),
    (1000, 10, 10, 0.0, 1.051873),
    (1000, 10, 10, 1e-5, 1.014986),
    (1000, 500, 400, 0.0, 1.198645),
    (1000, 500, 400, 1e-5, 1.197969),
    (1000, 100, 75, 1e-4, 0.672985),
    (100_000, 1510, 1439, 1e-5, 2.675851),
    (1000, 1000, 500, 0.0, 0.0),
    (1000, 1000, 500, 1e-5, 0.0),
]


@pytest.mark.parametrize(("m", "r", "v", "delta", "expected"), REFERENCE)
def test_reference_values(m, r, v, delta, expected):
    res = one_run_epsilon(m, r, v, delta=delta, confidence_level=0.95)
    assert res.epsilon == pytest.approx(expected, abs=6e-7)
    assert res.confidence_interval.low == res.epsilon
    assert res.selection.strategy == "none" and res.selection.choice == "guess rule"


def test_reference_p_values():
    assert one_run_p_value(1000, 100, 95, 2.0) == pytest.approx(0.016101818753, abs=1e-12)
    assert one_run_p_value(1000, 100, 95, 2.0, delta=1e-5) == pytest.approx(
        0.017824634643, abs=1e-12
    )


@pytest.mark.parametrize(
    ("m", "r", "v", "eps", "delta"),
    [
        (1000, 100, 95, 1.3, 1e-5),
        (1000, 1000, 700, 0.5, 1e-5),
        (500, 300, 220, 0.9, 1e-3),
        (2000, 50, 50, 3.0, 1e-6),
        (100, 40, 5, 0.0, 1e-2),
        (100, 40, 0, 1.0, 1e-2),
        (10_000, 5000, 3300, 0.6, 1e-5),
    ],
)
def test_p_value_matches_naive_oracle(m, r, v, eps, delta):
    assert one_run_p_value(m, r, v, eps, delta=delta) == pytest.approx(
        naive_p_value(m, r, v, eps, delta), rel=1e-9, abs=1e-15
    )


def test_compiled_and_numpy_delta_terms_agree(monkeypatch):
    """The δ term α of the p-value as one compiled loop (numba) and as NumPy's chunked
    cumulative sums: the same value to rounding on 200 random games, the same p-values and
    ε bounds whichever runs."""
    import dpaudit.bounds._one_run as one_run

    pytest.importorskip("numba")
    rng = np.random.default_rng(11)
    for _ in range(200):
        m = int(rng.integers(10, 5000))
        r = int(rng.integers(1, m + 1))
        v = int(rng.integers(1, r + 1))
        pv = one_run._PValue(m, r, v, 1e-5)
        eps = float(rng.uniform(0.0, 5.0))
        log_q = -math.log1p(math.exp(-eps))
        j0 = int(rng.integers(0, v))
        a, b = pv._alpha(j0, log_q, log_q - eps), pv._alpha_numpy(j0, log_q, log_q - eps)
        assert a == pytest.approx(b, rel=1e-13, abs=0.0)
    games = [(1000, 100, 95), (1000, 1000, 700), (10_000, 5000, 3300)]
    compiled = [one_run_epsilon(m, r, v, delta=1e-5).epsilon for m, r, v in games]
    monkeypatch.setattr(one_run, "compiled", lambda loop: None)
    assert [one_run_epsilon(m, r, v, delta=1e-5).epsilon for m, r, v in games] == pytest.approx(
        compiled, abs=1e-9
    )


@pytest.mark.parametrize(
    ("m", "r", "v", "delta"), [(1000, 100, 95, 1e-5), (1000, 400, 330, 1e-4), (300, 300, 250, 1e-3)]
)
def test_epsilon_is_the_supremum_within_tolerance(m, r, v, delta):
    res = one_run_epsilon(m, r, v, delta=delta)
    assert res.epsilon > 0
    assert res.tolerance <= 1e-6
    assert naive_p_value(m, r, v, res.epsilon, delta) < 0.05
    assert naive_p_value(m, r, v, res.epsilon + 2 * res.tolerance + 1e-12, delta) >= 0.05


def test_delta0_closed_form_equals_root_of_the_binomial_tail():
    # δ = 0: sup{ε : Pr[Bin(r, q_ε) ≥ v] < β}, by bisection on the naive tail.
    for r, v in [(100, 95), (37, 30), (1000, 560)]:
        lo, hi = 0.0, 20.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if stats.binom.sf(v - 1, r, 1 / (1 + math.exp(-mid))) < 0.05:
                lo = mid
            else:
                hi = mid
        assert one_run_epsilon(1000, r, v).epsilon == pytest.approx(lo, abs=1e-9)


def test_edge_cases():
    assert one_run_epsilon(1000, 0, 0).epsilon == 0.0  # zero guesses
    assert one_run_epsilon(1000, 100, 0).epsilon == 0.0  # all wrong
    allc = one_run_epsilon(1000, 100, 100)  # all correct: finite bound
    assert 0 < allc.epsilon < math.inf
    assert allc.epsilon == pytest.approx(
        math.log(0.05 ** (1 / 100) / (1 - 0.05 ** (1 / 100))), abs=1e-9
    )
    assert one_run_epsilon(1000, 100, 100, delta=1e-5).epsilon < allc.epsilon
    assert one_run_p_value(1000, 0, 0, 1.0) == 1.0
    assert one_run_epsilon(1, 1, 1).epsilon == 0.0  # one guess can never reach β = 0.05


def test_monotonicity():
    eps_v = [one_run_epsilon(1000, 200, v, delta=1e-5).epsilon for v in range(100, 201, 10)]
    assert np.all(np.diff(eps_v) >= 0) and eps_v[-1] > eps_v[0]
    eps_d = [one_run_epsilon(1000, 200, 180, delta=d).epsilon for d in (0.0, 1e-6, 1e-5, 1e-4)]
    assert np.all(np.diff(eps_d) < 0)
    eps_l = [
        one_run_epsilon(1000, 200, 180, confidence_level=c).epsilon for c in (0.8, 0.9, 0.95, 0.99)
    ]
    assert np.all(np.diff(eps_l) < 0)
    ps = [one_run_p_value(1000, 200, 180, e, delta=1e-5) for e in np.linspace(0, 4, 30)]
    assert np.all(np.diff(ps) >= 0)


def test_from_scores_guess_rule():
    rng = np.random.default_rng(3)
    inc = rng.random(200) < 0.5
    scores = inc + rng.normal(size=200)
    res = one_run_epsilon_from_scores(scores, inc, num_positive=30, num_negative=20, delta=1e-5)
    order = np.argsort(-scores, kind="stable")
    correct = inc[order[:30]].sum() + (~inc[order[-20:]]).sum()
    assert (res.num_guesses, res.num_correct, res.num_canaries) == (50, int(correct), 200)
    assert res.epsilon == one_run_epsilon(200, 50, int(correct), delta=1e-5).epsilon
    only_pos = one_run_epsilon_from_scores(scores, inc.astype(int), num_positive=10, num_negative=0)
    assert only_pos.num_guesses == 10


def test_result_serialises():
    data = json.loads(one_run_epsilon(1000, 100, 95).to_json())
    assert data["confidence_interval"]["high"] == "inf"
    assert data["method"].startswith("one-run")


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="num_guesses"):
        one_run_epsilon(100, 101, 50)  # r > m
    with pytest.raises(ValueError, match="num_correct"):
        one_run_epsilon(100, 50, 51)
    with pytest.raises(ValueError, match="num_canaries"):
        one_run_epsilon(0, 0, 0)
    with pytest.raises(ValueError, match="num_canaries"):
        one_run_epsilon(-1, 0, 0)
    with pytest.raises(TypeError, match="num_guesses"):
        one_run_epsilon(100, 2.5, 1)
    with pytest.raises(ValueError, match="delta"):
        one_run_epsilon(100, 10, 9, delta=1.0)
    with pytest.raises(ValueError, match="confidence_level"):
        one_run_epsilon(100, 10, 9, confidence_level=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        one_run_p_value(100, 10, 9, -1.0)
    with pytest.raises(ValueError, match="included"):
        one_run_epsilon_from_scores([1.0, 2.0], [1], num_positive=1, num_negative=0)
    with pytest.raises(ValueError, match="included"):
        one_run_epsilon_from_scores([1.0, 2.0], [1, 2], num_positive=1, num_negative=0)
    with pytest.raises(ValueError, match="num_positive"):
        one_run_epsilon_from_scores([1.0, 2.0], [1, 0], num_positive=2, num_negative=1)
    with pytest.raises(ValueError, match="scores"):
        one_run_epsilon_from_scores([[1.0, 2.0]], [1, 0], num_positive=1, num_negative=0)
    with pytest.raises(ValueError, match="scores"):
        one_run_epsilon_from_scores([1.0, math.nan], [1, 0], num_positive=1, num_negative=0)


def test_sweep_records_everything_and_labels_the_uncorrected_max():
    rng = np.random.default_rng(0)
    inc = rng.random(500) < 0.5
    scores = 1.5 * inc + rng.normal(size=500)
    res = one_run_sweep(scores, inc, delta=1e-5)
    np.testing.assert_array_equal(res.values, np.arange(10, 501, 10))
    # each recorded point equals the single-rule bound
    for j in (0, 7, 30, 49):
        single = one_run_epsilon(500, int(res.num_guesses[j]), int(res.num_correct[j]), delta=1e-5)
        assert res.epsilons[j] == pytest.approx(single.epsilon, abs=1e-8)
    assert res.uncorrected_max_epsilon == pytest.approx(res.epsilons.max())
    assert "NOT a valid lower bound" in res.uncorrected_note
    # Bonferroni: the best point at level 1 − β/G, found exactly despite pruning
    brute = max(
        one_run_epsilon(500, int(r), int(v), delta=1e-5, confidence_level=1 - 0.05 / 50).epsilon
        for r, v in zip(res.num_guesses, res.num_correct, strict=True)
    )
    assert res.epsilon == pytest.approx(brute, abs=1e-8)
    assert res.per_test_confidence_level == pytest.approx(1 - 0.05 / 50)
    assert res.epsilon <= res.uncorrected_max_epsilon
    assert res.selection.strategy == "bonferroni" and "beta/50" in res.selection.detail
    split = one_run_sweep(scores, inc, delta=1e-5, selection=Split(), rng=7)
    assert split.test_num_canaries == 250 and split.selection.strategy == "split"
    assert split.selection.choice == "number of guesses"
    assert split.selection_epsilons.shape == (50,)
    again = one_run_sweep(scores, inc, delta=1e-5, selection="split", rng=7)
    assert again.epsilon == split.epsilon and split.seed == 7
    assert json.loads(split.to_json())["selection"]["strategy"] == "split"
    # one guess count fixed in advance: the single-rule bound at the full level
    fixed = one_run_sweep(scores, inc, delta=1e-5, selection=Explicit(100))
    r100 = int(np.flatnonzero(res.values == 100)[0])
    single = one_run_epsilon(500, 100, int(res.num_correct[r100]), delta=1e-5)
    assert fixed.epsilon == pytest.approx(single.epsilon, abs=1e-8)
    assert fixed.selected_value == 100 and fixed.selection.strategy == "explicit"
    np.testing.assert_array_equal(fixed.epsilons, res.epsilons)
    # the grid as Bonferroni candidates is the same sweep
    grid = one_run_sweep(scores, inc, delta=1e-5, selection=Bonferroni([100, 200, 300]))
    same = one_run_sweep(scores, inc, delta=1e-5, guess_counts=[100, 200, 300])
    assert grid.epsilon == same.epsilon and grid.num_tests == 3
    # progress over the sweep points, numbers unchanged
    seen = []
    reported = one_run_sweep(scores, inc, delta=1e-5, progress=lambda *a: seen.append(a))
    assert seen[0][:2] == (0, 50) and seen[-1][:2] == (50, 50)
    assert reported.epsilon == res.epsilon


def test_sweep_validation():
    s, inc = np.arange(20.0), np.arange(20) % 2
    with pytest.raises(ValueError, match="guess_counts"):
        one_run_sweep(s, inc, guess_counts=[0, 5])
    with pytest.raises(ValueError, match="guess_counts"):
        one_run_sweep(s, inc, guess_counts=[21])
    with pytest.raises(ValueError, match="selection"):
        one_run_sweep(s, inc, selection="none")
    with pytest.raises(ValueError, match="fraction"):
        one_run_sweep(s, inc, selection=Split(1.0))
    with pytest.raises(ValueError, match=r"Split\(fraction=0.5\).*canaries"):
        one_run_sweep(s[:1], inc[:1], selection=Split(0.5))
    with pytest.raises(ValueError, match=r"selection\.value"):
        one_run_sweep(s, inc, selection=Explicit(21))
    with pytest.raises(ValueError, match="once"):
        one_run_sweep(s, inc, guess_counts=[10], selection=Bonferroni([10]))
    with pytest.raises(TypeError, match="progress"):
        one_run_sweep(s, inc, progress=1)
    with pytest.raises(ValueError, match="positive_fraction"):
        one_run_sweep(s, inc, positive_fraction=1.5)


def test_delta_term_floor_of_the_p_value():
    """p(ε, δ) ≥ min(½, mδ/(v − ⌈r/2⌉)) for every ε ≥ 0 (module docstring of ``_one_run``),
    checked against the naive oracle on random counts."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        m = int(rng.integers(10, 5000))
        r = int(rng.integers(1, m + 1))
        v = int(rng.integers(0, r + 1))
        delta = float(10 ** rng.uniform(-7, -2))
        a = math.ceil(r / 2)
        floor = 0.5 if v <= a else min(0.5, m * delta / (v - a))
        for eps in (0.0, float(rng.uniform(0, 3)), float(rng.uniform(3, 8))):
            assert naive_p_value(m, r, v, eps, delta) >= floor * (1 - 1e-12)
            assert one_run_p_value(m, r, v, eps, delta=delta) >= floor * (1 - 1e-12)


def test_bonferroni_sweep_at_positive_delta_is_zero_by_the_delta_floor():
    """The benchmark's setting (m = 10⁴, δ = 1e-5, 1000 guess counts): Bonferroni at δ = 0 and
    the split at δ = 1e-5 certify ε > 1.5, but Bonferroni at δ = 1e-5 certifies exactly 0. That
    is the p-value, not a bug: no point beats chance by more than mδG/β = 2000 correct guesses,
    so the δ term alone keeps every p-value above β/G at every ε."""
    g = np.random.default_rng(0)
    m, delta = 10_000, 1e-5
    inc = g.random(m) < 0.5
    scores = inc + g.normal(size=m)
    bonf = one_run_sweep(scores, inc, delta=delta)
    assert bonf.num_tests == 1000 and bonf.epsilon == 0.0
    assert bonf.uncorrected_max_epsilon > 2.0  # the uncorrected max still looks fine
    excess = bonf.num_correct - np.ceil(bonf.num_guesses / 2)
    needed = m * delta * bonf.num_tests / 0.05
    assert needed == pytest.approx(2000) and excess.max() < needed
    # at the best point the smallest p-value over ε is still above β/G, at ε = 0
    j = int(np.argmax(excess))
    r, v = int(bonf.num_guesses[j]), int(bonf.num_correct[j])
    p = [one_run_p_value(m, r, v, e, delta=delta) for e in np.linspace(0.0, 3.0, 31)]
    assert min(p) > 0.05 / bonf.num_tests and int(np.argmin(p)) == 0
    assert one_run_sweep(scores, inc).epsilon > 1.5  # δ = 0: no δ term
    assert one_run_sweep(scores, inc, delta=delta, selection=Split(), rng=1).epsilon > 1.5


ISSUE5_MODULES = [
    "dpaudit.bounds._one_run",
    "dpaudit.bounds._fdp",
    "dpaudit.bounds._lidp",
    "dpaudit.bounds._memorization",
    "dpaudit.bounds._sweep",
    "dpaudit.conversions._gdp",
    "dpaudit.experiments.lidp_gaussian.pipeline",
    "dpaudit.experiments.lidp_gaussian.protocol",
    "dpaudit.experiments.lidp_gaussian.simulation",
]


@pytest.mark.parametrize("name", ISSUE5_MODULES)
def test_docstring_examples_of_the_many_canary_modules(name):
    result = module_examples(name)
    assert result.attempted > 0 and result.failed == 0


def test_many_canary_readme_section_examples():
    test = section_examples("50-many-canary.md")
    assert test.examples
    assert run_examples(test) == 0
