"""Benchmark: the batched DP-SGD trainer against one Opacus run at a time (issue 30).

The trainers compute the same LiDP training runs (same plan, same seeds, serial executor,
one torch thread, i.e. one core) in the same process, one after the other, on:

* the default model of ``lidp-dp-sgd.toml`` (softmax regression on 2×2-pooled Fashion-MNIST,
  196 features, |D| = 128, T = 9 full-batch steps, σ = 3, k = 16 random-sign canaries);
* a Fashion-MNIST MLP: 784 → 256 → 10 (no pooling), the same D, steps and canaries;
* the LeNet-style CNN of the DP-SGD audits (:func:`dpaudit.systems._torch_nets.build_cnn`) on
  the 14×14 images, learning rate 0.5: the batched trainer's ``book-keeping`` path (its
  ``auto`` choice for CNNs: all runs' examples as one channels-last batch, per-example
  convolution gradients from the unfolded inputs).

The baseline of every model is the per-run trainer clipping with Opacus' per-sample
gradients (``training.clipping = "opacus"``: what the audits ran before the batched
trainer). The CNN has a second, harder baseline: the per-run trainer with its own
book-keeping clipping (``"book-keeping"``, one backward pass per run). The trainers are timed
twice, in the order baselines, batched, batched, baselines reversed (Opacus, book-keeping,
batched, batched, book-keeping, Opacus: a load that drifts during the run weighs on all
sides alike), and each one's runs/min is over both times; its CPU seconds
(``time.process_time``) are recorded next to the wall time.
Reported: runs per minute of each trainer, the speed-up over each baseline in runs/min and
in CPU seconds (``cpu_speedup``: steadier when other jobs share the cores; targets: ≥ 10×
on the default model, ≥ 3× on the MLP and the CNN, over Opacus), the largest difference
between a baseline's and the batched trainer's statistics for the same seeds (float32
rounding), and the machine's load average before and after each figure;
a figure whose load average exceeded ``1.5`` (this process plus another job) is marked
``machine_shared``. On a CUDA device (``--device cuda``) the batched trainer's runs/min on it
are recorded with the card's name (the per-run trainer stays on the CPU).

Run: ``python benchmarks/bench_batched_dpsgd.py [--skip-default|mlp|cnn] [--device]`` →
``benchmarks/results/batched_dpsgd.json`` (a skipped model keeps its recorded figures;
``DPAUDIT_BENCH_QUICK=1``: fewer runs).
"""

from __future__ import annotations

import dataclasses
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
from dpaudit.experiments.lidp_dpsgd.pipeline import build_runs, draw_layout, load_data
from dpaudit.experiments.lidp_dpsgd.runs import RunPlan, collect_statistics
from dpaudit.experiments.lidp_dpsgd.settings import LiDPDPSGDSettings
from dpaudit.systems import SYSTEMS

RESULTS = Path(__file__).parent / "results"
QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
SHARED_LOAD = 1.5
#: The trainers timed: the per-run trainer with Opacus' per-sample clipping (every model's
#: baseline), with its own book-keeping clipping (the CNN's second baseline), the batched one.
TRAINERS = {
    "per-run": {"training.trainer": "per-run", "training.clipping": "opacus"},
    "book-keeping": {"training.trainer": "per-run", "training.clipping": "book-keeping"},
    "batched": {"training.trainer": "batched"},
}
#: name → (overrides, runs, group size, baselines).
MODELS = {
    "default (softmax regression, 196 features)": (
        {}, 128 if QUICK else 256, 64, ("per-run",)),
    "Fashion-MNIST MLP 784-256-10": (
        {"data.pooling": 1, "training.hidden": (256,)}, 32 if QUICK else 64, 32, ("per-run",)),
    "LeNet-style CNN on 14x14 images": (
        {"training.model": "cnn", "training.learning_rate": 0.5}, 32, 16,
        ("per-run", "book-keeping")),
}  # fmt: skip
#: ``--skip-NAME`` leaves a model out (its recorded figures are kept).
SHORT = dict(zip(("default", "mlp", "cnn"), MODELS, strict=True))


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _runs(overrides: dict, trainer: str, group: int, device: str = "cpu"):
    settings = _settings.load_toml(find_config("lidp-dp-sgd"), LiDPDPSGDSettings)
    over = overrides | TRAINERS[trainer] | {"training.group_size": group}
    settings = _settings.apply_overrides(settings, over | {"training.device": device})
    pool = load_data(settings)
    system = SYSTEMS.get("dp-sgd")(settings.system_cell)
    layout = draw_layout(pool, settings, rng=child_seed(settings.seed, 0))
    return build_runs(settings, layout, system)


def _measure(runs, plan: RunPlan) -> tuple[dict, np.ndarray]:
    load0 = _load()
    c0, t0 = time.process_time(), time.perf_counter()
    data, out = collect_statistics(runs, plan, rng=7)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load1 = _load()
    stats = np.concatenate([v.ravel() for v in data.stats.values()])
    row = {"runs": out.num_tasks, "wall_seconds": round(wall, 3),
           "runs_per_minute": round(60.0 * out.num_tasks / wall, 1),
           "cpu_seconds": round(cpu, 3), "load_before": load0, "load_after": load1,
           "machine_shared": max(load0[0], load1[0]) > SHARED_LOAD}  # fmt: skip
    return row, stats


