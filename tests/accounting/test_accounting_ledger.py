"""PrivacyLedger: the budget is never exceeded under 10^4 random queries nor under 8 racing
threads (issue 13: 20 of 20 races accept exactly the sequential number), refusals charge
nothing, charges equal the per-step RDP of the mechanism value, the numbers recorded before the
mechanism-value signature are reproduced (issue 12), fallbacks to the data-independent bound
are counted, JSON round-trips bit for bit and refuses states no sequence of charges produces,
extreme σ, bad input (malformed JSON is always a ValueError)."""

from __future__ import annotations

import contextlib
import json
import pathlib
import pickle
import sys
import threading

import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    PrivacyLedger,
    RDPCurve,
    confident_gnmax_cost,
    gnmax_rdp,
    gnmax_rdp_details,
    mechanism_rdp,
    rdp_to_dp,
    threshold_rdp,
)
from dpaudit.errors import BudgetExhaustedError
from dpaudit.mechanisms import ConfidentGNMax, GNMax, LNMax

CONFIGS = [
    (GNMax(20.0), dict(delta=1e-5, epsilon_budget=2.0)),
    (GNMax(20.0), dict(delta=1e-5, epsilon_budget=2.0, analysis="data-independent")),
    (
        ConfidentGNMax(threshold=150, sigma1=40.0, sigma2=15.0),
        dict(delta=1e-6, epsilon_budget=1.5, conversion="standard"),
    ),
    (
        ConfidentGNMax(threshold=100, sigma1=30.0, sigma2=15.0),
        dict(delta=1e-5, epsilon_budget=3.0, analysis="data-independent"),
    ),
]


def _queries(rng, n, c=10, teachers=250):
    alphas = rng.choice([0.02, 0.1, 0.5, 3.0], size=n)
    return np.array([rng.multinomial(teachers, rng.dirichlet(np.full(c, a))) for a in alphas])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("idx", range(len(CONFIGS)))
def test_budget_never_exceeded_under_random_queries(idx):
    """2 500 random queries per configuration, 10^4 in all."""
    mech, cfg = CONFIGS[idx]
    rng = np.random.default_rng(100 + idx)
    votes = _queries(rng, 2500)
    answered_draw = rng.random(2500) < 0.6
    led = PrivacyLedger(mech, **cfg)
    analysis = cfg.get("analysis", "data-dependent")
    confident = isinstance(mech, ConfidentGNMax)
    rho2_all = gnmax_rdp(votes, mech.sigma, DEFAULT_ORDERS, analysis=analysis)
    if confident:
        rho1_all = threshold_rdp(
            votes, mech.threshold, mech.sigma1, DEFAULT_ORDERS, analysis=analysis
        )
    else:
        rho1_all = np.zeros_like(rho2_all)
    expected_total = np.zeros(DEFAULT_ORDERS.size)
    refused = charged = 0
    for i, v in enumerate(votes):
        before = led.rdp
        fb_before = led.fallback_counts
        nq, na = led.num_queries, led.num_answered
        answered = bool(answered_draw[i]) if confident else True
        np.testing.assert_allclose(led.query_cost(v), rho1_all[i] + rho2_all[i], rtol=1e-15, atol=0)
        afford = led.can_afford(v)
        try:
            led.charge(v, answered=answered)
        except BudgetExhaustedError:
            refused += 1
            assert not afford  # affording the worst case means any outcome can be charged
            assert led.rdp == before and led.num_queries == nq and led.num_answered == na
            assert np.array_equal(led.fallback_counts, fb_before)
        else:
            charged += 1
            expected_total = expected_total + rho1_all[i] + (rho2_all[i] if answered else 0.0)
            assert led.num_queries == nq + 1 and led.num_answered == na + int(answered)
        assert led.epsilon() <= cfg["epsilon_budget"]
    assert refused > 100 and charged > 10  # the budget was actually hit, and queries passed
    np.testing.assert_allclose(led.rdp.epsilons, expected_total, rtol=1e-12, atol=0)
    conv = rdp_to_dp(
        DEFAULT_ORDERS, expected_total, cfg["delta"], conversion=cfg.get("conversion", "balle2020")
    )
    assert led.epsilon() == pytest.approx(conv.epsilon, rel=1e-12)


# -- issue 12: the mechanism value, and the numbers recorded before the change ---------------
_BEFORE = pathlib.Path(__file__).resolve().parents[1] / "data"
_BEFORE = _BEFORE / "ledger_numbers_before_mechanism_values.json"


