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
* the wall time of the gain experiment (``lidp-dp-sgd-gain.toml``, the README figure; target
  ≤ 45 min on 2 cores): with ``--gain DIR`` it is run here (resumable in ``DIR``), otherwise
  read from ``benchmarks/results/lidp_dpsgd_gain.json`` if a run recorded it.

The machine's load average is recorded before and after each measurement: this machine is
shared, and timings scale with the CPU left over. The CPU other processes used during a
measurement is measured too (``/proc/stat`` minus this process tree's own CPU time, in
cores; the load average lags by a minute and still shows the previous measurement's
workers): a figure during which others took more than 0.1 core is marked ``machine_shared``
(without ``/proc``: its 1-minute load average exceeded its own workers + 0.5), and so is every
steady-state and overhead figure derived from such rows: those are not quiet-machine
figures. Each row also records the engine's chunks and its measured overhead
(``1 − Σ compute / (workers · wall)``, start-up included).

``--summarise DIR/results.json "LOAD"`` turns a finished ``dpaudit audit lidp-dp-sgd --config
lidp-dp-sgd-gain.toml --out DIR`` run into ``benchmarks/results/lidp_dpsgd_gain.json``.

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
if "--runs" in sys.argv:
    RUNS = int(sys.argv[sys.argv.index("--runs") + 1])
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


def _measure(runs, executor, plan, label: str) -> dict:
    load0 = _load()
    busy0, own0 = _busy_seconds(), _own_seconds()
    t0 = time.perf_counter()
    data, out = collect_statistics(runs, plan, rng=7, executor=executor)
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
    print(f"{label:>30}: {row['runs']:4d} runs in {wall:7.2f} s = {row['runs_per_minute']:7.1f} "
          f"runs/min, {out.chunks} chunks, overhead {row['overhead_fraction']:.1%} "
          f"(load {load0[0]} → {load1[0]}, others {others:.2f} cores){shared}",
          flush=True)  # fmt: skip
    return row | {"_stats": stats}


def _steady(rows: list[dict], name: str) -> dict:
    """Start-up and steady throughput of one executor from calls of n and 2n runs:
    ``t(n) = start + n·s`` (a process pool starts per call; a warm Ray instance does not)."""
    a, b = (r for r in rows if r["label"].startswith(name))
    per_run = (b["wall_seconds"] - a["wall_seconds"]) / (b["runs"] - a["runs"])
    start = a["wall_seconds"] - a["runs"] * per_run
    return {"executor": name, "seconds_per_run": round(per_run, 4),
            "runs_per_minute": round(60.0 / per_run, 1) if per_run > 0 else None,
            "startup_seconds": round(start, 2),
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
    path = RESULTS / "lidp_dpsgd_gain.json"
    if path.exists():
        return json.loads(path.read_text()).get("timing")
    return None


def summarise_gain(results_json: str, load: str) -> dict:
    """A finished gain run's ``results.json`` (``dpaudit audit lidp-dp-sgd --out``) as the
    summary the README and this benchmark read: curves, gains, wall time and load."""
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
    path = RESULTS / "lidp_dpsgd_gain.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    return out


def main() -> int:
    if "--summarise" in sys.argv:
        i = sys.argv.index("--summarise")
        summarise_gain(sys.argv[i + 1], sys.argv[i + 2] if len(sys.argv) > i + 2 else "")
        return 0
    gain_dir = sys.argv[sys.argv.index("--gain") + 1] if "--gain" in sys.argv else None
    runs = _setup()
    n = RUNS // 4
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
    if "ray × 2" in steady:
        p2, r2 = steady["processes × 2"], steady["ray × 2"]
        total = 15_360  # the gain experiment
        overhead = {
            "steady_state": round(r2["seconds_per_run"] / p2["seconds_per_run"] - 1.0, 3),
            "gain_experiment_incl_startup": round(
                (init[2] + r2["startup_seconds"] + total * r2["seconds_per_run"])
                / (p2["startup_seconds"] + total * p2["seconds_per_run"]) - 1.0, 3),
        }  # fmt: skip
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
        "statistics_bit_identical": identical,
        "gain_experiment": _gain(gain_dir),
        "target_gain_wall_seconds": 45 * 60,
    }
    RESULTS.mkdir(exist_ok=True)
    target = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else None
    if target is None:  # a shared machine's figures never replace the quiet-machine file
        name = "lidp_dpsgd_shared.json" if out["measured_while_shared"] else "lidp_dpsgd.json"
        target = RESULTS / name
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")
    for name, st in steady.items():
        shared = " [machine shared: not a quiet-machine figure]" if st["machine_shared"] else ""
        print(f"{name:>14}: steady {st['runs_per_minute']} runs/min, start-up "
              f"{st['startup_seconds']} s{shared}")  # fmt: skip
    print(f"Ray init: {init} s; Ray overhead vs 2 processes: {overhead} (target ≤ 10 %); "
          f"statistics bit-identical: {identical}")  # fmt: skip
    if out["gain_experiment"]:
        g = out["gain_experiment"]
        print(f"gain experiment: {g['wall_seconds'] / 60:.1f} min for {g['runs']} runs "
              f"(target ≤ 45 min)")  # fmt: skip
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
