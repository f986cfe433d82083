"""Benchmark: the Lifted-DP audit of DP-SGD (issue 17) — training runs as engine tasks.

Measures, on the default model of ``src/dpaudit/configs/lidp-dp-sgd.toml`` (softmax
regression on 2×2-pooled Fashion-MNIST, |D| = 128, 9 full-batch DP-SGD steps, k = 16
random-sign canaries per run):

* training runs per minute with local processes (1 worker = in this process; 2 workers =
  spawned processes) and with a local Ray instance of 1 and 2 workers. Each executor runs
  the same n and 2n runs; ``t(n) = start-up + n · s`` separates the start-up (a process pool
  is started per audit, its workers import torch and opacus; Ray's instance and workers once:
  the first "cold" call) from the steady time per run s;
* the overhead of Ray vs plain processes on the same runs (2 workers; target ≤ 10 %): steady
  state, and for the whole gain experiment (15,360 runs) with start-ups; and that the
  statistics are bit-identical whatever the executor;
* the wall time of the gain experiment (target ≤ 45 min on 2 cores): with ``--gain DIR`` the
  ``lidp-dp-sgd-gain.toml`` run (n = 256) is run here (resumable in ``DIR``), otherwise read
  from ``benchmarks/results/lidp_dpsgd_gain16384.json`` (the paper-scale
  ``lidp-dp-sgd-gain-16384.toml`` run, n = 16,384) or ``lidp_dpsgd_gain.json``.

The machine's load average is recorded before and after each measurement: this machine is
shared, and timings scale with the CPU left over. The CPU other processes used during a
measurement is measured too (``/proc/stat`` minus this process tree's own CPU time, in
cores; the load average lags by a minute and still shows the previous measurement's
workers): a figure during which others took more than 0.1 core is marked ``machine_shared``
(without ``/proc``: its 1-minute load average exceeded its own workers + 0.5), and so is every
steady-state and overhead figure derived from such rows: those are not quiet-machine
figures. Each row also records the engine's chunks and its measured overhead
(``1 − Σ compute / (workers · wall)``, start-up included).

``--summarise DIR/results.json "LOAD" [--name NAME]`` turns a finished ``dpaudit audit
lidp-dp-sgd --config lidp-dp-sgd-gain.toml --out DIR`` run into
``benchmarks/results/lidp_dpsgd_gain.json`` (or ``NAME.json``).

Run: ``python benchmarks/bench_lidp_dpsgd.py [--runs N] [--gain DIR] [--out PATH]`` →
``benchmarks/results/lidp_dpsgd.json``, or ``lidp_dpsgd_shared.json`` when any figure was
measured while the machine was shared (``DPAUDIT_BENCH_QUICK=1``: 24 runs per measurement
instead of 96).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from dpaudit import _settings
from dpaudit._rng import child_seed
from dpaudit._settings import find_config
from dpaudit.engine import EXECUTORS, RayExecutor
from dpaudit.experiments.lidp_dpsgd.pipeline import build_runs, draw_layout, load_data
from dpaudit.experiments.lidp_dpsgd.runs import RunPlan, collect_statistics
from dpaudit.experiments.lidp_dpsgd.settings import LiDPDPSGDSettings
from dpaudit.systems import SYSTEMS

RESULTS = Path(__file__).parent / "results"
QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
# per measurement: RUNS/4 alternative + null, audit + tuning (``--runs N`` overrides)
RUNS = 24 if QUICK else 96
K = 16
#: A measurement during which other processes used more CPU than this (in cores) is marked
#: ``machine_shared``: not a quiet-machine figure.
SHARED_CORES = 0.1


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _busy_seconds() -> float:
    """CPU seconds spent by every process on the machine (``/proc/stat``: all but idle and
    iowait), or NaN where ``/proc`` is not there."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return float("nan")
    ticks = [int(x) for x in fields]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    """CPU seconds of this process and all its descendants, reaped ones included
    (``/proc/<pid>/stat`` utime + stime + cutime + cstime), or NaN without ``/proc``."""
    try:
        stats = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    raw = (d / "stat").read_text()
                except OSError:
                    continue
                f = raw.rsplit(")", 1)[1].split()
                stats[int(d.name)] = (int(f[1]), sum(int(x) for x in f[11:15]))
    except OSError:
        return float("nan")
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, (pp, _) in stats.items() if pp == parent and p not in tree]
        tree.update(kids)
        frontier += kids
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def _setup():
    settings = _settings.load_toml(find_config("lidp-dp-sgd"), LiDPDPSGDSettings)
    pool = load_data(settings)
    system = SYSTEMS.get("dp-sgd")(settings.system_cell)
    layout = draw_layout(pool, settings, rng=child_seed(settings.seed, 0))
    return build_runs(settings, layout, system)