def _mechanism_of(config: dict) -> tuple[GNMax | ConfidentGNMax, dict]:
    """The recorded loose-float configuration → (mechanism value, remaining keywords)."""
    kw = dict(config)
    sigma, threshold, sigma1 = kw.pop("sigma"), kw.pop("threshold", None), kw.pop("sigma1", None)
    if threshold is None:
        return GNMax(sigma), kw
    return ConfidentGNMax(threshold, sigma1, sigma), kw


def _unhex(values: list[str]) -> np.ndarray:
    return np.array([float.fromhex(x) for x in values])


def test_ledger_reproduces_the_numbers_recorded_before_mechanism_values():
    """Six ledgers (GNMax / Confident GNMax, both analyses, both conversions, with and without
    budget) charged 60 recorded queries with PrivacyLedger(sigma=..., threshold=..., sigma1=...)
    at commit 517270d: the same charges are accepted, ε is bit-identical or within 1e-15
    relative, the curve within 1e-15 (the threshold step's λ/(2σ1²) is now mechanism_rdp's
    expression, which differs from λ/(√2σ1)² in the last bit), fallback counts equal."""
    doc = json.loads(_BEFORE.read_text())
    votes, answered = np.array(doc["votes"]), np.array(doc["answered"])
    for rec in doc["ledgers"]:
        mech, kw = _mechanism_of(rec["config"])
        led = PrivacyLedger(mech, **kw)
        accepted = []
        for v, a in zip(votes, answered, strict=True):
            try:
                led.charge(v, answered=bool(a) if isinstance(mech, ConfidentGNMax) else True)
                accepted.append(True)
            except BudgetExhaustedError:
                accepted.append(False)
        assert accepted == rec["accepted"], rec["name"]
        for got, key in ((led.epsilon(), "epsilon"), (led.epsilon(1e-3), "epsilon_at_1e-3")):
            want = float.fromhex(rec[key])
            assert got == want or abs(got - want) <= 1e-15 * want, rec["name"]
        np.testing.assert_allclose(led.rdp.epsilons, _unhex(rec["rdp"]), rtol=1e-15, atol=0)
        assert led.fallback_counts.tolist() == rec["fallback_counts"]
        assert led.num_fallback == rec["num_fallback"]
        assert (led.num_queries, led.num_answered) == (rec["num_queries"], rec["num_answered"])


def test_charges_are_mechanism_rdp():
    """The per-query cost is mechanism_rdp's claim for the same value (the one place)."""
    v = np.array([230, 15, 5, 0, 0])
    for mech in (GNMax(40.0), ConfidentGNMax(150, 20, 40)):
        for analysis in ("data-dependent", "data-independent"):
            led = PrivacyLedger(mech, delta=1e-5, analysis=analysis)
            want = mechanism_rdp(mech, DEFAULT_ORDERS, votes=v, analysis=analysis)
            np.testing.assert_array_equal(_bits(led.query_cost(v)), _bits(want))
            if isinstance(mech, ConfidentGNMax):
                led.charge(v, answered=False)
                want = mechanism_rdp(
                    mech, DEFAULT_ORDERS, votes=v, analysis=analysis, answered=False
                )
                np.testing.assert_array_equal(_bits(led.rdp.epsilons), _bits(want))


def test_mechanism_properties_are_read_only():
    mech = ConfidentGNMax(threshold=200, sigma1=150, sigma2=40)
    led = PrivacyLedger(mech, delta=1e-5)
    assert led.mechanism is mech
    assert (led.sigma, led.threshold, led.sigma1) == (40.0, 200.0, 150.0)
    plain = PrivacyLedger(GNMax(3.0), delta=1e-5)
    assert (plain.sigma, plain.threshold, plain.sigma1) == (3.0, None, None)
    for attr in ("mechanism", "sigma", "threshold", "sigma1"):
        with pytest.raises(AttributeError):
            setattr(led, attr, 1.0)
    assert "ConfidentGNMax(threshold=200" in repr(led)


# -- issue 13: concurrency ---------------------------------------------------------------------
def _race(led: PrivacyLedger, votes, *, threads: int = 8, per_thread: int = 200) -> int:
    accepted = [0] * threads
    start = threading.Barrier(threads)

    def work(i: int) -> None:
        start.wait()
        for _ in range(per_thread):
            try:
                led.charge(votes)
            except BudgetExhaustedError:
                continue
            accepted[i] += 1

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(accepted)


