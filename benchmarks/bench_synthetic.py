"""Benchmark: DP synthetic-data generators run out of process (issue 46).

Targets (issue 46): 1,000 smartnoise MST runs on a worst-case dataset in at most 15 minutes on
2 cores; dpmm's per-run time beside it; the out-of-process overhead at most 10 % of a run's
time, measured in the same benchmark against a run inside the worker.

1. smartnoise-synth 1.0.8 MST at (ε, δ) = (1, 10⁻²) on the tree-flip worst-case pair (1,000
   rows, 3 binary columns), ``--runs`` runs in one worker process, alternating D ∪ {t} and D:
   full fits with a synthetic table of 1,001 rows (as a user runs it), and the white-box runs
   of the audit (stopped after the last noisy measurement: what follows is post-processing).
   The projection for 1,000 runs on 2 cores assumes two worker processes (one per core) and
   the measured per-run time; nothing in the library is set below its defaults.
2. dpmm 0.1.9 MST, the same pair and budget, defaults (10,000 inference iterations): per run.
3. Overhead: the batch's wall time in dpaudit's process (worker start-up, JSON and NumPy over
   the pipes) minus the fits' own time inside the worker, per run, against a run's time.

``--measure N`` times the target itself instead of projecting it: N smartnoise MST full fits
(alternating D ∪ {t} and D, synthetic tables of 1,001 rows) on two worker processes started
for the purpose, N/2 each, from before the workers start to the last result back — wall
seconds of the whole, the workers' start-up, imports and first (compiling) fit included; the
other rows are kept as recorded.

The machine may be shared (the load average at the start is recorded): the figures are wall
times. Run: ``python benchmarks/bench_synthetic.py [--quick] [--runs N]`` →
``benchmarks/results/synthetic.json``.

``--privbayes`` measures DataSynthesizer 0.1.13's PrivBayes instead (in dpaudit's own
environment, the extra ``datasynthesizer``; CPU seconds of this process, which runs them):

4. the cost of the library's process pool: its network search opens a
   ``multiprocessing.Pool()`` (one process per core, not a user setting) at every step; the
   same runs with the pool replaced by a thread pool (the handler's default, ``pool =
   "threads"``: same tasks, same results) — CPU seconds of the process and its children, and
   wall seconds, per run, on the binary-flip pair (3 columns × 1,000 rows, degree 1);
5. the two violations and the planted bug at ε = 1 as audits over ``--seeds`` seeds: the
   reproducer (as installed) and its control (the fix) on the pair that exploits each
   violation, and the planted bug beside the as-installed generator →
   ``docs/results/synthetic-data/privbayes-*.json`` (the tables of the docs page).
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from _cli import bench_parser, parse, quick
from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import GeneratorCell, SyntheticGenerator

#: The PrivBayes audits recorded for the docs: (file, reproducer, control, settings).
PRIVBAYES_AUDITS = {
    "support": ("datasynthesizer-privbayes", "datasynthesizer-privbayes-public-support",
                {"dataset": "unique-record", "columns": 2, "rows": 4,
                 "threat_models": ("white-box-domain", "black-box-unseen"), "runs": 30,
                 "pilot_runs": 10}),
    "sensitivity": ("datasynthesizer-privbayes", "datasynthesizer-privbayes-public-sensitivity",
                    {"dataset": "binary-flip", "columns": 3, "rows": 1000,
                     "threat_models": ("white-box-network",), "runs": 60, "pilot_runs": 20}),
    "quiet-noise": ("datasynthesizer-privbayes-quiet-noise", "datasynthesizer-privbayes",
                    {"dataset": "tree-flip", "columns": 3, "rows": 4,
                     "threat_models": ("white-box-laplace",), "runs": 60, "pilot_runs": 20}),
}  # fmt: skip


def _batch(generator: str, runs: int, observe: tuple[str, ...]) -> dict:
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=1000)
    g = SyntheticGenerator(GeneratorCell(generator, 1.0, 1e-2))
    which = [i % 2 for i in range(runs + 1)]
    seeds = list(range(runs + 1))
    rows = len(pair.D) + 1 if "synthetic" in observe else 0
    with g.library.start() as w:
        startup = w.startup_seconds
        r0 = g.fit_runs(
            [pair.D, pair.D_prime],
            which[:1],
            seeds[:1],
            domain=pair.domain,
            observe=observe,
            sample_rows=rows,
            worker=w,
        )  # warm-up: imports, jit
        r = g.fit_runs([pair.D, pair.D_prime], which[1:], seeds[1:], domain=pair.domain,
                       observe=observe, sample_rows=rows, worker=w)  # fmt: skip
        version = w.version
    inside = [x["seconds"] for x in r.runs]
    per_run = sum(inside) / runs
    overhead = (r.wall_seconds - sum(inside)) / runs
    fixed = startup + r0.wall_seconds - per_run  # per worker: start, imports, compilation
    return {
        "generator": generator, "version": version, "observe": list(observe), "runs": runs,
        "seconds_per_run_in_worker": per_run, "wall_seconds": r.wall_seconds,
        "overhead_seconds_per_run": overhead, "overhead_fraction": overhead / per_run,
        "worker_startup_seconds": startup, "worker_fixed_seconds": fixed,
        "fixed_fraction_per_group_of_100_runs": fixed / (100 * per_run),
        "runs_per_minute_one_core": 60.0 / (per_run + overhead),
        "projected_minutes_1000_runs_two_cores": 1000 * (per_run + overhead) / 2 / 60
        + fixed / 60,
    }  # fmt: skip


def _measure(runs: int) -> dict:
    """``--measure``: ``runs`` full smartnoise MST fits on two fresh worker processes, half
    each, timed from before the workers start to the last result (module docstring)."""
    from concurrent.futures import ThreadPoolExecutor

    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=1000)
    g = SyntheticGenerator(GeneratorCell("smartnoise-mst", 1.0, 1e-2))
    halves = [list(range(k, runs, 2)) for k in (0, 1)]

    def one_worker(seeds: list[int]):
        r = g.fit_runs(
            [pair.D, pair.D_prime],
            [s % 2 for s in seeds],
            seeds,
            domain=pair.domain,
            observe=("synthetic",),
            sample_rows=len(pair.D) + 1,
        )
        return r.wall_seconds, sum(x["seconds"] for x in r.runs)  # fmt: skip

    load, c0, t0 = os.getloadavg()[0], _cpu(), time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(one_worker, halves))
    wall = time.perf_counter() - t0
    return {
        "generator": "smartnoise-mst", "runs": runs, "workers": 2, "wall_seconds": wall,
        "minutes": wall / 60, "cpu_seconds": _cpu() - c0, "load_average_at_start": load,
        "workers_wall_seconds": [p[0] for p in parts],
        "fits_seconds_in_workers": [p[1] for p in parts],
        "seconds_per_run_in_worker": sum(p[1] for p in parts) / runs,
        "target_minutes_1000_runs": 15.0,
    }  # fmt: skip


def _cpu() -> float:
    import resource

    t = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        t += r.ru_utime + r.ru_stime
    return t


def _privbayes_pool(runs: int) -> dict:
    """Per run: CPU (process and children) and wall seconds with the library's process pool
    and with the thread pool, on binary-flip (3 × 1,000, degree 1)."""
    pair = WORST_CASE_DATASETS.get("binary-flip")(rows=1000)
    out = {}
    for pool in ("processes", "threads"):
        cell = GeneratorCell("datasynthesizer-privbayes", 1.0, 1e-2, options=(("pool", pool),))
        g = SYSTEMS.get(cell.generator)(cell)
        g.fit_runs([pair.D], [0], [0], domain=pair.domain)  # warm-up: imports
        c0, t0 = _cpu(), time.perf_counter()
        r = g.fit_runs([pair.D, pair.D_prime], [i % 2 for i in range(runs)], list(range(runs)),
                       domain=pair.domain, observe=("synthetic",), sample_rows=1001)  # fmt: skip
        out[pool] = {"cpu_seconds_per_run": (_cpu() - c0) / runs,
                     "wall_seconds_per_run": (time.perf_counter() - t0) / runs,
                     "networks": [x["network"] for x in r.runs]}  # fmt: skip
    out["same_networks"] = out["processes"].pop("networks") == out["threads"].pop("networks")
    return out


def _privbayes_audits(seeds: int, which: tuple[str, ...], write: bool) -> dict:
    from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data

    docs = Path(__file__).resolve().parents[1] / "docs" / "results" / "synthetic-data"
    out = {}
    for name in which:
        reproducer, control, kw = PRIVBAYES_AUDITS[name]
        rows = []
        for seed in range(seeds):
            for g in (reproducer, control):
                c0 = _cpu()
                s = SyntheticDataSettings(generators=(g,), epsilon=1.0, delta=1e-2, seed=seed,
                                          group_size=50, **kw)  # fmt: skip
                res = audit_synthetic_data(s)
                cpu = _cpu() - c0
                for e in res.entries:
                    d = e.detail
                    rows.append({"generator": g, "threat_model": d.threat_model, "seed": seed,
                                 "epsilon_lower": e.lower_bound.epsilon,
                                 "refutes": e.gap.refutes_claim, "tp": d.tp, "fp": d.fp,
                                 "mu_lower": d.mu_lower, "version": d.version,
                                 "cpu_seconds": cpu,
                                 "seconds_per_run": d.seconds_per_run})  # fmt: skip
            print(name, seed, [(r["generator"], r["threat_model"], r["epsilon_lower"])
                               for r in rows if r["seed"] == seed])  # fmt: skip
        out[name] = {"library": "DataSynthesizer", "reproducer": reproducer, "control": control,
                     "epsilon": 1.0, "delta": 1e-2, **{k: list(v) if isinstance(v, tuple) else v
                                                       for k, v in kw.items()},
                     "seeds": seeds, "results": rows}  # fmt: skip
        if write:  # each audit as soon as it is done
            path = docs / f"privbayes-{name}.json"
            path.write_text(json.dumps(out[name], indent=1) + "\n")
            print(f"wrote {path}")
    return out


def privbayes(args) -> None:
    """``--privbayes``: items 4 and 5 of the module docstring."""
    small = quick(args)
    load = os.getloadavg()[0]
    which = tuple(args.audits.split(",")) if args.audits else tuple(PRIVBAYES_AUDITS)
    if args.runs:
        pool = _privbayes_pool(4 if small else args.runs)
        print(f"pool: {pool}")
        if not small:
            res = Path(__file__).parent / "results" / "synthetic-privbayes.json"
            body = {"machine": platform.platform(), "load_average_at_start": load,
                    "runs": args.runs, "pool": pool}  # fmt: skip
            res.write_text(json.dumps(body, indent=2) + "\n")
            print(f"wrote {res}")
    _privbayes_audits(1 if small else args.seeds, which, not small)


def _recorded(key: str) -> dict:
    """A row of the recorded results, kept as it was measured (with its own load)."""
    path = Path(__file__).parent / "results" / "synthetic.json"
    old = json.loads(path.read_text())
    return old[key] | {"kept_from_load_average": old.get("load_average_at_start")}


def main(argv=None) -> None:
    parser = bench_parser(__doc__, quick_option=True)
    parser.add_argument(
        "--runs",
        type=int,
        default=40,
        help="runs per measurement (with --privbayes, 0: no pool measurement)",
    )
    parser.add_argument("--privbayes", action="store_true", help="DataSynthesizer's PrivBayes")
    parser.add_argument("--seeds", type=int, default=20, help="seeds of each PrivBayes audit")
    parser.add_argument("--audits", default="", help="PrivBayes audits (default: all)")
    parser.add_argument("--keep-dpmm", action="store_true",
                        help="keep the recorded dpmm row (its fits take minutes each)")  # fmt: skip
    parser.add_argument("--measure", type=int, default=0,
                        help="time N smartnoise MST fits on two workers")  # fmt: skip
    args = parse(parser, argv)
    if args.measure:
        path = Path(__file__).parent / "results" / "synthetic.json"
        m = _measure(4 if quick(args) else args.measure)
        print(f"{m['runs']} smartnoise MST fits on 2 workers: {m['minutes']:.2f} min wall "
              f"({m['seconds_per_run_in_worker']:.2f} s per fit in a worker; target 15 min "
              f"for 1,000)")  # fmt: skip
        if not quick(args):
            out = json.loads(path.read_text()) | {"smartnoise_mst_measured": m}
            path.write_text(json.dumps(out, indent=2) + "\n")
            print(f"wrote {path}")
        return
    if args.privbayes:
        privbayes(args)
        return
    small = quick(args)
    n = 4 if small else args.runs
    load = os.getloadavg()[0]
    out = {
        "machine": platform.platform(),
        "load_average_at_start": load,
        "quick": small,
        "smartnoise_mst_full": _batch("smartnoise-mst", n, ("synthetic",)),
        "smartnoise_mst_white_box": _batch("smartnoise-mst", n, ("measurements", "selections")),
        "dpmm_mst_full": _recorded("dpmm_mst_full")
        if args.keep_dpmm
        else _batch("dpmm-mst", max(2, n // 10), ("synthetic",)),
        "targets": {"minutes_1000_smartnoise_mst_two_cores": 15.0, "overhead_fraction": 0.10},
    }
    for key in ("smartnoise_mst_full", "smartnoise_mst_white_box", "dpmm_mst_full"):
        b = out[key]
        print(f"{key}: {b['seconds_per_run_in_worker']:.2f} s per run in the worker, overhead "
              f"{b['overhead_seconds_per_run'] * 1e3:.1f} ms per run "
              f"({100 * b['overhead_fraction']:.1f} %), per-worker fixed cost "
              f"{b['worker_fixed_seconds']:.1f} s, {b['runs_per_minute_one_core']:.1f} runs/min "
              f"on one core, 1,000 runs on two cores ≈ "
              f"{b['projected_minutes_1000_runs_two_cores']:.1f} min")  # fmt: skip
    path = Path(__file__).parent / "results" / "synthetic.json"
    if not small:
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
