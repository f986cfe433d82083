"""Benchmark teacher training (issue 6): teachers/s for a 250-teacher PATE ensemble.

Target: teacher-training throughput (teachers/s) on Fashion-MNIST with 250 teachers (paper 000
App. D.1: 60,000 images → 240 per teacher) with the default estimator
(``LogisticRegression(max_iter=50)``, one BLAS thread per fit), serial and over all cores.
Baseline, same run and same parts: scikit-learn's default ``LogisticRegression()`` fitted in a
plain loop with the BLAS threading left as is (what a straightforward implementation does),
timed on the first 10 parts and extrapolated to 250; and the same defaults with one BLAS
thread, to separate the two causes of the gap. Also reported: the other built-in
estimators on the same 10 parts (time and accuracy), the ensemble's accuracy (teacher mean,
noiseless plurality, GNMax σ = 40), the time to build a neighbouring ensemble with
``with_point`` against a full refit, and the time for the vote histograms of 1,000 queries.

Retraining (issue 14): retrainings per second of the ``"ridge"`` teacher by its exact update
(``with_point``, and the audit's batched driver ``retrain_with_points``) against a cold refit
of the same teacher (``exact_update=False``), same run, same (part, point) pairs; the largest
difference between the updated and the refitted teachers' weights (relative to the largest
weight) and whether their votes on 1,000 test images agree; and the cold refit of the
default logistic teacher for reference.

Falls back to scikit-learn digits (1,347 rows → 250 teachers of ~5 rows would be
meaningless, so 25 teachers) when Fashion-MNIST is not installed; the JSON says which.

Usage: ``python benchmarks/bench_teachers.py [--quick] [--fashion-path DIR]`` (quick: 50
teachers on a 12,000-image subset, same part size). Writes ``benchmarks/results/teachers.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import time
import warnings

import numpy as np

from dpaudit.data import load_dataset
from dpaudit.errors import MissingDatasetError
from dpaudit.systems import (
    GNMax,
    PrivatePredictor,
    TeacherEnsemble,
    make_partition,
    retrain_with_points,
    train_instantiations,
)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def baseline_fit_seconds(ds, parts, queries, *, one_thread: bool) -> tuple[float, float]:
    """Naive loop: sklearn's default LogisticRegression per part (threads as asked)."""
    import contextlib

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    accs = []
    t = time.perf_counter()
    limit = threadpool_limits(limits=1) if one_thread else contextlib.nullcontext()
    with limit:
        for p in parts:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf = LogisticRegression().fit(ds.X_train[p], ds.y_train[p])
            accs.append(float(np.mean(clf.predict(queries) == ds.y_test[: len(queries)])))
    return (time.perf_counter() - t) / len(parts), float(np.mean(accs))


