"""The retraining driver behind :func:`dpaudit.systems.retrain_with_points`.

A crafted point's R retrainings each add the point to one teacher of one instantiation and
read that teacher's votes before and after (Chadha et al. 2024, "Auditing Private
Prediction", arXiv:2402.09403, §5.1–5.2: only the receiving teacher changes). This module
turns the (point, retraining) tasks into work without changing any result:

* **distinct work once**: tasks that add the same point (same features, label and evaluated
  rows) to the same teacher are computed once — e.g. CaPC's R retrainings of its chosen
  party when teachers do not depend on their seed — and remembered in a cache that the
  caller keeps across calls (two adversaries crafting the same point share the work);
* **exact updates, batched**: a teacher with an exact update (``updated_scores``, see
  :class:`dpaudit.systems.private_prediction._ridge.RidgeTeacher`) takes all its points in one
  batch of Sherman–Morrison updates; other teachers are refitted
  (:meth:`TeacherEnsemble.with_point`);
* **parallel, deterministic**: teachers are processed in a fixed order, in chunks over
  ``n_jobs`` joblib workers (threads for exact updates, whose work is BLAS; loky processes
  for refits), each with one BLAS/OpenMP thread; every result depends on its task only, so
  the votes are identical whatever ``n_jobs``, the backend or the machine's load.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.errors import require
from dpaudit.systems.private_prediction._ensemble import _one_blas_thread, updatable

__all__ = ["run_retrainings"]


def _digest(*arrays: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.digest()


def _canonical(ensembles: Sequence[Any]) -> list[int]:
    """Index of the first instantiation holding the same ensemble object (shared fits)."""
    first: dict[int, int] = {}
    return [first.setdefault(id(e), g) for g, e in enumerate(ensembles)]


def _exact_group(ens: Any, j: int, items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """All retrainings of teacher j by exact updates, batched by evaluated rows."""
    teacher = ens.teachers[j]
    rows = ens.training_rows(ens.partitions[j])[0]
    out: list[tuple[Any, ...]] = []
    by_eval: dict[bytes | None, list[tuple[Any, ...]]] = {}
    for item in items:
        by_eval.setdefault(item[4], []).append(item)
    for ekey, group in by_eval.items():
        xs = np.stack([it[1] for it in group])
        labels = np.array([it[2] for it in group], dtype=np.int64)
        evals = None if ekey is None else group[0][3]
        classes, scores = teacher.updated_scores(rows, xs, labels, evals)
        after = classes[np.argmax(scores, axis=2)].astype(np.int64)
        before = np.asarray(teacher.predict(xs if evals is None else evals), dtype=np.int64)
        for b, it in enumerate(group):
            out.append((it[0], before[b : b + 1] if evals is None else before, after[b]))
    return out


def _refit_group(ens: Any, j: int, items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """All retrainings of teacher j by refits."""
    out = []
    for key, x, label, evals, ekey in items:
        rows = x[None, :] if ekey is None else evals
        before = np.asarray(ens.teachers[j].predict(rows), dtype=np.int64)
        new = ens.with_point(x, label, partition=j, exact_update=False)
        out.append((key, before, np.asarray(new.teachers[j].predict(rows), dtype=np.int64)))
    return out


def _run_groups(
    ensembles: Sequence[Any], groups: list[tuple[int, int, list]], limit: bool = True
) -> list:
    """Process teacher groups in order (one BLAS thread, set here unless ``limit=False``:
    threads share the process-wide limit, which their caller sets once); returns
    ``(key, before, after)`` per task."""
    out: list[tuple[Any, ...]] = []
    with _one_blas_thread() if limit else contextlib.nullcontext():
        for g, j, items in groups:
            ens = ensembles[g]
            if updatable(ens.teachers[j]):
                out.extend(_exact_group(ens, j, items))
            else:
                out.extend(_refit_group(ens, j, items))
    return out


def _parallel(ensembles: Sequence[Any], groups: list, n_jobs: int, exact: bool) -> list:
    joblib = require("joblib", "ml")
    workers = min(joblib.effective_n_jobs(n_jobs), len(groups))
    if workers <= 1:
        return _run_groups(ensembles, groups)
    # Contiguous chunks balanced by task count; the result order is the groups' order.
    sizes = np.cumsum([len(items) for _, _, items in groups])
    cuts = np.searchsorted(sizes, sizes[-1] * np.arange(1, workers) / workers)
    bounds = [0, *sorted(set(int(c) + 1 for c in cuts)), len(groups)]
    chunks = [groups[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    if exact:  # BLAS-bound work: threads, under one process-wide limit of one BLAS thread
        with _one_blas_thread(), joblib.parallel_config(backend="threading"):
            parts = joblib.Parallel(n_jobs=len(chunks))(
                joblib.delayed(_run_groups)(ensembles, ch, False) for ch in chunks
            )
    else:
        with joblib.parallel_config(backend="loky", inner_max_num_threads=1):
            parts = joblib.Parallel(n_jobs=len(chunks))(
                joblib.delayed(_run_groups)(ensembles, ch) for ch in chunks
            )
    return [item for part in parts for item in part]


def run_retrainings(
    ensembles: Sequence[Any],
    points: np.ndarray,
    labels: np.ndarray,
    evals: Sequence[np.ndarray] | None,
    instantiation: np.ndarray,
    parts: np.ndarray,
    *,
    cache: dict[Any, Any],
    n_jobs: int = 1,
    progress: bool = False,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Before/after votes of every (point, retraining) task (module notes).

    Args:
        ensembles: the N_g fitted ensembles (the same object repeated where instantiations
            share one fit).
        points: ``(P, d)`` crafted points.
        labels: their labels ``(P,)``.
        evals: per point, the rows to read votes on; None: each point on itself.
        instantiation: ``(P, R)`` instantiation of each retraining.
        parts: ``(P, R)`` receiving teacher of each retraining.
        cache: results by task key, read and extended (keep it to share work across calls).
        n_jobs: joblib workers.
        progress: rich progress bar over teachers.

    Returns:
        Per point, ``(before (R, n_eval), after (R, n_eval))``.
    """
    canon = _canonical(ensembles)
    p_count, r_count = instantiation.shape
    ekeys = [None if evals is None else _digest(e) for e in (evals or [None] * p_count)]
    keys = np.empty((p_count, r_count), dtype=object)
    todo: dict[tuple[int, int], dict[Any, tuple[Any, ...]]] = {}
    for p in range(p_count):
        pkey = _digest(points[p], np.array([labels[p]]))
        for r in range(r_count):
            g, j = canon[int(instantiation[p, r])], int(parts[p, r])
            key = (g, j, pkey, ekeys[p])
            keys[p, r] = key
            if key not in cache:
                ev = None if evals is None else evals[p]
                item = (key, points[p], int(labels[p]), ev, ekeys[p])
                todo.setdefault((g, j), {})[key] = item
    groups = [(g, j, list(items.values())) for (g, j), items in sorted(todo.items())]
    if groups:
        exact = all(updatable(ensembles[g].teachers[j]) for g, j, _ in groups)
        if progress:
            groups_iter = _track(groups)
            results = [r for grp in groups_iter for r in _run_groups(ensembles, [grp])]
        elif n_jobs == 1:
            results = _run_groups(ensembles, groups)
        else:
            results = _parallel(ensembles, groups, n_jobs, exact)
        for key, before, after in results:
            cache[key] = (before, after)
    out = []
    for p in range(p_count):
        pairs = [cache[keys[p, r]] for r in range(r_count)]
        out.append((np.stack([b for b, _ in pairs]), np.stack([a for _, a in pairs])))
    return out


def _track(groups: list) -> Any:
    rp = require("rich.progress", "cli")
    return rp.track(groups, description="retraining teachers")
