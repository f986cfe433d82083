"""The worker of an out-of-process library, and the message framing both sides share.

This file is run as a script by the Python of a library's own virtual environment
(``.venvs/<name>/bin/python _external_worker.py HANDLER.py``), where dpaudit is not installed:
it imports only the standard library and numpy. dpaudit imports the same file as
``dpaudit.systems._external_worker`` for the framing (:func:`write_message`,
:func:`read_message`), so the two sides cannot drift apart.

A message is a JSON header followed by the raw bytes of the numpy arrays it lists::

    8-byte little-endian length | JSON header {"body": {...}, "arrays": [[name, dtype, shape], ...]}
    then, per listed array: 8-byte length | its C-order bytes

The worker loads the handler script once (its folder last on ``sys.path``, so a handler may
import the helper scripts beside it and none shadows a library module), answers
``{"op": "hello"}`` with the library's version (the handler's ``DISTRIBUTION``), then each
request ``{"op": NAME, ...}`` with the handler's ``op_NAME(body, arrays) -> (body, arrays)``,
until ``{"op": "close"}`` or the end of its input. A handler's exception is answered as
``{"error": traceback}`` and the worker goes on; the worker exits when the process that
started it is gone. The protocol uses a private copy of the original standard output; file
descriptor 1 is pointed at standard error, so whatever the library prints (AIM prints its σ) cannot
corrupt a message.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import sys
import time
import traceback
from typing import Any, BinaryIO

import numpy as np

__all__ = ["read_message", "write_message"]

_LEN = struct.Struct("<Q")


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError(f"stream closed with {left} of {n} bytes unread")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_message(
    stream: BinaryIO, body: dict[str, Any], arrays: dict[str, Any] | None = None
) -> None:
    """Write one message (a JSON-able ``body`` and named numpy ``arrays``) and flush."""
    arrays = {k: np.ascontiguousarray(v) for k, v in (arrays or {}).items()}
    head = json.dumps(
        {"body": body, "arrays": [[k, a.dtype.str, list(a.shape)] for k, a in arrays.items()]}
    ).encode()
    stream.write(_LEN.pack(len(head)) + head)
    for a in arrays.values():
        data = a.tobytes()
        stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


def read_message(stream: BinaryIO) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """Read one message: ``(body, arrays)``, or None at the end of the stream."""
    first = stream.read(_LEN.size)
    if not first:
        return None
    if len(first) < _LEN.size:
        first += _read_exact(stream, _LEN.size - len(first))
    head = json.loads(_read_exact(stream, _LEN.unpack(first)[0]))
    arrays = {}
    for name, dtype, shape in head["arrays"]:
        (n,) = _LEN.unpack(_read_exact(stream, _LEN.size))
        arrays[name] = np.frombuffer(_read_exact(stream, n), dtype=dtype).reshape(shape).copy()
    return head["body"], arrays


def _version(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _exit_with_parent() -> None:
    """End this process when the one that started it is gone (an interrupted audit must not
    leave a worker fitting generators for nobody): a daemon thread polls the parent's id."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main(handler_path: str) -> int:
    """Serve requests on stdin/stdout with the handler script at ``handler_path``."""
    _exit_with_parent()
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints of the library (and of C code) go to stderr
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    sys.path.append(os.path.dirname(os.path.abspath(handler_path)))  # after the library's own
    spec = importlib.util.spec_from_file_location("_dpaudit_handler", handler_path)
    handler = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(handler)
    while True:
        msg = read_message(proto_in)
        if msg is None:
            return 0
        body, arrays = msg
        op = body.get("op")
        if op == "close":
            write_message(proto_out, {"closed": True})
            return 0
        try:
            if op == "hello":
                out = {"version": _version(handler.DISTRIBUTION), "python": sys.version.split()[0],
                       "numpy": np.__version__, "pid": os.getpid()}  # fmt: skip
                out_arrays: dict[str, Any] = {}
            else:
                fn = getattr(handler, f"op_{op}", None)
                if fn is None:
                    raise ValueError(f"the handler has no operation {op!r}")
                out, out_arrays = fn(body, arrays)
            write_message(proto_out, out, out_arrays)
        except Exception:
            write_message(proto_out, {"error": traceback.format_exc()})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
