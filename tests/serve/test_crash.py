"""``dpaudit serve`` as a process: a short load with 16 clients, ``kill -9`` mid-load, restart.

The ledger after the restart must hold every charge whose answer a client received (the
spent budget is never less than what was answered), and at most the charges of the requests
in flight at the kill besides. The full 30-second version is ``benchmarks/bench_serve.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from dpaudit.accounting import mechanism_rdp
from dpaudit.mechanisms import GNMax
from dpaudit.serve import GLOBAL_ACCOUNT, KeyStore, SQLiteLedger, batch_cost, run_load

SIGMA = 40.0
CLIENTS = 16


def _start(ledger, *extra):
    """``dpaudit serve`` in a subprocess on an ephemeral loopback port; returns (proc, url)."""
    cmd = [
        sys.executable, "-c", "from dpaudit.cli import main; main()", "serve",
        "--teachers", "5", "--n-train", "100", "--sigma", str(SIGMA), "--ledger", str(ledger),
        "--port", "0", "--lifetime", "90", "--global-epsilon", "1000", "--no-access-log",
        "--max-batch", "16", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "listening on" in line:
            return proc, line.rsplit(" ", 1)[-1].strip()
        if proc.poll() is not None:
            break
    _stop(proc, signal.SIGKILL)
    raise AssertionError(f"server did not start: {line!r}")


def _stop(proc, sig=signal.SIGTERM):
    """Signal the server, wait for it, close its pipes."""
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.communicate(timeout=60)


def test_kill_9_during_load_then_restart(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with KeyStore(path) as ks:
        keys = [ks.add_client(f"c{i}", 500.0) for i in range(CLIENTS)]
        warm = ks.add_client("warm-up", 500.0)
    proc, url = _start(path)
    try:
        import httpx

        with httpx.Client(base_url=url, headers={"X-API-Key": warm}, timeout=60) as c:
            assert c.post("/v1/predict", json={"queries": [[0.5] * 64] * 16}).status_code == 200
        stop = threading.Event()
        killer = threading.Timer(2.5, lambda: os.kill(proc.pid, signal.SIGKILL))
        killer.start()
        load = run_load(
            url, keys, seconds=6.0, batch=lambda g: int(g.integers(1, 17)), num_features=64,
            stop=stop,
        )  # fmt: skip
        killer.join()
    finally:
        _stop(proc, signal.SIGKILL)
    statuses = load.statuses()
    assert set(statuses) <= {0, 200}, statuses  # no 5xx, no overspend refusals
    answered = load.answered
    assert len(answered) > 0 and 0 < len(load.in_flight) <= CLIENTS

    proc2, url2 = _start(path)  # restart on the same ledger
    try:
        import httpx

        with httpx.Client(base_url=url2, headers={"X-API-Key": keys[0]}) as c:
            r = c.post("/v1/predict", json={"queries": [[0.0] * 64]})
            assert r.status_code == 200 and r.json()["charge_id"] > max(
                a.charge_id for a in answered
            )
    finally:
        _stop(proc2)

    led = SQLiteLedger.open(path)
    journal = {cid: (client, rdp) for cid, client, rdp in led.journal()}
    received = {a.charge_id: a for a in answered}
    assert set(received) <= set(journal)  # every answer any client received is charged
    known = {1, max(journal)}  # the warm-up and the post-restart requests
    extra = set(journal) - set(received) - known
    assert len(extra) <= len(load.in_flight)  # at most the requests in flight at the kill
    per_query = mechanism_rdp(GNMax(SIGMA), led.config.orders)
    got = batch_cost(np.stack([journal[c][1] for c in sorted(set(received) | known)]))
    bound = sum(r.size for r in load.in_flight) * per_query
    total = led.account(GLOBAL_ACCOUNT).rdp
    assert np.all(total >= got * (1 - 1e-12))  # never less than what was answered
    assert np.all(total <= (got + bound) * (1 + 1e-12))
    for cid, a in received.items():
        np.testing.assert_allclose(journal[cid][1], a.num_charged * per_query, rtol=1e-12)
    assert led.verify().ok
    led.close()
