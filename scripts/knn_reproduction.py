"""Re-run the Private-kNN reproduction (Chadha et al. 2024, arXiv:2402.09403, §6, App. D.3).

Runs ``dpaudit audit private-prediction --config <shipped private-knn config> --out DIR`` one
after the other (one process: the machine is shared), samples the 1-minute load average every
30 s while each runs and stores it as ``DIR/load.json``, then writes the reproduction table and
figure (``benchmarks/bench_knn.py --skip-timing``) and the audit wall times in
``benchmarks/results/knn.json`` (``--audits-only``).

Usage::

    python scripts/knn_reproduction.py [--out runs/knn] [--only NAME ...] [--figure PNG]
        [-- extra dpaudit options, e.g. --queries 20 --experiments 1000000]

Names: ``fashion-mnist``, ``rotten-tomatoes``, ``wordnet-nouns`` (the configs
``src/dpaudit/configs/private-knn-<name>.toml``); embeddings are computed on first use and
cached (see the README's Private-kNN section).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAMES = ("fashion-mnist", "rotten-tomatoes", "wordnet-nouns")


def run_one(name: str, out: pathlib.Path, extra: list[str]) -> pathlib.Path:
    """One audit run with its load samples; returns its directory."""
    config = ROOT / "src" / "dpaudit" / "configs" / f"private-knn-{name}.toml"
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(os.getloadavg()[0])
            stop.wait(30.0)

    start, t0 = os.getloadavg(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    exe = pathlib.Path(sys.executable).with_name("dpaudit")  # the console script
    cmd = [str(exe) if exe.is_file() else "dpaudit", "audit", "private-prediction",
           "--config", str(config), "--out", str(d), *extra]  # fmt: skip
    print(" ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True, cwd=ROOT)
    finally:
        stop.set()
        thread.join()
    load = {
        "load_average_start": list(start),
        "load_average_end": list(os.getloadavg()),
        "load_1min_mean_of_samples": round(sum(samples) / max(len(samples), 1), 2),
        "started": t0,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (d / "load.json").write_text(json.dumps(load) + "\n")
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/knn")
    ap.add_argument("--only", action="append", choices=NAMES, default=None)
    ap.add_argument(
        "--figure", default=str(ROOT / "docs" / "figures" / "private-knn-reproduction.png")
    )
    ap.add_argument("extra", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra
    out = pathlib.Path(args.out).resolve()
    dirs = [run_one(n, out, extra) for n in (args.only or NAMES)]
    audits = [a for d in dirs for a in ("--audit", str(d))]
    bench = [sys.executable, str(ROOT / "benchmarks" / "bench_knn.py")]
    subprocess.run([*bench, "--skip-timing", *audits, "--figure", args.figure], check=True)
    subprocess.run([*bench, "--audits-only", *audits], check=True)


if __name__ == "__main__":
    main()
