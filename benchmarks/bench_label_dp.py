"""Benchmark the label-DP trainer (issue 15): throughput against a plain PyTorch loop, and the
wall time of the label-DP audit (demo configuration; the full reproduction's recorded time).

Target: the label-DP trainer (:func:`dpaudit.systems.label_dp.train_network` with ALIBI's
iterative Bayesian targets — the model's softmax as the prior, recomputed at every step, the
most expensive target path) processes at least 0.9× the training examples per second of a
plain PyTorch loop on the same model, data, batch size and optimiser (hard-label
``cross_entropy``, minibatches by ``randperm`` indexing, no DataLoader), measured in the same
run, interleaved (A, B, A, B, …) so that load from other processes hits both alike; the
ratio reported is the median of the per-pair ratios. Both run on one torch thread on the CPU.

Also: the wall time of ``run_label_dp`` on the shipped demo configuration (target ≤ 3 min on
the 2-core machine) and, when ``--full`` points at the ``results.json`` of a full
reproduction run (``dpaudit audit label-dp --config …/label-dp-fashion-mnist.toml --out
DIR``), its recorded total (target ≤ 60 min).

Falls back to scikit-learn digits when Fashion-MNIST is not installed; the JSON says which.

Usage: ``python benchmarks/bench_label_dp.py [--quick] [--full DIR/results.json]`` (quick:
fewer pairs and epochs, no demo run). Writes ``benchmarks/results/label_dp.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import statistics
import time

import numpy as np

from dpaudit.data import load_dataset
from dpaudit.errors import MissingDatasetError
from dpaudit.systems.label_dp import LabelTargets, TrainingSettings, train_network


def data(n_train: int):
    try:
        ds = load_dataset("fashion-mnist", n_train=n_train, n_test=1000, seed=0)
    except MissingDatasetError:
        ds = load_dataset("digits", seed=0)
    return ds


def plain_loop(X: np.ndarray, y: np.ndarray, training: TrainingSettings, seed: int) -> float:
    """Examples per second of a plain PyTorch training loop on the same MLP."""
    from dpaudit.systems._torch_nets import build_mlp, torch_context

    with torch_context(seed, num_threads=training.num_threads) as torch:
        net = torch.nn.Sequential(
            torch.nn.Flatten(), build_mlp(X.shape[1], int(y.max()) + 1, training.hidden)
        )
        opt = torch.optim.Adam(net.parameters(), lr=training.learning_rate)
        data_t = torch.from_numpy(np.array(X, dtype=np.float32))
        labels = torch.from_numpy(np.array(y, dtype=np.int64))
        gen = torch.Generator().manual_seed(seed)
        n, b = X.shape[0], training.batch_size
        start = time.perf_counter()
        for _ in range(training.epochs):
            perm = torch.randperm(n, generator=gen)
            for i in range(0, n, b):
                idx = perm[i : i + b]
                loss = torch.nn.functional.cross_entropy(net(data_t[idx]), labels[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        seconds = time.perf_counter() - start
    return n * training.epochs / seconds


def label_dp_trainer(X, y, num_classes, training: TrainingSettings, seed: int) -> dict:
    """Examples per second of the label-DP trainer with ALIBI's model-prior targets."""
    from dpaudit.mechanisms import LaplaceLabels, label_log_likelihood, noise_labels

    released = noise_labels(LaplaceLabels(0.5), y, num_classes, rng=seed)
    targets = LabelTargets.bayesian(label_log_likelihood(LaplaceLabels(0.5), released), "model")
    start = time.perf_counter()
    net = train_network(X, targets, training=training, rng=seed)
    total = time.perf_counter() - start
    return {"loop": net.examples_per_second, "end_to_end": X.shape[0] * training.epochs / total}


