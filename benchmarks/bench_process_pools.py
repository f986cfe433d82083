"""Benchmark: starting the workers of dpaudit's process pools — fork server against spawn.

Every audit run on the ``"processes"`` executor (the DP-SGD bug catalogue, Lifted DP,
worst-case initialisation, the LLM voters) opens a pool of local worker processes. Spawned
workers each start an interpreter and import NumPy, SciPy, PyTorch, Opacus and dpaudit again
(3–4 CPU-seconds per worker); since issue 44 the workers are forked from a fork server that
imported them once (:func:`dpaudit.engine.process_pool_context`).

The same small audit — the DP-SGD bug catalogue's ``noise-scaled-twice`` bug at a fifth of its
runs, on 2 worker processes — runs ``--pools`` times with each start method, interleaved
(spawn, fork server, spawn, …) so that load from other processes hits both alike. The named
baseline is ``"spawn"``, the start method the pools used before. Measured per audit: wall
seconds and the CPU seconds of the whole process tree (this process, its reaped children and,
for the fork server, the server and the workers it reaped, from ``/proc``); the fork server's
first audit (which starts the server and pays its imports) is reported apart from the others.
Both methods must give the same ε bound (checked).

Run: ``python benchmarks/bench_process_pools.py [--pools N] [--quick]`` →
``benchmarks/results/process_pools.json``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import resource
import statistics
import time
from pathlib import Path

from _cli import bench_parser, parse, quick
from dpaudit.engine import _executors
from dpaudit.experiments.dpsgd_bugs import DPSGDBugsSettings, audit_dpsgd_bugs

SETTINGS = DPSGDBugsSettings(
    bugs=("noise-scaled-twice",), runs_scale=0.2, control=False, executor="processes", workers=2
)


def _tree_cpu() -> float:
    """CPU seconds of this process, its reaped children and the fork server's tree."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _audit(method: str) -> dict:
    spawn = multiprocessing.get_context("spawn")
    real = _executors.process_pool_context
    if method == "spawn":
        _executors.process_pool_context = lambda: spawn
    try:
        t0, c0 = time.perf_counter(), _tree_cpu()
        res = audit_dpsgd_bugs(SETTINGS)
        wall, cpu = time.perf_counter() - t0, _tree_cpu() - c0
    finally:
        _executors.process_pool_context = real
    return {"method": method, "wall_s": wall, "cpu_s": cpu,
            "epsilon": res.entries[0].lower_bound.epsilon}  # fmt: skip


def main(argv=None) -> None:
    parser = bench_parser(__doc__, quick_option=True)
    parser.add_argument("--pools", type=int, default=4, help="audits per start method (≥ 2)")
    args = parse(parser, argv)
    pools = 2 if quick(args) else args.pools
    if pools < 2:
        parser.error(f"--pools must be at least 2, got {pools}")
    load = os.getloadavg()[0]
    rows = []
    for _ in range(pools):
        rows += [_audit("spawn"), _audit("forkserver")]
    eps = {r["epsilon"] for r in rows}
    if len(eps) != 1:
        raise SystemExit(f"the start methods gave different bounds: {sorted(eps)}")
    spawn = [r for r in rows if r["method"] == "spawn"]
    fork = [r for r in rows if r["method"] == "forkserver"]

    def med(rs, key):
        return statistics.median(r[key] for r in rs)

    summary = {
        "spawn_cpu_s": med(spawn, "cpu_s"), "spawn_wall_s": med(spawn, "wall_s"),
        "forkserver_first_cpu_s": fork[0]["cpu_s"], "forkserver_first_wall_s": fork[0]["wall_s"],
        "forkserver_cpu_s": med(fork[1:], "cpu_s"), "forkserver_wall_s": med(fork[1:], "wall_s"),
    }  # fmt: skip
    out = {"machine": platform.platform(), "cores": os.cpu_count(), "load_average_at_start": load,
           "load_average_at_end": os.getloadavg()[0], "quick": quick(args), "audit": repr(SETTINGS),
           "epsilon": eps.pop(), "runs": rows, "summary": summary}  # fmt: skip
    print(f"one audit on 2 worker processes (median of {pools}; load {load:.1f}):")
    print(f"  spawn (baseline):  {summary['spawn_cpu_s']:.1f} CPU-s, "
          f"{summary['spawn_wall_s']:.1f} s")  # fmt: skip
    print(f"  fork server:       {summary['forkserver_cpu_s']:.1f} CPU-s, "
          f"{summary['forkserver_wall_s']:.1f} s (first, starting the server: "
          f"{summary['forkserver_first_cpu_s']:.1f} CPU-s, "
          f"{summary['forkserver_first_wall_s']:.1f} s)")  # fmt: skip
    if not quick(args):
        path = Path(__file__).parent / "results" / "process_pools.json"
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
