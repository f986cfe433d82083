"""Issue 45: the last fuzz findings, each fixed as its class (the siblings too).

Every reproducer of the issue answers at once (well under 5 s and 2 GiB) with a ValueError /
TypeError naming the argument, or with a correct finite value checked against a reference.
The lidp-gaussian cap is exercised through the command line in ``tests/cli``-style (one line on
stderr, exit code 2) below.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dpaudit import attacks, bounds, mechanisms

# --------------------------------------------------------------------- 1. Sison–Glaz, tiny β


@pytest.mark.parametrize("level", [1 - 1e-16, float(np.nextafter(1.0, 0.0)), 1 - 1e-13, 0.999])
def test_sison_glaz_at_levels_next_to_one_matches_statsmodels(level):
    """1 − β rounding to a float next to 1 made the half-width guess Φ⁻¹(1) = ∞, cast to a
    negative int: a raw IndexError. The reference is statsmodels' scan (same rule)."""
    pytest.importorskip("statsmodels")
    counts = [600, 300, 100]
    ours = bounds.multinomial_intervals(counts, confidence_level=level, method="sison-glaz")
    ref = bounds.multinomial_intervals(
        counts, confidence_level=level, method="sison-glaz", engine="statsmodels"
    )
    np.testing.assert_allclose(ours.low, ref.low, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.high, ref.high, rtol=0, atol=1e-10)


def test_sison_glaz_guess_is_finite_and_positive_for_any_beta():
    from dpaudit.bounds._intervals import _sison_glaz_cmax_guesses

    rows = np.array([[600, 300, 100], [5, 0, 0], [1, 1, 0]])
    for beta in (0.5, 1e-10, 1e-16, 1.1e-16, 1e-300):
        guess = _sison_glaz_cmax_guesses(rows, beta)
        assert np.all(guess >= 1) and np.all(guess <= rows.sum(axis=1))


# --------------------------------------------------- 2. Monte-Carlo caps count the blocks


def test_tiny_blocks_count_towards_the_sampling_cap():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"block_size=1 .*raise block_size"):
        mechanisms.sample_argmax_counts([200, 30, 20], 40.0, 10**8, rng=0, block_size=1)
    with pytest.raises(ValueError, match=r"block_size=10 .*raise block_size"):
        mechanisms.sample_argmax_counts_from(
            lambda g, size: np.tile([3.0, 0.0], (size, 1)), 1.0, 10**7, rng=0, block_size=10
        )
    assert time.perf_counter() - start < 2.0
    # the same n in default blocks is accepted, and small block counts still run
    counts = mechanisms.sample_argmax_counts([200, 30, 20], 40.0, 1000, rng=0, block_size=100)
    assert counts.sum() == 1000


def test_block_overhead_is_what_the_cap_adds(monkeypatch):
    from dpaudit.mechanisms import noisy_argmax

    # 1000 draws × 3 classes + 9 blocks after the first × overhead: exactly at the cap passes
    monkeypatch.setattr(noisy_argmax, "MAX_SAMPLE_DRAWS", 3000 + 9 * 40_000)
    mechanisms.sample_argmax_counts([5, 1, 0], 1.0, 1000, rng=0, block_size=100)
    monkeypatch.setattr(noisy_argmax, "MAX_SAMPLE_DRAWS", 3000 + 9 * 40_000 - 1)
    with pytest.raises(ValueError, match="MAX_SAMPLE_DRAWS"):
        mechanisms.sample_argmax_counts([5, 1, 0], 1.0, 1000, rng=0, block_size=100)


# ------------------------------------------------- 3. output_features: flags merged, capped


def test_duplicate_flags_are_merged():
    x = np.array([[1.0, -1.0], [0.0, 2.0]])
    once = attacks.output_features(x, (-1.0, 2.0))
    np.testing.assert_array_equal(attacks.output_features(x, [-1.0, -1.0, 2.0, -1.0]), once)
    # a million copies of one flag is one flag (merged without a Python loop)
    out = attacks.output_features(np.zeros((400, 2)), np.zeros(10**6))
    assert out.shape == (400, 4) and np.all(out[:, 2:] == 1.0) and np.all(out[:, :2] == 0.0)


