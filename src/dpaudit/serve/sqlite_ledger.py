"""The durable ledger: clients, accounts, the journal and the answer cache in one SQLite file.

Every request is settled in one ``BEGIN IMMEDIATE`` write transaction (see
:mod:`dpaudit.serve.ledger` for what settling means); the service sends the answers only
after ``COMMIT`` returned. With the write-ahead log (``journal_mode=WAL``) and
``synchronous=FULL`` a commit is on disk when it returns, so after ``kill -9`` (or a power
cut) and a restart the ledger holds every charge whose answers any client received — and at
most the charges of the requests in flight at the crash besides. ``synchronous=NORMAL``
keeps that guarantee against a crash of the process but not of the machine.

Concurrency: writers are serialised by SQLite's write lock (``BEGIN IMMEDIATE`` takes it
before reading the accounts), so requests of many threads, or of several server processes on
one file, can never overspend; a process-local lock keeps this process's threads from
spinning on SQLite's busy handler. Reads (authentication, budgets) use one connection per
thread and never block the writer (WAL).

Stored: ``meta`` (the :class:`~dpaudit.serve.ledger.LedgerConfig` and the global budget),
``clients`` (name, SHA-256 of the API key, budget, revoked), ``accounts`` (RDP as float64
bytes, counts; id 0 is the whole service), ``journal`` (one row per charged request: client,
time, counts, RDP), ``cache`` (query hash → first answer), ``starts`` (one row per server
start: the noise stream of each start is distinct), ``answers`` (per charge, the vote
histograms of its freshly drawn answers and the answers, as float64 / int64 bytes: the
operator's view :mod:`dpaudit.serve.monitor` reads; written in the charge's transaction, so
every released answer is recorded) and ``monitors`` (each monitor's last status, JSON).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._sqlite import SQLiteConnections
from dpaudit._typing import FloatArray
from dpaudit._validate import check_choice, check_positive
from dpaudit.serve.ledger import (
    GLOBAL_ACCOUNT,
    Account,
    AnswerLog,
    Charge,
    Client,
    LedgerBase,
    LedgerConfig,
    Receipt,
    UnknownClientError,
    _check_name,
    _now_iso,
    hash_api_key,
    new_api_key,
)

__all__ = ["KeyStore", "SQLiteLedger"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clients (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    key_hash BLOB NOT NULL UNIQUE,
    epsilon_budget REAL NOT NULL,
    created TEXT NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS accounts (
    client_id INTEGER PRIMARY KEY,
    rdp BLOB NOT NULL,
    num_queries INTEGER NOT NULL,
    num_answered INTEGER NOT NULL,
    num_cached INTEGER NOT NULL,
    num_requests INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id INTEGER NOT NULL,
    created REAL NOT NULL,
    num_queries INTEGER NOT NULL,
    num_answered INTEGER NOT NULL,
    rdp BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS cache (key BLOB PRIMARY KEY, label INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS starts (id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL, pid INT);
CREATE TABLE IF NOT EXISTS answers (
    charge_id INTEGER PRIMARY KEY,
    client_id INTEGER NOT NULL,
    num_classes INTEGER NOT NULL,
    votes BLOB NOT NULL,
    labels BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS monitors (name TEXT PRIMARY KEY, updated REAL, status TEXT NOT NULL);
"""
_FORMAT = "dpaudit.serve.ledger/1"


def _blob(rdp: np.ndarray) -> bytes:
    return np.ascontiguousarray(rdp, dtype="<f8").tobytes()


def _unblob(data: bytes, k: int) -> FloatArray:
    out = np.frombuffer(data, dtype="<f8").astype(np.float64)
    if out.shape != (k,):
        raise ValueError(f"ledger holds an RDP vector of {out.size} orders, expected {k}")
    return out