def throughput(ds, pairs: int, epochs: int) -> dict:
    training = TrainingSettings(hidden=(512, 512), epochs=epochs, batch_size=128)
    X, y = ds.X_train, ds.y_train
    plain, ours, ours_e2e, ratios = [], [], [], []
    for k in range(pairs):
        a = plain_loop(X, y, training, seed=k)
        b = label_dp_trainer(X, y, ds.num_classes, training, seed=k)
        plain.append(a)
        ours.append(b["loop"])
        ours_e2e.append(b["end_to_end"])
        ratios.append(b["loop"] / a)
        line = f"  pair {k}: plain {a:,.0f} ex/s, label-DP trainer {b['loop']:,.0f} ex/s"
        print(f"{line} (end to end {b['end_to_end']:,.0f}), ratio {ratios[-1]:.3f}", flush=True)
    return {
        "model": "MLP 784-512-512-10 (Flatten + build_mlp), Adam, batch 128, 1 thread",
        "n_train": int(X.shape[0]),
        "epochs_per_run": epochs,
        "pairs": pairs,
        "plain_examples_per_second": plain,
        "label_dp_examples_per_second": ours,
        "label_dp_end_to_end_examples_per_second": ours_e2e,
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "target_ratio": 0.9,
    }


def demo_wall_time() -> dict:
    from dpaudit.experiments.label_dp.pipeline import run_label_dp
    from dpaudit.experiments.label_dp.settings import load_label_dp_config

    start = time.perf_counter()
    res = run_label_dp(load_label_dp_config("label-dp-demo"))
    return {
        "config": "label-dp-demo",
        "wall_seconds": time.perf_counter() - start,
        "timings": res.timings,
        "target_seconds": 180,
        "rows": [
            {
                "mechanism": e.system,
                "accuracy": e.detail["accuracy"],
                "claim": e.claim.epsilon,
                "epsilon_m": e.lower_bound.epsilon,
            }
            for e in res.entries
        ],
    }


def full_wall_time(path: str | None) -> dict | None:
    if path is None or not os.path.isfile(path):
        return None
    data = json.loads(pathlib.Path(path).read_text())
    return {
        "results": path,
        "wall_seconds": data["timings"]["total"],
        "timings": data["timings"],
        "target_seconds": 3600,
    }


def gpu_table(cpu: dict, gpu: dict) -> str:
    """The full reproduction on the 2-core CPU beside the same config on a CUDA device (both
    ``--json`` results of ``label-dp-fashion-mnist``): accuracy and the valid CGR bound per
    level and mechanism, then each run's total time."""
    names = {"alibi": "ALIBI", "agibi": "AGIBI", "rr": "RR", "pate-fm": "PATE-FM"}
    lines = [
        "| level | mechanism | accuracy CPU / GPU | ε_m ≥ (CGR) CPU / GPU |",
        "|---|---|---:|---:|",
    ]
    for a, b in zip(cpu["entries"], gpu["entries"], strict=True):
        assert (a["system"], a["adversary"]) == (b["system"], b["adversary"])
        acc = f"{a['detail']['accuracy']:.1%} / {b['detail']['accuracy']:.1%}"
        eps = f"{a['lower_bound']['epsilon']:.2f} / {b['lower_bound']['epsilon']:.2f}"
        lines.append(f"| {a['detail']['level']} | {names[a['system']]} | {acc} | {eps} |")
    cpu_s, gpu_s = cpu["timings"]["total"], gpu["timings"]["total"]
    lines.append(f"| all | total time | {cpu_s:,.0f} s / {gpu_s:,.0f} s | |")
    return "\n".join(lines)


def main() -> None:
    from _cli import bench_parser

    parser = bench_parser(__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", default=None, help="results.json of a full reproduction")
    args = parser.parse_args()
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    ds = data(2000 if quick else 6000)
    print(f"label-DP trainer vs plain PyTorch loop on {ds.name} ({ds.num_train} rows)")
    out = {
        "benchmark": "label_dp",
        "dataset": ds.name,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
        "throughput": throughput(ds, pairs=3 if quick else 5, epochs=2 if quick else 3),
    }
    print(f"median ratio {out['throughput']['median_ratio']:.3f} (target >= 0.9)")
    if not quick:
        out["demo"] = demo_wall_time()
        print(f"demo configuration: {out['demo']['wall_seconds']:.0f} s (target <= 180 s)")
    out["full_reproduction"] = full_wall_time(args.full)
    if out["full_reproduction"]:
        print(
            f"full reproduction: {out['full_reproduction']['wall_seconds']:.0f} s "
            "(target <= 3600 s)"
        )
    out["machine"]["load_average_after"] = os.getloadavg()
    dest = pathlib.Path(__file__).parent / "results" / "label_dp.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
