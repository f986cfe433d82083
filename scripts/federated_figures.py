"""Figures and numbers of docs/workflows/federated.md, from real runs (about 5 minutes).

1. The composed Gaussian (full participation, every canary in every round, all iterates):
   DP-FedAvg on softmax regression with d = 65,540 parameters, 10 real clients and 1,000
   canary clients each inserted with probability ½, σ set for an exact ε of 1, 4 and 16 at
   δ = 1e-5; 5 seeds each. Per target: the exact ε, the RDP accountant's claim, Andrew et al.'s
   estimate (null variance and fitted variance) and the valid one-run bound (all iterates).
2. The shipped config ``federated-fashion-mnist``: the final-model cosines of the inserted and
   left-out canary clients against the closed-form null N(0, 1/d).

Usage: ``python scripts/federated_figures.py [--out docs/figures]``; prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from dpaudit.conversions import gdp_mu
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
    load_clients,
)

DELTA = 1e-5
ROUNDS = 5


def composed(seeds: int = 5) -> dict[float, dict[str, float]]:
    out = {}
    data_settings = FederatedDataSettings(num_clients=10, examples=200, features=6553, alpha=1.0)
    data = load_clients(data_settings, rng=0)
    for target in (1.0, 4.0, 16.0):
        sigma = float(np.sqrt(ROUNDS) / gdp_mu(target, DELTA))
        rows = []
        for seed in range(seeds):
            s = FederatedSettings(
                seed=seed, data=data_settings,
                training=FederatedTrainingSettings(rounds=ROUNDS, sampling="all",
                                                   clients_per_round=None, noise_multiplier=sigma),
                canaries=FederatedCanarySettings(count=1000),
            )  # fmt: skip
            e = audit_federated(s, data=data).entries[0]
            rows.append((e.claim.epsilon, e.exact.epsilon, e.detail.estimate.epsilon_null_variance,
                         e.detail.estimate.epsilon, e.lower_bound.epsilon))  # fmt: skip
        r = np.mean(rows, axis=0)
        out[target] = dict(zip(("claim", "exact", "estimate_null_variance", "estimate_fitted",
                                "bound"), map(float, r), strict=True))  # fmt: skip
        out[target]["bound_max"] = float(np.max(np.array(rows)[:, 4]))
    return out


def fashion_mnist():
    wf = WORKFLOWS.get("federated")
    s = wf.load_settings("federated-fashion-mnist")
    from dpaudit.attacks import canary_cosines, draw_canary_clients
    from dpaudit.systems import SYSTEMS

    result = wf(s)
    # the same run again, for the cosines themselves (same seeds: the same run)
    from dpaudit._rng import child_seed

    fed, _ = load_clients(s.data, rng=child_seed(s.seed, 0))
    system = SYSTEMS.get(s.system)(s.cell(mean_examples=fed.mean_examples))
    can = draw_canary_clients(s.canaries.count, fed.dimension, inclusion=s.canaries.inclusion,
                              rng=child_seed(s.seed, 1))  # fmt: skip
    run = system.train(fed, can.directions, can.included, rng=child_seed(s.seed, 2))
    cos = canary_cosines(can.directions, run.deltas, run.final)
    return result, cos, can.included


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="docs/figures")
    args = p.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comp = composed()
    print("| exact ε | accountant | estimate (null var.) | estimate (fitted) | bound (mean, max) |")
    for t, r in comp.items():
        print(f"| {t:g} | {r['claim']:.3f} | {r['estimate_null_variance']:.3f} | "
              f"{r['estimate_fitted']:.3f} | {r['bound']:.3f}, {r['bound_max']:.3f} |")  # fmt: skip
    result, cos, inc = fashion_mnist()
    for e in result.entries:
        d = e.detail
        print(d.threat_model, d.statistic, f"bound {e.lower_bound.epsilon:.3f}",
              f"claim {e.claim.epsilon:.3f}", f"estimate {d.estimate.epsilon:.3f} / "
              f"{d.estimate.epsilon_null_variance:.3f}")  # fmt: skip
    print(result.detail, result.timings)

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    targets = list(comp)
    x = np.arange(len(targets))
    keys = [
        ("exact", "exact ε"),
        ("claim", "accountant (RDP)"),
        ("estimate_null_variance", "estimate, null variance"),
        ("estimate_fitted", "estimate, fitted variance"),
        ("bound", "valid bound (95 %)"),
    ]
    for i, (k, label) in enumerate(keys):
        a.bar(x + (i - 2) * 0.16, [comp[t][k] for t in targets], 0.16, label=label)
    a.set_xticks(x, [f"ε = {t:g}" for t in targets])
    a.set_yscale("log")
    a.set_ylabel("ε at δ = 1e-5")
    a.set_title("composed Gaussian: all iterates, 1,000 canary clients")
    a.legend(fontsize=7)
    f = cos.final * np.sqrt(cos.dimension)
    bins = np.linspace(min(f.min(), -4), max(f.max(), 4), 50)
    b.hist(f[inc], bins, alpha=0.6, density=True, label="inserted canary clients")
    b.hist(f[~inc], bins, alpha=0.6, density=True, label="left out")
    grid = np.linspace(bins[0], bins[-1], 200)
    b.plot(grid, np.exp(-(grid**2) / 2) / np.sqrt(2 * np.pi), "k--", label="closed-form null")
    b.set_xlabel("√d · cos(canary, final model)")
    b.set_title("Fashion-MNIST, 500 clients, Poisson q = 1/30, 100 rounds")
    b.legend(fontsize=7)
    fig.tight_layout()
    out = Path(args.out)
    fig.savefig(out / "federated.png", dpi=110)
    summary = {"composed": {str(k): v for k, v in comp.items()},
               "fashion_mnist": [dataclasses.asdict(e.lower_bound) | {
                   "claim": e.claim.epsilon, "estimate": e.detail.estimate.epsilon,
                   "estimate_null_variance": e.detail.estimate.epsilon_null_variance,
                   "threat_model": e.detail.threat_model} for e in result.entries]}  # fmt: skip
    print(json.dumps(summary, indent=1, default=str)[:2000])


if __name__ == "__main__":
    main()
