"""Helpers of the service tests: small services over fixed-histogram teachers (no training)."""

from __future__ import annotations

from dpaudit.mechanisms import GNMax

HIST = [3, 20, 7]


def fixed_service(
    *,
    sigma: float = 4.0,
    global_budget: float = 1e6,
    cache: bool = False,
    ledger=None,
    noise_rng=0,
    max_batch: int = 64,
    votes=HIST,
):
    """A PredictionService whose teachers always vote ``votes`` (1 feature per query)."""
    from dpaudit.accounting import DEFAULT_ORDERS
    from dpaudit.attacks import fixed_histogram_interface
    from dpaudit.serve import LedgerConfig, MemoryLedger, PredictionService

    api = fixed_histogram_interface(votes, GNMax(sigma))
    cfg = LedgerConfig(GNMax(sigma), tuple(DEFAULT_ORDERS), 1e-5)
    led = ledger if ledger is not None else MemoryLedger(cfg, global_budget=global_budget)
    return PredictionService(
        api, led, system="fixed", max_batch=max_batch, cache=cache, noise_rng=noise_rng
    )
