"""Fixtures of the whole suite.

``make test`` runs the suite in parallel with pytest-xdist (``-n auto --dist worksteal``): one
worker process per core. Each worker loads the session fixtures it needs itself, so tests must
not rely on running in one process; the few that must not run next to each other say so with
``@pytest.mark.xdist_group``.
"""

from __future__ import annotations

import os

import pytest


def _limit_native_threads() -> None:
    """In an xdist worker, give the native thread pools (OpenMP, OpenBLAS, MKL: numpy, scipy,
    torch, onnxruntime) the worker's share of the cores, so that ``-n auto`` workers do not each
    start one thread per core and oversubscribe the machine. A value the user set is kept.

    It must run before numpy or torch is imported: this module is imported before any test
    module, and pytest's own plugins import neither.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers <= 1:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    share = str(max(1, (cores or 1) // workers))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, share)


_limit_native_threads()


@pytest.fixture(autouse=True, scope="session")
def _temporary_run_store(tmp_path_factory):
    """Audit commands record their runs in the run store (dpaudit.store): point it at a
    temporary file so the suite never writes to ~/.local/share/dpaudit."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DPAUDIT_STORE", str(tmp_path_factory.mktemp("store") / "runs.sqlite"))
    yield
    mp.undo()
