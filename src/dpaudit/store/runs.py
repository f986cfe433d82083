"""The run store: every audit's result, settings, seed, versions, timings and artefacts.

One SQLite file (standard library ``sqlite3``, write-ahead log) holds one row per run. A run
is recorded in two steps — :meth:`RunStore.start` when it begins (status ``running``, with the
process id) and :meth:`RunStore.finish` (the :class:`~dpaudit.AuditResult`, timings,
artefacts) or :meth:`RunStore.fail` when it ends — each one atomic write transaction, so a
crash at any point leaves either the old or the new row, never half of one. A ``running`` row
whose process is gone (same host, the process id no longer alive or reused) is reported as
``interrupted``; such a run can be resumed (:meth:`RunStore.resume`: the same run id, its
stored settings and output directory, so the sampling engine's checkpoints are reused).

Writers of several processes may record at once (SQLite's write lock, a 60-s busy timeout).

The default file is ``$DPAUDIT_STORE``, else ``$XDG_DATA_HOME/dpaudit/runs.sqlite``
(``~/.local/share/dpaudit/runs.sqlite``); ``DPAUDIT_STORE=off`` switches recording off.

Example:
    >>> import tempfile, os
    >>> store = RunStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
    >>> run = store.start("demo-workflow", {"seed": 3, "sigma": 2.0}, seed=3)
    >>> store.finish(run, {"workflow": "demo-workflow", "entries": []})
    >>> rec = store.get(run)
    >>> rec.status, rec.seed, rec.settings["sigma"]
    ('finished', 3, 2.0)
    >>> store.close()
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit._results import ResultMixin, package_versions, to_jsonable
from dpaudit._sqlite import SQLiteConnections
from dpaudit.errors import DPAuditError

__all__ = [
    "STATUSES",
    "STORE_ENV",
    "Artefact",
    "RunHandle",
    "RunNotFoundError",
    "RunRecord",
    "RunStore",
    "default_store_path",
]

#: Environment variable naming the store file (``off``: no recording).
STORE_ENV = "DPAUDIT_STORE"
#: Statuses of a run.
STATUSES: tuple[str, ...] = ("running", "finished", "failed", "interrupted")
_FORMAT = "dpaudit.store/1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    name TEXT,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    seed INTEGER,
    command TEXT,
    resume_command TEXT,
    settings TEXT NOT NULL,
    settings_type TEXT,
    out_dir TEXT,
    result TEXT,
    versions TEXT,
    timings TEXT,
    error TEXT,
    host TEXT,
    pid INTEGER,
    pid_token TEXT,
    attempts INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS artefacts (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (run_id, path)
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created)
"""


class RunNotFoundError(DPAuditError, KeyError):
    """No run matches the reference (or more than one does)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such run"


def default_store_path() -> Path | None:
    """The default store file (module notes), or None when ``DPAUDIT_STORE=off``."""
    env = os.environ.get(STORE_ENV)
    if env is not None and env.strip():
        return None if env.strip().lower() in ("off", "none", "0", "false") else Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "dpaudit" / "runs.sqlite"


def _process_token(pid: int) -> str | None:
    """Start time of a process (Linux ``/proc``): tells a live process from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int | None, token: str | None) -> bool:
    if pid is None:
        return False
    if token is not None and Path("/proc").is_dir():
        return _process_token(pid) == token
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process
        return True
    return True


