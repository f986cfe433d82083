"""The selection vocabulary (Explicit / Split / Bonferroni), the Progress protocol and the
shared validators used by the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit._results import SelectionRecord
from dpaudit._validate import check_at_most, check_progress, no_progress, track
from dpaudit.bounds import (
    Bonferroni,
    Explicit,
    Selection,
    Split,
    epsilon_from_confusion,
    epsilon_from_scores,
    fdp_one_run_epsilon_from_scores,
    fdp_one_run_sweep,
    label_memorization_audit,
    label_memorization_sweep,
    one_run_epsilon_from_scores,
    one_run_sweep,
    rdp_audit,
    rdp_k_cut,
    rdp_two_cut,
    rdp_two_cut_bootstrap,
)
from dpaudit.bounds._selection import as_selection, selection_generator, split_indices


def test_shorthands_and_bad_strategies():
    assert as_selection("split") == Split() and as_selection("bonferroni") == Bonferroni()
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