def retraining_rates(ds, m: int, quick: bool) -> dict:
    """Exact update vs cold refit of the ridge teacher on the same (part, point) pairs."""
    queries = ds.X_test[:1000]
    ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=m, estimator="ridge", rng=0)
    k = 20 if quick else 60
    pts = ds.X_test[1000 : 1000 + k]
    labels = (ds.y_test[1000 : 1000 + k] + 1) % ds.num_classes
    tasks = [(int(i % m), pts[i], int(labels[i])) for i in range(k)]
    warm, t_warm = timed(lambda: [ens.with_point(x, y, partition=j) for j, x, y in tasks])
    cold, t_cold = timed(
        lambda: [ens.with_point(x, y, partition=j, exact_update=False) for j, x, y in tasks]
    )
    diff, agree = 0.0, True
    for (j, _, _), a, b in zip(tasks, warm, cold, strict=True):
        ta, tb = a.teachers[j], b.teachers[j]
        diff = max(diff, float(np.abs(ta.coef_ - tb.coef_).max() / np.abs(tb.coef_).max()))
        agree &= bool(np.array_equal(ta.predict(queries), tb.predict(queries)))
    inst = train_instantiations(
        ds.X_train,
        ds.y_train,
        pts,
        partition="random",
        num_teachers=m,
        num_instantiations=1,
        estimator="ridge",
        rng=0,
    )
    r = 50 if quick else 200
    _, t_batch = timed(lambda: retrain_with_points(inst, pts, labels, num_retrainings=r, rng=1))
    logistic = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=m, rng=0)
    sub = tasks[: max(5, k // 4)]
    _, t_log = timed(lambda: [logistic.with_point(x, y, partition=j) for j, x, y in sub])
    return {
        "estimator": "ridge (RidgeTeacher, alpha=10), one BLAS thread",
        "retrainings_measured": k,
        "exact_update_per_s": k / t_warm,
        "cold_refit_per_s": k / t_cold,
        "speedup": t_cold / t_warm,
        "batched_driver_per_s": k * r / t_batch,
        "batched_speedup_vs_cold_refit": (k * r / t_batch) / (k / t_cold),
        "max_relative_weight_difference": diff,
        "votes_identical_on_1000_test_images": agree,
        "logistic_cold_refit_per_s": len(sub) / t_log,
        "note": "with_point one at a time (exact update vs refit of the same teacher), and "
        f"retrain_with_points: {k} points x {r} retrainings, one process",
    }


def main() -> None:
    from _cli import bench_parser

    ap = bench_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="50 teachers on 12,000 images")
    ap.add_argument("--fashion-path", default=None, help="directory of the Fashion-MNIST IDX files")
    args = ap.parse_args()
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    out: dict = {"machine": platform.processor() or platform.machine(), "cpu_count": os.cpu_count()}
    try:
        if quick:
            ds = load_dataset("fashion-mnist", path=args.fashion_path, n_train=12_000, seed=0)
            m = 50
        else:
            ds = load_dataset("fashion-mnist", path=args.fashion_path)
            m = 250
    except MissingDatasetError as exc:
        print(f"Fashion-MNIST not installed ({exc}); falling back to digits")
        ds = load_dataset("digits", seed=0)
        m = 25
    out.update(dataset=ds.name, num_train=ds.num_train, num_teachers=m, quick=quick)
    queries = ds.X_test[:1000]
    labels = ds.y_test[:1000]

    # warm-up: imports and first-call overheads are not teacher training
    TeacherEnsemble.fit(ds.X_train[:500], ds.y_train[:500], num_teachers=2, rng=0)

    serial, t_serial = timed(
        lambda: TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=m, rng=0, n_jobs=1)
    )
    parallel, t_parallel = timed(
        lambda: TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=m, rng=0, n_jobs=-1)
    )
    same = np.array_equal(
        serial.teacher_predictions(queries), parallel.teacher_predictions(queries)
    )
    out["default_estimator"] = {
        "estimator": "LogisticRegression(max_iter=50), 1 BLAS thread per fit",
        "serial_seconds": t_serial,
        "serial_teachers_per_s": m / t_serial,
        "parallel_n_jobs": -1,
        "parallel_seconds": t_parallel,
        "parallel_teachers_per_s": m / t_parallel,
        "parallel_equals_serial": bool(same),
    }

    parts = make_partition(ds.num_train, m, rng=0)[:10]
    base_sec, base_acc = baseline_fit_seconds(ds, parts, queries, one_thread=False)
    one_sec, one_acc = baseline_fit_seconds(ds, parts, queries, one_thread=True)
    out["baseline_one_thread"] = {
        "estimator": "LogisticRegression() defaults (max_iter=100), 1 BLAS thread",
        "measured_teachers": len(parts),
        "seconds_per_teacher": one_sec,
        "teachers_per_s": 1.0 / one_sec,
        "mean_teacher_accuracy": one_acc,
    }
    out["baseline"] = {
        "estimator": "LogisticRegression() defaults (max_iter=100), BLAS threads unmanaged",
        "measured_teachers": len(parts),
        "seconds_per_teacher": base_sec,
        "teachers_per_s": 1.0 / base_sec,
        "extrapolated_seconds_for_all": base_sec * m,
        "mean_teacher_accuracy": base_acc,
    }

    others = {}
    for name in ("logistic", "extra-trees", "random-forest"):
        sub_parts = [np.asarray(p) for p in parts]
        ens, t = timed(
            lambda n=name, sp=sub_parts: TeacherEnsemble.fit(
                ds.X_train, ds.y_train, partition=sp, estimator=n, rng=0
            )
        )
        others[name] = {
            "seconds_per_teacher": t / len(parts),
            "mean_teacher_accuracy": float(ens.teacher_accuracy(queries, labels).mean()),
        }
    out["estimators_on_10_parts"] = others

    acc_teacher = float(serial.teacher_accuracy(queries, labels).mean())
    acc_plural = serial.plurality_accuracy(queries, labels)
    api = PrivatePredictor(serial, GNMax(sigma=40.0))
    acc_gnmax = float(np.mean(api.predict(queries, rng=0) == labels))
    out["accuracy_on_test_queries"] = {
        "num_queries": len(queries),
        "mean_teacher": acc_teacher,
        "plurality": acc_plural,
        "gnmax_sigma40": acc_gnmax,
    }

    x, y_poison = queries[0], int((labels[0] + 1) % ds.num_classes)
    _, t_neighbour = timed(lambda: serial.with_point(x, y_poison, partition=0))
    _, t_votes = timed(lambda: serial.votes(queries))
    out["with_point_seconds"] = t_neighbour
    out["with_point_speedup_vs_refit"] = t_serial / t_neighbour
    out["votes_seconds"] = t_votes

    out["retraining"] = retraining_rates(ds, m, quick)

    path = pathlib.Path(__file__).with_name("results") / "teachers.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    d = out["default_estimator"]
    b = out["baseline"]
    print(f"teacher training: {ds.name}, {m} teachers of ~{ds.num_train // m} rows")
    print(
        f"  default (logistic, max_iter=50): serial {d['serial_teachers_per_s']:.1f} teachers/s "
        f"({t_serial:.1f} s), n_jobs=-1 {d['parallel_teachers_per_s']:.1f} teachers/s "
        f"({t_parallel:.1f} s), identical: {same}"
    )
    print(
        f"  baseline (sklearn defaults, threads unmanaged): {b['teachers_per_s']:.2f} teachers/s "
        f"-> {b['extrapolated_seconds_for_all']:.0f} s for {m} "
        f"({b['extrapolated_seconds_for_all'] / t_serial:.1f}x the serial default)"
    )
    o = out["baseline_one_thread"]
    print(
        f"  sklearn defaults, 1 BLAS thread: {o['teachers_per_s']:.1f} teachers/s, "
        f"teacher accuracy {o['mean_teacher_accuracy']:.3f} "
        f"(baseline {b['mean_teacher_accuracy']:.3f})"
    )
    for name, v in others.items():
        print(
            f"  {name:13s}: {1e3 * v['seconds_per_teacher']:.0f} ms/teacher, "
            f"teacher accuracy {v['mean_teacher_accuracy']:.3f}"
        )
    print(
        f"  accuracy on {len(queries)} test: teacher {acc_teacher:.3f}, "
        f"plurality {acc_plural:.3f}, GNMax σ=40 {acc_gnmax:.3f}"
    )
    print(
        f"  with_point: {1e3 * t_neighbour:.0f} ms ({out['with_point_speedup_vs_refit']:.0f}x "
        f"faster than a refit); votes for {len(queries)} queries: {1e3 * t_votes:.0f} ms"
    )
    rt = out["retraining"]
    print(
        f"  retraining (ridge): exact update {rt['exact_update_per_s']:.0f}/s vs cold refit "
        f"{rt['cold_refit_per_s']:.1f}/s ({rt['speedup']:.0f}x); batched driver "
        f"{rt['batched_driver_per_s']:.0f}/s ({rt['batched_speedup_vs_cold_refit']:.0f}x); "
        f"weights differ by {rt['max_relative_weight_difference']:.1e} (relative), votes "
        f"identical: {rt['votes_identical_on_1000_test_images']}; logistic cold refit "
        f"{rt['logistic_cold_refit_per_s']:.1f}/s"
    )


if __name__ == "__main__":
    main()