@contextlib.contextmanager
def _frequent_thread_switches():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads every 0.1 ms: check-then-commit races show
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_racing_threads_accept_exactly_the_sequential_number():
    """8 threads × 200 charges at budget 1.0: before the fix 629–1 577 were accepted (true ε up
    to 2.03, the ledger reporting 0.91); without the lock every one of these 20 runs fails."""
    votes = np.array([200, 30, 20])
    sequential = PrivacyLedger(GNMax(40.0), delta=1e-5, epsilon_budget=1.0)
    n_seq = 0
    while True:
        try:
            sequential.charge(votes)
        except BudgetExhaustedError:
            break
        n_seq += 1
    assert n_seq == 478
    with _frequent_thread_switches():
        for _ in range(20):
            led = PrivacyLedger(GNMax(40.0), delta=1e-5, epsilon_budget=1.0)
            assert _race(led, votes) == n_seq == led.num_queries == led.num_answered
            np.testing.assert_array_equal(_bits(led.rdp.epsilons), _bits(sequential.rdp.epsilons))
            assert led.epsilon() == sequential.epsilon() <= 1.0
            np.testing.assert_array_equal(led.fallback_counts, sequential.fallback_counts)


def test_racing_threads_with_different_queries_keep_every_counter():
    """Different histograms and outcomes per thread (Confident GNMax, data-dependent): whatever
    the interleaving, ε ≤ budget, and the state is the sum of the accepted charges (no lost
    update of the curve, the counts or the fallback counts)."""
    mech = ConfidentGNMax(threshold=120, sigma1=30.0, sigma2=12.0)
    rng = np.random.default_rng(8)
    votes = _queries(rng, 8 * 60)
    answered = rng.random(votes.shape[0]) < 0.7
    led = PrivacyLedger(mech, delta=1e-5, epsilon_budget=4.0)
    taken: list[list[int]] = [[] for _ in range(8)]

    def work(i: int) -> None:
        for j in range(i * 60, (i + 1) * 60):
            with contextlib.suppress(BudgetExhaustedError):
                led.charge(votes[j], answered=bool(answered[j]))
                taken[i].append(j)

    with _frequent_thread_switches():
        pool = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    idx = np.array(sorted(j for t in taken for j in t))
    assert 0 < idx.size < votes.shape[0] and led.epsilon() <= 4.0
    cost = confident_gnmax_cost(
        votes[idx], threshold=120, sigma1=30.0, sigma2=12.0, orders=DEFAULT_ORDERS
    )
    np.testing.assert_allclose(led.rdp.epsilons, cost.realised(answered[idx]).epsilons, rtol=1e-12)
    assert led.num_queries == idx.size and led.num_answered == int(answered[idx].sum())
    fb = cost.threshold_fallback | (cost.argmax_fallback & answered[idx][:, None])
    np.testing.assert_array_equal(led.fallback_counts, fb.sum(axis=0))


def test_pickle_round_trip_makes_a_fresh_lock():
    led = PrivacyLedger(GNMax(20.0), delta=1e-5, epsilon_budget=5.0)
    led.charge([30, 5, 1])
    back = pickle.loads(pickle.dumps(led))
    assert back.to_json() == led.to_json()
    back.charge([30, 5, 1])
    led.charge([30, 5, 1])
    assert back.to_json() == led.to_json()


# -- JSON --------------------------------------------------------------------------------------
def test_json_round_trip_is_exact_and_continues_identically():
    rng = np.random.default_rng(5)
    mech = ConfidentGNMax(threshold=123.4, sigma1=31.7, sigma2=17.3)
    led = PrivacyLedger(mech, delta=3.3e-6, epsilon_budget=2.7)
    votes = _queries(rng, 60)
    for v in votes[:30]:
        if led.can_afford(v):
            led.charge(v, answered=bool(rng.random() < 0.5))
    text = led.to_json()
    back = PrivacyLedger.from_json(text)
    assert back.to_json() == text and back.mechanism == mech
    np.testing.assert_array_equal(_bits(back.rdp.epsilons), _bits(led.rdp.epsilons))
    np.testing.assert_array_equal(_bits(back.orders), _bits(led.orders))
    attrs = ["sigma", "delta", "epsilon_budget", "analysis", "threshold", "sigma1", "conversion"]
    for attr in [*attrs, "num_queries", "num_answered", "num_fallback", "num_zero_cost"]:
        assert getattr(back, attr) == getattr(led, attr)
    np.testing.assert_array_equal(back.fallback_counts, led.fallback_counts)
    assert led.fallback_counts.sum() > 0  # the counts that travel are not all zero
    assert back.epsilon() == led.epsilon() and back.epsilon(1e-3) == led.epsilon(1e-3)
    for v in votes[30:]:
        outcomes = []
        for ledger in (led, back):
            try:
                ledger.charge(v)
                outcomes.append(True)
            except BudgetExhaustedError:
                outcomes.append(False)
        assert outcomes[0] == outcomes[1]
    np.testing.assert_array_equal(_bits(back.rdp.epsilons), _bits(led.rdp.epsilons))
    np.testing.assert_array_equal(back.fallback_counts, led.fallback_counts)
    data = json.loads(text)
    assert data["format"] == "dpaudit.PrivacyLedger/3" and data["analysis"] == "data-dependent"
    assert data["mechanism"] == {
        "name": "confident-gnmax",
        "threshold": (123.4).hex(),
        "sigma1": (31.7).hex(),
        "sigma2": (17.3).hex(),
    }


