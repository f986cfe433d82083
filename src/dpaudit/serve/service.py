"""The prediction service without HTTP: authenticate, validate, answer, settle.

:class:`PredictionService` wraps a deployed private-prediction interface (what a registered
system's ``build`` returns: teachers' ``votes`` and the noisy ``aggregator``) and a ledger
(:mod:`dpaudit.serve.ledger`). A request is answered in four steps:

1. **authenticate** the API key (only its SHA-256 is stored);
2. **validate** the queries before anything is computed: a non-empty batch of at most
   ``max_batch`` rows of exactly ``num_features`` finite numbers;
3. **answer**: the teachers vote (through :func:`dpaudit.serve.fastvotes.fast_votes` where it
   reproduces the ensemble exactly) and the aggregator adds its noise, drawn from the
   service's one noise stream in the order of :meth:`dpaudit.systems.PrivatePredictor.predict`
   (so a service seeded like an in-process interface answers a sequential client
   identically);
4. **settle** the answers in the ledger — cached answers substituted, the budget checked on
   the worst case, the realised cost committed — and only then return them.

A refused request raises :class:`~dpaudit.serve.ledger.BudgetRefused` (nothing charged, no
answer released); an invalid one raises :class:`RequestError` with the HTTP status the web
layer (:mod:`dpaudit.serve.app`) returns.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np

from dpaudit._typing import IntArray
from dpaudit.attacks.remote import RemoteBudget as BudgetStatus
from dpaudit.attacks.remote import RemoteInfo as ServiceInfo
from dpaudit.errors import DPAuditError
from dpaudit.mechanisms.values import ABSTAIN, ConfidentGNMax, GNMax
from dpaudit.serve.fastvotes import fast_votes
from dpaudit.serve.ledger import (
    GLOBAL_ACCOUNT,
    Charge,
    Client,
    LedgerBase,
    Receipt,
)

__all__ = [
    "BudgetStatus",
    "PredictionService",
    "RequestError",
    "ServiceInfo",
    "query_key",
]


class RequestError(DPAuditError):
    """A request the service refuses before computing anything (nothing is charged).

    Attributes:
        status: the HTTP status (401 no/wrong key, 403 revoked key, 413 batch too large,
            422 invalid queries).
        code: a short machine-readable code (``"missing_api_key"``, ``"invalid_api_key"``,
            ``"revoked_api_key"``, ``"batch_too_large"``, ``"invalid_queries"``).
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = int(status)
        self.code = code
        super().__init__(message)


def query_key(row: np.ndarray) -> bytes:
    """Cache key of one query: SHA-256 of its features as contiguous float64 bytes."""
    return hashlib.sha256(np.ascontiguousarray(row, dtype=np.float64).tobytes()).digest()


def _check_interface(interface: Any) -> None:
    for attr in ("votes", "aggregator", "ensemble"):
        if not hasattr(interface, attr):
            raise TypeError(
                f"interface must be a private-prediction interface with votes(X, *, rng), "
                f"aggregator and ensemble (dpaudit.systems.PrivatePredictor), got "
                f"{type(interface).__name__} without {attr!r}"
            )
    if not isinstance(interface.aggregator, (GNMax, ConfidentGNMax)):
        raise TypeError(
            f"the interface's aggregator must be GNMax or ConfidentGNMax, got "
            f"{type(interface.aggregator).__name__}"
        )


