"""The selection vocabulary (Explicit / Split / Bonferroni / MultiSplit), its one name
parser, the Progress protocol and the shared validators used by the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit._results import SelectionRecord
from dpaudit._validate import check_at_most, check_progress, no_progress, track
from dpaudit.bounds import (
    SELECTION_NAMES,
    Bonferroni,
    Explicit,
    MultiSplit,
    Selection,
    Split,
    check_dp_claim,
    check_rdp_claim,
    epsilon_from_confusion,
    epsilon_from_scores,
    fdp_one_run_epsilon_from_scores,
    fdp_one_run_sweep,
    label_memorization_audit,
    label_memorization_sweep,
    membership_slots,
    one_run_bounds,
    one_run_epsilon_from_scores,
    one_run_sweep,
    rdp_audit,
    rdp_k_cut,
    rdp_two_cut,
    rdp_two_cut_bootstrap,
    selection_from_name,
)
from dpaudit.bounds._selection import (
    as_selection,
    median_of_splits,
    multi_split_seeds,
    selection_generator,
    split_indices,
)


def test_shorthands_and_bad_strategies():
    assert as_selection("split") == Split() and as_selection("bonferroni") == Bonferroni()
    assert as_selection("multi-split") == MultiSplit()
    assert as_selection(MultiSplit(3)) == MultiSplit(3, 0.5)
    strategy = Split(0.3)
    assert as_selection(strategy) is strategy
    with pytest.raises(ValueError, match="selection"):
        as_selection("explicit")  # needs a value
    with pytest.raises(TypeError, match="selection"):
        as_selection(0.5)
    with pytest.raises(TypeError, match="abstract class Selection"):
        Selection()  # the abstract base is not a strategy


def test_strategy_values_are_checked_and_hashable():
    assert Explicit(100).value == 100 and isinstance(Explicit(100).value, int)
    assert Explicit(np.float64(0.5)).value == 0.5
    assert Explicit([[0], [1, 2]]).value == ((0,), (1, 2))
    assert Explicit(np.array([0, 2])).value == (0, 2)
    with pytest.raises(ValueError, match="value"):
        Explicit(math.nan)
    with pytest.raises(TypeError, match="Explicit"):
        Explicit(None)
    with pytest.raises(TypeError, match="Explicit"):
        Explicit("0.5")
    assert Bonferroni([1, 2.5]).candidates == (1.0, 2.5)
    assert Bonferroni([[0], [1, 2]]).candidates == ((0,), (1, 2))
    assert Bonferroni().candidates is None
    with pytest.raises(ValueError, match="candidates"):
        Bonferroni([])
    with pytest.raises(ValueError, match="candidates"):
        Bonferroni([0.0, math.inf])
    with pytest.raises(TypeError, match="candidates"):
        Bonferroni("01")
    with pytest.raises(ValueError, match="fraction"):
        Split(0.0)
    assert len({Explicit((0, 1)), Bonferroni((0.5,)), Split(0.5), Split(0.5)}) == 3


def test_records_say_how_the_choice_was_paid_for():
    rec = Split(0.25).record("threshold", n_candidates=9, seed=4, chosen=1.5)
    assert rec == SelectionRecord(
        "threshold",
        "split",
        "chosen (1.5) among 9 candidates on a random 25% of the samples, seed 4; bounded on "
        "the held-out 75% only",
    )
    assert Bonferroni((1.0, 2.0)).describe() == (
        "best of 2 candidates, each bounded at failure probability beta/2 (union bound)"
    )
    assert Explicit(3).record("number of guesses").detail == "fixed in advance: 3"


def test_split_randomness_comes_from_rng_and_is_recorded():
    gen, seed = selection_generator(None)
    again, same_seed = selection_generator(seed)
    assert isinstance(seed, int) and same_seed == seed
    np.testing.assert_array_equal(gen.permutation(50), again.permutation(50))
    assert selection_generator(7)[1] == 7
    assert selection_generator(np.random.default_rng(0))[1] is None
    sel, held = split_indices(10, 0.3, np.random.default_rng(1), "canaries")
    assert sel.size == 3 and held.size == 7
    assert sorted(np.concatenate([sel, held]).tolist()) == list(range(10))
    with pytest.raises(ValueError, match=r"Split\(fraction=0.05\).*canaries \(10 samples\)"):
        split_indices(10, 0.05, np.random.default_rng(1), "canaries")


def test_every_bound_that_chooses_records_its_selection():
    g = np.random.default_rng(0)
    pos, neg = g.normal(1, 1, 400), g.normal(0, 1, 400)
    inc = g.random(400) < 0.5
    scores = inc + g.normal(size=400)
    slots = g.normal(size=(400, 2))
    ins = g.integers(0, 2, 400)
    c1, c2 = np.array([700, 200, 100]), np.array([500, 300, 200])
    conf, alt = g.random(200), g.random((200, 2))
    records = {
        "counts": epsilon_from_confusion(40, 10, 5, 45).selection,
        "scores": epsilon_from_scores(pos, neg, selection=Explicit(0.5)).selection,
        "two-cut": rdp_two_cut(c1, c2, [2.0], output_set=[0]).selection,
        "k-cut": rdp_k_cut(c1, c2, [2.0]).selection,
        "bootstrap": rdp_two_cut_bootstrap(
            c1, c2, [2.0], output_set=[0], n_resamples=20, rng=0
        ).selection,
        "rdp_audit": rdp_audit(c1, c2, [2.0], selection=Bonferroni()).selection,
        "one-run": one_run_epsilon_from_scores(
            scores, inc, num_positive=10, num_negative=10
        ).selection,
        "f-DP": fdp_one_run_epsilon_from_scores(slots, ins, num_guesses=20).selection,
        "memorization": label_memorization_audit(conf, alt, threshold=0.5).selection,
        "one-run sweep": one_run_sweep(scores, inc, selection=Split(), rng=1).selection,
        "f-DP sweep": fdp_one_run_sweep(slots, ins, selection=Explicit(100)).selection,
        "memorization sweep": label_memorization_sweep(conf, alt).selection,
    }
    expected = {
        "counts": ("rejection set", "none"),
        "scores": ("threshold", "explicit"),
        "two-cut": ("output set", "explicit"),
        "k-cut": ("partition", "explicit"),
        "bootstrap": ("output set", "explicit"),
        "rdp_audit": ("output set", "bonferroni"),
        "one-run": ("guess rule (k+, k-)", "explicit"),
        "f-DP": ("number of guesses", "explicit"),
        "memorization": ("abstention threshold", "explicit"),
        "one-run sweep": ("number of guesses", "split"),
        "f-DP sweep": ("number of guesses", "explicit"),
        "memorization sweep": ("abstention threshold", "bonferroni"),
    }
    for name, rec in records.items():
        assert isinstance(rec, SelectionRecord), name
        assert (rec.choice, rec.strategy) == expected[name], name
        assert rec.detail, name


def test_progress_is_one_callback():
    seen: list[tuple[int, int, str]] = []

    def report(done: int, total: int, description: str) -> None:
        seen.append((done, total, description))

    assert check_progress(report) is report
    assert check_progress(None) is no_progress and check_progress(False) is no_progress
    assert callable(check_progress(True))  # the rich bar, created on first call
    for bad in ("yes", 1, np.bool_(True)):
        with pytest.raises(TypeError, match="progress"):
            check_progress(bad)
    assert list(track(iter("abc"), 3, "letters", report)) == ["a", "b", "c"]
    assert seen == [(0, 3, "letters"), (1, 3, "letters"), (2, 3, "letters"), (3, 3, "letters")]


def test_check_at_most_names_both_arguments():
    assert check_at_most("k", 3, 3, "n") == 3
    with pytest.raises(ValueError, match=r"^k must be <= n=3, got 4$"):
        check_at_most("k", 4, 3, "n")


# ---------------------------------------------------------------------------------------------
# One parser of strategy names
# ---------------------------------------------------------------------------------------------


def test_selection_from_name_is_the_one_parser():
    assert SELECTION_NAMES == ("split", "bonferroni", "multi-split")
    assert selection_from_name("split") == Split(0.5)
    assert selection_from_name("split", fraction=0.3) == Split(0.3)
    assert selection_from_name("bonferroni") == Bonferroni()
    assert selection_from_name("bonferroni", candidates=[1, 2]) == Bonferroni((1.0, 2.0))
    assert selection_from_name("multi-split") == MultiSplit(100, 0.5)
    assert selection_from_name("multi-split", fraction=0.3, num_splits=7) == MultiSplit(7, 0.3)
    # every argument is checked, even one the name does not use (issue 45: a bad value is
    # never silently ignored)
    with pytest.raises(ValueError, match="fraction"):
        selection_from_name("bonferroni", fraction=2.0)
    with pytest.raises(ValueError, match=r"selection must be one of \('split'"):
        selection_from_name("best")
    with pytest.raises(ValueError, match=r"attack\.selection"):
        selection_from_name("Split", what="attack.selection")
    with pytest.raises(ValueError, match="fraction"):
        selection_from_name("split", fraction=1.0)
    with pytest.raises(ValueError, match="num_splits"):
        selection_from_name("multi-split", num_splits=0)


def test_the_one_run_bounds_parse_names_with_the_shared_parser():
    g = np.random.default_rng(0)
    inc = g.random(400) < 0.5
    scores = inc + g.normal(size=400)
    for name in ("split", "bonferroni"):
        b = one_run_bounds(scores, inc, delta=1e-5, selection=name, max_points=8, rng=1)
        st = one_run_sweep(scores, inc, guess_counts=b.steinke.values, delta=1e-5,
                           selection=selection_from_name(name), rng=b.steinke.seed)  # fmt: skip
        assert b.steinke.epsilon == st.epsilon and b.selection == name
    with pytest.raises(ValueError, match="num_splits"):
        one_run_bounds(scores, inc, delta=1e-5, selection="multi-split", num_splits=0)


# ---------------------------------------------------------------------------------------------
# MultiSplit (JAX-Privacy's auditing library; Meinshausen, Meier & Bühlmann 2009, Thm 3.1)
# ---------------------------------------------------------------------------------------------


def test_multi_split_values_and_record():
    assert MultiSplit() == MultiSplit(num_splits=100, fraction=0.5)
    assert MultiSplit(np.int64(5)).num_splits == 5 and isinstance(MultiSplit(5).num_splits, int)
    assert len({MultiSplit(5), MultiSplit(5, 0.5), MultiSplit(6), Split(0.5)}) == 3
    for bad, match in ((0, "num_splits"), (10**6, "num_splits"), (2.5, "num_splits")):
        with pytest.raises((TypeError, ValueError), match=match):
            MultiSplit(bad)
    with pytest.raises(ValueError, match="fraction"):
        MultiSplit(5, 0.0)
    rec = MultiSplit(20, 0.25).record("threshold", n_candidates=9, seed=4, chosen=1.5)
    assert rec == SelectionRecord(
        "threshold",
        "multi-split",
        "median of 20 random splits, seed 4, each chosen among 9 candidates on a random 25% "
        "of the samples and bounded on the held-out 75% at failure probability beta/2 "
        "(Meinshausen, Meier & Buhlmann 2009); median split's choice (1.5)",
    )


def test_median_of_splits_reference_values():
    # numpy's median, as JAX-Privacy reports (the mean of the two middle bounds for even B)
    assert median_of_splits([0.5, 0.1, 0.9, 0.3]) == (0.4, 3)
    assert median_of_splits([0.5, 0.1, 0.9]) == (0.5, 0)
    assert median_of_splits([0.2]) == (0.2, 0)
    assert median_of_splits([0.0, 0.0, 0.7, 0.0]) == (0.0, 1)  # ties kept in split order
    assert median_of_splits([1.0, math.inf, math.inf]) == (math.inf, 1)
    med, idx = median_of_splits([[0.1, 3.0], [0.3, 1.0], [0.2, 2.0]])
    np.testing.assert_array_equal(med, [0.2, 2.0])
    np.testing.assert_array_equal(idx, [2, 2])


def test_multi_split_seeds_are_drawn_from_the_bounds_rng():
    seeds, seed = multi_split_seeds(5, 7)
    assert seed == 7
    ref = np.random.default_rng(7).integers(np.iinfo(np.int64).max, size=5)
    assert seeds == [int(x) for x in ref] and len(set(seeds)) == 5
    fresh, recorded = multi_split_seeds(3, None)
    assert isinstance(recorded, int) and multi_split_seeds(3, recorded)[0] == fresh


def _naive_median(run, confidence_level, num_splits, rng):
    """The definition: a Split at level 1 − β/2 on each seed drawn from rng; numpy's median."""
    seeds = np.random.default_rng(rng).integers(np.iinfo(np.int64).max, size=num_splits)
    half = 1.0 - (1.0 - confidence_level) / 2.0
    return np.median([run(half, int(s)) for s in seeds], axis=0)