def test_round_trip_of_a_fresh_ledger_with_custom_orders_and_no_budget():
    led = PrivacyLedger(
        GNMax(5.0), delta=1e-5, orders=[1.5, 2.0, 32.0], analysis="data-independent"
    )
    led.charge([3, 2, 1])
    back = PrivacyLedger.from_json(led.to_json())
    assert back.epsilon_budget is None and back.threshold is None and back.sigma1 is None
    assert back.rdp == led.rdp == RDPCurve([1.5, 2.0, 32.0], [1.5 / 25, 2.0 / 25, 32.0 / 25])
    assert json.loads(led.to_json())["mechanism"] == {"name": "gnmax", "sigma": (5.0).hex()}


def test_threshold_ledger_charges_steps_separately():
    v = [230, 15, 5] + [0] * 7
    led = PrivacyLedger(ConfidentGNMax(150, 20, 40), delta=1e-5, orders=[10.0, 20.0])
    led.charge(v, answered=False)
    np.testing.assert_allclose(led.rdp.epsilons, [3.212133164e-5, 1.351090023e-4], rtol=1e-9)
    led.charge(v, answered=True)
    np.testing.assert_allclose(
        led.rdp.epsilons,
        [2 * 3.212133164e-5 + 1.227587674e-4, 2 * 1.351090023e-4 + 2.490515378e-4],
        rtol=1e-9,
    )
    assert (led.num_queries, led.num_answered) == (2, 1)


def test_refusal_message_and_unlimited_budget():
    led = PrivacyLedger(GNMax(1.0), delta=1e-5, epsilon_budget=0.5, analysis="data-independent")
    assert not led.can_afford([5, 5])
    with pytest.raises(BudgetExhaustedError, match=r"epsilon_budget=0\.5"):
        led.charge([5, 5])
    assert led.num_queries == 0 and led.epsilon() == 0.0
    free = PrivacyLedger(GNMax(1.0), delta=1e-5)
    for _ in range(3):
        assert free.can_afford([5, 5])
        free.charge([5, 5])
    assert free.epsilon() > 10 and np.isfinite(free.epsilon())
    assert "queries=3" in repr(free)