class PredictionService:
    """A private-prediction interface behind API keys and a ledger (module notes).

    Args:
        interface: the deployed interface (:class:`dpaudit.systems.PrivatePredictor` or
            alike: ``votes(X, *, rng)``, ``aggregator``, ``ensemble``, ``teachers_per_query``);
            its own ledger and cache are not used.
        ledger: a :class:`~dpaudit.serve.ledger.MemoryLedger` or
            :class:`~dpaudit.serve.sqlite_ledger.SQLiteLedger` whose mechanism is the
            interface's aggregator.
        name: service name.
        system: the registered system's name.
        max_batch: most queries per request.
        cache: answer caching (Wang et al. 2022, arXiv:2209.10732, §5).
        noise_rng: the generator of the answer noise (a fresh one if None).
        record_votes: record each charged answer's vote histogram beside its charge (the
            operator's view that :mod:`dpaudit.serve.monitor` tests; the ledger file then
            holds the teachers' votes, which are more sensitive than the answers).

    Raises:
        TypeError: not an interface, or not a ledger.
        ValueError: the ledger accounts for another mechanism; ``max_batch`` < 1.

    Example:
        >>> from dpaudit.attacks import fixed_histogram_interface
        >>> from dpaudit.mechanisms import GNMax
        >>> from dpaudit.serve.ledger import LedgerConfig, MemoryLedger
        >>> api = fixed_histogram_interface([1, 8, 1], GNMax(0.5))
        >>> led = MemoryLedger(LedgerConfig(GNMax(0.5), (2.0,), 1e-5), global_budget=1e9)
        >>> svc = PredictionService(api, led, noise_rng=0)
        >>> key = led.add_client("alice", 1e9)
        >>> svc.predict(svc.authenticate(key), [[0.0], [0.0]]).labels.tolist()
        [1, 1]
    """

    def __init__(
        self,
        interface: Any,
        ledger: LedgerBase,
        *,
        name: str = "dpaudit-serve",
        system: str = "custom",
        max_batch: int = 256,
        cache: bool = False,
        noise_rng: Any = None,
        record_votes: bool = True,
    ) -> None:
        from dpaudit._rng import as_generator
        from dpaudit._validate import check_positive_int

        _check_interface(interface)
        if not isinstance(ledger, LedgerBase):
            raise TypeError(f"ledger must be a dpaudit.serve ledger, got {type(ledger).__name__}")
        if ledger.config.mechanism != interface.aggregator:
            raise ValueError(
                f"the ledger accounts for {ledger.config.mechanism!r} but the interface answers "
                f"with {interface.aggregator!r}"
            )
        self._interface = interface
        self._ledger = ledger
        self._name = str(name)
        self._system = str(system)
        self._max_batch = check_positive_int("max_batch", max_batch)
        self._cache = bool(cache)
        self._record_votes = bool(record_votes)
        self._rng = as_generator(noise_rng)
        self._rng_lock = threading.Lock()
        ens = interface.ensemble
        k = getattr(interface, "teachers_per_query", None)
        self._subsets = k is not None and k != ens.num_teachers
        self._num_teachers = int(ens.num_teachers if k is None else k)
        self._num_classes = int(ens.num_classes)
        self._num_features = int(ens.num_features)
        self._fast = None if self._subsets else fast_votes(interface)

    # -------------------------------------------------------------------------- properties
    @property
    def ledger(self) -> LedgerBase:
        """The ledger."""
        return self._ledger

    @property
    def interface(self) -> Any:
        """The deployed interface."""
        return self._interface

    @property
    def num_features(self) -> int:
        """d, the length of every query."""
        return self._num_features

    @property
    def max_batch(self) -> int:
        """Most queries per request."""
        return self._max_batch

    def info(self) -> ServiceInfo:
        """The public parameters."""
        agg = self._interface.aggregator
        confident = isinstance(agg, ConfidentGNMax)
        cfg = self._ledger.config
        return ServiceInfo(
            name=self._name,
            system=self._system,
            mechanism=agg.name,
            sigma=float(agg.sigma),
            threshold=float(agg.threshold) if confident else None,
            sigma1=float(agg.sigma1) if confident else None,
            num_teachers=self._num_teachers,
            num_classes=self._num_classes,
            num_features=self._num_features,
            max_batch=self._max_batch,
            cache=self._cache,
            delta=cfg.delta,
            analysis=cfg.analysis,
            conversion=cfg.conversion,
            global_epsilon_budget=self._ledger.global_budget,
            durable=bool(self._ledger.durable),
        )

    # ------------------------------------------------------------------------------ steps
    def authenticate(self, api_key: str | None) -> Client:
        """The client of an API key.

        Raises:
            RequestError: 401 without a key or with an unknown one, 403 for a revoked key.
        """
        if api_key is None or not isinstance(api_key, str) or not api_key.strip():
            raise RequestError(
                401, "missing_api_key", "an API key is required (header 'Authorization: "
                "Bearer KEY' or 'X-API-Key: KEY')",
            )  # fmt: skip
        client = self._ledger.authenticate(api_key.strip())
        if client is None:
            raise RequestError(401, "invalid_api_key", "the API key is not valid")
        if client.revoked:
            raise RequestError(403, "revoked_api_key", "the API key was revoked")
        return client

    def validate(self, queries: Any) -> np.ndarray:
        """The queries as a float64 ``(n, d)`` array, or a :class:`RequestError`.

        Raises:
            RequestError: 413 for more than ``max_batch`` rows; 422 for anything else (not a
                list of rows, an empty batch, a row of another length, a non-number, a
                non-finite number).
        """
        if not isinstance(queries, (list, tuple, np.ndarray)):
            raise RequestError(
                422, "invalid_queries", "queries must be a list of rows (lists of numbers)"
            )
        n = len(queries)
        if n == 0:
            raise RequestError(422, "invalid_queries", "queries must hold at least one row")
        if n > self._max_batch:
            raise RequestError(
                413, "batch_too_large",
                f"a request holds at most {self._max_batch} queries, got {n}",
            )  # fmt: skip
        d = self._num_features
        if isinstance(queries, np.ndarray):
            X = np.asarray(queries, dtype=np.float64)
            if X.ndim != 2 or X.shape[1] != d:
                raise RequestError(
                    422, "invalid_queries", f"each query must have {d} features, got {X.shape}"
                )
        else:
            for i, row in enumerate(queries):
                if not isinstance(row, (list, tuple)) or len(row) != d:
                    got = len(row) if isinstance(row, (list, tuple)) else type(row).__name__
                    raise RequestError(
                        422, "invalid_queries", f"query {i} must have {d} features, got {got}"
                    )
                for v in row:
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        raise RequestError(
                            422, "invalid_queries",
                            f"query {i} holds a non-number {v!r}; features are numbers",
                        )  # fmt: skip
            X = np.array(queries, dtype=np.float64)
        if not np.all(np.isfinite(X)):
            i = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
            raise RequestError(
                422, "invalid_queries", f"query {i} holds a non-finite number (NaN or infinity)"
            )
        return X

    def answer(self, X: np.ndarray) -> tuple[IntArray, IntArray]:
        """The teachers' votes and the proposed answers (not yet released or charged).

        The noise comes from the service's one stream, drawn exactly as
        :meth:`dpaudit.systems.PrivatePredictor.predict` draws it.
        """
        agg = self._interface.aggregator
        if self._subsets:
            with self._rng_lock:
                votes = self._interface.votes(X, rng=self._rng)
                noise = agg.draw_noise(votes.shape[0], votes.shape[1], rng=self._rng)
        else:
            votes = self._interface.votes(X) if self._fast is None else self._fast.votes(X)
            with self._rng_lock:
                noise = agg.draw_noise(votes.shape[0], votes.shape[1], rng=self._rng)
        labels = np.asarray(agg.decide(votes.astype(np.float64), noise), dtype=np.int64)
        return votes, labels

    def predict(self, client: Client, queries: Any) -> Receipt:
        """Validate, answer and settle one request (module notes).

        Returns:
            :class:`~dpaudit.serve.ledger.Receipt`: the labels (−1: Confident GNMax
            abstained) and what was charged.

        Raises:
            RequestError: invalid queries (nothing charged).
            BudgetRefused: the worst case exceeds a budget (nothing charged or released).
            UnknownClientError: the client was revoked meanwhile.
        """
        X = self.validate(queries)
        votes, labels = self.answer(X)
        answered = labels != ABSTAIN
        worst, realised = self._ledger.config.costs(votes, answered)
        keys = [query_key(row) for row in X] if self._cache else None
        recorded = votes if self._record_votes else None
        return self._ledger.settle(
            client, Charge(labels, worst, realised, answered, keys, recorded)
        )

    def budget(self, client: Client) -> BudgetStatus:
        """A client's budget and the service's."""
        cfg = self._ledger.config
        acc = self._ledger.account(client.id)
        total = self._ledger.account(GLOBAL_ACCOUNT)
        spent = cfg.epsilon(acc.rdp)
        return BudgetStatus(
            client=client.name,
            epsilon_spent=spent,
            epsilon_budget=client.epsilon_budget,
            epsilon_remaining=max(client.epsilon_budget - spent, 0.0),
            num_queries=acc.num_queries,
            num_answered=acc.num_answered,
            num_cached=acc.num_cached,
            num_requests=acc.num_requests,
            global_epsilon_spent=cfg.epsilon(total.rdp),
            global_epsilon_budget=self._ledger.global_budget,
            delta=cfg.delta,
            analysis=cfg.analysis,
            conversion=cfg.conversion,
        )