class _Clock:
    """A progress callback that timestamps every finished run (it changes no result)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, int]] = []

    def __call__(self, done: int, total: int, description: str) -> None:
        self.marks.append((time.perf_counter(), done))

    def steady(self, low: float = 0.2, high: float = 0.9) -> float | None:
        """Runs per minute between the first moments ``low`` and ``high`` of the runs were
        done: no start-up (workers spawning, importing torch) and no tail (the last chunks
        leave a worker idle)."""
        total = self.marks[-1][1] if self.marks else 0
        a = next((m for m in self.marks if m[1] >= low * total), None)
        b = next((m for m in self.marks if m[1] >= high * total), None)
        if a is None or b is None or b[0] <= a[0]:
            return None
        return 60.0 * (b[1] - a[1]) / (b[0] - a[0])


def _measure(runs, executor, plan, label: str) -> dict:
    load0 = _load()
    busy0, own0 = _busy_seconds(), _own_seconds()
    t0 = time.perf_counter()
    clock = _Clock()
    data, out = collect_statistics(runs, plan, rng=7, executor=executor, progress=clock)
    wall = time.perf_counter() - t0
    busy1, own1 = _busy_seconds(), _own_seconds()
    stats = np.concatenate([v.ravel() for v in data.stats.values()])
    load1 = _load()
    # CPU that other processes took during the measurement, in cores: the load average
    # lags by a minute (it still shows the previous measurement's workers), this does not
    others = max(0.0, (busy1 - busy0) - (own1 - own0)) / wall
    row = {
        "label": label,
        "runs": out.num_tasks,
        "wall_seconds": round(wall, 3),
        "runs_per_minute": round(60.0 * out.num_tasks / wall, 1),
        "steady_runs_per_minute": clock.steady(),
        "chunks": out.chunks,
        "overhead_fraction": round(out.overhead_fraction, 3),
        "load_before": load0,
        "load_after": load1,
        "other_processes_cores": round(others, 3),
        "machine_shared": bool(others > SHARED_CORES)
        if np.isfinite(others)
        else max(load0[0], load1[0]) > executor.workers + 0.5,
    }
    shared = " [machine shared]" if row["machine_shared"] else ""
    steady = row["steady_runs_per_minute"] or float("nan")
    print(f"{label:>30}: {row['runs']:4d} runs in {wall:7.2f} s = {row['runs_per_minute']:7.1f} "
          f"runs/min (steady {steady:7.1f}), {out.chunks} chunks, "
          f"overhead {row['overhead_fraction']:.1%} "
          f"(load {load0[0]} → {load1[0]}, others {others:.2f} cores){shared}",
          flush=True)  # fmt: skip
    return row | {"_stats": stats}


def _steady(rows: list[dict], name: str) -> dict:
    """Steady throughput and start-up of one executor over its calls of n and 2n runs.

    The steady rate is each call's own (runs finished between 20 % and 90 % of the call,
    per minute of that stretch: :class:`_Clock`), averaged over the two calls; the start-up
    is what the wall time has beyond the runs at that rate. The older estimate from the
    difference of the two calls, ``t(n) = start + n·s``, is kept beside it: it assumes both
    calls pay the same start-up and overhead, which the adaptive chunks do not (a call's
    chunks depend on what it measured), so it is the noisier of the two."""
    a, b = (r for r in rows if r["label"].startswith(name))
    per_run = (b["wall_seconds"] - a["wall_seconds"]) / (b["runs"] - a["runs"])
    rates = [r["steady_runs_per_minute"] for r in (a, b)]
    rate = float(np.mean(rates)) if all(rates) else None
    start = (
        float(np.mean([r["wall_seconds"] - 60.0 * r["runs"] / rate for r in (a, b)]))
        if rate else None
    )  # fmt: skip
    return {"executor": name,
            "runs_per_minute": round(rate, 1) if rate else None,
            "runs_per_minute_by_call": [round(x, 1) if x else None for x in rates],
            "seconds_per_run": round(60.0 / rate, 5) if rate else None,
            "startup_seconds": round(start, 2) if start is not None else None,
            "difference_runs_per_minute": round(60.0 / per_run, 1) if per_run > 0 else None,
            "machine_shared": a["machine_shared"] or b["machine_shared"]}  # fmt: skip


def _ray_rows(runs, small, large) -> tuple[list[dict], dict]:
    import ray

    rows, init = [], {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        init[workers] = round(time.perf_counter() - t0, 2)
        rows.append(_measure(runs, RayExecutor(workers), small, f"cold ray × {workers}"))
        rows.append(_measure(runs, RayExecutor(workers), small, f"ray × {workers} (warm)"))
        rows.append(_measure(runs, RayExecutor(workers), large, f"ray × {workers} (warm)"))
        ray.shutdown()
    return rows, init


def _gain(gain_dir: str | None) -> dict | None:
    if gain_dir is not None:
        from dpaudit.experiments.lidp_dpsgd.pipeline import run_lidp_dpsgd

        settings = _settings.load_toml(find_config("lidp-dp-sgd-gain"), LiDPDPSGDSettings)
        settings = _settings.apply_overrides(settings, {"execution.workers": 2})
        load0 = _load()
        t0 = time.perf_counter()
        res = run_lidp_dpsgd(settings, checkpoint=Path(gain_dir))
        a = res.detail.audit
        return {
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "runs": a.num_tasks,
            "computed_runs": a.computed_runs,
            "resumed_runs": a.resumed_runs,
            "load_before": load0,
            "load_after": _load(),
        }
    for name in ("lidp_dpsgd_gain16384.json", "lidp_dpsgd_gain.json"):  # the paper-scale run
        path = RESULTS / name
        if path.exists():
            return json.loads(path.read_text()).get("timing")
    return None


def summarise_gain(results_json: str, load: str, name: str = "lidp_dpsgd_gain") -> dict:
    """A finished gain run's ``results.json`` (``dpaudit audit lidp-dp-sgd --out``) as the
    summary the README and this benchmark read: curves, gains, wall time and load
    (``benchmarks/results/<name>.json``)."""
    res = json.loads(Path(results_json).read_text())
    a, t = res["detail"]["audit"], res["timings"]
    out = {
        "settings": res["settings"],
        "claim": res["entries"][0]["claims"][0],
        "run_grid": a["run_grid"],
        "curves": {
            str(c["num_canaries"]): {
                "method": c["curve_method"],
                "mean": c["curve_mean"],
                "std": c["curve_std"],
                "by_repetition": c["curve_by_repetition"],
                "bounds_repetition_0": {m: c["bounds"][m][0]["epsilon"] for m in c["methods"]},
                "final_loss": c["extras"].get("final_loss"),
            }
            for c in a["audits"]
        },
        "gains": a["gains"],
        "timing": {
            "wall_seconds": round(t["setup+claims"] + t["runs+bounds"], 1),
            "runs_seconds": round(t["runs"], 1),
            "runs": a["num_tasks"],
            "computed_runs": a["computed_runs"],
            "runs_per_minute": round(res["detail"]["runs_per_minute"], 1),
            "executor": f"{a['executor']} x {a['workers']}",
            "load_average": load,
        },
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    return out


def main(argv: list[str] | None = None) -> int:
    from _cli import bench_parser, parse

    parser = bench_parser(__doc__)
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per measurement ({RUNS})")
    parser.add_argument("--gain", metavar="DIR", help="a gain experiment's output directory")
    parser.add_argument("--out", metavar="FILE", help="where to write the JSON")
    parser.add_argument(
        "--summarise", nargs="+", metavar="DIR", help="summarise a gain run (DIR [NOTE]) and exit"
    )
    parser.add_argument("--name", default="lidp_dpsgd_gain", help="name of the summary")
    args = parse(parser, argv)
    if args.runs < 4:
        parser.error(f"--runs must be at least 4, got {args.runs}")
    if args.summarise:
        if len(args.summarise) > 2:
            parser.error(f"--summarise takes DIR [NOTE], got {len(args.summarise)} values")
        note = args.summarise[1] if len(args.summarise) > 1 else ""
        summarise_gain(args.summarise[0], note, args.name)
        return 0
    gain_dir = args.gain
    runs = _setup()
    n = args.runs // 4
    small, large = RunPlan((K,), 1, n, n), RunPlan((K,), 1, 2 * n, 2 * n)
    collect_statistics(runs, RunPlan((K,), 1, 2, 2), rng=0)  # imports, first-call costs
    procs = EXECUTORS.get("processes")
    rows = []
    for workers in (1, 2):
        label = f"processes × {workers}"
        rows += [_measure(runs, procs(workers), small, label),
                 _measure(runs, procs(workers), large, label)]  # fmt: skip
    init = {}
    try:
        ray_rows, init = _ray_rows(runs, small, large)
        rows += ray_rows
    except ImportError:
        print("ray is not installed: Ray rows skipped")
    ref = {}  # the same runs must give the same statistics on every executor
    for r in rows:
        ref.setdefault(r["runs"], r["_stats"])
    identical = all(np.array_equal(r["_stats"], ref[r["runs"]]) for r in rows)
    steady = {name: _steady(rows, name) for name in
              ("processes × 1", "processes × 2", "ray × 1", "ray × 2")
              if sum(r["label"].startswith(name) for r in rows) == 2}  # fmt: skip
    overhead = None
    if "ray × 2" in steady and all(
        steady[e]["seconds_per_run"] for e in ("processes × 2", "ray × 2")
    ):
        p2, r2 = steady["processes × 2"], steady["ray × 2"]
        total = 15_360  # the gain experiment
        overhead = {
            "steady_state": round(r2["seconds_per_run"] / p2["seconds_per_run"] - 1.0, 3),
            "gain_experiment_incl_startup": round(
                (init[2] + r2["startup_seconds"] + total * r2["seconds_per_run"])
                / (p2["startup_seconds"] + total * p2["seconds_per_run"]) - 1.0, 3),
        }  # fmt: skip
    scaling = None
    if {"processes × 1", "processes × 2"} <= steady.keys():
        p1, p2 = (
            steady["processes × 1"]["runs_per_minute"],
            steady["processes × 2"]["runs_per_minute"],
        )
        scaling = round(p2 / p1, 3) if p1 and p2 else None
    out = {
        "benchmark": "lidp_dpsgd",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "model": "softmax regression, 196 features (2×2-pooled Fashion-MNIST), |D| = 128, "
        "T = 9 full-batch DP-SGD steps, σ = 3, k = 16 random-sign canaries",
        "rows": [{k: v for k, v in r.items() if k != "_stats"} for r in rows],
        "steady_state": steady,
        "ray_init_seconds": init,
        "ray_overhead_vs_processes_2_workers": overhead,
        "measured_while_shared": any(r["machine_shared"] for r in rows),
        "target_ray_overhead": 0.10,
        "scaling_processes_2_over_1": scaling,
        "target_scaling": 1.8,
        "statistics_bit_identical": identical,
        "gain_experiment": _gain(gain_dir),
        "target_gain_wall_seconds": 45 * 60,
    }
    RESULTS.mkdir(exist_ok=True)
    target = Path(args.out) if args.out else None
    if target is None:  # a shared machine's figures never replace the quiet-machine file
        name = "lidp_dpsgd_shared.json" if out["measured_while_shared"] else "lidp_dpsgd.json"
        target = RESULTS / name
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")
    for name, st in steady.items():
        shared = " [machine shared: not a quiet-machine figure]" if st["machine_shared"] else ""
        print(f"{name:>14}: steady {st['runs_per_minute']} runs/min, start-up "
              f"{st['startup_seconds']} s{shared}")  # fmt: skip
    print(f"processes × 2 / processes × 1 (steady): {scaling} (target ≥ 1.8)")
    print(f"Ray init: {init} s; Ray overhead vs 2 processes: {overhead} (target ≤ 10 %); "
          f"statistics bit-identical: {identical}")  # fmt: skip
    if out["gain_experiment"]:
        g = out["gain_experiment"]
        print(f"gain experiment: {g['wall_seconds'] / 60:.1f} min for {g['runs']} runs "
              f"(target ≤ 45 min)")  # fmt: skip
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