def test_bad_input():
    with pytest.raises(TypeError, match="mechanism"):
        PrivacyLedger(40.0, delta=1e-5)  # the loose-float signature is gone
    with pytest.raises(TypeError, match="mechanism"):
        PrivacyLedger(LNMax(2.0), delta=1e-5)
    with pytest.raises(TypeError):
        PrivacyLedger(sigma=40.0, delta=1e-5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(GNMax(1.0), delta=0.0)
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(GNMax(1.0), delta=1.0)
    with pytest.raises(ValueError, match="epsilon_budget"):
        PrivacyLedger(GNMax(1.0), delta=1e-5, epsilon_budget=-1.0)
    with pytest.raises(ValueError, match="threshold"):
        PrivacyLedger(ConfidentGNMax(-1.0, 1.0, 1.0), delta=1e-5)
    with pytest.raises(ValueError, match="orders"):
        PrivacyLedger(GNMax(1.0), delta=1e-5, orders=[])
    with pytest.raises(ValueError, match="analysis"):
        PrivacyLedger(GNMax(1.0), delta=1e-5, analysis="both")
    with pytest.raises(ValueError, match="conversion"):
        PrivacyLedger(GNMax(1.0), delta=1e-5, conversion="rdp")
    led = PrivacyLedger(GNMax(1.0), delta=1e-5)
    with pytest.raises(ValueError, match="votes"):
        led.charge([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="votes"):
        led.query_cost([1, -2])
    with pytest.raises(ValueError, match="answered"):
        led.charge([1, 2], answered=False)
    with pytest.raises(TypeError, match="answered"):
        led.charge([1, 2], answered=1)
    with pytest.raises(ValueError, match="delta"):
        led.epsilon(2.0)
    with pytest.raises(ValueError, match="text"):
        PrivacyLedger.from_json("not json")
    with pytest.raises(ValueError, match="text"):
        PrivacyLedger.from_json(json.dumps({"format": "other"}))


# -- issue 13 item 4: extreme σ -----------------------------------------------------------------
def test_extreme_sigma():
    """σ² underflowing makes λ/σ² overflow: a ValueError naming the parameter at construction.
    σ = 1e300: λ/σ² ≈ 1e-597 is 0 in float64, which is the correct value to that precision."""
    with pytest.raises(ValueError, match=r"sigma=1e-300 is too small"):
        PrivacyLedger(GNMax(1e-300), delta=1e-5)
    with pytest.raises(ValueError, match=r"sigma1=1e-300 is too small"):
        PrivacyLedger(ConfidentGNMax(1.0, 1e-300, 1.0), delta=1e-5, analysis="data-independent")
    with pytest.raises(ValueError, match=r"sigma2=1e-200 is too small"):
        PrivacyLedger(ConfidentGNMax(1.0, 1.0, 1e-200), delta=1e-5)
    for analysis in ("data-dependent", "data-independent"):
        led = PrivacyLedger(GNMax(1e300), delta=1e-5, epsilon_budget=1.0, analysis=analysis)
        led.charge([10**6, 0, 0])
        led.charge([1e300, 1e300])
        assert not np.any(led.rdp.epsilons) and led.epsilon() == 0.0
        back = PrivacyLedger.from_json(led.to_json())
        assert back.num_queries == 2 and back.num_zero_cost == led.num_zero_cost == 2
    # σ = 1e-153: λ/σ² = 2e306 is finite, but ~90 charges overflow float64: refused, kept
    huge = PrivacyLedger(GNMax(1e-153), delta=1e-5, orders=[2.0], analysis="data-independent")
    n = 0
    with pytest.raises(ValueError, match="overflow the RDP total"):
        while n < 1000:
            huge.charge([3, 1])
            n += 1
    assert 80 < n == huge.num_queries and np.isfinite(huge.rdp.epsilons[0])


# -- fallbacks to the data-independent bound (issue 4: "reported, not silent") ---------------
def test_fallback_counted_per_order_and_at_the_optimal_order():
    # μ1 ≈ 100.5 for these votes at σ = 40: Thm 6's V2 (μ1 > λ) fails at λ = 200 only.
    led = PrivacyLedger(GNMax(40.0), delta=1e-5, orders=[5.0, 200.0])
    assert led.query_fallback([200, 30, 20]).tolist() == [False, True]
    assert led.fallback_counts.tolist() == [0, 0] and led.num_fallback == 0
    led.charge([200, 30, 20])
    led.charge([7])  # one class: q̃ = 0, 0-RDP, no condition needed, never a fallback
    assert led.fallback_counts.tolist() == [0, 1] and led.num_zero_cost == 1
    conv = rdp_to_dp(led.orders, led.rdp.epsilons, led.delta)
    assert led.num_fallback == led.fallback_counts[list(led.orders).index(conv.order)]
    assert f"fallbacks={led.num_fallback}" in repr(led)
    # the returned counts are a copy
    led.fallback_counts[:] = 7
    assert led.fallback_counts.tolist() == [0, 1]


def test_default_grid_single_query_falls_back_at_its_optimal_order():
    led = PrivacyLedger(GNMax(40.0), delta=1e-5)
    led.charge([200, 30, 20])
    det = gnmax_rdp_details([200, 30, 20], 40, DEFAULT_ORDERS)
    at = list(DEFAULT_ORDERS).index(led.rdp.to_dp(1e-5).order)
    assert det.fallback[at] and led.num_fallback == 1
    np.testing.assert_array_equal(led.fallback_counts, det.fallback.astype(int))


@pytest.mark.parametrize("threshold", [None, 140.0])
def test_fallback_counts_match_the_details_oracle(threshold):
    """Counts equal Σ over charged queries of the per-step fallback masks of
    gnmax_rdp_details / confident_gnmax_cost (threshold step always, argmax step if answered)."""
    rng = np.random.default_rng(11)
    votes = _queries(rng, 300)
    answered = rng.random(300) < 0.5 if threshold is not None else np.ones(300, dtype=bool)
    mech = GNMax(20.0) if threshold is None else ConfidentGNMax(threshold, 30.0, 20.0)
    led = PrivacyLedger(mech, delta=1e-5)
    for v, a in zip(votes, answered, strict=True):
        np.testing.assert_array_equal(
            led.query_fallback(v, answered=bool(a)),
            _oracle_fallback(v[None], np.array([a]), threshold)[0],
        )
        led.charge(v, answered=bool(a))
    want = _oracle_fallback(votes, answered, threshold).sum(axis=0)
    np.testing.assert_array_equal(led.fallback_counts, want)
    assert 0 < want.max() <= 300 and want.min() < want.max()  # varies with the order
    at = list(led.orders).index(led.rdp.to_dp(1e-5).order)
    assert led.num_fallback == want[at]


def _oracle_fallback(votes, answered, threshold):
    if threshold is None:
        return gnmax_rdp_details(votes, 20.0, DEFAULT_ORDERS).fallback
    c = confident_gnmax_cost(votes, threshold=threshold, sigma1=30.0, sigma2=20.0)
    return c.threshold_fallback | (c.argmax_fallback & answered[:, None])


def test_data_independent_ledger_never_counts_a_fallback():
    led = PrivacyLedger(ConfidentGNMax(3, 2, 5.0), delta=1e-5, analysis="data-independent")
    for v in ([3, 2, 1], [100, 0, 0], [1, 1, 1]):
        assert not led.query_fallback(v).any()
        led.charge(v, answered=False)
        led.charge(v)
    assert led.fallback_counts.sum() == 0 and led.num_fallback == 0


def test_query_fallback_bad_input():
    led = PrivacyLedger(GNMax(1.0), delta=1e-5)
    with pytest.raises(ValueError, match="votes"):
        led.query_fallback([1, -2])
    with pytest.raises(TypeError, match="answered"):
        led.query_fallback([1, 2], answered=1)


# -- malformed JSON is always a ValueError naming the problem --------------------------------
def _good_doc() -> dict:
    led = PrivacyLedger(ConfidentGNMax(5.0, 3.0, 4.0), delta=1e-5, orders=[2.0, 50.0])
    led.charge([9, 1, 0])
    led.charge([9, 1, 0], answered=False)
    return json.loads(led.to_json())


_FORMAT = "dpaudit.PrivacyLedger/3"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (json.dumps({"format": _FORMAT}), r"missing key\(s\).*'mechanism'"),
        (json.dumps({"format": "dpaudit.PrivacyLedger/1"}), "PrivacyLedger/1"),
        (json.dumps({"format": "dpaudit.PrivacyLedger/2"}), "PrivacyLedger/2.*reads"),
        (json.dumps([1, 2]), "not a JSON object"),
        ("{", "text is not valid ledger JSON"),
        ('{"format": "a", "format": "b"}', "duplicate key 'format'"),
    ],
)
def test_from_json_rejects_documents(text, match):
    with pytest.raises(ValueError, match=match):
        PrivacyLedger.from_json(text)