def test_multi_split_scores_equal_the_naive_median_of_splits():
    g = np.random.default_rng(1)
    pos, neg = g.normal(1, 1, 600), g.normal(0, 1, 600)
    for b, level, fraction in ((7, 0.95, 0.5), (4, 0.9, 0.3)):
        res = epsilon_from_scores(pos, neg, selection=MultiSplit(b, fraction), delta=1e-5,
                                  confidence_level=level, rng=11)  # fmt: skip

        def run(lvl, s, fraction=fraction, level=level):
            return epsilon_from_scores(pos, neg, selection=Split(fraction), delta=1e-5,
                                       confidence_level=lvl, rng=s).epsilon  # fmt: skip

        assert res.epsilon == _naive_median(run, level, b, 11)
        assert res.confidence_level == level and res.confidence_interval.low == res.epsilon
        assert res.interval_level == 1 - (1 - level) / 4  # two one-sided intervals at β/2
        assert (res.selection.strategy, res.seed) == ("multi-split", 11)


def test_multi_split_sweeps_equal_the_naive_median_of_splits():
    g = np.random.default_rng(2)
    inc = g.random(600) < 0.5
    scores = inc + g.normal(size=600)
    grid = [50, 100, 200, 400, 600]
    res = one_run_sweep(scores, inc, guess_counts=grid, delta=1e-5, selection=MultiSplit(5),
                        rng=3)  # fmt: skip

    def run(lvl, s):
        return one_run_sweep(scores, inc, guess_counts=grid, delta=1e-5, confidence_level=lvl,
                             selection=Split(), rng=s).epsilon  # fmt: skip

    assert res.epsilon == _naive_median(run, 0.95, 5, 3)
    assert res.per_test_confidence_level == 0.975 and res.split_fraction == 0.5
    assert res.seed == 3 and res.selection.strategy == "multi-split"
    assert (
        res.uncorrected_max_epsilon
        == one_run_sweep(scores, inc, guess_counts=grid, delta=1e-5).uncorrected_max_epsilon
    )
    slots, ins = membership_slots(scores, inc)
    fdp = fdp_one_run_sweep(slots, ins, guess_counts=grid, delta=1e-5, selection=MultiSplit(3),
                            rng=4)  # fmt: skip

    def run_fdp(lvl, s):
        return fdp_one_run_sweep(slots, ins, guess_counts=grid, delta=1e-5, confidence_level=lvl,
                                 selection=Split(), rng=s).epsilon  # fmt: skip

    assert fdp.epsilon == _naive_median(run_fdp, 0.95, 3, 4)
    conf, alt = np.clip(g.normal(0.7, 0.2, 300), 0, 1), g.random((300, 2)) * 0.3
    mem = label_memorization_sweep(conf, alt, selection=MultiSplit(3), rng=5)

    def run_mem(lvl, s):
        return label_memorization_sweep(conf, alt, confidence_level=lvl, selection=Split(),
                                        rng=s).epsilon  # fmt: skip

    assert mem.epsilon == _naive_median(run_mem, 0.95, 3, 5) > 0


