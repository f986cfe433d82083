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


#: Test modules that take the most CPU (a per-test census of the suite on 2 workers: these 31
#: modules are ~2/3 of its CPU time), heaviest first. Only the order changes: they start first
#: so that the last tests a worker runs are short ones and the two workers finish together.
HEAVY_MODULES = (
    "dpsgd_bugs/test_dpsgd_bugs.py", "dpsgd/test_whitebox_audit.py", "test_docs_site.py",
    "attacks/test_extraction.py", "prompt_pate/test_votes.py",
    "experiments/test_golden_private_prediction.py", "test_engine.py", "bounds/test_refine.py",
    "lidp_dpsgd/test_lidp_dpsgd_workflow.py", "bounds/test_coverage_lb1.py",
    "federated/test_federated_audit.py", "attacks/test_whitebox.py",
    "mechanisms/test_noisy_argmax.py", "mechanism_audit/test_coverage.py",
    "bounds/test_intervals.py", "experiments/test_lidp_experiment.py",
    "prompt_pate/test_audit.py", "federated/test_user_dpsgd.py", "test_readme.py",
    "experiments/test_golden_vote_leakage_lidp.py", "lidp_dpsgd/test_batched_dpsgd.py",
    "accounting/test_accounting_ledger.py", "group_privacy/test_group_privacy_workflow.py",
    "bounds/test_one_run.py", "lidp_dpsgd/test_lidp_runs_coverage.py",
    "federated/test_acceptance.py", "llm/test_llm_audit.py", "attacks/test_parametric.py",
    "experiments/test_workflow_defaults.py", "serve/test_crash.py", "dpsgd/test_one_run_audit.py",
)  # fmt: skip


def pytest_collection_modifyitems(session, config, items):
    """Run the :data:`HEAVY_MODULES` first, whole modules at a time (their module-scoped
    fixtures are still built once), the rest in collection order. With ``--dist worksteal``
    the first worker starts on the heavy modules and the other steals the short tail."""
    rank = {name: i for i, name in enumerate(HEAVY_MODULES)}
    tests = os.path.join(str(config.rootpath), "tests") + os.sep

    def key(pair):
        index, item = pair
        path = str(item.path)
        module = path[len(tests) :] if path.startswith(tests) else path
        return (rank.get(module.replace(os.sep, "/"), len(rank)), index)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]
