"""Checkpoints of the sampling engine: verified on resume, never mixed (engine, layer 1).

A checkpoint is an ``.npz`` file (no pickles) with ``meta`` (JSON: format, version and the
run's identity — block-function fingerprint, ``key``, ``n``, ``block_size``, number of blocks,
seed entropy and spawn key), ``done`` (finished blocks), ``blocks`` (each finished block's
counts, in block order), ``total`` (their sum) and ``digest`` (SHA-256 over all of it). It is
written atomically (temporary file + ``os.replace``). Resuming needs a readable file of this
format and version, a matching digest, the same identity, and a ``total`` equal to the sum of
its ``blocks``, one per finished block; anything else raises ``ValueError`` and the file is
left as it was. The digest catches damage and edits; it is not a signature, so a file
rewritten consistently on purpose (blocks, sum and digest together) is not detected.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.engine._fingerprint import _Unkeyable, fingerprint

__all__ = ["CHECKPOINT_VERSION"]

#: Version of the checkpoint format written and read by :func:`dpaudit.engine.run_blocks`.
CHECKPOINT_VERSION = 2
_CHECKPOINT_FORMAT = "dpaudit-engine-checkpoint"


def _identity(
    block_fn: object, n: int, block_size: int, root: np.random.SeedSequence, key: str
) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the run, described field by field."""
    try:
        block = fingerprint(block_fn)
    except _Unkeyable:
        block = None
    entropy = root.entropy
    ident = {
        "format": _CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "block_function": block,
        "key": key,
        "n": n,
        "block_size": block_size,
        "num_blocks": -(-n // block_size),
        "seed": str(entropy) if entropy is not None else None,
        "seed_spawn_key": [int(k) for k in root.spawn_key],
    }
    ident["run_key"] = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
    return ident


def _digest(meta: str, done: np.ndarray, blocks: np.ndarray, total: np.ndarray) -> str:
    h = hashlib.sha256(meta.encode())
    for arr in (done, blocks, total):
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


class _Unreadable(ValueError):
    pass


def _read_checkpoint(path: Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray]:
    """``(meta, done, blocks, total)`` of a checkpoint whose format, version and checksum are
    right; anything else raises :class:`_Unreadable`."""
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
            meta_text = str(data["meta"][()])
            meta = json.loads(meta_text)
            if not isinstance(meta, dict) or meta.get("format") != _CHECKPOINT_FORMAT:
                raise _Unreadable("not an engine checkpoint")
            if meta.get("version") != CHECKPOINT_VERSION:
                raise _Unreadable(
                    f"format version {meta.get('version')!r}, this dpaudit reads version "
                    f"{CHECKPOINT_VERSION}"
                )
            done, blocks, total = (np.array(data[k]) for k in ("done", "blocks", "total"))
            stored_digest = str(data["digest"][()])
    except _Unreadable:
        raise
    except Exception as exc:  # zip, npy, JSON or I/O damage of any kind
        raise _Unreadable(f"{type(exc).__name__}: {exc}") from exc
    if stored_digest != _digest(meta_text, done, blocks, total):
        raise _Unreadable("its checksum does not match its content (edited or damaged)")
    return meta, done, blocks, total


def _check_consistent(done: np.ndarray, blocks: np.ndarray, total: np.ndarray, m: int) -> str:
    """Why the arrays of a checkpoint cannot belong together ('' if they can)."""
    if done.dtype != np.bool_ or done.shape != (m,):
        return f"a done mask of dtype {done.dtype} and shape {done.shape}, expected ({m},)"
    if blocks.dtype != np.int64 or total.dtype != np.int64:
        return "counts that are not int64"
    if blocks.ndim < 1 or blocks.shape[0] != int(done.sum()) or blocks.shape[1:] != total.shape:
        return f"{int(done.sum())} finished blocks but block counts of shape {blocks.shape}"
    if not np.array_equal(blocks.sum(axis=0), total):
        return "a total that is not the sum of its finished blocks"
    return ""


class _State:
    """The counts so far; with a checkpoint also each finished block's counts."""

    def __init__(self, path: Path | None, ident: dict[str, Any] | None, num_blocks: int) -> None:
        self.path = path
        self.ident = ident or {}
        self.done = np.zeros(num_blocks, dtype=bool) if path is not None else None
        self.blocks: dict[int, np.ndarray] = {}
        self.total: np.ndarray | None = None
        self.computed = 0
        self.resumed = 0
        if path is not None and path.exists():
            self._resume(path)

    def _resume(self, path: Path) -> None:
        where = f"checkpoint {str(path)!r}"
        try:
            meta, done, blocks, total = _read_checkpoint(path)
        except _Unreadable as exc:
            raise ValueError(
                f"{where} is not a readable engine checkpoint ({exc}); delete it or choose "
                "another checkpoint path"
            ) from None
        diff = sorted(k for k in set(meta) | set(self.ident) if meta.get(k) != self.ident.get(k))
        diff = [k for k in diff if k != "run_key"] or diff
        if diff:
            raise ValueError(
                f"{where} belongs to another run (differs in {', '.join(diff)}); use the same "
                "block function, n, block_size, seed and key to resume, or another path"
            )
        why = _check_consistent(done, blocks, total, self.ident["num_blocks"])
        if why:
            raise ValueError(f"{where} is corrupt: it has {why}")
        self.done = done
        self.blocks = dict(zip(np.flatnonzero(done).tolist(), blocks, strict=True))
        self.total = total if done.any() else None
        self.resumed = int(done.sum())

    def add(self, index: int, counts: np.ndarray) -> None:
        if self.total is None:
            self.total = np.zeros(counts.shape, dtype=np.int64)
        elif counts.shape != self.total.shape:
            raise ValueError(
                f"block_fn returned counts of shape {counts.shape} for block {index}, "
                f"expected {self.total.shape}"
            )
        self.total += counts
        self.computed += 1
        if self.done is not None:
            self.done[index] = True
            self.blocks[index] = counts

    def save(self) -> None:
        if self.path is None or self.total is None or not self.computed:
            return
        meta = json.dumps(self.ident, sort_keys=True)
        blocks = np.stack([self.blocks[b] for b in np.flatnonzero(self.done).tolist()])
        arrays = {
            "meta": np.array(meta),
            "done": self.done,
            "blocks": blocks.astype(np.int64, copy=False),
            "total": self.total,
        }
        arrays["digest"] = np.array(_digest(meta, self.done, arrays["blocks"], self.total))
        _atomic_savez(self.path, arrays)


def _atomic_savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