def _iso(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _plain(value: Any) -> Any:
    """Settings (a settings dataclass, a mapping …) as JSON-ready plain data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        from dpaudit import _settings

        with contextlib.suppress(TypeError, ValueError):
            return to_jsonable(_settings.to_mapping_full(value))
    return to_jsonable(value)


def _qualname(value: Any) -> str | None:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__module__}.{type(value).__qualname__}"
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class Artefact(ResultMixin):
    """A file a run wrote.

    Attributes:
        kind: what it is (``"json"``, ``"png"``, ``"html"`` … by default the suffix).
        path: its absolute path when recorded.
        size: bytes.
        sha256: hex digest of the content.
    """

    kind: str
    path: str
    size: int
    sha256: str


@dataclasses.dataclass(frozen=True)
class RunRecord(ResultMixin):
    """One recorded run.

    Attributes:
        id: the run id (``YYYYMMDD-HHMMSS-xxxxxx``).
        workflow: the audit workflow (``"private-prediction"`` …).
        name: the run's name (settings ``name``), if any.
        status: ``running``, ``finished``, ``failed`` or ``interrupted``.
        created: start time (UTC, ISO 8601).
        finished: end time, if it ended.
        wall_seconds: end − start, if it ended.
        seed: the root seed.
        command: the command line that ran it.
        resume_command: the command that resumes it (``… --resume ID``), if any.
        settings: the settings as plain data.
        settings_type: the settings class (``module.Class``), if a settings dataclass.
        out_dir: where its files went.
        result: the :class:`~dpaudit.AuditResult` as plain data (``to_dict()``), if finished.
        versions: package versions.
        timings: wall seconds per stage (the result's, plus ``"total"``).
        error: why it failed.
        host: the machine it ran on.
        pid: its process id.
        attempts: 1 + the number of resumes.
        artefacts: the files it wrote.
    """

    id: str
    workflow: str
    name: str | None
    status: str
    created: str
    finished: str | None
    wall_seconds: float | None
    seed: int | None
    command: str | None
    resume_command: str | None
    settings: Any
    settings_type: str | None
    out_dir: str | None
    result: Any
    versions: Any
    timings: Any
    error: str | None
    host: str | None
    pid: int | None
    attempts: int
    artefacts: tuple[Artefact, ...] = ()

    @property
    def resumable(self) -> bool:
        """Interrupted or failed, with a command that resumes it."""
        return self.status in ("interrupted", "failed") and bool(self.resume_command)


_COLUMNS = (
    "id, workflow, name, status, created, finished, seed, command, resume_command, settings, "
    "settings_type, out_dir, result, versions, timings, error, host, pid, pid_token, attempts"
)


class RunHandle:
    """A run being recorded (from :meth:`RunStore.record`): call :meth:`finish` with its
    result; leaving the ``with`` block on an exception marks it failed (interrupted on
    Ctrl-C)."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.id = run_id
        self.done = False

    def finish(self, result: Any, *, artefacts: Any = (), out_dir: Any = None) -> None:
        """Record the result (and the files written), see :meth:`RunStore.finish`."""
        self.store.finish(self.id, result, artefacts=artefacts, out_dir=out_dir)
        self.done = True


class RunStore:
    """The run store in one SQLite file (module notes).

    Args:
        path: the SQLite file (created with its parent directories if missing).

    Raises:
        ValueError: the path is a directory, or a file of another format.
        sqlite3.Error: the file is not a SQLite database.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path).expanduser()
        if p.is_dir():
            raise ValueError(f"store must be a file, but {str(p)!r} is a directory")
        p.parent.mkdir(parents=True, exist_ok=True)
        self._path = p
        self._db = SQLiteConnections(p, foreign_keys=True)

        def setup(conn: sqlite3.Connection) -> None:
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            row = conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('format', ?)", (_FORMAT,))
            elif row[0] != _FORMAT:
                raise ValueError(f"{str(p)!r} is a {row[0]} file, not a {_FORMAT} run store")

        self._write(setup)

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    def _conn(self) -> sqlite3.Connection:
        return self._db.get()

    def _write(self, fn: Any) -> Any:
        return self._db.write(fn)

    def close(self) -> None:
        """Close every connection this object opened."""
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------- writing
    def start(
        self,
        workflow: str,
        settings: Any,
        *,
        seed: int | None = None,
        name: str | None = None,
        command: Sequence[str] | str | None = None,
        resume_command: str | None = None,
        out_dir: str | os.PathLike[str] | None = None,
    ) -> str:
        """Record that a run begins (status ``running``); return its id.

        Args:
            workflow: the workflow's name.
            settings: its validated settings (a settings dataclass or plain data).
            seed: the root seed (default: ``settings.seed`` where there is one).
            name: a run name (default: ``settings.name`` where there is one).
            command: the command line (for ``runs show``).
            resume_command: the command that resumes it; ``--resume ID`` is appended.
            out_dir: where its files go.
        """
        run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
        if seed is None:
            seed = getattr(settings, "seed", None)
        if name is None:
            name = getattr(settings, "name", None)
        cmd = command if command is None or isinstance(command, str) else " ".join(command)
        pid = os.getpid()
        row = (
            run_id, str(workflow), None if name is None else str(name), "running", time.time(),
            None if seed is None else int(seed), cmd, resume_command,
            json.dumps(_plain(settings), allow_nan=False), _qualname(settings),
            None if out_dir is None else str(Path(out_dir).resolve()),
            json.dumps(package_versions()), socket.gethostname(), pid, _process_token(pid),
        )  # fmt: skip
        self._write(
            lambda conn: conn.execute(
                "INSERT INTO runs (id, workflow, name, status, created, seed, command, "
                "resume_command, settings, settings_type, out_dir, versions, host, pid, "
                "pid_token) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                row,
            )
        )
        return run_id

    def finish(
        self,
        ref: str,
        result: Any,
        *,
        artefacts: Any = (),
        out_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Record a run's result, timings, versions and artefacts (status ``finished``).

        Args:
            ref: the run id (or a unique prefix).
            result: the :class:`~dpaudit.AuditResult` (or its ``to_dict()``).
            artefacts: files written: paths, or a mapping kind → path.
            out_dir: also record every file under this directory (``checkpoints/`` left out).
        """
        run = self.get(ref, with_result=False)
        data = result.to_dict() if hasattr(result, "to_dict") else to_jsonable(result)
        now = time.time()
        created = self._created(run.id)
        timings = dict(data.get("timings") or {}) if isinstance(data, Mapping) else {}
        timings["total"] = now - created
        versions = data.get("versions") if isinstance(data, Mapping) else None
        files = self._artefacts(artefacts, out_dir)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE runs SET status='finished', finished=?, result=?, timings=?, "
                "versions=COALESCE(?, versions), workflow=COALESCE(?, workflow), error=NULL "
                "WHERE id=?",
                (
                    now, json.dumps(data, allow_nan=False), json.dumps(to_jsonable(timings)),
                    json.dumps(versions) if versions else None,
                    data.get("workflow") if isinstance(data, Mapping) else None, run.id,
                ),
            )  # fmt: skip
            conn.executemany(
                "INSERT OR REPLACE INTO artefacts VALUES (?,?,?,?,?)",
                [(run.id, a.kind, a.path, a.size, a.sha256) for a in files],
            )

        self._write(write)

    def fail(
        self, ref: str, error: str, *, interrupted: bool = False, resumable: bool = True
    ) -> None:
        """Record that a run ended without a result (``failed``, or ``interrupted``).

        ``resumable=False`` (a run that failed before any work, on a missing dependency or
        dataset or a refused setting: resuming it would fail the same way) drops its resume
        command, so it is listed without a ``--resume`` hint.
        """
        run = self.get(ref, with_result=False)
        status = "interrupted" if interrupted else "failed"
        if resumable:
            sql = "UPDATE runs SET status=?, finished=?, error=? WHERE id=?"
        else:
            sql = "UPDATE runs SET status=?, finished=?, error=?, resume_command=NULL WHERE id=?"
        values = (status, time.time(), str(error)[:4000], run.id)
        self._write(lambda conn: conn.execute(sql, values))

    def resume(self, ref: str) -> RunRecord:
        """Mark an interrupted or failed run as running again (same id) and return it.

        Raises:
            RunNotFoundError: no such run.
            ValueError: the run is running or finished.
        """
        run = self.get(ref, with_result=False)
        if run.status not in ("interrupted", "failed"):
            raise ValueError(
                f"run {run.id} is {run.status}; only interrupted or failed runs resume"
            )
        pid = os.getpid()
        self._write(
            lambda conn: conn.execute(
                "UPDATE runs SET status='running', finished=NULL, error=NULL, host=?, pid=?, "
                "pid_token=?, attempts=attempts+1 WHERE id=?",
                (socket.gethostname(), pid, _process_token(pid), run.id),
            )
        )
        return self.get(run.id, with_result=False)

    @contextlib.contextmanager
    def record(self, workflow: str, settings: Any, **kwargs: Any) -> Iterator[RunHandle]:
        """Record a run around a block: ``with store.record(...) as run: run.finish(result)``.

        An exception marks the run failed (Ctrl-C: interrupted) and propagates; leaving the
        block without :meth:`RunHandle.finish` marks it failed.
        """
        handle = RunHandle(self, self.start(workflow, settings, **kwargs))
        try:
            yield handle
        except KeyboardInterrupt:
            self.fail(handle.id, "interrupted (KeyboardInterrupt)", interrupted=True)
            raise
        except BaseException as exc:
            self.fail(handle.id, f"{type(exc).__name__}: {exc}")
            raise
        if not handle.done:
            self.fail(handle.id, "the run ended without a result")

    def remove(self, ref: str) -> str:
        """Delete a run (and its artefact records; the files stay). Returns its id."""
        run = self.get(ref, with_result=False)
        self._write(lambda conn: conn.execute("DELETE FROM runs WHERE id=?", (run.id,)))
        return run.id

    # ----------------------------------------------------------------------------- reading
    def _created(self, run_id: str) -> float:
        return float(
            self._conn().execute("SELECT created FROM runs WHERE id=?", (run_id,)).fetchone()[0]
        )

    @staticmethod
    def _artefacts(artefacts: Any, out_dir: Any) -> list[Artefact]:
        paths: list[tuple[str, Path]] = []
        items = (
            artefacts.items() if isinstance(artefacts, Mapping) else [(None, a) for a in artefacts]
        )
        for kind, p in items:
            paths.append((kind, Path(p)))
        if out_dir is not None and Path(out_dir).is_dir():
            root = Path(out_dir)
            for p in sorted(root.rglob("*")):
                if p.is_file() and "checkpoints" not in p.relative_to(root).parts[:1]:
                    paths.append((None, p))
        out: dict[str, Artefact] = {}
        for kind, p in paths:
            if not p.is_file():
                continue
            full = str(p.resolve())
            k = kind or (p.suffix.lstrip(".") or "file")
            out[full] = Artefact(k, full, p.stat().st_size, _sha256(p))
        return list(out.values())

    def _record(self, row: tuple, artefacts: list[Artefact], with_result: bool) -> RunRecord:
        (rid, workflow, name, status, created, finished, seed, command, resume, settings,
         settings_type, out_dir, result, versions, timings, error, host, pid, token,
         attempts) = row  # fmt: skip
        if status == "running" and host == socket.gethostname() and not _alive(pid, token):
            status = "interrupted"
        return RunRecord(
            id=rid,
            workflow=workflow,
            name=name,
            status=status,
            created=_iso(created),
            finished=_iso(finished),
            wall_seconds=None if finished is None else float(finished) - float(created),
            seed=seed,
            command=command,
            resume_command=None if not resume else f"{resume} --resume {rid}",
            settings=json.loads(settings),
            settings_type=settings_type,
            out_dir=out_dir,
            result=json.loads(result) if (with_result and result) else None,
            versions=json.loads(versions) if versions else {},
            timings=json.loads(timings) if timings else {},
            error=error,
            host=host,
            pid=pid,
            attempts=int(attempts),
            artefacts=tuple(artefacts),
        )

    def _resolve(self, conn: sqlite3.Connection, ref: str) -> str:
        if not isinstance(ref, str) or not ref.strip():
            raise RunNotFoundError(f"a run id must be a non-empty string, got {ref!r}")
        ref = ref.strip()
        if conn.execute("SELECT 1 FROM runs WHERE id=?", (ref,)).fetchone():
            return ref
        like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        for pattern in (f"{like}%", f"%{like}"):
            rows = conn.execute(
                "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (pattern,)
            ).fetchall()
            if len(rows) == 1:
                return rows[0][0]
            if len(rows) > 1:
                raise RunNotFoundError(f"run reference {ref!r} is ambiguous")
        raise RunNotFoundError(f"no run {ref!r} in {str(self._path)!r}")

    def get(self, ref: str, *, with_result: bool = True) -> RunRecord:
        """A run by id, unique id prefix, or unique suffix (the random part).

        Raises:
            RunNotFoundError: none, or several, match.
        """
        conn = self._conn()
        rid = self._resolve(conn, ref)
        row = conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id=?", (rid,)).fetchone()
        arts = [
            Artefact(k, p, int(s), h)
            for k, p, s, h in conn.execute(
                "SELECT kind, path, size, sha256 FROM artefacts WHERE run_id=? ORDER BY path",
                (rid,),
            )
        ]
        return self._record(row, arts, with_result)

    def list(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        """Runs, newest first (without their results; :meth:`get` one for it).

        Args:
            status: only runs of this status (``interrupted`` included, as computed).
            workflow: only runs of this workflow.
            limit: at most this many.
        """
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        query = f"SELECT {_COLUMNS} FROM runs"
        args: list[Any] = []
        if workflow is not None:
            query += " WHERE workflow=?"
            args.append(workflow)
        query += " ORDER BY created DESC, id DESC"
        out = [self._record(r, [], False) for r in self._conn().execute(query, args)]
        if status is not None:
            out = [r for r in out if r.status == status]
        return out if limit is None else out[: max(int(limit), 0)]
