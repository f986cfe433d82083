"""A bounded load test of a running service: concurrent clients for a fixed time.

:func:`run_load` starts ``clients`` threads, each with its own API key and keep-alive
connection, sending ``POST /v1/predict`` batches of random queries back to back until
``seconds`` have passed (it always stops by itself). Every request is recorded: its status,
latency, batch size, and the ``charge_id`` / ``num_charged`` of an answer — so a test can
check the ledger against exactly what the clients received — or, when no response came back
(the server was killed), that it was *in flight*.

The service tests and ``benchmarks/bench_serve.py`` use it on loopback.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._validate import check_positive, check_positive_int
from dpaudit.errors import require

__all__ = ["LoadResult", "RequestRecord", "run_load"]


@dataclasses.dataclass(frozen=True)
class RequestRecord(ResultMixin):
    """One request of a load test.

    Attributes:
        client: the client thread's index.
        status: the HTTP status (0: no response — in flight when the connection failed).
        size: queries sent.
        latency: seconds from send to response (or failure).
        charge_id: the journal row of an answer (None when nothing was charged or no answer).
        num_charged: queries charged for an answer.
        started: seconds since the load test began.
    """

    client: int
    status: int
    size: int
    latency: float
    charge_id: int | None
    num_charged: int
    started: float


@dataclasses.dataclass(frozen=True)
class LoadResult(ResultMixin):
    """Every request of a load test, and summaries.

    Attributes:
        records: one :class:`RequestRecord` per request, in completion order per client.
        seconds: wall time of the test.
        clients: concurrent clients.
    """

    records: tuple[RequestRecord, ...]
    seconds: float
    clients: int

    def statuses(self) -> dict[int, int]:
        """Requests per HTTP status (0: no response)."""
        out: dict[int, int] = {}
        for r in self.records:
            out[r.status] = out.get(r.status, 0) + 1
        return dict(sorted(out.items()))

    @property
    def answered(self) -> tuple[RequestRecord, ...]:
        """Requests answered (HTTP 200)."""
        return tuple(r for r in self.records if r.status == 200)

    @property
    def in_flight(self) -> tuple[RequestRecord, ...]:
        """Requests without a response (the connection failed: e.g. the server was killed)."""
        return tuple(r for r in self.records if r.status == 0)

    @property
    def answers_per_second(self) -> float:
        """Queries answered per second."""
        return sum(r.size for r in self.answered) / self.seconds

    def latency_quantiles(self, qs: Sequence[float] = (0.5, 0.99)) -> list[float]:
        """Latency quantiles (seconds) of the answered requests."""
        lat = np.array([r.latency for r in self.answered])
        if lat.size == 0:
            return [float("nan")] * len(qs)
        return [float(np.quantile(lat, q)) for q in qs]


def run_load(
    url: str,
    api_keys: Sequence[str],
    *,
    seconds: float,
    batch: int | Callable[[np.random.Generator], int],
    num_features: int,
    query_pool: int = 0,
    stop: threading.Event | None = None,
    timeout: float = 30.0,
    rng: int = 0,
) -> LoadResult:
    """Run ``len(api_keys)`` concurrent clients against ``url`` for ``seconds`` (module notes).

    Args:
        url: the service's base URL.
        api_keys: one key per client (a client thread each).
        seconds: how long every client keeps sending (each stops by itself).
        batch: queries per request, or ``f(generator) -> size``.
        num_features: d, features per query.
        query_pool: draw queries from this many distinct rows (0: fresh random rows), to
            exercise an answer cache.
        stop: an event that stops every client early.
        timeout: seconds per request.
        rng: seed of the queries.

    Returns:
        :class:`LoadResult`.
    """
    httpx = require("httpx", "serve")
    check_positive("seconds", seconds)
    check_positive_int("num_features", num_features)
    if not api_keys:
        raise ValueError("api_keys must hold at least one key")
    seeds = np.random.SeedSequence(rng).spawn(len(api_keys))
    pool = np.random.default_rng(rng).random((max(query_pool, 1), num_features))
    records: list[list[RequestRecord]] = [[] for _ in api_keys]
    stop = stop if stop is not None else threading.Event()
    t0 = time.perf_counter()
    deadline = t0 + float(seconds)

    def client(i: int) -> None:
        g = np.random.default_rng(seeds[i])
        headers = {"Authorization": f"Bearer {api_keys[i]}"}
        with httpx.Client(base_url=url, headers=headers, timeout=timeout) as c:
            while not stop.is_set() and time.perf_counter() < deadline:
                n = int(batch(g) if callable(batch) else batch)
                if query_pool:
                    q = pool[g.integers(0, query_pool, size=n)]
                else:
                    q = g.random((n, num_features))
                start = time.perf_counter()
                try:
                    r = c.post("/v1/predict", json={"queries": q.tolist()})
                except httpx.HTTPError:
                    records[i].append(
                        RequestRecord(i, 0, n, time.perf_counter() - start, None, 0, start - t0)
                    )
                    return  # the server is gone (e.g. killed): this client stops
                lat = time.perf_counter() - start
                cid, charged = None, 0
                if r.status_code == 200:
                    body = r.json()
                    cid, charged = body["charge_id"], int(body["num_charged"])
                records[i].append(RequestRecord(i, r.status_code, n, lat, cid, charged, start - t0))

    threads = [
        threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(api_keys))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + timeout + 5.0)
    elapsed = time.perf_counter() - t0
    return LoadResult(
        tuple(r for rs in records for r in rs), min(elapsed, float(seconds)), len(api_keys)
    )