def test_too_many_distinct_flags_are_refused_before_allocating():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"flags must list at most 256 distinct"):
        attacks.output_features(np.zeros((400, 2)), np.arange(300.0))
    with pytest.raises(ValueError, match=r"flags must list at most 256 distinct"):
        attacks.output_features(np.zeros((4, 2)), list(range(10**6)))
    with pytest.raises(ValueError, match=r"output_features of outputs with shape"):
        attacks.output_features(np.zeros((2 * 10**6, 2)), np.arange(200.0))  # ~12 GiB
    with pytest.raises(ValueError, match=r"flags must be a 1-d"):
        attacks.output_features(np.zeros((4, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"flags"):
        attacks.output_features(np.zeros((4, 2)), np.r_[np.zeros(10**5), np.nan])
    with pytest.raises(ValueError, match=r"flags must list at most 256 distinct"):
        attacks.fit_mechanism_attack(np.zeros((40, 1)), np.ones((40, 1)), flags=tuple(range(300)))
    assert time.perf_counter() - start < 3.0


# -------------------------------------------- 4. fit_mechanism_attack: a cap on the rows


def test_fit_mechanism_attack_refuses_a_huge_training_set_at_once():
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"outputs_a with 15000000 rows.*raise max_entries"):
        attacks.fit_mechanism_attack(
            np.zeros((15_000_000, 2)), rng.normal(size=(400, 2)) + 0.5, max_outputs=200
        )
    assert time.perf_counter() - start < 3.0


def test_fit_entries_cap_is_exact():
    g = np.random.default_rng(1)
    a, b = g.laplace(0, 1, (30, 2)), g.laplace(1, 1, (30, 2))
    att = attacks.fit_mechanism_attack(a, b, kind="logistic", max_entries=60 * 3)
    assert att.kind == "logistic"  # rows × (features + 1)
    with pytest.raises(ValueError, match="outputs_a with 30 rows and outputs_b with 30 rows"):
        attacks.fit_mechanism_attack(a, b, kind="logistic", max_entries=60 * 3 - 1)


# ------------------------------------------------------ 5. order grids: real work counted


def _rr_renyi_mp(alpha: float, c: int, eps: float) -> float:
    """Randomized response's Rényi divergence between two labels, 50 digits (Mironov 2017,
    arXiv:1702.07476, Def. 3 on the two output distributions)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        e = mpmath.exp(mpmath.mpf(eps))
        p, q = e / (e + c - 1), 1 / (e + c - 1)
        a = mpmath.mpf(alpha)
        s = p**a * q ** (1 - a) + q**a * p ** (1 - a) + (c - 2) * q
        return float(mpmath.log(s) / (a - 1))


def test_randomized_response_renyi_is_vectorised_and_exact():
    start = time.perf_counter()
    grid = np.linspace(1.01, 1000, 100_000)
    out = mechanisms.randomized_response_renyi(grid, num_classes=10, epsilon=1.0)
    assert time.perf_counter() - start < 2.0
    for i in (0, 1, 5000, 99_999):
        assert out[i] == pytest.approx(_rr_renyi_mp(grid[i], 10, 1.0), rel=1e-10)
    special = mechanisms.randomized_response_renyi([1.0, 2.0, np.inf], num_classes=3, epsilon=2.0)
    e = math.exp(2.0)
    p, q = e / (e + 2), 1 / (e + 2)
    assert special[0] == pytest.approx((p - q) * 2.0, rel=1e-12)  # α = 1: KL
    assert special[1] == pytest.approx(_rr_renyi_mp(2.0, 3, 2.0), rel=1e-12)
    assert special[2] == 2.0  # α = ∞: ε
    assert np.all(mechanisms.randomized_response_renyi(grid[:5], num_classes=4, epsilon=0) == 0)


def test_rdp_bootstrap_cap_counts_resamples_times_orders():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"n_resamples=199 at orders=<100000 orders>"):
        bounds.rdp_k_cut_bootstrap(
            [600, 300, 100], [500, 300, 200], np.linspace(1.01, 1000, 100_000),
            n_resamples=199, rng=0,
        )  # fmt: skip
    assert time.perf_counter() - start < 2.0


def test_rdp_bootstrap_chunks_orders_without_changing_the_result(monkeypatch):
    from dpaudit.bounds import _rdp_bootstrap

    orders = np.linspace(1.5, 60.0, 40)
    args = ([600, 300, 100], [500, 300, 200], orders)
    whole = bounds.rdp_k_cut_bootstrap(*args, n_resamples=199, rng=3)
    monkeypatch.setattr(_rdp_bootstrap, "_STATISTIC_CHUNK_TERMS", 199 * 3 * 7)  # 7 orders
    chunked = bounds.rdp_k_cut_bootstrap(*args, n_resamples=199, rng=3)
    np.testing.assert_array_equal(whole.epsilons, chunked.epsilons)


# ------------------------------------------------ 6. inconsistent inputs refused, named


def test_craft_natural_and_poison_need_the_label_among_the_votes_classes():
    with pytest.raises(ValueError, match=r"true_label must be a class of votes \(0 to 2\)"):
        attacks.craft_natural(np.ones(4), 5, votes=[5, 3, 2])
    with pytest.raises(ValueError, match=r"true_label must be a class of votes"):
        attacks.craft_poison(np.ones(4), [5, 3, 2], true_label=3)
    with pytest.raises(ValueError, match=r"votes must be one histogram"):
        attacks.craft_natural(np.ones(4), 0, votes=[[5, 3], [2, 1]])
    assert attacks.craft_natural(np.ones(4), 2, votes=[5, 3, 2]).label == 2
    assert attacks.craft_natural(np.ones(4), 7).label == 7  # no votes: nothing to check


@pytest.mark.parametrize(
    "exclude, match",
    [
        ([500], r"exclude must hold test indices below num_test=100, got 500"),
        ([2**70], r"exclude must hold test indices below num_test=100"),
        ([1e300, 7], r"exclude must hold test indices below num_test=100"),
        (np.zeros((1, 1, 2)), r"exclude must be a 1-d list of test indices"),
        ([-1], r"exclude"),
        ([2.5], r"exclude must hold integer indices"),
    ],
)
def test_natural_queries_refuses_indices_outside_the_test_set(exclude, match):
    with pytest.raises(ValueError, match=match):
        attacks.natural_queries(100, 10, rng=0, exclude=exclude)


def test_natural_queries_still_excludes_what_it_is_given():
    q = attacks.natural_queries(10, 9, rng=0, exclude=[3])
    assert 3 not in q and q.size == 9


def test_argmax_block_takes_any_batch_shape_consistently():
    """``ArgmaxBlock`` and the whole noisy-argmax module take ``(..., C)`` batches (documented);
    a 3-d batch is the 2-d batch reshaped, draw for draw — consistent, so accepted."""
    votes = np.arange(12.0).reshape(2, 2, 3)
    a = mechanisms.sample_argmax_counts(votes, 4.0, 500, rng=1)
    b = mechanisms.sample_argmax_counts(votes.reshape(4, 3), 4.0, 500, rng=1)
    np.testing.assert_array_equal(a.reshape(4, 3), b)
    p = mechanisms.argmax_probabilities(votes, 4.0).reshape(4, 3)
    np.testing.assert_allclose(p, mechanisms.argmax_probabilities(votes.reshape(4, 3), 4.0))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_splits": float("nan")}, TypeError, "num_splits"),
        ({"num_splits": 0}, ValueError, "num_splits"),
        ({"fraction": 1.5}, ValueError, "fraction"),
        ({"candidates": "abc"}, TypeError, "candidates"),
    ],
)
@pytest.mark.parametrize("name", ["split", "bonferroni", "multi-split"])
def test_selection_from_name_checks_every_argument(name, kwargs, error, match):
    with pytest.raises(error, match=match):
        bounds.selection_from_name(name, **kwargs)


# ------------------------------------------------------------ 7. rdp_to_dp near order 1


def test_rdp_to_dp_near_order_one_is_finite():
    conv = bounds_free_rdp_to_dp([1 + 1e-12], [0.1], 1e-5)
    assert math.isfinite(conv.epsilon) and conv.order == 1 + 1e-12
    gap = (1 + 1e-12) - 1.0  # the float λ − 1 (exact), 1.0000889e-12
    assert conv.epsilon == pytest.approx(0.1 - math.log(1e-5) / gap, rel=1e-5)


def bounds_free_rdp_to_dp(*args, **kwargs):
    from dpaudit.accounting import rdp_to_dp

    return rdp_to_dp(*args, **kwargs)


# --------------------------------------------- 8. messages naming the right argument(s)


def test_label_memorization_mismatch_names_both_arguments():
    conf = np.full((100, 3), 1 / 3)
    with pytest.raises(
        ValueError, match=r"canary_confidence and alternative_confidence .* 1 and 100"
    ):
        bounds.label_memorization_audit([0.5], conf[:, 0], threshold=0.5)
    with pytest.raises(ValueError, match=r"canary and alternatives must have one row per canary"):
        attacks.CanaryConfidences(np.full(3, 0.5), np.full((4, 2), 0.1))


def test_row_mismatches_name_both_arrays():
    with pytest.raises(ValueError, match=r"labels must have shape \(1,\), one per row of logits"):
        attacks.logit_margin([[1.0, 2.0]], [0, 1])


# ------------------------------------ 9. up-front caps on a workflow's work, naming the flag


def test_lidp_gaussian_refuses_a_billion_runs_at_once_naming_the_flags(capsys):
    from dpaudit.cli import run
    from dpaudit.experiments.lidp_gaussian.settings import LiDPGaussianSettings

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"num_runs=1000000000 \(--runs\).*--repetitions"):
        LiDPGaussianSettings(sigma=2.0, dim=100, num_canaries=8, num_runs=10**9,
                             num_repetitions=2)  # fmt: skip
    argv = ["audit", "lidp-gaussian", "--sigma", "2", "--dim", "100", "--canaries", "8",
            "--runs", "1000000000", "--repetitions", "2", "--no-store"]  # fmt: skip
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "(--runs)" in err
    assert "MemoryError" not in err
    assert time.perf_counter() - start < 5.0
    # the shipped scale still passes
    assert LiDPGaussianSettings(num_runs=1000, num_repetitions=20).num_runs == 1000


def test_lidp_gaussian_statistics_caps_its_runs(monkeypatch):
    from dpaudit.experiments.lidp_gaussian import simulation

    with pytest.raises(ValueError, match=r"lidp_gaussian_statistics with num_runs=100000000"):
        simulation.lidp_gaussian_statistics(1.0, 16, 4, 10**8, rng=0)
    monkeypatch.setattr(simulation, "MAX_SIMULATED_RUNS", 8)
    assert simulation.lidp_gaussian_statistics(1.0, 16, 4, 8, rng=0).alternative.shape == (8, 4)
    with pytest.raises(ValueError, match="MAX_SIMULATED_RUNS"):
        simulation.lidp_gaussian_statistics(1.0, 16, 4, 9, rng=0)


def test_private_prediction_caps_engine_blocks_per_query_naming_the_flags():
    from dpaudit.experiments.private_prediction.settings import (
        MAX_BLOCKS_PER_QUERY,
        EngineSettings,
    )

    with pytest.raises(ValueError, match=r"experiments=10{15} \(--experiments\).*--block-size"):
        EngineSettings(experiments=10**15)
    with pytest.raises(ValueError, match=r"block_size=1 \(--block-size\)"):
        EngineSettings(experiments=10**6, block_size=1)
    assert EngineSettings(experiments=10**8).experiments == 10**8  # the paper's: 2 blocks
    ok = EngineSettings(experiments=MAX_BLOCKS_PER_QUERY * 2**18, sampler="monte-carlo")
    assert ok.experiments == MAX_BLOCKS_PER_QUERY * 2**18
