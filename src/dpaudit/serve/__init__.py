"""Deploy a private-prediction system as an HTTP service with a durable privacy ledger.

``dpaudit serve`` (:mod:`dpaudit.cli.serve`) trains a registered system (PATE, CaPC, …)
from :class:`ServeSettings` and answers ``POST /v1/predict`` behind per-client API keys.
Every answer's privacy cost is computed by :mod:`dpaudit.accounting` from the mechanism that
answers and committed to the ledger before the answer is sent; a request that would exceed
the client's or the service's ε budget is refused whole and spends nothing. This is the
threat model of Wang et al. 2022 ("In Differential Privacy, There is Truth: On Vote Leakage
in Ensemble Private Learning", arXiv:2209.10732): a deployed prediction interface answering
until its budget is spent, optionally with answer caching (§5 there).

* :class:`ServeSettings` — the settings tree (data, system, budget, server).
* :class:`MemoryLedger`, :class:`SQLiteLedger`, :class:`KeyStore` — the ledgers and the
  API-key table (keys hashed at rest).
* :class:`PredictionService` — authenticate, validate, answer, settle (no HTTP).
* :func:`create_app` — the FastAPI app; :class:`ServiceServer` — uvicorn on a bound socket.
* :func:`build_service` — train the configured system and open its ledger.
* :func:`run_load` — a bounded load test of a running service (tests, benchmarks).

fastapi and uvicorn are imported only when an app or server is made (extra ``serve``).
"""

from dpaudit.serve.app import create_app, max_body_bytes
from dpaudit.serve.deploy import (
    TrainingData,
    build_service,
    load_training_data,
    noise_generator,
    open_ledger,
)
from dpaudit.serve.ledger import (
    GLOBAL_ACCOUNT,
    Account,
    BudgetRefused,
    Charge,
    Client,
    LedgerBase,
    LedgerConfig,
    LedgerVerification,
    MemoryLedger,
    Receipt,
    UnknownClientError,
    batch_cost,
    hash_api_key,
    new_api_key,
)
from dpaudit.serve.loadtest import LoadResult, RequestRecord, run_load
from dpaudit.serve.server import ServiceServer
from dpaudit.serve.service import (
    BudgetStatus,
    PredictionService,
    RequestError,
    ServiceInfo,
    query_key,
)
from dpaudit.serve.settings import BudgetSettings, CanarySettings, ServerSettings, ServeSettings
from dpaudit.serve.sqlite_ledger import KeyStore, SQLiteLedger

__all__ = [
    "GLOBAL_ACCOUNT",
    "Account",
    "BudgetRefused",
    "BudgetSettings",
    "BudgetStatus",
    "CanarySettings",
    "Charge",
    "Client",
    "KeyStore",
    "LedgerBase",
    "LedgerConfig",
    "LedgerVerification",
    "LoadResult",
    "MemoryLedger",
    "PredictionService",
    "Receipt",
    "RequestError",
    "RequestRecord",
    "SQLiteLedger",
    "ServeSettings",
    "ServerSettings",
    "ServiceInfo",
    "ServiceServer",
    "TrainingData",
    "UnknownClientError",
    "batch_cost",
    "build_service",
    "create_app",
    "hash_api_key",
    "load_training_data",
    "max_body_bytes",
    "new_api_key",
    "noise_generator",
    "open_ledger",
    "query_key",
    "run_load",
]
