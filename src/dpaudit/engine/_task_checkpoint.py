"""Checkpoints of the task API: an append-only journal of finished tasks (engine, layer 1).

:func:`dpaudit.engine.run_tasks` runs tasks that take seconds each (a training run) and
return small float arrays; a finished task must never be run again after an interruption,
so every result is written as soon as it arrives. Rewriting a whole file per task would cost
O(n²) for n tasks, so the checkpoint is a *journal*: one header, then one record per
finished task, appended and flushed to the operating system before the next task is handed
out (a killed process loses nothing it finished; after a machine crash the last records may
be missing and are recomputed).

Layout (little-endian):

* header: :data:`_MAGIC`, ``u32`` format version, ``u64`` length of the identity JSON, the
  identity JSON (format, version, task-function fingerprint, ``key``, number of tasks, seed
  entropy and spawn key, ``run_key``), and its SHA-256;
* record: ``u64`` task index, ``u32`` number of dimensions, one ``u64`` per dimension, the
  float64 payload, and SHA-256 over ``run_key`` and the record's bytes.

Reading verifies everything: the magic, version and header checksum; the identity (another
run's file is refused, naming the fields that differ); every record's checksum, index range
and uniqueness. A torn last record — a write cut short, or a final record whose checksum
fails — is dropped and its task recomputed; damage anywhere before the last record raises
``ValueError`` and the file is left as it was. The checksum catches damage and edits; it is
not a signature. An exclusive ``flock`` keeps two processes from appending to one journal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from dpaudit.engine._fingerprint import _Unkeyable, fingerprint

__all__ = ["TASK_CHECKPOINT_VERSION", "TaskCheckpoint", "read_task_checkpoint"]

#: Version of the journal format written and read by :func:`dpaudit.engine.run_tasks`.
TASK_CHECKPOINT_VERSION = 1
_FORMAT = "dpaudit-engine-task-journal"
_MAGIC = b"DPAUDIT-TASKS\n"
_DIGEST = 32


def task_identity(
    fn: object, num_tasks: int, root: np.random.SeedSequence, key: str
) -> dict[str, Any]:
    """What a journal must match to be resumed: the run, described field by field."""
    try:
        task = fingerprint(fn)
    except _Unkeyable:
        task = None
    entropy = root.entropy
    ident = {
        "format": _FORMAT,
        "version": TASK_CHECKPOINT_VERSION,
        "task_function": task,
        "key": key,
        "num_tasks": num_tasks,
        "seed": str(entropy) if entropy is not None else None,
        "seed_spawn_key": [int(k) for k in root.spawn_key],
    }
    ident["run_key"] = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
    return ident


class _Damaged(ValueError):
    pass


class _Torn(Exception):
    """A record that is cut short or whose checksum fails."""


def _header(ident: dict[str, Any]) -> bytes:
    meta = json.dumps(ident, sort_keys=True).encode()
    head = _MAGIC + struct.pack("<IQ", TASK_CHECKPOINT_VERSION, len(meta)) + meta
    return head + hashlib.sha256(meta).digest()


def _record(run_key: str, index: int, result: np.ndarray) -> bytes:
    arr = np.ascontiguousarray(result, dtype="<f8")
    body = struct.pack("<QI", index, arr.ndim) + struct.pack(f"<{arr.ndim}Q", *arr.shape)
    body += arr.tobytes()
    return body + hashlib.sha256(run_key.encode() + body).digest()


def _read_header(fh: BinaryIO) -> dict[str, Any]:
    if fh.read(len(_MAGIC)) != _MAGIC:
        raise _Damaged("not a task journal of the engine")
    fixed = fh.read(12)
    if len(fixed) != 12:
        raise _Damaged("its header is cut short")
    version, length = struct.unpack("<IQ", fixed)
    if version != TASK_CHECKPOINT_VERSION:
        raise _Damaged(
            f"format version {version}, this dpaudit reads version {TASK_CHECKPOINT_VERSION}"
        )
    if length > 1 << 20:
        raise _Damaged("its header is implausibly long")
    meta, digest = fh.read(length), fh.read(_DIGEST)
    if len(meta) != length or hashlib.sha256(meta).digest() != digest:
        raise _Damaged("its header checksum does not match (edited or damaged)")
    try:
        ident = json.loads(meta)
    except ValueError as exc:
        raise _Damaged(f"its header is not JSON ({exc})") from None
    if not isinstance(ident, dict) or ident.get("format") != _FORMAT:
        raise _Damaged("not a task journal of the engine")
    return ident


def _next_record(fh: BinaryIO, run_key: str) -> tuple[int, np.ndarray] | None:
    """The next record; None at a clean end; :class:`_Torn` for a cut or failing record."""
    start = fh.read(12)
    if not start:
        return None
    if len(start) != 12:
        raise _Torn()
    index, ndim = struct.unpack("<QI", start)
    if ndim > 32:
        raise _Torn()
    dims_raw = fh.read(8 * ndim)
    if len(dims_raw) != 8 * ndim:
        raise _Torn()
    shape = struct.unpack(f"<{ndim}Q", dims_raw)
    size = 8 * int(np.prod(shape, dtype=np.int64)) if ndim else 8
    if size > 1 << 31:
        raise _Torn()
    payload, digest = fh.read(size), fh.read(_DIGEST)
    if len(payload) != size or len(digest) != _DIGEST:
        raise _Torn()
    body = start + dims_raw + payload
    if hashlib.sha256(run_key.encode() + body).digest() != digest:
        raise _Torn()
    return int(index), np.frombuffer(payload, dtype="<f8").astype(np.float64).reshape(shape)


@dataclasses.dataclass(frozen=True)
class _Contents:
    ident: dict[str, Any]
    results: dict[int, np.ndarray]
    good_length: int
    dropped_tail: bool


def _read(path: Path) -> _Contents:
    """Header and records; a failing *last* record is reported as a dropped tail."""
    try:
        with open(path, "rb") as fh:
            ident = _read_header(fh)
            run_key = str(ident.get("run_key"))
            num = ident.get("num_tasks")
            results: dict[int, np.ndarray] = {}
            good = fh.tell()
            while True:
                try:
                    rec = _next_record(fh, run_key)
                except _Torn:
                    if fh.read(1):  # more bytes follow: damage, not a torn tail
                        raise _Damaged(
                            f"record {len(results)} is damaged (checksum or length)"
                        ) from None
                    return _Contents(ident, results, good, True)
                if rec is None:
                    return _Contents(ident, results, good, False)
                index, value = rec
                if not isinstance(num, int) or not 0 <= index < num:
                    raise _Damaged(f"a record of task {index}, outside 0..{num}")
                if index in results:
                    raise _Damaged(f"two records of task {index}")
                results[index] = value
                good = fh.tell()
    except _Damaged:
        raise
    except OSError as exc:
        raise _Damaged(f"{type(exc).__name__}: {exc}") from exc


def read_task_checkpoint(path: str | os.PathLike[str]) -> dict[int, np.ndarray]:
    """The finished tasks recorded in a task journal: ``{index: result}`` (verified).

    A torn last record is ignored (its task is not finished). Useful to inspect a running or
    interrupted :func:`dpaudit.engine.run_tasks`; the file is only read.

    Raises:
        ValueError: not a readable journal, or one damaged before its last record.
    """
    try:
        return _read(Path(path)).results
    except _Damaged as exc:
        raise ValueError(
            f"checkpoint {str(path)!r} is not a readable task journal ({exc})"
        ) from None


class TaskCheckpoint:
    """The open journal of one run: finished results so far, and appends new ones.

    Args:
        path: the journal (created if absent).
        ident: :func:`task_identity` of the run.

    Raises:
        ValueError: a file that is not a readable journal, another run's journal, or one in
            use by another process.
    """

    def __init__(self, path: Path, ident: dict[str, Any]) -> None:
        self.path = path
        self.ident = ident
        self.results: dict[int, np.ndarray] = {}
        self.dropped_tail = False
        where = f"checkpoint {str(path)!r}"
        if path.exists():
            good = self._resume(where)
        else:
            _create(path, _header(ident))
            good = None
        self._fh = open(path, "r+b")  # noqa: SIM115 - closed in close()
        try:
            _lock(self._fh, where)
            if good is not None:
                self._fh.truncate(good)  # drop a torn tail before appending
            self._fh.seek(0, os.SEEK_END)
        except BaseException:
            self._fh.close()
            raise

    def _resume(self, where: str) -> int:
        try:
            contents = _read(self.path)
        except _Damaged as exc:
            raise ValueError(
                f"{where} is not a readable task journal ({exc}); delete it or choose another "
                "checkpoint path"
            ) from None
        meta = contents.ident
        diff = sorted(k for k in set(meta) | set(self.ident) if meta.get(k) != self.ident.get(k))
        diff = [k for k in diff if k != "run_key"] or diff
        if diff:
            raise ValueError(
                f"{where} belongs to another run (differs in {', '.join(diff)}); use the same "
                "task function, number of tasks, seed and key to resume, or another path"
            )
        self.results = contents.results
        self.dropped_tail = contents.dropped_tail
        return contents.good_length

    def append(self, index: int, result: np.ndarray) -> None:
        """Record one finished task (written and flushed before returning)."""
        self._fh.write(_record(self.ident["run_key"], index, result))
        self._fh.flush()

    def close(self) -> None:
        """Sync and close the journal (releases the lock)."""
        with contextlib.suppress(OSError):
            os.fsync(self._fh.fileno())
        self._fh.close()


def _lock(fh: BinaryIO, where: str) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise ValueError(f"{where} is in use by another process") from None


def _create(path: Path, header: bytes) -> None:
    """Write the header atomically (temporary file + ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(header)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