@pytest.mark.parametrize("text", [None, b"\xff", b"{}", bytearray(b"{}"), 3])
def test_from_json_takes_str_only(text):
    """Issue 28: bytes (even valid JSON bytes) and other non-str values are a TypeError."""
    with pytest.raises(TypeError, match="text must be a str"):
        PrivacyLedger.from_json(text)


def test_from_json_refuses_duplicate_keys_at_any_depth():
    """Issue 28: json.loads keeps the last of two equal keys; the ledger refuses them."""
    led = PrivacyLedger(GNMax(40.0), delta=1e-5)
    text = led.to_json()
    assert PrivacyLedger.from_json(text).to_json() == text
    doubled = text.replace("{", '{"delta": "0x1.0p-3", ', 1)
    with pytest.raises(ValueError, match="duplicate key 'delta'"):
        PrivacyLedger.from_json(doubled)
    nested = text.replace('"mechanism": {', '"mechanism": {"sigma": 1.0, ', 1)
    assert nested != text
    with pytest.raises(ValueError, match="duplicate key 'sigma'"):
        PrivacyLedger.from_json(nested)


@pytest.mark.parametrize(
    "key",
    [
        "mechanism",
        "delta",
        "epsilon_budget",
        "analysis",
        "conversion",
        "orders",
        "rdp",
        "num_queries",
        "num_answered",
        "num_zero_cost",
        "fallback_counts",
    ],
)
def test_from_json_missing_key_is_named(key):
    doc = _good_doc()
    del doc[key]
    with pytest.raises(ValueError, match=f"missing key.*'{key}'"):
        PrivacyLedger.from_json(json.dumps(doc))


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("orders", 5, "orders"),
        ("orders", [], "orders"),
        ("orders", [(3.0).hex(), (2.0).hex()], "increasing"),
        ("orders", [(0.5).hex(), (2.0).hex()], "orders"),
        ("rdp", "0x0p+0", "rdp"),
        ("rdp", [(0.0).hex()], "rdp"),
        ("rdp", [(0.0).hex(), "nan"], "rdp"),
        ("rdp", [(0.0).hex(), "inf"], "rdp"),
        ("rdp", [0.0, 0.0], "rdp"),
        ("mechanism", None, "mechanism"),
        ("mechanism", {"name": "lnmax", "scale": "0x1p+0"}, "mechanism"),
        ("mechanism", {"name": "gnmax", "sigma": "0x1p+0", "x": 1}, "mechanism 'gnmax'"),
        ("mechanism", {"name": "gnmax", "sigma": 1.0}, "mechanism.sigma"),
        ("mechanism", {"name": "gnmax", "sigma": (-1.0).hex()}, "sigma"),
        ("mechanism", {"name": "gnmax", "sigma": (float("nan")).hex()}, "sigma"),
        ("delta", (1.5).hex(), "delta"),
        ("epsilon_budget", "x", "epsilon_budget"),
        ("analysis", 5, "analysis"),
        ("conversion", None, "conversion"),
        ("num_queries", "2", "num_queries"),
        ("num_queries", True, "num_queries"),
        ("num_queries", -1, "num_queries"),
        ("num_queries", 2.0, "num_queries"),
        ("num_queries", 10**30, r"num_queries=.*exceeds 2\*\*53"),
        ("num_answered", 3, "num_queries/num_answered"),
        ("num_zero_cost", 3, "num_zero_cost"),
        ("fallback_counts", None, "fallback_counts"),
        ("fallback_counts", [0], "fallback_counts"),
        ("fallback_counts", [0, -1], "fallback_counts"),
        ("fallback_counts", [0, False], "fallback_counts"),
        ("fallback_counts", [0, 3], "fallback_counts"),
        ("fallback_counts", [0, 2**64], "fallback_counts"),
        ("extra", 1, r"unexpected key\(s\) \['extra'\]"),
    ],
)
def test_from_json_bad_value_is_named(key, value, match):
    doc = _good_doc()
    doc[key] = value
    with pytest.raises(ValueError, match=match):
        PrivacyLedger.from_json(json.dumps(doc))


