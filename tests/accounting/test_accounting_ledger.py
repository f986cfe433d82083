"""PrivacyLedger: the budget is never exceeded under 10^4 random queries, refusals charge
nothing, charges equal the per-step RDP, fallbacks to the data-independent bound are counted,
JSON round-trips bit for bit, bad input (malformed JSON is always a ValueError)."""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    PrivacyLedger,
    RDPCurve,
    confident_gnmax_cost,
    gnmax_rdp,
    gnmax_rdp_details,
    rdp_to_dp,
    threshold_rdp,
)
from dpaudit.errors import BudgetExhaustedError

CONFIGS = [
    dict(sigma=20.0, delta=1e-5, epsilon_budget=2.0),
    dict(sigma=20.0, delta=1e-5, epsilon_budget=2.0, analysis="data-independent"),
    dict(
        sigma=15.0,
        delta=1e-6,
        epsilon_budget=1.5,
        threshold=150,
        sigma1=40.0,
        conversion="standard",
    ),
    dict(
        sigma=15.0,
        delta=1e-5,
        epsilon_budget=3.0,
        threshold=100,
        sigma1=30.0,
        analysis="data-independent",
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
    cfg = CONFIGS[idx]
    rng = np.random.default_rng(100 + idx)
    votes = _queries(rng, 2500)
    answered_draw = rng.random(2500) < 0.6
    led = PrivacyLedger(**cfg)
    analysis = cfg.get("analysis", "data-dependent")
    rho2_all = gnmax_rdp(votes, cfg["sigma"], DEFAULT_ORDERS, analysis=analysis)
    if "threshold" in cfg:
        rho1_all = threshold_rdp(
            votes, cfg["threshold"], cfg["sigma1"], DEFAULT_ORDERS, analysis=analysis
        )
    else:
        rho1_all = np.zeros_like(rho2_all)
    expected_total = np.zeros(DEFAULT_ORDERS.size)
    refused = charged = 0
    for i, v in enumerate(votes):
        before = led.rdp
        fb_before = led.fallback_counts
        nq, na = led.num_queries, led.num_answered
        answered = bool(answered_draw[i]) if "threshold" in cfg else True
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


def test_json_round_trip_is_exact_and_continues_identically():
    rng = np.random.default_rng(5)
    led = PrivacyLedger(sigma=17.3, delta=3.3e-6, epsilon_budget=2.7, threshold=123.4, sigma1=31.7)
    votes = _queries(rng, 60)
    for v in votes[:30]:
        if led.can_afford(v):
            led.charge(v, answered=bool(rng.random() < 0.5))
    text = led.to_json()
    back = PrivacyLedger.from_json(text)
    assert back.to_json() == text
    np.testing.assert_array_equal(_bits(back.rdp.epsilons), _bits(led.rdp.epsilons))
    np.testing.assert_array_equal(_bits(back.orders), _bits(led.orders))
    attrs = ["sigma", "delta", "epsilon_budget", "analysis", "threshold", "sigma1"]
    for attr in [*attrs, "conversion", "num_queries", "num_answered", "num_fallback"]:
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
    assert float.fromhex(data["sigma"]) == 17.3 and data["analysis"] == "data-dependent"


def test_round_trip_of_a_fresh_ledger_with_custom_orders_and_no_budget():
    led = PrivacyLedger(sigma=5.0, delta=1e-5, orders=[1.5, 2.0, 32.0], analysis="data-independent")
    led.charge([3, 2, 1])
    back = PrivacyLedger.from_json(led.to_json())
    assert back.epsilon_budget is None and back.threshold is None and back.sigma1 is None
    assert back.rdp == led.rdp == RDPCurve([1.5, 2.0, 32.0], [1.5 / 25, 2.0 / 25, 32.0 / 25])


def test_threshold_ledger_charges_steps_separately():
    v = [230, 15, 5] + [0] * 7
    led = PrivacyLedger(sigma=40, delta=1e-5, threshold=150, sigma1=20, orders=[10.0, 20.0])
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
    led = PrivacyLedger(sigma=1.0, delta=1e-5, epsilon_budget=0.5, analysis="data-independent")
    assert not led.can_afford([5, 5])
    with pytest.raises(BudgetExhaustedError, match=r"epsilon_budget=0\.5"):
        led.charge([5, 5])
    assert led.num_queries == 0 and led.epsilon() == 0.0
    free = PrivacyLedger(sigma=1.0, delta=1e-5)
    for _ in range(3):
        assert free.can_afford([5, 5])
        free.charge([5, 5])
    assert free.epsilon() > 10 and math.isfinite(free.epsilon())
    assert "queries=3" in repr(free)


def test_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        PrivacyLedger(sigma=0.0, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(sigma=1.0, delta=0.0)
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(sigma=1.0, delta=1.0)
    with pytest.raises(ValueError, match="epsilon_budget"):
        PrivacyLedger(sigma=1.0, delta=1e-5, epsilon_budget=-1.0)
    with pytest.raises(ValueError, match="threshold"):
        PrivacyLedger(sigma=1.0, delta=1e-5, threshold=-1.0, sigma1=1.0)
    with pytest.raises(ValueError, match="sigma1"):
        PrivacyLedger(sigma=1.0, delta=1e-5, threshold=1.0, sigma1=0.0)
    with pytest.raises(ValueError, match="threshold and sigma1"):
        PrivacyLedger(sigma=1.0, delta=1e-5, threshold=1.0)
    with pytest.raises(ValueError, match="orders"):
        PrivacyLedger(sigma=1.0, delta=1e-5, orders=[])
    with pytest.raises(ValueError, match="analysis"):
        PrivacyLedger(sigma=1.0, delta=1e-5, analysis="both")
    with pytest.raises(ValueError, match="conversion"):
        PrivacyLedger(sigma=1.0, delta=1e-5, conversion="rdp")
    led = PrivacyLedger(sigma=1.0, delta=1e-5)
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
    good = json.loads(led.to_json())
    bad = dict(good, rdp=[(-1.0).hex()] * len(good["rdp"]))
    with pytest.raises(ValueError, match="rdp"):
        PrivacyLedger.from_json(json.dumps(bad))
    bad = dict(good, sigma=1.0)
    with pytest.raises(ValueError, match="sigma"):
        PrivacyLedger.from_json(json.dumps(bad))
    bad = dict(good, num_answered=5)
    with pytest.raises(ValueError, match="num_queries"):
        PrivacyLedger.from_json(json.dumps(bad))


# -- fallbacks to the data-independent bound (issue 4: "reported, not silent") ---------------
def test_fallback_counted_per_order_and_at_the_optimal_order():
    # μ1 ≈ 100.5 for these votes at σ = 40: Thm 6's V2 (μ1 > λ) fails at λ = 200 only.
    led = PrivacyLedger(sigma=40, delta=1e-5, orders=[5.0, 200.0])
    assert led.query_fallback([200, 30, 20]).tolist() == [False, True]
    assert led.fallback_counts.tolist() == [0, 0] and led.num_fallback == 0
    led.charge([200, 30, 20])
    led.charge([7])  # one class: q̃ = 0, 0-RDP, no condition needed, never a fallback
    assert led.fallback_counts.tolist() == [0, 1]
    conv = rdp_to_dp(led.orders, led.rdp.epsilons, led.delta)
    assert led.num_fallback == led.fallback_counts[list(led.orders).index(conv.order)]
    assert f"fallbacks={led.num_fallback}" in repr(led)
    # the returned counts are a copy
    led.fallback_counts[:] = 7
    assert led.fallback_counts.tolist() == [0, 1]


def test_default_grid_single_query_falls_back_at_its_optimal_order():
    led = PrivacyLedger(sigma=40, delta=1e-5)
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
    kw = {} if threshold is None else dict(threshold=threshold, sigma1=30.0)
    led = PrivacyLedger(sigma=20.0, delta=1e-5, **kw)
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
    led = PrivacyLedger(sigma=5.0, delta=1e-5, analysis="data-independent", threshold=3, sigma1=2)
    for v in ([3, 2, 1], [100, 0, 0], [1, 1, 1]):
        assert not led.query_fallback(v).any()
        led.charge(v, answered=False)
        led.charge(v)
    assert led.fallback_counts.sum() == 0 and led.num_fallback == 0


def test_query_fallback_bad_input():
    led = PrivacyLedger(sigma=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="votes"):
        led.query_fallback([1, -2])
    with pytest.raises(TypeError, match="answered"):
        led.query_fallback([1, 2], answered=1)


# -- malformed JSON is always a ValueError naming the problem --------------------------------
def _good_doc() -> dict:
    led = PrivacyLedger(sigma=4.0, delta=1e-5, threshold=5.0, sigma1=3.0, orders=[2.0, 50.0])
    led.charge([9, 1, 0])
    led.charge([9, 1, 0], answered=False)
    return json.loads(led.to_json())


_FORMAT = "dpaudit.PrivacyLedger/2"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (json.dumps({"format": _FORMAT}), r"missing key\(s\).*'sigma'"),
        (json.dumps({"format": "dpaudit.PrivacyLedger/1"}), "PrivacyLedger/1"),
        (json.dumps([1, 2]), "not a JSON object"),
        ("{", "text is not valid ledger JSON"),
        (None, "text is not valid ledger JSON"),
        (b"\xff", "text is not valid ledger JSON"),
    ],
)
def test_from_json_rejects_documents(text, match):
    with pytest.raises(ValueError, match=match):
        PrivacyLedger.from_json(text)


@pytest.mark.parametrize(
    "key",
    [
        "sigma",
        "delta",
        "epsilon_budget",
        "analysis",
        "threshold",
        "sigma1",
        "conversion",
        "orders",
        "rdp",
        "num_queries",
        "num_answered",
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
        ("rdp", [0.0, 0.0], "rdp"),
        ("sigma", None, "sigma"),
        ("sigma", (float("nan")).hex(), "sigma"),
        ("delta", (1.5).hex(), "delta"),
        ("epsilon_budget", "x", "epsilon_budget"),
        ("threshold", (float("inf")).hex(), "threshold"),
        ("sigma1", None, "threshold and sigma1"),
        ("analysis", 5, "analysis"),
        ("conversion", None, "conversion"),
        ("num_queries", "2", "num_queries"),
        ("num_queries", True, "num_queries"),
        ("num_queries", -1, "num_queries"),
        ("num_queries", 2.0, "num_queries"),
        ("num_answered", 3, "num_queries/num_answered"),
        ("fallback_counts", None, "fallback_counts"),
        ("fallback_counts", [0], "fallback_counts"),
        ("fallback_counts", [0, -1], "fallback_counts"),
        ("fallback_counts", [0, False], "fallback_counts"),
        ("fallback_counts", [0, 3], "fallback_counts"),
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
    never a KeyError or TypeError."""
    rng = np.random.default_rng(3)
    good = _good_doc()
    junk = [None, True, -1, 0, 2, 1.5, "x", "0x1p+0", [], ["0x1p+0"], {}, [[1]], "nan"]
    for _ in range(500):
        doc = dict(good)
        for key in rng.choice(sorted(good), size=int(rng.integers(1, 4)), replace=False):
            if rng.random() < 0.2:
                del doc[key]
            else:
                doc[key] = junk[int(rng.integers(len(junk)))]
        with contextlib.suppress(ValueError):
            PrivacyLedger.from_json(json.dumps(doc))
