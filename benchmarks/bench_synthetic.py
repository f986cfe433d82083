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

The machine may be shared (the load average at the start is recorded): the figures are wall
times. Run: ``python benchmarks/bench_synthetic.py [--quick] [--runs N]`` →
``benchmarks/results/synthetic.json``.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from _cli import bench_parser, parse, quick
from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.systems.synthetic import GeneratorCell, SyntheticGenerator


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


def main(argv=None) -> None:
    parser = bench_parser(__doc__, quick_option=True)
    parser.add_argument("--runs", type=int, default=40, help="runs per measurement")
    args = parse(parser, argv)
    small = quick(args)
    n = 4 if small else args.runs
    load = os.getloadavg()[0]
    out = {
        "machine": platform.platform(),
        "load_average_at_start": load,
        "quick": small,
        "smartnoise_mst_full": _batch("smartnoise-mst", n, ("synthetic",)),
        "smartnoise_mst_white_box": _batch("smartnoise-mst", n, ("measurements", "selections")),
        "dpmm_mst_full": _batch("dpmm-mst", max(2, n // 10), ("synthetic",)),
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
