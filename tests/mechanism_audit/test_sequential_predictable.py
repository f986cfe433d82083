"""The sequential mechanism audit's predictable choices (issue 41): inputs pooled across the
pairs that share them, the pair, score, threshold and side re-chosen before each epoch from
earlier outputs only, and bets restarted (not voided) when the event changes."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.attacks import MechanismAttack
from dpaudit.experiments import MechanismAuditSettings, audit_mechanism
from dpaudit.experiments.mechanism import sequential


def test_input_pools_share_inputs_and_merge_the_two_orders():
    a, b, c = np.zeros(3), np.ones(3), np.full(3, 2.0)
    inputs, upairs = sequential.input_pools([(a, b), (b, a), (a, c), (c, a), (b, c)])
    assert [x.tolist() for x in inputs] == [[0.0] * 3, [1.0] * 3, [2.0] * 3]
    assert upairs == [(0, 1), (0, 2), (1, 2)]


def test_statdp_patterns_of_ten_inputs_are_eight_tests():
    """SVT's 16 ordered StatDP pairs share 10 inputs: a pilot per input costs 10/32 of one
    per ordered pair and input."""
    from dpaudit.experiments.mechanism.pipeline import _pairs, resolve_mechanism

    s = MechanismAuditSettings(mechanism="svt6")
    pairs = _pairs(s, resolve_mechanism(s))
    inputs, upairs = sequential.input_pools(pairs)
    assert (len(pairs), len(inputs), len(upairs)) == (16, 10, 8)


def _identity_score(outputs, a, b):
    return np.asarray(outputs, float)[:, 0]


def test_growth_event_picks_the_side_and_estimates_it_afresh():
    """a′ = N(2, 1) against a = N(0, 1), scored by x: the event {x ≥ t} for a′; the fresh
    rates (second half) are unbiased for the chosen t: close to the normal tails."""
    rng = np.random.default_rng(0)
    out_a, out_b = rng.normal(0, 1, (20_000, 1)), rng.normal(2, 1, (20_000, 1))
    attack = MechanismAttack("llr", llr=_identity_score, pair_a=np.zeros(1), pair_b=np.ones(1))
    att, forward, growth, (p_pos, p_neg, n_pos, n_neg) = sequential.growth_event(
        attack, out_a, out_b, claimed_epsilon=0.5, delta=0.0
    )
    assert forward and growth > 0.1 and (n_pos, n_neg) == (10_000, 10_000)
    t = att.threshold
    from scipy.stats import norm

    assert abs(p_pos - norm.sf(t - 2)) < 0.02 and abs(p_neg - norm.sf(t)) < 0.01
    # a′ uniform on [0, 3] against a = N(0, 1): the other side, the complement of
    # {x ≥ t} for a (half of a's outputs, none of a′'s), beats {x ≥ t} for a′ (ratio ≤ 2)
    out_b = rng.uniform(0, 3, (20_000, 1))
    att, forward, growth, (p_pos, p_neg, _, _) = sequential.growth_event(attack, out_a, out_b,
                                                                         0.5, 0.0)  # fmt: skip
    assert not forward and growth > 0.5 and p_neg < 0.01 and 0.4 < p_pos < 0.6


def test_rates_of_an_event_no_output_fell_in_show_no_difference():
    """Zero counts on both inputs (of unequal sizes) give equal shrunk rates: no drift."""
    sa, sb = np.zeros(50), np.zeros(300)
    pos, neg, npos, nneg = sequential._rates(sa, sb, np.array([1.0]), True)
    assert pos[0] == neg[0] and (npos, nneg) == (300, 50)
    growth = sequential._growth(pos, neg, npos, nneg, math.exp(0.1), 0.0, 1.0)
    assert growth[0] == 0.0


def test_each_epoch_is_chosen_from_outputs_drawn_before_it(monkeypatch):
    """Predictability, checked on the run itself: the outputs each epoch bets on are never
    in the pools its choice was made from, and are in the pools of every later choice."""
    calls, bet_on = [], []
    choose, bet = sequential._choose, sequential._bet

    def spy_choose(spec, s, inputs, upairs, pools, *args):
        calls.append({id(x) for pool in pools for x in pool})
        return choose(spec, s, inputs, upairs, pools, *args)

    def spy_bet(process, choice, out_a, out_b):
        bet_on.append((len(calls) - 1, id(out_a), id(out_b)))
        return bet(process, choice, out_a, out_b)

    monkeypatch.setattr(sequential, "_choose", spy_choose)
    monkeypatch.setattr(sequential, "_bet", spy_bet)
    s = MechanismAuditSettings(mechanism="statdp-isvt4", mode="sequential", samples=12_000)
    res = audit_mechanism(s)
    assert len(calls) >= len(res.timings["epochs"]) >= 3
    assert bet_on, "at least one epoch bets"
    for call, ida, idb in bet_on:
        assert ida not in calls[call] and idb not in calls[call]
        for later in calls[call + 1 :]:
            assert ida in later and idb in later


def test_samples_counted_include_pilot_and_exploration():
    """noisy-hist2 (4 ordered pairs of 3 inputs): the pilot's 3 × 200 outputs, then the
    first epoch (200 pairs, the chosen pair's smaller pool) rejects within 128 pairs;
    samples per input = (600 + 2·bet-on pairs)/2."""
    res = audit_mechanism(MechanismAuditSettings(mechanism="noisy-hist2", mode="sequential"))
    state = res.entries[0].detail
    assert state.rejects_claim and state.rejected_at <= 128
    assert res.timings["samples_per_input"] == 3 * sequential.PILOT / 2 + state.rejected_at


def test_sequential_module_examples():
    from doctest_support import module_examples

    assert module_examples("dpaudit.experiments.mechanism.sequential").failed == 0


def test_an_epoch_with_no_credible_event_explores_instead_of_sticking():
    """StatDP's iSVT3 (claims ε = 0.7): while no event beats its noise the epochs explore
    the pair that looks likeliest unpenalised, so its pool grows until the event is credible
    (when the choice fell back to the first pair with growth 0, one seed in three streamed
    its whole budget on a pair with no violation). Seed 1 needs 30,117 samples per input
    (53,277 before exploring epochs were a quarter of the pool and the event chosen on the
    scores' training rows too; the budget was 60,000 before the bets started from the
    event's fresh rates)."""
    for seed in (0, 1):
        s = MechanismAuditSettings(mechanism="statdp-isvt3", mode="sequential", seed=seed,
                                   samples=100_000)  # fmt: skip
        res = audit_mechanism(s)
        assert res.entries[0].detail.rejects_claim
        assert not all(e["bet"] for e in res.timings["epochs"])  # some epochs only explored


def _pinned_isvt3(samples: float, stop: tuple[int, int], epsilon: float, log_e: float):
    """StatDP's iSVT3, seed 0, budget 500,000: its samples, rejection, bound and e-value."""
    s = MechanismAuditSettings(mechanism="statdp-isvt3", mode="sequential", samples=500_000)
    res = audit_mechanism(s)
    state = res.entries[0].detail
    assert res.timings["samples_per_input"] == samples
    assert (state.rejected_at, state.observations) == stop
    assert math.isclose(state.epsilon, epsilon, rel_tol=1e-12)
    assert math.isclose(state.log_e_value, log_e, rel_tol=1e-9)
    return res.timings["epochs"]


def test_a_run_is_pinned():
    """StatDP's iSVT3, seed 0, pinned so that a change meant as pure speed (caching,
    blocks, compiled loops) shows if it changes the audit. The numbers of the rule with
    betting epochs as long as the chosen pair's smaller pool and exploring ones a quarter of
    it (EXPLORE_EPOCH), scores fitted on at most the first FIT_ROWS outputs (and
    FIT_PER_COLUMN per output column) and refitted at twice the rows, the event chosen on
    those rows and half the rest (estimated on the other half), bets restarted from the
    event's fresh rates with their drift lowered by SEED_PENALTY standard errors (issue 41);
    the rules before it gave 28,444 (exploring epochs as long as betting ones), 31,574 (the
    event chosen on half the rest only), 31,667 (no cap per column, the fresh rates as they
    are), 27,476 (balanced pools, ties explored least-explored first) and 36,178.5 samples.
    Thirteen epochs only explore (seven of the fewest pairs, FIRST_EPOCH), three bet."""
    epochs = _pinned_isvt3(14_665.5, (3_428, 3_452), 0.7000000017, 3.0075191978823668)
    sizes = [128] * 7 + [456, 228, 1140, 570, 712, 890, 1113, 1391, 6956]
    assert [e["pairs"] for e in epochs] == sizes
    assert [k for k, e in enumerate(epochs) if e["bet"]] == [7, 9, 15]
    assert all(e["ramp_to"] is None for e in epochs)
    assert all(e["growth"] > 0.0 for e in epochs)
    assert math.isclose(epochs[15]["growth"], 0.0004367984763083772, rel_tol=1e-9)


def test_a_ramp_run_is_pinned(monkeypatch):
    """The same run with RAMPS on (off by default: over 300 audits of the five closest
    mechanisms ramps saved 5 ± 5 % of the samples and cost about a fifth more CPU): a ramp
    clip((score − t)/w, 0, 1) replaces the event when its growth is larger; the first two
    betting epochs bet on ramps, and it rejects at 14,611.5 samples instead of 14,665.5."""
    monkeypatch.setattr(sequential, "RAMPS", True)
    epochs = _pinned_isvt3(14_611.5, (3_374, 3_388), 0.7236180904522613, 3.3078385503195573)
    assert [k for k, e in enumerate(epochs) if e["bet"]] == [7, 9, 15]
    assert [k for k, e in enumerate(epochs) if e["bet"] and e["ramp_to"] is not None] == [7, 9]


def test_pairs_are_judged_on_balanced_pools():
    """All of the smaller pool, at most BALANCE times as many of the larger's."""
    b = sequential.BALANCE
    assert sequential._balanced(200, 50_000) == (200, 200 * b)
    assert sequential._balanced(90_000, 30_000) == (90_000, 30_000)
    assert sequential._balanced(10 * b * 7, 7) == (7 * b, 7)


def test_ties_explore_the_least_explored_pair():
    """Nothing shows a violation (pools of identical outputs: no event has any growth):
    the choice is the pair whose smaller pool is smallest, not the first pair listed."""
    from dpaudit.experiments.mechanism.pipeline import resolve_mechanism

    s = MechanismAuditSettings(mechanism="noisy-hist2", mode="sequential")
    spec = resolve_mechanism(s)
    inputs = [np.zeros(2), np.ones(2), np.full(2, 2.0)]
    upairs = [(0, 1), (0, 2), (1, 2)]
    same = np.zeros((1, 2))
    pools = [[np.repeat(same, n, axis=0)] for n in (400, 300, 100)]
    choice, ranking = sequential._choose(spec, s, inputs, upairs, pools, 0.0)
    assert [g for g, _ in ranking] == [0.0, 0.0, 0.0]
    assert [k for _, k in ranking] == [1, 2, 0] and choice.pair == 1


def test_fit_rows_capped_per_output_column():
    """Half the pool, at most FIT_ROWS, and at most FIT_PER_COLUMN per output column: a
    one-column output (report noisy max's value) keeps the rest for choosing the event."""
    per, most = sequential.FIT_PER_COLUMN, sequential.FIT_ROWS
    assert sequential._fit_rows(400, 1) == 200
    assert sequential._fit_rows(10 * per, 1) == per
    assert sequential._fit_rows(10 * per, 2) == 2 * per
    assert sequential._fit_rows(10 * most, 10) == most


def test_seeded_bets_start_from_the_drift_less_its_noise():
    """The rates a restart seeds the bets with keep p⁻ and lower p⁺ so that the drift is the
    estimate's less SEED_PENALTY standard errors, never below zero (then no bet at first)."""
    f, k = math.exp(0.5), sequential.SEED_PENALTY
    p_pos, p_neg, n = 0.4, 0.1, 1000
    se = math.sqrt(p_pos * (1 - p_pos) / n + f * f * p_neg * (1 - p_neg) / n)
    low = sequential._cautious(p_pos, p_neg, n, n, 0.5, 0.0)
    assert math.isclose(low - f * p_neg, p_pos - f * p_neg - k * se, rel_tol=1e-12)
    assert sequential._cautious(0.18, p_neg, 100, 100, 0.5, 0.0) == f * p_neg  # drift 0
    assert sequential._cautious(0.05, p_neg, n, n, 0.5, 0.0) == f * p_neg  # negative: 0
    assert sequential._cautious(p_pos, p_neg, 0, n, 0.5, 0.0) == p_pos  # nothing estimated


def test_a_column_of_few_values_also_gets_a_one_hot_score():
    """An output column of 3 to LEVELS values (a count) gets one more logistic score, one
    indicator per value: it singles out a middle value, which a score linear in the column
    cannot. Two-valued and continuous columns do not."""
    from dpaudit.experiments.mechanism.pipeline import resolve_mechanism

    s = MechanismAuditSettings(mechanism="statdp-isvt4", mode="sequential")
    spec = resolve_mechanism(s)
    rng = np.random.default_rng(0)
    a = np.column_stack([rng.integers(0, 5, 2000), rng.normal(size=2000)]).astype(float)
    b = a.copy()
    b[:400, 0] = 2.0  # a′ gives the middle count more often
    attacks = sequential._scores(spec, s, np.ones(10), np.zeros(10), a, b)
    assert len(attacks) == 3 and attacks[-1].features.levels == ((0, (0.0, 1.0, 2.0, 3.0, 4.0)),)
    probe = np.array([[k, 0.0] for k in range(5)])
    assert int(np.argmax(attacks[-1].scores(probe))) == 2
    assert int(np.argmax(attacks[0].scores(probe))) in (0, 4)  # linear: an end
    two = np.column_stack([rng.integers(0, 2, 2000), rng.normal(size=2000)]).astype(float)
    assert len(sequential._scores(spec, s, np.ones(10), np.zeros(10), two, two[::-1])) == 2


def test_claim_bets_give_the_full_process_state():
    """The audit streams only the claim's e-process and computes the ε confidence sequence
    at the end from the recorded bets: the same state, bit for bit, as the full grid's
    process fed the same restarts and pairs — with the bound inside the first prefix of
    the grid (a mild violation) and past it (a gross one: the prefix is doubled)."""
    from dpaudit.bounds import DPClaimEProcess

    rng = np.random.default_rng(5)
    for p_pos, p_neg in ((0.40, 0.30), (0.9, 0.1)):
        bets, full = sequential._ClaimBets(0.1, 1e-6, 0.95), DPClaimEProcess(0.1, 1e-6)
        for epoch in range(4):
            seed = (p_pos, p_neg, 50.0 * epoch)
            pos, neg = rng.random(700) < p_pos, rng.random(700) < p_neg
            bets.restart_bets(*seed)
            full.restart_bets(*seed)
            before = full.observations
            streamed = bets.update_until_rejected(pos, neg, look=32)
            fed = streamed.observations - before
            full.update(pos[:fed], neg[:fed])
            assert streamed.log_e_value == full.result().log_e_value
            if streamed.rejects_claim:
                break
        got, want = bets.confidence_sequence(), full.result()
        assert got == want and got.rejects_claim
        first = bets.grid[2 * (int(np.searchsorted(bets.grid, 0.1)) + 2) - 1]  # ≈ 0.22
        assert (got.epsilon > first) == (p_pos > 0.5)  # the gross one: prefix doubled


def test_sorted_quantiles_are_numpys_to_the_bit():
    """The event search's thresholds: ``np.quantile`` of the merged sorted scores, without
    its partial sort, on scores with ties (counts), without, a single value and a NaN."""
    rng = np.random.default_rng(2)
    q = sequential._LEVELS
    cases = [rng.normal(size=n) for n in (1, 2, 3, 256, 257, 1_000, 20_001)]
    cases += [rng.integers(0, 5, size=n).astype(float) for n in (7, 300, 4_097)]
    cases += [np.array([1.0, np.nan, 0.5])]
    for x in cases:
        v = np.sort(x, kind="stable")
        np.testing.assert_array_equal(sequential._sorted_quantiles(v, q), np.quantile(x, q))
