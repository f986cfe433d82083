"""Benchmark: ``dpaudit audit mechanism --mechanism NAME`` with no sizing option (issue 41).

For each mechanism of DP-Sniper's suite (Bichsel et al. 2021, IEEE S&P, at ε = 0.1) that has a
published lower confidence bound, the audit a new user runs — every option at its default, so
the automatic sizing (``mode="auto"``: stages of growing size on the best pairs of the stage
before, the looks paid by Bonferroni, budgets counted in samples) chooses the sizes — and its
bound next to DP-Sniper's published bound. Target (issue 41): ≥ 0.95× the published bound on
each mechanism, ≤ 3 minutes each on 2 cores; the time is judged on the audit's process CPU
seconds (one process; its wall time on a shared machine is recorded beside it with the load).
Baseline in the same run: the fixed audit at the base sizes (what the default was before),
whose bounds fell to 0.42–0.91× on five mechanisms.

On a machine shared with other jobs, run with ``OPENBLAS_NUM_THREADS=1``: a multi-threaded
BLAS spinning for cores that other processes hold makes the logistic fits ~10× slower in CPU
seconds (the setting is recorded in the JSON).

Run: ``python benchmarks/bench_auto_sizing.py`` (writes ``benchmarks/results/auto_sizing.json``);
``--mechanisms a b …`` runs only those (the other rows are kept from the stored results), so the
suite can run as two parts side by side on two cores; ``--quick`` audits three mechanisms.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from dpaudit.experiments import MechanismAuditSettings, audit_mechanism
from dpaudit.systems import MECHANISMS

OUT = Path(__file__).resolve().parent / "results" / "auto_sizing.json"
TARGET_RATIO, TARGET_SECONDS = 0.95, 180.0
QUICK_NAMES = ("laplace", "report-noisy-max2", "svt5")


def suite() -> list[str]:
    """The registered mechanisms with a published DP-Sniper bound, in registry order."""
    return [n for n in MECHANISMS.names() if MECHANISMS.get(n).published_lower is not None]


def audit(name: str) -> dict:
    """The default audit of ``name`` and the fixed audit at the base sizes, side by side."""
    spec = MECHANISMS.get(name)
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit_mechanism(MechanismAuditSettings(mechanism=name))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    base = audit_mechanism(MechanismAuditSettings(mechanism=name, mode="fixed"))
    base_wall = time.perf_counter() - t0
    bound, published = res.entries[0].lower_bound.epsilon, spec.published_lower
    stages = res.timings.get("stages", [])
    return {
        "mechanism": name, "claim": spec.claimed_epsilon, "published_dp_sniper": published,
        "bound": bound, "ratio": bound / published, "wall_s": wall, "cpu_s": cpu,
        "stages": [{"sizes": list(s["sizes"]), "pairs": s["pairs"], "epsilon": s["epsilon"],
                    "seconds": s["seconds"], "values": s["values"],
                    "fit_entries": s["fit_entries"]} for s in stages],
        "base_bound": base.entries[0].lower_bound.epsilon,
        "base_ratio": base.entries[0].lower_bound.epsilon / published, "base_wall_s": base_wall,
        "met": bound >= TARGET_RATIO * published and cpu <= TARGET_SECONDS,
        "load": os.getloadavg()[0],
    }  # fmt: skip


def table(rows: list[dict]) -> str:
    """The Markdown table of the rows (one per mechanism)."""
    lines = ["| mechanism | DP-Sniper (published) | default audit | ratio | CPU (s) | wall (s) "
             "| load | stages (pairs searched) | fixed audit at base sizes | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]  # fmt: skip
    for r in rows:
        pairs = ", ".join(str(s.get("pairs", "?")) for s in r["stages"])
        cpu = f"{r['cpu_s']:.0f}" if "cpu_s" in r else "—"  # rows from before CPU was kept
        lines.append(
            f"| {r['mechanism']} | {r['published_dp_sniper']:.4g} | {r['bound']:.4g} | "
            f"{r['ratio']:.2f} | {cpu} | {r['wall_s']:.0f} | {r['load']:.1f} | "
            f"{len(r['stages'])} ({pairs}) | {r['base_bound']:.4g} | {r['base_ratio']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    from _cli import bench_parser, parse, quick

    ap = bench_parser(__doc__, quick_option=True)
    ap.add_argument("--mechanisms", nargs="+", default=None, help="audit only these")
    args = parse(ap)
    names = suite()
    chosen = args.mechanisms or (list(QUICK_NAMES) if quick(args) else names)
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        ap.error(f"--mechanisms: not in the suite with a published bound: {unknown}")
    fresh = {}
    for name in chosen:
        fresh[name] = row = audit(name)
        print(f"  {name:22s} default {row['bound']:.4f} ({row['ratio']:.2f}× published, "
              f"{row['cpu_s']:.0f} CPU-s, {row['wall_s']:.0f} s, {len(row['stages'])} stages)  "
              f"fixed at base sizes {row['base_bound']:.4f} ({row['base_ratio']:.2f}×)",
              flush=True)  # fmt: skip
        # written after each mechanism, merged with the file as it is now (with
        # --mechanisms, several invocations can share it side by side)
        kept = json.loads(OUT.read_text()) if OUT.exists() and args.mechanisms else {}
        rows = {**{r["mechanism"]: r for r in kept.get("rows", [])}, **fresh}
        ordered = [rows[n] for n in names if n in rows]
        results = {"benchmark": "auto_sizing", "quick": quick(args),
                   "machine": platform.machine(), "cpus": os.cpu_count(),
                   "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                   "rows": ordered}  # fmt: skip
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(table(ordered))
    met = sum(r["met"] for r in ordered)
    print(
        f"{met} of {len(ordered)} at ≥ {TARGET_RATIO}× DP-Sniper's bound within "
        f"{TARGET_SECONDS:.0f} CPU-s; wrote {OUT}"
    )


if __name__ == "__main__":
    main()
