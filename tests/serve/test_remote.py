"""Attacks over HTTP against a live service on loopback: the remote interface reproduces the
in-process extraction, stops where the in-process budget would, and concurrent clients never
overspend a durable ledger."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest
from serve_support import fixed_service

from dpaudit.accounting import DEFAULT_ORDERS, PrivacyLedger
from dpaudit.attacks import (
    RemoteInterface,
    RemoteInterfaceError,
    audit_remote_extraction,
    extract_histogram,
    fixed_histogram_interface,
    remote_interface,
)
from dpaudit.mechanisms import GNMax
from dpaudit.serve import (
    GLOBAL_ACCOUNT,
    LedgerConfig,
    ServiceServer,
    SQLiteLedger,
    build_service,
    create_app,
)


def test_extraction_over_http_reproduces_the_in_process_attack(pate_settings, pate_data):
    """Same seed, same histogram: the same answers, counts and error (Wang et al. 2022)."""
    from dpaudit.systems import PATE

    svc = build_service(pate_settings, data=pate_data)
    key = svc.ledger.add_client("attacker", 1e5)
    local_api = PATE(num_teachers=10, mechanism=GNMax(4.0)).build(
        pate_data.X, pate_data.y, rng=pate_settings.seed, num_classes=pate_data.num_classes
    )
    x = pate_data.X[7]
    true_votes = local_api.votes(x[None, :])[0]
    kw = dict(num_queries=600, batch_size=64, intervals="none", rng=pate_settings.server.noise_seed)
    local = extract_histogram(local_api, x, **kw)
    server = ServiceServer(create_app(svc, access_log=False), lifetime=120)
    with server as srv, remote_interface(srv.url, key) as api:
        remote = extract_histogram(api, x, **kw)
        assert api.num_requests == 10
    np.testing.assert_array_equal(remote.counts, local.counts)
    assert remote.reconstruction.error(true_votes) == local.reconstruction.error(true_votes)
    np.testing.assert_array_equal(remote.votes, local.votes)
    assert remote.num_answered == 600 and remote.stopped == "completed"
    assert remote.interface_epsilon == pytest.approx(svc.ledger.epsilon(1))


def test_budget_limited_extraction_stops_where_the_in_process_ledger_does():
    svc = fixed_service(sigma=40.0)
    key = svc.ledger.add_client("attacker", 0.8)
    ledger = PrivacyLedger(GNMax(40.0), delta=1e-5, epsilon_budget=0.8, analysis="data-independent")
    local_api = fixed_histogram_interface([3, 20, 7], GNMax(40.0), ledger=ledger)
    local = extract_histogram(local_api, [0.0], num_queries=None, batch_size=100, rng=0)
    server = ServiceServer(create_app(svc, access_log=False), lifetime=60)
    with server as srv, remote_interface(srv.url, key) as api:
        remote = extract_histogram(api, [0.0], num_queries=None, batch_size=100, rng=0)
        assert api.num_refused_requests >= 1
        budget = api.budget()
    assert remote.stopped == local.stopped == "refused"
    assert remote.num_answered == local.num_answered > 0
    assert budget.epsilon_spent <= 0.8 and budget.num_queries == local.num_answered
    np.testing.assert_allclose(budget.epsilon_spent, ledger.epsilon(), rtol=1e-12)


def test_remote_audit_reports_the_budget_it_consumed():
    svc = fixed_service(sigma=40.0)
    key = svc.ledger.add_client("attacker", 50.0)
    server = ServiceServer(create_app(svc, access_log=False), lifetime=60)
    with server as srv, remote_interface(srv.url, key) as api:
        result = audit_remote_extraction(api, [0.0], num_queries=300, batch_size=64, rng=0)
    entry = result.entries[0]
    assert result.workflow == "vote-extraction-remote" and entry.system == "fixed"
    assert entry.claim.epsilon == pytest.approx(svc.ledger.epsilon(1))
    assert entry.lower_bound.epsilon is None
    assert result.detail["budget_after"].num_queries == 300
    assert "0 to" in result.note
    assert "dpa_" not in result.to_json()


def test_remote_interface_errors():
    svc = fixed_service()
    key = svc.ledger.add_client("a", 1e4)
    with ServiceServer(create_app(svc, access_log=False), lifetime=60) as srv:
        # a TCP listening socket, so asyncio sets TCP_NODELAY on connections (no 40-ms Nagle)
        assert srv._sock.proto == socket.IPPROTO_TCP
        with remote_interface(srv.url, "dpa_wrong") as bad:
            with pytest.raises(RemoteInterfaceError, match="401") as info:
                bad.predict([[0.0]])
            assert info.value.code == "invalid_api_key"
        with RemoteInterface(srv.url, key) as api:
            with pytest.raises(RemoteInterfaceError, match="422"):
                api.predict([[0.0, 1.0]])
            assert "dpa_" not in repr(api)
            sent = api.num_requests
            assert api.predict(np.zeros((130, 1))).shape == (130,)  # over max_batch: 3 requests
            assert api.num_requests - sent == 3
    with pytest.raises(ValueError, match="http"):
        RemoteInterface("ftp://x", key)
    with pytest.raises(ValueError, match="DPAUDIT_API_KEY"):
        RemoteInterface("http://127.0.0.1:1", None)


def test_concurrent_http_clients_never_overspend_the_durable_ledger(tmp_path):
    """16 clients hammer a SQLite-ledger service for ~3 s: no 5xx, every client under its
    budget, the global budget held, and the ledger equal to the answered charges exactly."""
    import httpx

    cfg = LedgerConfig(GNMax(40.0), tuple(DEFAULT_ORDERS), 1e-5, analysis="data-dependent")
    led = SQLiteLedger(tmp_path / "ledger.sqlite", cfg, global_budget=6.0)
    svc = fixed_service(sigma=40.0, ledger=led, cache=True)
    keys = [led.add_client(f"c{i}", 2.0) for i in range(16)]
    received: dict[int, int] = {}
    statuses: list[int] = []
    lock = threading.Lock()
    stop = time.monotonic() + 3.0

    def client(i: int, url: str) -> None:
        g = np.random.default_rng(i)
        with httpx.Client(base_url=url, headers={"X-API-Key": keys[i]}, timeout=30) as c:
            while time.monotonic() < stop:
                n = int(g.integers(1, 9))
                q = g.integers(0, 50, size=(n, 1)).astype(float).tolist()
                r = c.post("/v1/predict", json={"queries": q})
                with lock:
                    statuses.append(r.status_code)
                    if r.status_code == 200 and r.json()["charge_id"] is not None:
                        received[r.json()["charge_id"]] = r.json()["num_charged"]

    with ServiceServer(create_app(svc, access_log=False), lifetime=60) as srv:
        threads = [threading.Thread(target=client, args=(i, srv.url)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert statuses and all(s in (200, 429) for s in statuses)
    journal = led.journal()
    assert sorted(received) == [cid for cid, _, _ in journal]
    assert sum(received.values()) == led.account(GLOBAL_ACCOUNT).num_queries
    assert led.verify().ok
    assert led.epsilon() <= 6.0
    assert all(led.epsilon(c.id) <= 2.0 for c in led.clients())
    led.close()