def _merge(old: dict, row: dict) -> dict:
    """A trainer's two timings as one figure: runs/min over both."""
    runs, wall = old["runs"] + row["runs"], old["wall_seconds"] + row["wall_seconds"]
    return old | {
        "runs": runs,
        "wall_seconds": round(wall, 3),
        "runs_per_minute": round(60.0 * runs / wall, 1),
        "cpu_seconds": round(old["cpu_seconds"] + row["cpu_seconds"], 3),
        "load_after": row["load_after"],
        "machine_shared": old["machine_shared"] or row["machine_shared"],
    }


def _model(name: str, overrides: dict, n: int, group: int, baselines: tuple[str, ...]) -> dict:
    plan = RunPlan((16,), 1, n // 4, n // 4)
    warm = RunPlan((16,), 1, 2, 2)
    runs = {t: _runs(overrides, t, group) for t in (*baselines, "batched")}
    for r in runs.values():
        collect_statistics(r, warm, rng=0)  # imports, first-call costs
    rows: dict = {}
    stats = {}
    order = (*baselines, "batched", "batched", *reversed(baselines))
    for trainer in order:
        row, stats[trainer] = _measure(runs[trainer], plan)
        rows[trainer] = _merge(rows[trainer], row) if trainer in rows else row
    for trainer, r in rows.items():
        print(f"{name:>44} {trainer:>12}: {r['runs']} runs in {r['wall_seconds']:7.2f} s = "
              f"{r['runs_per_minute']:8.1f} runs/min, {r['cpu_seconds']:7.2f} CPU-s (load "
              f"{r['load_before'][0]} → {r['load_after'][0]})", flush=True)  # fmt: skip
    out = {"model": name, "overrides": {k: list(v) if isinstance(v, tuple) else v
                                        for k, v in overrides.items()},
           "group_size": group, "batched": rows["batched"]}  # fmt: skip
    for base in baselines:
        key = "" if base == "per-run" else "_vs_" + base.replace("-", "_")
        speedup = rows["batched"]["runs_per_minute"] / rows[base]["runs_per_minute"]
        diff = float(np.max(np.abs(stats["batched"] - stats[base])))
        print(
            f"{'':>44} speed-up over {base} {speedup:.2f}× (wall), "
            f"{rows[base]['cpu_seconds'] / rows['batched']['cpu_seconds']:.2f}× (CPU); "
            f"max |Δ statistic| {diff:.2e}"
        )
        out["per_run" + ("" if base == "per-run" else "_" + base.replace("-", "_"))] = rows[base]
        out["speedup" + key] = round(speedup, 2)
        cpu = rows[base]["cpu_seconds"] / rows["batched"]["cpu_seconds"]
        out["cpu_speedup" + key] = round(cpu, 2)  # per CPU second: steadier under load
        out["max_abs_statistic_difference" + key] = diff
    return out


def _cuda() -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    runs = _runs({}, "batched", 256, device="cuda")
    collect_statistics(runs, RunPlan((16,), 1, 2, 2), rng=0)
    row, _ = _measure(runs, RunPlan((16,), 1, 256, 256))
    machine = {"platform": platform.platform(), "cpus": os.cpu_count()}
    return {"device": torch.cuda.get_device_name(0), **row, "machine": machine}


def main(argv: list[str] | None = None) -> int:
    from _cli import bench_parser, parse

    parser = bench_parser(__doc__)
    for short, model in SHORT.items():
        parser.add_argument(
            f"--skip-{short}", action="store_true", help=f"do not measure {model} (keep its row)"
        )
    parser.add_argument("--device", action="store_true", help="also measure on CUDA")
    args = parse(parser, argv)
    chosen = [m for short, m in SHORT.items() if not getattr(args, f"skip_{short}")]
    path = RESULTS / "batched_dpsgd.json"
    old = json.loads(path.read_text()) if path.exists() else {"results": []}
    results = [_model(name, *MODELS[name]) for name in chosen]
    results += [r for r in old["results"] if r["model"] in MODELS and r["model"] not in chosen]
    machine = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "note": "one core (serial executor, 1 torch thread); other jobs may share "
        "the machine: see load_before/after and machine_shared",
    }
    out = {
        "benchmark": "batched_dpsgd",
        # The CPU rows' machine; a device-only run (every --skip-*) keeps the recorded one.
        "machine": machine if chosen or "machine" not in old else old["machine"],
        "plan": "k = 16, n alternative + n null audited runs and as many tuning runs",
        "targets": {"default": 10.0, "mlp": 3.0, "cnn": 3.0},
        "baselines": {
            "per_run": "the per-run trainer, Opacus' per-sample clipping (speedup)",
            "per_run_book_keeping": "the per-run trainer, its book-keeping clipping "
            "(speedup_vs_book_keeping)",
        },
        "results": results,
        "cuda": _cuda() if args.device else old.get("cuda"),
    }
    out["results"] = [dataclasses.asdict(_Row(**r)) for r in out["results"]]
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    return 0


@dataclasses.dataclass
class _Row:
    model: str
    overrides: dict
    group_size: int
    per_run: dict
    batched: dict
    speedup: float
    max_abs_statistic_difference: float
    cpu_speedup: float | None = None
    per_run_book_keeping: dict | None = None
    speedup_vs_book_keeping: float | None = None
    cpu_speedup_vs_book_keeping: float | None = None
    max_abs_statistic_difference_vs_book_keeping: float | None = None


if __name__ == "__main__":
    sys.exit(main())