def test_multi_split_rdp_audit_is_the_elementwise_median_of_splits():
    c1 = np.array([[700, 200, 100], [1400, 300, 300]])
    c2 = np.array([[500, 300, 200], [900, 700, 400]])
    orders = [2.0, 5.0]
    res = rdp_audit(c1, c2, orders, selection=MultiSplit(5), rng=6)

    def run(lvl, s):
        return rdp_audit(c1, c2, orders, selection=Split(), confidence_level=lvl, rng=s).epsilons

    np.testing.assert_array_equal(res.epsilons, _naive_median(run, 0.95, 5, 6))
    assert res.epsilons.shape == (2, 2) and res.chosen.shape == (2, 2)
    assert res.bound_counts.shape == c1.shape and np.all(res.bound_counts < c1)
    assert res.simultaneous_over_orders and res.selection.strategy == "multi-split"
    single = rdp_audit(c1[0], c2[0], orders, selection=MultiSplit(5), rng=6)
    assert single.epsilons.shape == (2,) and single.chosen.shape == (2,)
    check = check_rdp_claim(single, [0.0, 0.0])
    assert check.p_value is None and check.refuted == bool(np.any(single.epsilons > 0))


def test_multi_split_dp_claims_hold_at_the_audits_delta_only():
    g = np.random.default_rng(3)
    pos, neg = g.normal(2, 1, 800), g.normal(0, 1, 800)
    audit = epsilon_from_scores(pos, neg, selection=MultiSplit(5), delta=1e-5, rng=0)
    check = check_dp_claim(audit, epsilon=0.5, delta=1e-5)
    assert check.refuted and check.lower_bound == audit.epsilon and check.p_value is None
    assert not check_dp_claim(audit, epsilon=audit.epsilon, delta=1e-5).refuted
    with pytest.raises(ValueError, match="delta"):
        check_dp_claim(audit, epsilon=0.5, delta=1e-3)


