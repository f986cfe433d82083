"""The service's privacy ledger: per-client and global RDP accounts, the journal, the cache.

Every answer of :mod:`dpaudit.serve` is paid for here *before* it leaves the server. A
request's answers are settled as one :class:`Charge`: per query its worst-case RDP (every
step charged, the GNMax step included) and its realised RDP (what the outcome costs: the
threshold step of Confident GNMax alone when it abstains). The arithmetic is not written here:
:class:`LedgerConfig` is :class:`dpaudit.accounting._ledger.LedgerRules`, the rules
:class:`~dpaudit.accounting.PrivacyLedger` runs — per-query costs by
:func:`dpaudit.accounting.noisy_argmax_cost` (Papernot et al. 2018, arXiv:1802.08908),
composition by addition at each order (Mironov 2017, arXiv:1702.07476, Prop. 1), ε(δ) by
:func:`dpaudit.accounting.rdp_to_dp` (Mironov 2017 Prop. 3 / Balle et al. 2020,
arXiv:1905.09982, Thm 21) and the budget test. This module and
:mod:`~dpaudit.serve.sqlite_ledger` keep the accounts, the journal and the cache, and make
settling atomic and durable.

Settling a charge is one atomic step (a lock here, an SQLite write transaction in
:class:`~dpaudit.serve.sqlite_ledger.SQLiteLedger`):

1. with answer caching, a query seen before gets its first answer back, free (post-processing
   of a released answer; Wang et al. 2022, arXiv:2209.10732, §5; Chadha et al. 2024,
   arXiv:2402.09403, §5.4); a query repeated inside the request is charged once;
2. the worst case of the uncached queries is added to the client's account and to the global
   account; if either ε(δ) would exceed its budget the whole request is refused
   (:class:`BudgetRefused`) and nothing is charged. The check uses the worst case, so whether
   a request is refused never depends on the noisy outcome (only, under the data-dependent
   analysis, on the votes);
3. otherwise the realised cost is added to both accounts and appended to the journal, in
   commit order.

The totals are kept *exactly* equal to the journal: each account is the left fold (IEEE
float64 additions in commit order) of its journal rows, which :meth:`LedgerBase.verify`
recomputes bit for bit.

:class:`MemoryLedger` keeps all of it in memory (the baseline of the durability benchmark);
:class:`~dpaudit.serve.sqlite_ledger.SQLiteLedger` keeps it in a SQLite file (WAL).
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import FloatArray, IntArray
from dpaudit._validate import check_positive
from dpaudit.accounting._ledger import (
    LedgerRules,
    batch_cost,
    mechanism_from_dict,
    mechanism_to_dict,
)
from dpaudit.errors import DPAuditError

__all__ = [
    "GLOBAL_ACCOUNT",
    "Account",
    "AnswerLog",
    "BudgetRefused",
    "Charge",
    "Client",
    "LedgerBase",
    "LedgerConfig",
    "LedgerVerification",
    "MemoryLedger",
    "Receipt",
    "UnknownClientError",
    "batch_cost",
    "hash_api_key",
    "new_api_key",
]

#: Account id of the whole service (clients have ids ≥ 1).
GLOBAL_ACCOUNT = 0
_KEY_PREFIX = "dpa_"
_NAME_MAX = 64


class BudgetRefused(DPAuditError):
    """A request would push a client's or the service's ε(δ) past its budget; nothing charged.

    Attributes:
        scope: ``"client"`` or ``"global"``.
        epsilon_spent: ε(δ) of that account now.
        epsilon_after: ε(δ) the request's worst case would bring it to.
        epsilon_budget: the budget.
    """

    def __init__(
        self, scope: str, epsilon_spent: float, epsilon_after: float, epsilon_budget: float
    ):
        self.scope = scope
        self.epsilon_spent = float(epsilon_spent)
        self.epsilon_after = float(epsilon_after)
        self.epsilon_budget = float(epsilon_budget)
        who = "the client's" if scope == "client" else "the service's global"
        super().__init__(
            f"refused: answering would raise {who} epsilon from {self.epsilon_spent:.6g} to "
            f"{self.epsilon_after:.6g} > budget {self.epsilon_budget:.6g}; nothing was charged"
        )


class UnknownClientError(DPAuditError, KeyError):
    """No such client (or it was revoked)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown client"