def test_from_json_random_corruption_is_always_value_error():
    """Replace or drop random keys with values of random types: a ValueError or a ledger,
    never a KeyError, TypeError or OverflowError."""
    rng = np.random.default_rng(3)
    good = _good_doc()
    junk = [None, True, -1, 0, 2, 1.5, "x", "0x1p+0", [], ["0x1p+0"], {}, [[1]], "nan", 10**30]
    for _ in range(500):
        doc = dict(good)
        for key in rng.choice(sorted(good), size=int(rng.integers(1, 4)), replace=False):
            if rng.random() < 0.2:
                del doc[key]
            else:
                doc[key] = junk[int(rng.integers(len(junk)))]
        with contextlib.suppress(ValueError):
            PrivacyLedger.from_json(json.dumps(doc))


# -- issue 13: states no sequence of charges can produce --------------------------------------
def _doc(mech, analysis="data-dependent", charges=(), orders=None) -> dict:
    led = PrivacyLedger(mech, delta=1e-5, analysis=analysis, orders=orders)
    for votes, answered in charges:
        led.charge(votes, answered=answered)
    return json.loads(led.to_json())


def _hexes(values) -> list[str]:
    return [float(x).hex() for x in values]


def _refused(doc: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PrivacyLedger.from_json(json.dumps(doc))


def test_from_json_refuses_unreachable_states():
    g = GNMax(40.0)
    # the three: all-zero RDP with 30 queries, RDP decreasing in the order, 10**30
    doc = dict(_doc(g), num_queries=30, num_answered=30)
    _refused(doc, r"0 at every order, but 30 of num_queries=30 .* non-zero charge")
    doc = _doc(g, charges=[([200, 30, 20], True)])
    doc["rdp"] = doc["rdp"][::-1]
    _refused(doc, "decreases with the order")
    _refused(dict(_doc(g), num_queries=10**30, num_answered=10**30), r"exceeds 2\*\*53")
    # more RDP than the data-independent cost of the counted queries
    doc = _doc(g, charges=[([200, 30, 20], True)])
    doc["rdp"] = _hexes(2.0 * DEFAULT_ORDERS / 40.0**2)
    _refused(doc, "exceeds the data-independent cost")
    # data-independent: the curve is fixed by the counts
    doc = _doc(g, "data-independent", charges=[([5, 1], True)] * 3)
    _refused(dict(doc, num_queries=4, num_answered=4), "not the data-independent cost")
    doc = _doc(ConfidentGNMax(5, 3, 4), "data-independent", charges=[([9, 1], False)] * 2)
    _refused(dict(doc, num_answered=1), "not the data-independent cost")
    _refused(dict(doc, num_zero_cost=1), "num_zero_cost=1 is impossible")
    counts = [0] * len(doc["fallback_counts"])
    counts[-1] = 1
    _refused(dict(doc, fallback_counts=counts), "data-independent analysis")
    # plain GNMax answers every query
    doc = _doc(g, charges=[([200, 30, 20], True)] * 2)
    _refused(dict(doc, num_answered=1), "must equal num_queries")
    # a fallback at an order charges λ/σ² there: counts need that much RDP
    doc = _doc(g, charges=[([7], True)])  # one zero-cost query
    counts = [0] * len(doc["fallback_counts"])
    counts[-1] = 1
    _refused(dict(doc, fallback_counts=counts), "below the cost of its fallback_counts")


def test_from_json_accepts_reachable_edge_states():
    """Zero RDP with queries is reachable when every charge was 0 (q̃ = 0: one class, or a
    gap so large that q̃ underflows), which num_zero_cost records."""
    g = GNMax(40.0)
    doc = _doc(g, charges=[([7], True)] * 20 + [([1e300, 0.0], True)] * 10)
    assert doc["num_queries"] == doc["num_zero_cost"] == 30
    assert set(doc["rdp"]) == {(0.0).hex()}
    back = PrivacyLedger.from_json(json.dumps(doc))
    assert back.num_queries == 30 and back.epsilon() == 0.0
    # fallbacks, Confident GNMax abstentions, the data-independent curve after many charges
    mech = ConfidentGNMax(140.0, 30.0, 20.0)
    rng = np.random.default_rng(4)
    votes = _queries(rng, 400)
    charges = [(v, bool(a)) for v, a in zip(votes, rng.random(400) < 0.5, strict=True)]
    for analysis in ("data-dependent", "data-independent"):
        doc = _doc(mech, analysis, charges=charges)
        back = PrivacyLedger.from_json(json.dumps(doc))
        assert back.to_json() == json.dumps(doc, indent=2)


# -- one ledger arithmetic: LedgerRules, which PrivacyLedger and the service both run ----------
def test_privacy_ledger_runs_the_ledger_rules():
    """The ledger's curve is the left fold of its charges under LedgerRules.compose, its ε is
    LedgerRules.epsilon and its budget test LedgerRules.fits: bit for bit."""
    from dpaudit.accounting._ledger import LedgerRules

    mech = ConfidentGNMax(150.0, 40.0, 15.0)
    led = PrivacyLedger(mech, delta=1e-5, epsilon_budget=3.0, conversion="standard")
    rules = led.rules
    assert rules == LedgerRules(mech, tuple(DEFAULT_ORDERS), 1e-5, "data-dependent", "standard")
    rng = np.random.default_rng(5)
    total = np.zeros(len(DEFAULT_ORDERS))
    for v, a in zip(_queries(rng, 300), rng.random(300) < 0.6, strict=True):
        cost = rules.cost(v)
        after = rules.compose(total, cost.threshold_rdp, cost.answer_rdp if a else 0.0)
        if rules.fits(rules.epsilon(after), 3.0):
            led.charge(v, answered=bool(a))
            total = after
        else:
            with pytest.raises(BudgetExhaustedError):
                led.charge(v, answered=bool(a))
    np.testing.assert_array_equal(_bits(led.rdp.epsilons), _bits(total))
    assert led.epsilon() == rules.epsilon(total) and led.epsilon(1e-3) == rules.epsilon(total, 1e-3)


def test_ledger_rules_compose_is_a_left_fold_and_fits_is_at_most():
    from dpaudit.accounting._ledger import LedgerRules

    a, b, c = np.array([0.1]), np.array([0.2]), np.array([0.3])
    assert LedgerRules.compose(a, b, c)[0] == (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)
    assert LedgerRules.compose(np.array([1e308]), np.array([1e308]))[0] == np.inf  # no warning
    assert LedgerRules.fits(1.0, 1.0) and LedgerRules.fits(5.0, None)
    assert not LedgerRules.fits(1.0 + 2**-52, 1.0) and not LedgerRules.fits(np.inf, 1.0)
