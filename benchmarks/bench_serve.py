"""Benchmark: the private-prediction service (``dpaudit serve``) on loopback.

0. **The ledger alone**: the latency of settling one answer in-process with
   ``synchronous=FULL``, ``NORMAL`` and in memory.

Every server is the real command in its own process (PATE, 30 logistic teachers on digits,
GNMax σ = 40, data-independent accounting), driven by :func:`dpaudit.serve.run_load` from
this process over 127.0.0.1.

1. **Throughput and latency** of ``POST /v1/predict``: answers per second and p50 / p99
   latency at batch 1 and batch 64, with 1 and 4 concurrent clients, with the durable ledger
   (SQLite, WAL, ``synchronous=FULL``: every answer committed to disk before it is sent;
   and ``synchronous=NORMAL``: durable against a crash of the process, not of the machine)
   next to the same service with the ledger in memory — the price of durability. Targets:
   ≥ 1000 answers/s at batch 64, p99 ≤ 50 ms at batch 1 (one client).
2. **Load test** (acceptance): 16 clients with their own keys for 30 s, batches of 1–16,
   half of the keys with budgets that run out: no 5xx, no client and no service over its
   budget, and the ledger's total equal — bit for bit — to the sum of the costs of the
   answers the clients received (each answer's cost recomputed here from
   :func:`dpaudit.accounting.mechanism_rdp`).
3. **Crash**: the same load, ``kill -9`` of the server after 15 s, restart on the same
   ledger: the spent budget is at least the cost of every answer any client received, and at
   most that plus the cost of the requests in flight at the kill.

Writes ``benchmarks/results/serve.json`` and prints a summary. ``DPAUDIT_BENCH_QUICK=1``
shortens every phase (3 s measurements, 8 s load).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.accounting import mechanism_rdp
from dpaudit.mechanisms import GNMax
from dpaudit.serve import GLOBAL_ACCOUNT, KeyStore, SQLiteLedger, batch_cost, run_load

QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
OUT = Path(__file__).parent / "results" / "serve.json"
SIGMA = 40.0
TEACHERS = 30
FEATURES = 64  # digits
MEASURE_S = 3.0 if QUICK else 10.0
LOAD_S = 8.0 if QUICK else 30.0
KILL_AT = LOAD_S / 2
CLIENTS = 16
BIG = 1e9
LIMITED = 2.0 if QUICK else 4.0  # ε budget of half the load-test keys: they run out


def start_server(ledger: str, *extra: str) -> tuple[subprocess.Popen, str, str]:
    """``dpaudit serve`` on an ephemeral loopback port: (process, url, stderr so far)."""
    cmd = [
        sys.executable, "-c", "from dpaudit.cli import main; main()", "serve",
        "--teachers", str(TEACHERS), "--sigma", str(SIGMA), "--ledger", ledger,
        "--port", "0", "--no-access-log", "--max-batch", "64",
        "--global-epsilon", str(BIG), "--client-epsilon", str(BIG), "--lifetime", "900",
        *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r} {proc.stderr.read()[-2000:]}")
    return proc, line.rsplit(" ", 1)[-1].strip(), ""


def stop_server(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return err


def memory_key(proc: subprocess.Popen) -> str:
    """The one key an in-memory server prints on stderr."""
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("no key printed")
        if "API key of client 'default'" in line:
            return line.rsplit(" ", 1)[-1].strip()


def warm(url: str, key: str) -> None:
    import httpx

    with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60) as c:
        for n in (1, 64, 1):
            r = c.post("/v1/predict", json={"queries": [[0.5] * FEATURES] * n})
            r.raise_for_status()


def summarise(load) -> dict:
    p50, p99 = load.latency_quantiles((0.5, 0.99))
    return {
        "answers_per_second": round(load.answers_per_second, 1),
        "requests_per_second": round(len(load.answered) / load.seconds, 1),
        "p50_ms": round(p50 * 1e3, 2),
        "p99_ms": round(p99 * 1e3, 2),
        "requests": len(load.records),
        "statuses": {str(k): v for k, v in load.statuses().items()},
    }


def throughput(tmp: Path) -> list[dict]:
    rows = []
    for mode in ("durable", "durable-normal", "memory"):
        if mode.startswith("durable"):
            ledger = str(tmp / f"perf-{mode}.sqlite")
            with KeyStore(ledger) as ks:
                keys = [ks.add_client(f"p{i}", BIG) for i in range(4)]
            sync = "normal" if mode == "durable-normal" else "full"
            proc, url, _ = start_server(ledger, "--synchronous", sync)
        else:
            proc, url, _ = start_server(":memory:")
            keys = [memory_key(proc)] * 4
        try:
            warm(url, keys[0])
            for batch in (1, 64):
                for clients in (1, 4):
                    load = run_load(url, keys[:clients], seconds=MEASURE_S, batch=batch,
                                    num_features=FEATURES, rng=batch)  # fmt: skip
                    row = {"ledger": mode, "batch": batch, "clients": clients, **summarise(load)}
                    rows.append(row)
                    print(
                        f"  {mode:14s} batch {batch:2d} clients {clients}: "
                        f"{row['answers_per_second']:8.1f} answers/s, p50 {row['p50_ms']:6.2f} ms,"
                        f" p99 {row['p99_ms']:6.2f} ms",
                        flush=True,
                    )
        finally:
            stop_server(proc)
    return rows


def ledger_settle(tmp: Path, n: int = 100 if QUICK else 400) -> list[dict]:
    """Latency of one settle (one answer) in the ledger alone, in-process: the price of
    ``synchronous=FULL`` (an fsync per commit) vs ``NORMAL`` vs memory."""
    from dpaudit.accounting import DEFAULT_ORDERS
    from dpaudit.serve import Charge, LedgerConfig, MemoryLedger

    cfg = LedgerConfig(GNMax(SIGMA), tuple(DEFAULT_ORDERS), 1e-5)
    worst, real = cfg.costs(np.array([[20, 5, 5]]), np.array([True]))
    charge = Charge(np.array([0]), worst, real, np.array([True]))
    rows = []
    for kind in ("full", "normal", "memory"):
        if kind == "memory":
            led: Any = MemoryLedger(cfg, global_budget=BIG)
        else:
            led = SQLiteLedger(tmp / f"settle-{kind}.sqlite", cfg, global_budget=BIG,
                               synchronous=kind)  # fmt: skip
        client = led.authenticate(led.add_client("a", BIG))
        times = []
        for _ in range(n):
            t = time.perf_counter()
            led.settle(client, charge)
            times.append(time.perf_counter() - t)
        led.close()
        q50, q99 = np.quantile(times, [0.5, 0.99])
        rows.append({"ledger": kind, "p50_ms": round(q50 * 1e3, 3), "p99_ms": round(q99 * 1e3, 3)})
        print(f"  settle, {kind:6s}: p50 {q50 * 1e3:6.2f} ms, p99 {q99 * 1e3:6.2f} ms", flush=True)
    return rows


def load_keys(ledger: str) -> list[str]:
    """16 keys: even ones with budgets that run out during the load, odd ones not."""
    with KeyStore(ledger) as ks:
        return [ks.add_client(f"c{i}", LIMITED if i % 2 == 0 else BIG) for i in range(CLIENTS)]


def load_test(tmp: Path) -> dict:
    ledger = str(tmp / "load.sqlite")
    keys = load_keys(ledger)
    proc, url, _ = start_server(ledger, "--global-epsilon", str(BIG))
    try:
        warm(url, keys[1])
        load = run_load(url, keys, seconds=LOAD_S, batch=lambda g: int(g.integers(1, 17)),
                        num_features=FEATURES, rng=7)  # fmt: skip
    finally:
        stop_server(proc)
    led = SQLiteLedger.open(ledger)
    answered = [r for r in load.answered if r.charge_id is not None]
    journal = led.journal()
    warm_ids = {journal[i][0] for i in range(3)}  # the three warm-up requests
    total = led.account(GLOBAL_ACCOUNT).rdp
    received_ids = sorted(r.charge_id for r in answered)
    out = {
        "seconds": load.seconds,
        "clients": CLIENTS,
        **summarise(load),
        "no_5xx": all(s < 500 for s in load.statuses()),
        "refused_429": load.statuses().get(429, 0),
        "journal_equals_received": [c for c, _, _ in journal if c not in warm_ids] == received_ids,
        "ledger_is_exact_fold_of_journal": led.verify().ok,
        "ledger_equals_sum_of_answered_costs_bitwise": bool(
            np.array_equal(total, exact_sum_with_warmup(journal, warm_ids, answered, led))
        ),
        "max_client_epsilon_of_limited_keys": max(
            led.epsilon(c.id) for c in led.clients() if c.epsilon_budget < BIG
        ),
        "client_budget": LIMITED,
        "any_client_over_budget": any(led.epsilon(c.id) > c.epsilon_budget for c in led.clients()),
        "global_epsilon": led.epsilon(),
    }
    led.close()
    return out


def exact_sum_with_warmup(journal, warm_ids, answered, led) -> np.ndarray:
    """Fold in commit order over the warm-up charges and the recomputed received answers."""
    per_query = mechanism_rdp(GNMax(SIGMA), led.config.orders)
    by_id = {r.charge_id: r for r in answered}
    total = np.zeros(len(led.config.orders))
    for cid, _, rdp in journal:
        if cid in warm_ids:
            total = total + rdp
        elif cid in by_id:
            total = total + batch_cost(np.tile(per_query, (by_id[cid].num_charged, 1)))
    return total


def crash_test(tmp: Path) -> dict:
    ledger = str(tmp / "crash.sqlite")
    keys = load_keys(ledger)
    proc, url, _ = start_server(ledger)
    warm(url, keys[1])
    killer = threading.Timer(KILL_AT, lambda: os.kill(proc.pid, signal.SIGKILL))
    killer.start()
    t0 = time.perf_counter()
    load = run_load(url, keys, seconds=LOAD_S, batch=lambda g: int(g.integers(1, 17)),
                    num_features=FEATURES, rng=11)  # fmt: skip
    killer.join()
    stop_server(proc, signal.SIGKILL)
    proc2, url2, _ = start_server(ledger)  # restart on the same ledger
    restart_s = time.perf_counter() - t0
    import httpx

    with httpx.Client(base_url=url2, headers={"X-API-Key": keys[1]}) as c:
        budget_after_restart = c.get("/v1/budget").json()
    stop_server(proc2)
    led = SQLiteLedger.open(ledger)
    journal = {cid: rdp for cid, _, rdp in led.journal()}
    answered = {r.charge_id: r for r in load.answered if r.charge_id is not None}
    warm_ids = set(sorted(journal)[:3])
    per_query = mechanism_rdp(GNMax(SIGMA), led.config.orders)
    received = sum((journal[c] for c in [*warm_ids, *answered]), start=np.zeros(per_query.size))
    in_flight = load.in_flight
    bound = sum(r.size for r in in_flight) * per_query
    total = led.account(GLOBAL_ACCOUNT).rdp
    extra = set(journal) - set(answered) - warm_ids
    out = {
        "killed_after_s": KILL_AT,
        "answered_before_kill": len(answered),
        "in_flight_at_kill": len(in_flight),
        "queries_in_flight": int(sum(r.size for r in in_flight)),
        "every_received_answer_charged": set(answered) <= set(journal),
        "charges_without_a_received_answer": len(extra),
        "extra_charges_at_most_in_flight": len(extra) <= len(in_flight),
        "spent_at_least_answered": bool(np.all(total >= received * (1 - 1e-12))),
        "spent_at_most_answered_plus_in_flight": bool(
            np.all(total <= (received + bound) * (1 + 1e-12))
        ),
        "epsilon_answered": led.config.epsilon(received),
        "epsilon_spent": led.epsilon(),
        "epsilon_answered_plus_in_flight": led.config.epsilon(received + bound),
        "ledger_is_exact_fold_of_journal": led.verify().ok,
        "restart_seconds_incl_load": round(restart_s, 1),
        "client_budget_after_restart": budget_after_restart["epsilon_spent"],
    }
    led.close()
    return out


def main() -> None:
    t0 = time.time()
    load_avg = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("the ledger alone (one settle, in-process):", flush=True)
        settle = ledger_settle(tmp)
        print("throughput and latency (durable vs in-memory ledger):", flush=True)
        perf = throughput(tmp)
        print(f"load test: {CLIENTS} clients for {LOAD_S:g} s …", flush=True)
        load = load_test(tmp)
        print(json.dumps(load, indent=2), flush=True)
        print(f"crash test: kill -9 after {KILL_AT:g} s, restart …", flush=True)
        crash = crash_test(tmp)
        print(json.dumps(crash, indent=2), flush=True)
    result = {
        "benchmark": "serve",
        "quick": QUICK,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in load_avg],
            "note": "2-core machine shared with other agents' jobs while measured",
        },
        "service": {
            "system": "pate",
            "teachers": TEACHERS,
            "sigma": SIGMA,
            "dataset": "digits",
            "analysis": "data-independent",
        },
        "ledger_settle": settle,
        "throughput": perf,
        "load_test": load,
        "crash_test": crash,
        "seconds": round(time.time() - t0, 1),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
