"""Thread-local SQLite connections to one WAL file, and immediate write transactions.

The durable stores (the prediction service's ledger, the run store) are written by several
threads and processes at once. Each thread gets its own connection (a connection is not
shared between threads); every connection runs in WAL mode with a 60-second busy timeout, so
readers never block the writer and concurrent writers queue on SQLite's write lock. A write
is one ``BEGIN IMMEDIATE`` … ``COMMIT`` transaction: the write lock is taken before anything
is read, so a check-then-commit inside it is atomic across processes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = ["SQLiteConnections"]

T = TypeVar("T")


class SQLiteConnections:
    """One connection per thread to the SQLite file ``path``.

    Args:
        path: the database file.
        synchronous: ``"FULL"`` (a committed transaction survives power loss) or ``"NORMAL"``.
        foreign_keys: enforce foreign keys.

    Example:
        >>> import tempfile, pathlib
        >>> db = SQLiteConnections(pathlib.Path(tempfile.mkdtemp()) / "x.sqlite")
        >>> db.write(lambda c: c.execute("CREATE TABLE t (x)").rowcount)
        -1
        >>> db.write(lambda c: c.execute("INSERT INTO t VALUES (1)").rowcount)
        1
        >>> db.get().execute("SELECT x FROM t").fetchall()
        [(1,)]
        >>> db.close()
    """

    def __init__(
        self, path: Path, *, synchronous: str = "FULL", foreign_keys: bool = False
    ) -> None:
        self.path = Path(path)
        self._pragmas = [
            "PRAGMA journal_mode=WAL",
            f"PRAGMA synchronous={synchronous}",
            "PRAGMA busy_timeout=60000",
        ]
        if foreign_keys:
            self._pragmas.append("PRAGMA foreign_keys=ON")
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def get(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, autocommit mode)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=60.0
            )
            for pragma in self._pragmas:
                conn.execute(pragma)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in one immediate write transaction (rolled back if it raises)."""
        conn = self.get()
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return out

    def close(self) -> None:
        """Close every connection opened through this object (any thread)."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()