def new_api_key() -> str:
    """A fresh API key: ``dpa_`` + 256 random bits (URL-safe base64)."""
    return _KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> bytes:
    """SHA-256 of an API key: what the ledger stores (keys are never stored in clear).

    The keys are 256-bit random tokens, so a plain cryptographic hash is enough (no slow
    password hash is needed: there is nothing to brute-force).

    Raises:
        TypeError: ``key`` is not a string.
    """
    if not isinstance(key, str):
        raise TypeError(f"api key must be a string, got {type(key).__name__}")
    return hashlib.sha256(key.encode("utf-8")).digest()


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"client name must be a non-empty string, got {name!r}")
    if len(name) > _NAME_MAX or not all(c.isalnum() or c in "-_." for c in name):
        raise ValueError(
            f"client name must be at most {_NAME_MAX} characters of letters, digits, '-', '_' "
            f"or '.', got {name!r}"
        )
    return name


# --------------------------------------------------------------------------------- types


@dataclasses.dataclass(frozen=True)
class LedgerConfig(LedgerRules, ResultMixin):
    """What the ledger accounts for, and how: fixed for the life of a ledger file.

    The rules (validation, :meth:`costs`, :meth:`compose`, :meth:`epsilon`, :meth:`fits`) are
    :class:`dpaudit.accounting._ledger.LedgerRules`, the arithmetic of
    :class:`~dpaudit.accounting.PrivacyLedger`; this class adds the file format.

    Attributes:
        mechanism: the aggregator that answers (:class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax`).
        orders: the Rényi orders of every account.
        delta: δ at which every budget is enforced.
        analysis: ``"data-independent"`` or ``"data-dependent"``.
        conversion: RDP→(ε, δ): ``"balle2020"`` or ``"standard"``.
        q: q̃ bound of the data-dependent analysis (``"union"``, as PATE's accountant).
    """

    def to_json(self, **kwargs: Any) -> str:
        """Canonical JSON (floats as ``float.hex()``) stored in a ledger file."""
        return json.dumps(
            {
                "format": "dpaudit.serve.LedgerConfig/1",
                "mechanism": mechanism_to_dict(self.mechanism),
                "orders": [float(x).hex() for x in self.orders],
                "delta": float(self.delta).hex(),
                "analysis": self.analysis,
                "conversion": self.conversion,
                "q": self.q,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> LedgerConfig:
        """Read :meth:`to_json` back.

        Raises:
            ValueError: not a ledger config document.
        """
        try:
            d = json.loads(text)
            h = float.fromhex
            return cls(
                mechanism=mechanism_from_dict(d["mechanism"]),
                orders=tuple(h(x) for x in d["orders"]),
                delta=h(d["delta"]),
                analysis=d["analysis"],
                conversion=d["conversion"],
                q=d["q"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a dpaudit.serve ledger config: {exc}") from exc


@dataclasses.dataclass(frozen=True)
class Client(ResultMixin):
    """A client of the service (its API key is known only by its hash).

    Attributes:
        id: account id (≥ 1).
        name: unique name.
        epsilon_budget: its own ε budget at the ledger's δ.
        created: creation time (UTC, ISO 8601).
        revoked: whether its key was revoked.
    """

    id: int
    name: str
    epsilon_budget: float
    created: str
    revoked: bool = False


@dataclasses.dataclass(frozen=True)
class Account(ResultMixin):
    """What one account (a client, or the whole service) has been charged.

    Attributes:
        rdp: composed RDP at the ledger's orders, ``(K,)``.
        num_queries: queries charged.
        num_answered: charged queries that returned a label.
        num_cached: queries answered from the cache (free).
        num_requests: requests that were answered.
    """

    rdp: FloatArray
    num_queries: int = 0
    num_answered: int = 0
    num_cached: int = 0
    num_requests: int = 0

    @classmethod
    def zeros(cls, k: int) -> Account:
        """An empty account over K orders."""
        return cls(np.zeros(k))

    def plus(self, rdp: np.ndarray, queries: int, answered: int, cached: int) -> Account:
        """This account after one settled request (``rdp`` composed in,
        :meth:`LedgerRules.compose <dpaudit.accounting._ledger.LedgerRules.compose>`)."""
        return Account(
            LedgerRules.compose(self.rdp, rdp),
            self.num_queries + queries,
            self.num_answered + answered,
            self.num_cached + cached,
            self.num_requests + 1,
        )


@dataclasses.dataclass(frozen=True)
class Charge:
    """A request's answers, to be settled atomically (:meth:`LedgerBase.settle`).

    Attributes:
        labels: proposed answers ``(n,)`` (a label, or −1: Confident GNMax abstained).
        worst: per-query worst-case RDP ``(n, K)``.
        realised: per-query realised RDP ``(n, K)``.
        answered: whether each query returned a label ``(n,)``.
        keys: per-query cache keys (None: no caching).
        votes: the vote histograms ``(n, C)`` the labels were drawn from (the operator's
            view, recorded beside the charge for :mod:`dpaudit.serve.monitor`; None: not
            recorded).
    """

    labels: IntArray
    worst: FloatArray
    realised: FloatArray
    answered: np.ndarray
    keys: Sequence[bytes] | None = None
    votes: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = np.shape(self.labels)[0]
        if np.shape(self.worst)[0] != n or np.shape(self.realised)[0] != n:
            raise ValueError("labels, worst and realised must have one row per query")
        if self.keys is not None and len(self.keys) != n:
            raise ValueError("keys must have one entry per query")
        if self.votes is not None and (np.ndim(self.votes) != 2 or np.shape(self.votes)[0] != n):
            raise ValueError(
                f"votes must have shape (n, C) with n = {n}, got {np.shape(self.votes)}"
            )

    def answer_record(self, charged: np.ndarray, labels: np.ndarray) -> tuple | None:
        """The ``(votes, labels)`` of the charged (freshly drawn) queries, or None when the
        votes are not recorded or nothing was charged."""
        if self.votes is None or not charged.any():
            return None
        votes = np.ascontiguousarray(np.asarray(self.votes, dtype=np.float64)[charged])
        return votes, np.ascontiguousarray(labels[charged], dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class Receipt(ResultMixin):
    """What a settled request released and paid.

    Attributes:
        labels: the answers ``(n,)`` (cached answers substituted).
        charge_id: the journal row of the charge (None when every answer came from the cache).
        num_charged: queries charged.
        num_answered: charged queries that returned a label.
        num_cached: queries answered from the cache (free).
        rdp: the RDP charged, ``(K,)``.
        client_epsilon: the client's ε(δ) after the request.
        global_epsilon: the service's ε(δ) after the request.
    """

    labels: IntArray
    charge_id: int | None
    num_charged: int
    num_answered: int
    num_cached: int
    rdp: FloatArray
    client_epsilon: float
    global_epsilon: float


@dataclasses.dataclass(frozen=True)
class LedgerVerification(ResultMixin):
    """Whether every account equals the left fold of its journal rows, bit for bit.

    Attributes:
        ok: all accounts match.
        num_charges: journal rows.
        mismatches: accounts (0 = global) whose totals or counts differ.
    """

    ok: bool
    num_charges: int
    mismatches: tuple[int, ...]


@dataclasses.dataclass(frozen=True, eq=False)
class AnswerLog:
    """Freshly drawn answers with the vote histograms they were drawn from, in commit order.

    Only charged answers are recorded: an answer served from the cache (or a query repeated
    inside a request) is a copy of an earlier draw, not a new one.

    Attributes:
        charge_ids: the journal row of each answer's charge ``(n,)``.
        client_ids: the client charged ``(n,)``.
        votes: the histograms ``(n, C)``.
        labels: the answers ``(n,)`` (−1: Confident GNMax abstained).
        last_charge_id: the last journal row read (the ``after`` of the next read).
    """

    charge_ids: IntArray
    client_ids: IntArray
    votes: FloatArray
    labels: IntArray
    last_charge_id: int

    @classmethod
    def concat(cls, rows: list[tuple[int, int, np.ndarray, np.ndarray]], after: int) -> AnswerLog:
        """From ``(charge_id, client_id, votes, labels)`` rows (``after``: no rows)."""
        if not rows:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0)),
                       np.zeros(0, np.int64), int(after))  # fmt: skip
        sizes = [len(r[3]) for r in rows]
        return cls(
            np.repeat(np.array([r[0] for r in rows], np.int64), sizes),
            np.repeat(np.array([r[1] for r in rows], np.int64), sizes),
            np.concatenate([r[2] for r in rows]),
            np.concatenate([r[3] for r in rows]).astype(np.int64),
            int(rows[-1][0]),
        )

    def __len__(self) -> int:
        return int(self.labels.shape[0])


# --------------------------------------------------------------------------------- base


@dataclasses.dataclass
class _Settlement:
    """The outcome of settling a charge against the accounts (pure; no I/O)."""

    labels: IntArray
    charged: np.ndarray
    rdp: FloatArray
    new_cache: dict[bytes, int]
    client: Account
    total: Account
    num_answered: int
    num_cached: int
    epsilons: tuple[float, float] | None = None  # (client, global) after, when known


class LedgerBase(abc.ABC):
    """Shared logic of the ledgers: settle a charge against the accounts, check budgets.

    Subclasses store clients, accounts, the journal and the cache (:class:`MemoryLedger`,
    :class:`~dpaudit.serve.sqlite_ledger.SQLiteLedger`).
    """

    config: LedgerConfig
    durable: bool = False

    def __init__(self, config: LedgerConfig, *, global_budget: float) -> None:
        if not isinstance(config, LedgerConfig):
            raise TypeError(f"config must be a LedgerConfig, got {type(config).__name__}")
        self.config = config
        self._global_budget = check_positive("global_budget", global_budget)

    @property
    def global_budget(self) -> float:
        """ε budget of the whole service at the ledger's δ."""
        return self._global_budget

    def _settle(
        self, charge: Charge, client: Client, acc: Account, total: Account, cache: dict[bytes, int]
    ) -> _Settlement:
        """Cache substitution, budget check on the worst case, realised cost (lock held)."""
        labels = np.array(charge.labels, dtype=np.int64, copy=True)
        n = labels.shape[0]
        charged = np.ones(n, dtype=bool)
        new_cache: dict[bytes, int] = {}
        if charge.keys is not None:
            first: dict[bytes, int] = {}
            for i, key in enumerate(charge.keys):
                if key in cache:
                    labels[i], charged[i] = cache[key], False
                elif key in first:
                    labels[i], charged[i] = labels[first[key]], False
                else:
                    first[key] = i
                    new_cache[key] = int(labels[i])
        cfg = self.config
        afters: list[float] = []
        worst = None
        if charged.any():
            worst = batch_cost(charge.worst, charged)
            for scope, account, budget in (
                ("client", acc, client.epsilon_budget),
                ("global", total, self._global_budget),
            ):
                afters.append(cfg.epsilon(cfg.compose(account.rdp, worst)))
                if not cfg.fits(afters[-1], budget):
                    raise BudgetRefused(scope, cfg.epsilon(account.rdp), afters[-1], budget)
        rdp = batch_cost(charge.realised, charged)
        # every step charged (GNMax, or no abstention): the ε after is the one just checked
        known = (afters[0], afters[1]) if worst is not None and np.array_equal(rdp, worst) else None
        num_answered = int(np.count_nonzero(np.asarray(charge.answered, bool) & charged))
        num_charged = int(charged.sum())
        num_cached = n - num_charged
        return _Settlement(
            labels,
            charged,
            rdp,
            new_cache,
            acc.plus(rdp, num_charged, num_answered, num_cached),
            total.plus(rdp, num_charged, num_answered, num_cached),
            num_answered,
            num_cached,
            known,
        )

    def _receipt(self, s: _Settlement, charge_id: int | None) -> Receipt:
        cfg = self.config
        client_eps, global_eps = s.epsilons or (cfg.epsilon(s.client.rdp), cfg.epsilon(s.total.rdp))
        return Receipt(
            labels=s.labels,
            charge_id=charge_id,
            num_charged=int(s.charged.sum()),
            num_answered=s.num_answered,
            num_cached=s.num_cached,
            rdp=s.rdp,
            client_epsilon=client_eps,
            global_epsilon=global_eps,
        )

    # -- the interface each store implements ------------------------------------------------
    @abc.abstractmethod
    def settle(self, client: Client, charge: Charge) -> Receipt:
        """Settle a request's answers atomically (see the module notes).

        Raises:
            BudgetRefused: the worst case exceeds the client's or the global budget.
            UnknownClientError: the client does not exist or was revoked.
        """

    @abc.abstractmethod
    def account(self, client_id: int) -> Account:
        """The account of a client (``GLOBAL_ACCOUNT``: the whole service)."""

    @abc.abstractmethod
    def journal(self) -> list[tuple[int, int, FloatArray]]:
        """Every charge as ``(charge_id, client_id, rdp)``, in commit order."""

    @abc.abstractmethod
    def clients(self) -> list[Client]:
        """Every client, revoked ones included."""

    @abc.abstractmethod
    def authenticate(self, api_key: str) -> Client | None:
        """The client whose key this is (None: unknown key)."""

    @abc.abstractmethod
    def add_client(self, name: str, epsilon_budget: float, *, api_key: str | None = None) -> str:
        """Register a client; return its API key (shown once; only its hash is kept)."""

    @abc.abstractmethod
    def revoke(self, name: str) -> None:
        """Revoke a client's key (its account is kept)."""

    def close(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release resources (a no-op in memory)."""

    @abc.abstractmethod
    def answers(self, after: int = 0, *, limit: int | None = None) -> AnswerLog:
        """The recorded answers of the charges after journal row ``after`` (at most ``limit``
        charges), in commit order."""

    @abc.abstractmethod
    def set_monitor_status(self, name: str, status: dict[str, Any]) -> None:
        """Store what the monitor ``name`` last concluded (the health endpoint shows it)."""

    @abc.abstractmethod
    def monitor_statuses(self) -> dict[str, dict[str, Any]]:
        """The last status of every monitor, by name."""

    # -- derived -----------------------------------------------------------------------------
    def epsilon(self, client_id: int = GLOBAL_ACCOUNT) -> float:
        """ε(δ) of an account (default: the whole service)."""
        return self.config.epsilon(self.account(client_id).rdp)

    def verify(self) -> LedgerVerification:
        """Recompute every account as the left fold of its journal rows and compare bitwise.

        The global account's RDP must be bit-identical to ``((0 + r₁) + r₂) + …`` over all
        journal rows in commit order, and each client's to the fold over its own rows.
        """
        k = self.config.num_orders
        folds: dict[int, np.ndarray] = {GLOBAL_ACCOUNT: np.zeros(k)}
        rows = self.journal()
        compose = self.config.compose
        for _, cid, rdp in rows:
            folds[GLOBAL_ACCOUNT] = compose(folds[GLOBAL_ACCOUNT], rdp)
            folds[cid] = compose(folds.get(cid, np.zeros(k)), rdp)
        ids = {GLOBAL_ACCOUNT, *(c.id for c in self.clients())}
        bad = []
        for cid in sorted(ids):
            expected = folds.get(cid, np.zeros(k))
            if not np.array_equal(self.account(cid).rdp, expected):
                bad.append(cid)
        return LedgerVerification(not bad, len(rows), tuple(bad))


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class MemoryLedger(LedgerBase):
    """The ledger in memory: same semantics as the SQLite ledger, no durability.

    Thread-safe: :meth:`settle` runs under one lock.

    Example:
        >>> from dpaudit.mechanisms import GNMax
        >>> led = MemoryLedger(LedgerConfig(GNMax(40.0), (2.0, 8.0), 1e-5), global_budget=5.0)
        >>> key = led.add_client("alice", 2.0)
        >>> client = led.authenticate(key)
        >>> worst, real = led.config.costs(np.array([[200, 30, 20]]), np.array([True]))
        >>> r = led.settle(client, Charge(np.array([0]), worst, real, np.array([True])))
        >>> r.charge_id, r.num_charged, led.account(client.id).rdp.tolist()
        (1, 1, [0.00125, 0.005])
    """

    durable = False

    def __init__(self, config: LedgerConfig, *, global_budget: float) -> None:
        super().__init__(config, global_budget=global_budget)
        self._lock = threading.Lock()
        self._clients: dict[int, Client] = {}
        self._by_hash: dict[bytes, int] = {}
        self._accounts: dict[int, Account] = {GLOBAL_ACCOUNT: Account.zeros(config.num_orders)}
        self._journal: list[tuple[int, int, FloatArray]] = []
        self._cache: dict[bytes, int] = {}
        self._answers: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        self._monitors: dict[str, dict[str, Any]] = {}

    def add_client(self, name: str, epsilon_budget: float, *, api_key: str | None = None) -> str:
        _check_name(name)
        budget = check_positive("epsilon_budget", epsilon_budget)
        key = new_api_key() if api_key is None else api_key
        digest = hash_api_key(key)
        with self._lock:
            if any(c.name == name for c in self._clients.values()):
                raise ValueError(f"a client named {name!r} already exists")
            if digest in self._by_hash:
                raise ValueError("that API key is already registered")
            cid = len(self._clients) + 1
            self._clients[cid] = Client(cid, name, budget, _now_iso())
            self._by_hash[digest] = cid
            self._accounts[cid] = Account.zeros(self.config.num_orders)
        return key

    def revoke(self, name: str) -> None:
        with self._lock:
            for cid, c in self._clients.items():
                if c.name == name:
                    self._clients[cid] = dataclasses.replace(c, revoked=True)
                    return
        raise UnknownClientError(f"no client named {name!r}")

    def clients(self) -> list[Client]:
        with self._lock:
            return list(self._clients.values())

    def authenticate(self, api_key: str) -> Client | None:
        cid = self._by_hash.get(hash_api_key(api_key))
        if cid is None:
            return None
        return self._clients[cid]

    def account(self, client_id: int) -> Account:
        with self._lock:
            try:
                return self._accounts[client_id]
            except KeyError:
                raise UnknownClientError(f"no account {client_id}") from None

    def journal(self) -> list[tuple[int, int, FloatArray]]:
        with self._lock:
            return list(self._journal)

    def settle(self, client: Client, charge: Charge) -> Receipt:
        with self._lock:
            current = self._clients.get(client.id)
            if current is None or current.revoked:
                raise UnknownClientError(f"client {client.name!r} is unknown or revoked")
            s = self._settle(
                charge, current, self._accounts[client.id], self._accounts[GLOBAL_ACCOUNT],
                self._cache,
            )  # fmt: skip
            charge_id = None
            if s.charged.any():
                charge_id = len(self._journal) + 1
                self._journal.append((charge_id, client.id, s.rdp))
                record = charge.answer_record(s.charged, s.labels)
                if record is not None:
                    self._answers.append((charge_id, client.id, *record))
            self._accounts[client.id] = s.client
            self._accounts[GLOBAL_ACCOUNT] = s.total
            self._cache.update(s.new_cache)
        return self._receipt(s, charge_id)

    def answers(self, after: int = 0, *, limit: int | None = None) -> AnswerLog:
        with self._lock:
            rows = [r for r in self._answers if r[0] > after]
        return AnswerLog.concat(rows if limit is None else rows[:limit], after)

    def set_monitor_status(self, name: str, status: dict[str, Any]) -> None:
        with self._lock:
            self._monitors[str(name)] = json.loads(json.dumps(status))

    def monitor_statuses(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in self._monitors.items()}
