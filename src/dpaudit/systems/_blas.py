"""BLAS/OpenMP thread pools limited to one thread around small fits (threadpoolctl, which
ships with scikit-learn).

Parallelism in dpaudit is over tasks (teachers, clients, runs); a small fit that also starts
one BLAS thread per core oversubscribes a busy machine and slows down by an order of magnitude
(benchmarks/bench_teachers.py), and no number may depend on how a library splits a sum over
threads.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any

__all__ = ["one_blas_thread"]

_LOCK = threading.Lock()
#: ``(len(sys.modules) when built, ThreadpoolController)``: see :func:`one_blas_thread`.
_CONTROLLER: list[tuple[int, Any]] = []


def one_blas_thread(user_api: str | None = None) -> contextlib.AbstractContextManager[Any]:
    """A context in which the loaded BLAS/OpenMP libraries use one thread; the previous limits
    are restored on exit (``threadpoolctl.threadpool_limits(limits=1)``). ``user_api="blas"``
    limits the BLAS libraries only (PyTorch's OpenMP pool keeps its threads).

    ``threadpool_limits`` lists the process's native libraries on every call (about 1 ms with
    PyTorch loaded; 1 % of the test suite's CPU time). The list is kept here and listed again
    only when a module has been imported since: a new BLAS or OpenMP library is loaded by
    importing the extension that links it. Without threadpoolctl nothing changes.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    key = len(sys.modules)
    with _LOCK:
        if not _CONTROLLER or _CONTROLLER[0][0] != key:
            _CONTROLLER[:] = [(key, ThreadpoolController())]
        controller = _CONTROLLER[0][1]
    return controller.limit(limits=1, user_api=user_api)
