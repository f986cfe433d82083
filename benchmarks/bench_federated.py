"""Benchmark: the federated audit (issue 43) — the canary clients' cost and a 200-round run.

Targets (issue 43): 1,000 canary clients add at most 10 % to a training run's time, measured
in the same run; 200 rounds × 100 clients of the Fashion-MNIST MLP in at most 15 minutes on
2 cores.

1. The shipped config ``federated-fashion-mnist`` (500 clients, 1,000 canary clients, Poisson
   q = 1/30, 100 rounds, five local steps): the canary clients' cost is drawing their
   directions, their updates inside the rounds (``FedAvgRun.seconds["canaries"]``) and their
   cosines with the deltas, against the training time without their updates.
2. 200 rounds, 100 clients per round (Poisson, 1,000 clients, Dirichlet α = 0.5 over 50,000
   Fashion-MNIST examples), 1,000 canary clients, five local steps: the training time of
   softmax regression and of the MLP (one hidden layer of 128 ReLU units, d = 101,770; the
   hidden width of dpaudit's DP-SGD MLP).

Run: ``python benchmarks/bench_federated.py [--quick]`` → ``benchmarks/results/federated.json``.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from _cli import bench_parser, parse, quick
from dpaudit.experiments import WORKFLOWS


def _run(overrides: dict) -> dict:
    wf = WORKFLOWS.get("federated")
    s = wf.load_settings("federated-fashion-mnist", **overrides)
    r = wf(s)
    t = dict(r.timings)
    canary = t["canary_draw"] + t["canary_updates"] + t["canary_cosines"]
    without = t["training"] - t["canary_updates"]
    return {
        "settings": overrides,
        "timings": t,
        "canary_seconds": canary,
        "training_without_canaries": without,
        "canary_overhead": canary / without,
        "test_accuracy": r.detail.test_accuracy,
        "mean_participants": r.detail.mean_participants,
    }


def main(argv=None) -> None:
    args = parse(bench_parser(__doc__, quick_option=True), argv)
    small = quick(args)
    load = os.getloadavg()[0]  # the machine may be shared: the figures are wall times
    config = _run({"training.rounds": 20} if small else {})
    scale = {
        "data.num_clients": 1000,
        "data.examples": 50000,
        "training.rounds": 20 if small else 200,
        "training.clients_per_round": 100,
    }
    big = _run(scale)
    mlp = _run({**scale, "training.hidden": 128})
    out = {
        "machine": platform.platform(),
        "load_average_at_start": load,
        "quick": small,
        "config": config,
        "rounds_200_clients_100": big,
        "rounds_200_clients_100_mlp": mlp,
        "targets": {"canary_overhead": 0.10, "training_seconds_200_rounds": 900.0},
    }
    for name, r in (("config", config), ("200 rounds x 100 clients", big),
                    ("200 rounds x 100 clients, MLP", mlp)):  # fmt: skip
        t, c, o = r["timings"]["training"], r["canary_seconds"], 100 * r["canary_overhead"]
        print(f"{name}: training {t:.1f} s, canaries {c:.2f} s ({o:.1f} % of training without "
              f"them), accuracy {r['test_accuracy']:.3f}")  # fmt: skip
    path = Path(__file__).parent / "results" / "federated.json"
    if not small:
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
