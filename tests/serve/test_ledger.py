"""The service's ledgers: costs from dpaudit.accounting, atomic settling, exact totals,
durability across a restart, concurrency without overspending, caching, keys at rest."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from dpaudit.accounting import mechanism_rdp, rdp_to_dp
from dpaudit.mechanisms import ConfidentGNMax, GNMax
from dpaudit.serve import (
    GLOBAL_ACCOUNT,
    BudgetRefused,
    Charge,
    KeyStore,
    LedgerConfig,
    MemoryLedger,
    SQLiteLedger,
    UnknownClientError,
    batch_cost,
    hash_api_key,
)

ORDERS = (2.0, 4.0, 8.0, 16.0, 32.0)
VOTES = np.array([[200, 30, 20], [120, 100, 30], [250, 0, 0]])


def _config(**kw):
    kw.setdefault("mechanism", GNMax(40.0))
    return LedgerConfig(orders=ORDERS, delta=1e-5, **kw)


def _ledgers(tmp_path, config=None, budget=50.0):
    cfg = config or _config()
    return [
        MemoryLedger(cfg, global_budget=budget),
        SQLiteLedger(tmp_path / "l.sqlite", cfg, global_budget=budget),
    ]


def _charge(cfg, votes, labels=None, answered=None, keys=None):
    votes = np.asarray(votes)
    answered = np.ones(len(votes), bool) if answered is None else np.asarray(answered)
    labels = np.zeros(len(votes), np.int64) if labels is None else np.asarray(labels)
    worst, realised = cfg.costs(votes, answered)
    return Charge(labels, worst, realised, answered, keys)


@pytest.mark.parametrize("analysis", ["data-independent", "data-dependent"])
def test_costs_are_the_accounting_values(analysis):
    cfg = _config(analysis=analysis)
    worst, realised = cfg.costs(VOTES, np.ones(3, bool))
    expected = mechanism_rdp(GNMax(40.0), ORDERS, votes=VOTES, analysis=analysis)
    np.testing.assert_array_equal(worst, expected)
    np.testing.assert_array_equal(realised, expected)
    assert cfg.epsilon(worst[0]) == rdp_to_dp(ORDERS, worst[0], 1e-5).epsilon


def test_confident_gnmax_abstention_pays_the_threshold_step_only():
    mech = ConfidentGNMax(threshold=150.0, sigma1=100.0, sigma2=40.0)
    cfg = _config(mechanism=mech)
    worst, realised = cfg.costs(VOTES, np.array([True, False, True]))
    np.testing.assert_array_equal(worst, mechanism_rdp(mech, ORDERS, votes=VOTES))
    np.testing.assert_array_equal(
        realised[1], mechanism_rdp(mech, ORDERS, votes=VOTES[1:2], answered=False)[0]
    )
    assert np.all(realised[1] < worst[1])


def test_settle_charges_and_totals_are_the_fold_of_the_journal(tmp_path):
    for led in _ledgers(tmp_path):
        key = led.add_client("alice", 20.0)
        bob = led.add_client("bob", 20.0)
        a, b = led.authenticate(key), led.authenticate(bob)
        receipts = [
            led.settle(c, _charge(led.config, VOTES[: i + 1])) for i, c in enumerate([a, b, a])
        ]
        assert [r.charge_id for r in receipts] == [1, 2, 3]
        assert [r.num_charged for r in receipts] == [1, 2, 3]
        journal = led.journal()
        total = np.zeros(len(ORDERS))
        for (cid, _client, rdp), r in zip(journal, receipts, strict=True):
            assert cid == r.charge_id
            np.testing.assert_array_equal(rdp, r.rdp)
            total = total + rdp
        np.testing.assert_array_equal(led.account(GLOBAL_ACCOUNT).rdp, total)  # bitwise
        np.testing.assert_array_equal(led.account(a.id).rdp, journal[0][2] + journal[2][2])
        assert led.verify().ok and led.verify().num_charges == 3
        acc = led.account(a.id)
        assert (acc.num_queries, acc.num_answered, acc.num_requests) == (4, 4, 2)
        assert receipts[-1].client_epsilon == pytest.approx(led.epsilon(a.id))
        led.close()


def test_refused_request_spends_nothing(tmp_path):
    for led in _ledgers(tmp_path):
        key = led.add_client("alice", 1.0)
        client = led.authenticate(key)
        before = led.account(client.id)
        big = _charge(led.config, np.repeat(VOTES[:1], 2000, axis=0))
        with pytest.raises(BudgetRefused, match="client's epsilon") as info:
            led.settle(client, big)
        assert info.value.scope == "client" and info.value.epsilon_after > 1.0
        after = led.account(client.id)
        np.testing.assert_array_equal(after.rdp, before.rdp)
        assert after.num_requests == 0 and led.journal() == []
        led.close()


def test_global_budget_binds_across_clients(tmp_path):
    for led in _ledgers(tmp_path, budget=1.0):
        keys = [led.add_client(n, 1.0) for n in ("a", "b", "c")]
        clients = [led.authenticate(k) for k in keys]
        one = _charge(led.config, VOTES[:1])
        answered = 0
        with pytest.raises(BudgetRefused, match="global") as info:
            for _ in range(1000):
                for c in clients:
                    led.settle(c, one)
                    answered += 1
        assert info.value.scope == "global"
        assert led.epsilon() <= 1.0
        assert led.account(GLOBAL_ACCOUNT).num_queries == answered
        led.close()


def test_budget_check_uses_the_worst_case():
    mech = ConfidentGNMax(threshold=150.0, sigma1=100.0, sigma2=40.0)
    led = MemoryLedger(_config(mechanism=mech), global_budget=100.0)
    client = led.authenticate(led.add_client("a", 1.0))
    charge = _charge(led.config, np.repeat(VOTES[:1], 200, axis=0), answered=np.zeros(200, bool))
    worst = batch_cost(charge.worst)
    realised = batch_cost(charge.realised)
    assert led.config.epsilon(realised) <= 1.0 < led.config.epsilon(worst)
    with pytest.raises(BudgetRefused):  # would fit as realised, refused on the worst case
        led.settle(client, charge)


def test_cache_answers_repeats_free_and_charges_duplicates_once(tmp_path):
    for led in _ledgers(tmp_path):
        client = led.authenticate(led.add_client("a", 20.0))
        c1 = _charge(led.config, VOTES, labels=[4, 5, 6], keys=[b"x", b"y", b"x"])
        r1 = led.settle(client, c1)
        assert r1.labels.tolist() == [4, 5, 4] and r1.num_charged == 2 and r1.num_cached == 1
        np.testing.assert_array_equal(r1.rdp, c1.realised[0] + c1.realised[1])
        c2 = _charge(led.config, VOTES[:2], labels=[9, 9], keys=[b"y", b"x"])
        r2 = led.settle(client, c2)
        assert r2.labels.tolist() == [5, 4] and r2.charge_id is None and r2.num_charged == 0
        assert led.account(client.id).num_cached == 3 and len(led.journal()) == 1
        led.close()


def test_cached_answers_are_free_even_when_exhausted():
    led = MemoryLedger(_config(), global_budget=50.0)
    client = led.authenticate(led.add_client("a", 0.5))
    r = led.settle(client, _charge(led.config, VOTES[:1], labels=[7], keys=[b"q"]))
    with pytest.raises(BudgetRefused):
        led.settle(client, _charge(led.config, np.repeat(VOTES[:1], 500, axis=0)))
    again = led.settle(client, _charge(led.config, VOTES[:1], labels=[1], keys=[b"q"]))
    assert again.labels.tolist() == [7] and r.labels.tolist() == [7]


def test_durable_ledger_survives_a_restart(tmp_path):
    path = tmp_path / "l.sqlite"
    cfg = _config(analysis="data-dependent")
    led = SQLiteLedger(path, cfg, global_budget=50.0)
    client = led.authenticate(led.add_client("a", 20.0))
    for i in range(5):
        led.settle(
            client, _charge(cfg, VOTES[: 1 + i % 3], keys=[bytes([i, j]) for j in range(1 + i % 3)])
        )
    total = led.account(GLOBAL_ACCOUNT)
    assert led.record_start() == 0
    led.close()
    again = SQLiteLedger(path, cfg, global_budget=60.0)
    assert again.record_start() == 1
    np.testing.assert_array_equal(again.account(GLOBAL_ACCOUNT).rdp, total.rdp)
    assert again.account(client.id).num_queries == total.num_queries == 9
    assert again.verify().ok and again.global_budget == 60.0
    assert again.settle(client, _charge(cfg, VOTES[:1], keys=[bytes([0, 0])])).num_cached == 1
    again.close()


def test_ledger_file_refuses_another_mechanism(tmp_path):
    path = tmp_path / "l.sqlite"
    SQLiteLedger(path, _config(), global_budget=5.0).close()
    with pytest.raises(ValueError, match="use another ledger file"):
        SQLiteLedger(path, _config(mechanism=GNMax(20.0)), global_budget=5.0)
    with pytest.raises(ValueError, match="use another ledger file"):
        SQLiteLedger(path, _config(analysis="data-dependent"), global_budget=5.0)


def test_keys_are_hashed_at_rest_and_revocable(tmp_path):
    path = tmp_path / "l.sqlite"
    ks = KeyStore(path)
    key = ks.add_client("alice", 2.0)
    assert key.startswith("dpa_") and len(key) > 40
    raw = path.read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.iterdir() if p.name != "l.sqlite"
    )
    assert key.encode() not in raw and hash_api_key(key) in raw
    with pytest.raises(ValueError, match="already exists"):
        ks.add_client("alice", 1.0)
    with pytest.raises(ValueError, match="client name"):
        ks.add_client("bad name!", 1.0)
    with pytest.raises(ValueError, match="epsilon_budget"):
        ks.add_client("bob", 0.0)
    ks.revoke("alice")
    assert ks.authenticate(key).revoked
    with pytest.raises(UnknownClientError, match="no client named"):
        ks.revoke("nobody")
    ks.close()
    led = SQLiteLedger(path, _config(), global_budget=5.0)
    with pytest.raises(UnknownClientError, match="revoked"):
        led.settle(led.authenticate(key), _charge(led.config, VOTES[:1]))
    led.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_ledger_config_validation_and_round_trip():
    cfg = _config(mechanism=ConfidentGNMax(100.0, 50.0, 20.0), analysis="data-dependent")
    assert LedgerConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(TypeError, match="GNMax or ConfidentGNMax"):
        LedgerConfig(mechanism="gnmax", orders=ORDERS, delta=1e-5)
    with pytest.raises(ValueError, match="analysis"):
        _config(analysis="exact")
    with pytest.raises(ValueError, match="delta"):
        LedgerConfig(GNMax(1.0), ORDERS, delta=0.0)
    with pytest.raises(ValueError, match="ledger config"):
        LedgerConfig.from_json("{}")
    with pytest.raises(ValueError, match="global_budget"):
        MemoryLedger(cfg, global_budget=-1.0)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_concurrent_settles_never_overspend(tmp_path, kind):
    """32 threads race to spend one client's budget: the accepted charges fit the budget,
    every accepted charge is in the journal, and the totals are its exact fold."""
    cfg = _config(analysis="data-dependent")
    led = (
        MemoryLedger(cfg, global_budget=5.0)
        if kind == "memory"
        else SQLiteLedger(tmp_path / "l.sqlite", cfg, global_budget=5.0)
    )
    client = led.authenticate(led.add_client("a", 3.0))
    rng = np.random.default_rng(0)
    accepted: list[int] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        g = np.random.default_rng(seed)
        for _ in range(15):
            votes = g.multinomial(250, [0.6, 0.3, 0.1], size=int(g.integers(1, 4)))
            try:
                r = led.settle(client, _charge(cfg, votes))
            except BudgetRefused:
                continue
            with lock:
                accepted.append(r.charge_id)

    threads = [threading.Thread(target=worker, args=(int(s),)) for s in rng.integers(0, 2**31, 32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(accepted) == [cid for cid, _, _ in led.journal()]
    assert 0 < len(accepted) < 32 * 15  # the budget bound
    assert led.epsilon(client.id) <= 3.0
    assert led.verify().ok
    led.close()