class KeyStore:
    """The clients table of a ledger file: add, list and revoke API keys.

    Usable before the service first starts (``dpaudit keys add``); the service opens the same
    file as a :class:`SQLiteLedger`.

    Args:
        path: the SQLite file (created if missing).
        synchronous: ``"full"`` (default) or ``"normal"``.

    Example:
        >>> import tempfile, os
        >>> ks = KeyStore(os.path.join(tempfile.mkdtemp(), "ledger.sqlite"))
        >>> key = ks.add_client("alice", 0.5)
        >>> ks.authenticate(key).name, ks.authenticate("dpa_wrong") is None
        ('alice', True)
        >>> ks.close()
    """

    durable = True

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "full") -> None:
        p = Path(path)
        if str(path) == ":memory:":
            raise ValueError("path must be a file (use MemoryLedger for an in-memory ledger)")
        if p.exists() and not p.is_file():
            raise ValueError(f"ledger path {str(p)!r} exists and is not a file")
        p.parent.mkdir(parents=True, exist_ok=True)
        self._path = p
        self._synchronous = check_choice("synchronous", synchronous, ("full", "normal")).upper()
        self._db = SQLiteConnections(p, synchronous=self._synchronous)
        self._write_lock = threading.Lock()
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                fmt = conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
                if fmt is None:
                    conn.execute("INSERT INTO meta VALUES ('format', ?)", (_FORMAT,))
                elif fmt[0] != _FORMAT:
                    raise ValueError(f"{str(p)!r} is a {fmt[0]} file, expected {_FORMAT}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    def _conn(self) -> sqlite3.Connection:
        return self._db.get()

    def _write(self, fn: Any) -> Any:
        """Run ``fn(conn)`` in one immediate write transaction (process lock held)."""
        with self._write_lock:
            return self._db.write(fn)

    # -- clients -------------------------------------------------------------------------------
    def add_client(self, name: str, epsilon_budget: float, *, api_key: str | None = None) -> str:
        """Register a client with its own ε budget; return its API key (shown once).

        Raises:
            ValueError: a bad or taken name, a budget ≤ 0, a key already registered.
        """
        _check_name(name)
        budget = check_positive("epsilon_budget", epsilon_budget)
        key = new_api_key() if api_key is None else api_key
        digest = hash_api_key(key)

        def add(conn: sqlite3.Connection) -> None:
            if conn.execute("SELECT 1 FROM clients WHERE name=?", (name,)).fetchone():
                raise ValueError(f"a client named {name!r} already exists")
            if conn.execute("SELECT 1 FROM clients WHERE key_hash=?", (digest,)).fetchone():
                raise ValueError("that API key is already registered")
            conn.execute(
                "INSERT INTO clients (name, key_hash, epsilon_budget, created) VALUES (?,?,?,?)",
                (name, digest, budget, _now_iso()),
            )

        self._write(add)
        return key

    def revoke(self, name: str) -> None:
        """Revoke a client's key (its account and journal rows are kept).

        Raises:
            UnknownClientError: no such client.
        """

        def rev(conn: sqlite3.Connection) -> None:
            cur = conn.execute("UPDATE clients SET revoked=1 WHERE name=?", (name,))
            if cur.rowcount == 0:
                raise UnknownClientError(f"no client named {name!r}")

        self._write(rev)

    def clients(self) -> list[Client]:
        """Every client, revoked ones included (never the keys)."""
        rows = self._conn().execute(
            "SELECT id, name, epsilon_budget, created, revoked FROM clients ORDER BY id"
        )
        return [Client(int(i), n, float(b), c, bool(r)) for i, n, b, c, r in rows]

    def authenticate(self, api_key: str) -> Client | None:
        """The client whose key this is (None: unknown key; revoked clients are returned
        with ``revoked=True``)."""
        row = (
            self._conn()
            .execute(
                "SELECT id, name, epsilon_budget, created, revoked FROM clients WHERE key_hash=?",
                (hash_api_key(api_key),),
            )
            .fetchone()
        )
        if row is None:
            return None
        i, n, b, c, r = row
        return Client(int(i), n, float(b), c, bool(r))

    def close(self) -> None:
        """Close every connection this object opened."""
        self._db.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SQLiteLedger(KeyStore, LedgerBase):
    """The durable ledger (module notes): :class:`~dpaudit.serve.ledger.LedgerBase` in SQLite.

    Args:
        path: the SQLite file (created if missing; its stored config must match ``config``).
        config: what the ledger accounts for.
        global_budget: the service's ε budget (stored; a later start may change it).
        synchronous: ``"full"`` (default: durable against power loss) or ``"normal"``
            (durable against a crash of the process only).

    Raises:
        ValueError: the file was created for another mechanism, order grid, δ, analysis or
            conversion (its totals would mean something else), or is not a ledger file.

    Example:
        >>> import tempfile, os
        >>> from dpaudit.mechanisms import GNMax
        >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
        >>> cfg = LedgerConfig(GNMax(40.0), (2.0, 8.0), 1e-5)
        >>> led = SQLiteLedger(path, cfg, global_budget=5.0)
        >>> key = led.add_client("alice", 2.0)
        >>> worst, real = cfg.costs(np.array([[200, 30, 20]]), np.array([True]))
        >>> _ = led.settle(led.authenticate(key), Charge(np.array([0]), worst, real, [True]))
        >>> led.close()
        >>> again = SQLiteLedger(path, cfg, global_budget=5.0)  # after a restart
        >>> again.account(0).rdp.tolist(), again.verify().ok
        ([0.00125, 0.005], True)
        >>> again.close()
    """

    durable = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: LedgerConfig,
        *,
        global_budget: float,
        synchronous: str = "full",
    ) -> None:
        LedgerBase.__init__(self, config, global_budget=global_budget)
        KeyStore.__init__(self, path, synchronous=synchronous)
        text = config.to_json()
        k = config.num_orders

        def setup(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT value FROM meta WHERE key='config'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('config', ?)", (text,))
            elif row[0] != text:
                raise ValueError(
                    f"ledger {str(self.path)!r} accounts for {LedgerConfig.from_json(row[0])!r}, "
                    f"not {config!r}: use another ledger file (its totals would mean something "
                    "else)"
                )
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('global_budget', ?)",
                (float(self.global_budget).hex(),),
            )
            conn.execute(
                "INSERT OR IGNORE INTO accounts VALUES (?, ?, 0, 0, 0, 0)",
                (GLOBAL_ACCOUNT, _blob(np.zeros(k))),
            )

        self._write(setup)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, synchronous: str = "full") -> SQLiteLedger:
        """Open an existing ledger file with the config and global budget stored in it
        (inspection, verification after a crash).

        Raises:
            ValueError: no such file, or not a ledger a service has used.
        """
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"no ledger file at {str(p)!r}")
        store = KeyStore(p, synchronous=synchronous)
        try:
            rows = dict(store._conn().execute("SELECT key, value FROM meta"))
        finally:
            store.close()
        if "config" not in rows:
            raise ValueError(f"{str(p)!r} holds keys only: no service has used it yet")
        budget = float.fromhex(rows["global_budget"])
        return cls(p, LedgerConfig.from_json(rows["config"]), global_budget=budget,
                   synchronous=synchronous)  # fmt: skip

    def record_start(self) -> int:
        """Record a server start; return how many starts preceded it (0 for the first)."""

        def start(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO starts (started, pid) VALUES (?, ?)", (time.time(), os.getpid())
            )
            return int(cur.lastrowid) - 1

        return self._write(start)

    def _account(self, conn: sqlite3.Connection, client_id: int) -> Account:
        row = conn.execute(
            "SELECT rdp, num_queries, num_answered, num_cached, num_requests FROM accounts "
            "WHERE client_id=?",
            (client_id,),
        ).fetchone()
        if row is None:
            return Account.zeros(self.config.num_orders)
        rdp, nq, na, nc, nr = row
        return Account(_unblob(rdp, self.config.num_orders), int(nq), int(na), int(nc), int(nr))

    def account(self, client_id: int) -> Account:
        """The account of a client (``GLOBAL_ACCOUNT``: the whole service)."""
        conn = self._conn()
        if (
            client_id != GLOBAL_ACCOUNT
            and not conn.execute("SELECT 1 FROM clients WHERE id=?", (client_id,)).fetchone()
        ):
            raise UnknownClientError(f"no account {client_id}")
        return self._account(conn, client_id)

    def journal(self) -> list[tuple[int, int, FloatArray]]:
        """Every charge as ``(charge_id, client_id, rdp)``, in commit order."""
        k = self.config.num_orders
        rows = self._conn().execute("SELECT id, client_id, rdp FROM journal ORDER BY id")
        return [(int(i), int(c), _unblob(r, k)) for i, c, r in rows]

    def _cached(self, conn: sqlite3.Connection, keys: list[bytes]) -> dict[bytes, int]:
        out: dict[bytes, int] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), 500):
            part = uniq[i : i + 500]
            marks = ",".join("?" * len(part))
            for key, label in conn.execute(
                f"SELECT key, label FROM cache WHERE key IN ({marks})", part
            ):
                out[bytes(key)] = int(label)
        return out

    def settle(self, client: Client, charge: Charge) -> Receipt:
        """Settle a request's answers in one write transaction (module notes).

        Raises:
            BudgetRefused: the worst case exceeds the client's or the global budget.
            UnknownClientError: the client does not exist or was revoked.
        """

        def commit(conn: sqlite3.Connection) -> tuple[Any, int | None]:
            row = conn.execute(
                "SELECT epsilon_budget, revoked FROM clients WHERE id=?", (client.id,)
            ).fetchone()
            if row is None or row[1]:
                raise UnknownClientError(f"client {client.name!r} is unknown or revoked")
            current = Client(client.id, client.name, float(row[0]), client.created)
            cache = {} if charge.keys is None else self._cached(conn, list(charge.keys))
            s = self._settle(
                charge, current, self._account(conn, client.id),
                self._account(conn, GLOBAL_ACCOUNT), cache,
            )  # fmt: skip
            charge_id = None
            if s.charged.any():
                cur = conn.execute(
                    "INSERT INTO journal (client_id, created, num_queries, num_answered, rdp) "
                    "VALUES (?,?,?,?,?)",
                    (client.id, time.time(), int(s.charged.sum()), s.num_answered, _blob(s.rdp)),
                )
                charge_id = int(cur.lastrowid)
                record = charge.answer_record(s.charged, s.labels)
                if record is not None:
                    votes, labels = record
                    conn.execute(
                        "INSERT INTO answers VALUES (?,?,?,?,?)",
                        (charge_id, client.id, votes.shape[1], _blob(votes.ravel()),
                         labels.astype("<i8").tobytes()),
                    )  # fmt: skip
            for cid, acc in ((client.id, s.client), (GLOBAL_ACCOUNT, s.total)):
                conn.execute(
                    "INSERT OR REPLACE INTO accounts VALUES (?,?,?,?,?,?)",
                    (cid, _blob(acc.rdp), acc.num_queries, acc.num_answered, acc.num_cached,
                     acc.num_requests),
                )  # fmt: skip
            if s.new_cache:
                conn.executemany("INSERT OR IGNORE INTO cache VALUES (?,?)", s.new_cache.items())
            return s, charge_id

        s, charge_id = self._write(commit)
        return self._receipt(s, charge_id)

    def answers(self, after: int = 0, *, limit: int | None = None) -> AnswerLog:
        """The recorded answers of the charges after journal row ``after`` (at most ``limit``
        charges), in commit order (a reader never blocks the service: WAL)."""
        sql = "SELECT charge_id, client_id, num_classes, votes, labels FROM answers " \
              "WHERE charge_id > ? ORDER BY charge_id"  # fmt: skip
        args: tuple[int, ...] = (int(after),)
        if limit is not None:
            sql += " LIMIT ?"
            args += (int(limit),)
        rows = []
        for cid, client, c, votes, labels in self._conn().execute(sql, args):
            lab = np.frombuffer(labels, dtype="<i8").astype(np.int64)
            v = np.frombuffer(votes, dtype="<f8").astype(np.float64)
            if v.size != lab.size * int(c):
                raise ValueError(f"ledger answers row {cid} is corrupt ({v.size} votes, "
                                 f"{lab.size} labels, {c} classes)")  # fmt: skip
            rows.append((int(cid), int(client), v.reshape(lab.size, int(c)), lab))
        return AnswerLog.concat(rows, after)

    def set_monitor_status(self, name: str, status: dict[str, Any]) -> None:
        """Store what the monitor ``name`` last concluded (one write transaction)."""
        text = json.dumps(status, sort_keys=True)

        def put(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO monitors VALUES (?,?,?)", (str(name), time.time(), text)
            )

        self._write(put)

    def monitor_statuses(self) -> dict[str, dict[str, Any]]:
        """The last status of every monitor, by name."""
        rows = self._conn().execute("SELECT name, status FROM monitors ORDER BY name")
        return {str(n): json.loads(t) for n, t in rows}
