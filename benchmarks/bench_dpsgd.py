"""Benchmark DP-SGD training and the one-run audit (issue 16).

1. **Trainer throughput** (examples/s) on Fashion-MNIST with the small CNN of
   ``dpaudit.systems._torch_nets`` (batch 128, Poisson sampling, clipping 1, σ = 1), same run,
   same data and the same number of steps, interleaved so machine load hits all alike:
   dpaudit's ``train_dpsgd`` vs **plain Opacus** (``PrivacyEngine.make_private`` over a
   ``TensorDataset`` ``DataLoader`` with Poisson sampling — what an Opacus user writes), and
   **non-private** training (plain SGD over a shuffled ``DataLoader``, same batch size) for
   the slowdown of private training. Target: dpaudit ≥ 0.9× plain Opacus.
2. **End-to-end one-run audit** (unless ``--quick`` or ``--no-full``): the shipped config
   ``dp-sgd-fashion-mnist`` (n = 20,000 trained on average, m = 5,000 canaries, 10,000
   holdout, QMIA) with its wall time split into setup/claims, DP-SGD training, scoring + QMIA
   fit, and bounds. Targets: ≤ 10 min in total, QMIA ≤ 1 min.

Usage: ``python benchmarks/bench_dpsgd.py [--quick] [--steps N] [--repeats R]
[--end-to-end-only]`` (quick: fewer steps, no end-to-end audit; ``--end-to-end-only`` keeps the
stored throughput part). Writes ``benchmarks/results/dpsgd.json`` with the load average
around each part.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import time
import warnings

import numpy as np

from dpaudit.systems import DPSGDSettings, LabelledData, train_dpsgd
from dpaudit.systems._torch_nets import build_cnn, torch_context

BATCH = 128
SIGMA = 1.0


def _data(n: int) -> LabelledData:
    from dpaudit.experiments.dpsgd.pipeline import load_pool

    pool = load_pool("fashion-mnist")
    return pool.subset(np.arange(n))


def dpaudit_rate(data: LabelledData, steps: int, seed: int) -> float:
    s = DPSGDSettings(model="cnn", noise_multiplier=SIGMA, batch_size=BATCH, steps=steps,
                      learning_rate=3.0, momentum=0.5)  # fmt: skip
    return train_dpsgd(data, None, None, s, rng=seed).examples_per_second


def _loop(torch, model, opt, loader, steps: int) -> float:
    lossf = torch.nn.CrossEntropyLoss()
    done, start = 0, time.perf_counter()
    while done < steps:
        for xb, yb in loader:
            if done == steps:
                break
            opt.zero_grad()
            if len(yb) > 0:
                lossf(model(xb), yb).backward()
            opt.step()
            done += 1
    return time.perf_counter() - start


def opacus_rate(data: LabelledData, steps: int, seed: int, private: bool = True) -> float:
    """Plain Opacus (or plain torch): the examples processed per second over ``steps``."""
    from opacus import PrivacyEngine

    with torch_context(seed) as torch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = torch.from_numpy(np.array(data.X)).reshape(-1, 1, 28, 28)
        y = torch.from_numpy(np.array(data.y))
        model = build_cnn(1, 10)
        opt = torch.optim.SGD(model.parameters(), lr=3.0, momentum=0.5)
        ds = torch.utils.data.TensorDataset(X, y)
        loader = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=not private)
        if private:
            engine = PrivacyEngine(accountant="rdp")
            model, opt, loader = engine.make_private(
                module=model, optimizer=opt, data_loader=loader, noise_multiplier=SIGMA,
                max_grad_norm=1.0, poisson_sampling=True,
            )  # fmt: skip
        seconds = _loop(torch, model, opt, loader, steps)
    return steps * BATCH / seconds  # expected examples per step × steps


def throughput(n: int, steps: int, repeats: int) -> dict:
    data = _data(n)
    rows = {"dpaudit": [], "opacus": [], "non_private": []}
    for r in range(repeats):  # interleaved: load changes hit all three alike
        rows["dpaudit"].append(dpaudit_rate(data, steps, r))
        rows["opacus"].append(opacus_rate(data, steps, r))
        rows["non_private"].append(opacus_rate(data, steps, r, private=False))
    med = {k: float(np.median(v)) for k, v in rows.items()}
    return {
        "examples": n,
        "batch_size": BATCH,
        "steps": steps,
        "repeats": repeats,
        "examples_per_second": rows,
        "median_examples_per_second": med,
        "dpaudit_vs_opacus": med["dpaudit"] / med["opacus"],
        "private_slowdown_vs_non_private": med["non_private"] / med["dpaudit"],
        "target_dpaudit_vs_opacus": 0.9,
    }


def end_to_end() -> dict:
    from dpaudit import _settings
    from dpaudit._settings import find_config
    from dpaudit.experiments.dpsgd.pipeline import audit_dpsgd
    from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings

    s = _settings.load_toml(find_config("dp-sgd-fashion-mnist"), DPSGDAuditSettings)
    start = time.perf_counter()
    res = audit_dpsgd(s)
    total = time.perf_counter() - start
    rep = res.detail.repetitions[0]
    return {
        "config": "dp-sgd-fashion-mnist",
        "n": s.nominal_size,
        "m": s.canaries.num_canaries,
        "holdout": s.data.num_holdout,
        "total_seconds": total,
        "setup_and_claims_seconds": res.timings["setup+claims"],
        "training_seconds": rep.training_seconds,
        "layout_and_training_seconds": rep.timings["layout+train"],
        "scores_and_qmia_seconds": rep.timings["scores+qmia"],
        "qmia_fit_seconds": rep.scores.qmia_seconds,
        "bounds_seconds": rep.timings["bounds"],
        "test_accuracy": rep.scores.test_accuracy,
        "examples_per_second": rep.examples_per_second,
        "target_total_seconds": 600,
        "target_qmia_seconds": 60,
        "epsilons": {e.adversary: e.lower_bound.epsilon for e in res.entries},
        "claim": res.entries[0].claim.epsilon,
    }


def main() -> None:
    from _cli import bench_parser

    parser = bench_parser(__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-full", action="store_true", help="skip the end-to-end audit")
    parser.add_argument(
        "--end-to-end-only",
        action="store_true",
        help="run only the end-to-end audit; keep the stored throughput part of the JSON",
    )
    args = parser.parse_args()
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    steps = args.steps or (15 if quick else 60)
    path = pathlib.Path(__file__).parent / "results" / "dpsgd.json"
    machine = {"cpus": os.cpu_count(), "platform": platform.platform()}
    if args.end_to_end_only:
        out = json.loads(path.read_text()) if path.is_file() else {"machine": machine}
    else:
        machine["load_average"] = os.getloadavg()
        out = {
            "machine": machine,
            "throughput": throughput(5000, steps, 2 if quick else args.repeats),
        }
        _print_throughput(out["throughput"])
        out["machine"]["load_average_end"] = os.getloadavg()
    if args.end_to_end_only or not (quick or args.no_full):
        load_start = os.getloadavg()
        e = out["end_to_end"] = end_to_end()
        e["load_average"], e["load_average_end"] = load_start, os.getloadavg()
        print(
            f"one-run audit n={e['n']}, m={e['m']}: {e['total_seconds']:.0f} s total "
            f"(target <= 600): training {e['training_seconds']:.0f} s, QMIA fit "
            f"{e['qmia_fit_seconds']:.0f} s (target <= 60), bounds {e['bounds_seconds']:.0f} s "
            f"(load average {load_start[0]:.1f} -> {e['load_average_end'][0]:.1f} on "
            f"{os.cpu_count()} cores)"
        )
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


def _print_throughput(t: dict) -> None:
    print(
        f"DP-SGD CNN, batch {BATCH}: dpaudit {t['median_examples_per_second']['dpaudit']:.0f} "
        f"ex/s, plain Opacus {t['median_examples_per_second']['opacus']:.0f} ex/s "
        f"(ratio {t['dpaudit_vs_opacus']:.2f}, target >= 0.9); non-private "
        f"{t['median_examples_per_second']['non_private']:.0f} ex/s "
        f"(private is {t['private_slowdown_vs_non_private']:.2f}x slower)"
    )


if __name__ == "__main__":
    main()