def test_multi_split_is_accepted_by_every_bound_that_chooses():
    g = np.random.default_rng(4)
    pos, neg = g.normal(1, 1, 300), g.normal(0, 1, 300)
    inc = g.random(300) < 0.5
    scores = inc + g.normal(size=300)
    slots, ins = membership_slots(scores, inc)
    conf, alt = g.random(200), g.random((200, 2))
    c1, c2 = np.array([700, 200, 100]), np.array([500, 300, 200])
    records = [
        epsilon_from_scores(pos, neg, selection="multi-split", rng=0).selection,
        rdp_audit(c1, c2, [2.0], selection=MultiSplit(3), rng=0).selection,
        one_run_sweep(scores, inc, selection=MultiSplit(3), rng=0).selection,
        fdp_one_run_sweep(slots, ins, selection=MultiSplit(3), rng=0).selection,
        label_memorization_sweep(conf, alt, selection=MultiSplit(3), rng=0).selection,
    ]
    assert [r.strategy for r in records] == ["multi-split"] * 5
    b = one_run_bounds(scores, inc, delta=1e-5, selection="multi-split", num_splits=3,
                       max_points=5, rng=0)  # fmt: skip
    assert b.selection == "multi-split" and b.steinke.selection.strategy == "multi-split"
    assert 0 <= b.max_valid <= max(b.steinke.uncorrected_max_epsilon, b.uncorrected_max) + 1e-12
