"""Benchmark: the DP-SGD bug catalogue in sequential mode against the fixed audit (issue 41).

For each audit of :data:`dpaudit.experiments.dpsgd_bugs.BUG_AUDITS` and each seed, the bug
audited with ``mode="sequential"`` (the evaluation runs streamed through the anytime-valid test
of the accountant's claim, :class:`dpaudit.bounds.DPClaimEProcess`, stopping at the first
rejection), and the correct implementation (Poisson sampling, the control) in the same mode
and setting. Reported per audit: the evaluation run pairs each seed used to reject (the pilot
that fixes the threshold is the same in both modes and is not counted), their median against
the fixed audit's run pairs, how many seeds rejected, and how many control seeds were
rejected (must be 0). Targets (issue 41): median ≤ 1/3 of the fixed audit's runs; the control
never rejected over 20 seeds.

The two audits with thousands of runs (``shuffle``, ``batch-clipping``) cost ~10 CPU-min per
seed and ``opacus-571`` ~1; ``--seeds`` and ``--control-scale`` size the run (the controls of
those audits stream a fraction of the runs, as in ``bench_dpsgd_bugs.py``; a control that
streams fewer runs than the bug can only reject less often, so those rows are labelled).
Results are written after every seed, and a rerun keeps the (audit, seed) cells already
recorded (``--fresh`` starts over).

Run: ``python benchmarks/bench_dpsgd_bugs_sequential.py [--audits a,b] [--seeds 20]`` →
``benchmarks/results/dpsgd_bugs_sequential.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

from dpaudit.experiments.dpsgd_bugs import BUG_AUDITS, DPSGDBugsSettings, audit_bug

OUT = Path(__file__).parent / "results" / "dpsgd_bugs_sequential.json"
#: Run counts of the controls, as a fraction of the audit's (the thousand-run audits).
CONTROL_SCALE = {"shuffle": 0.1, "batch-clipping": 0.25}


def _cell(name: str, seed: int, control_scale: float) -> dict:
    audit = BUG_AUDITS.get(name)
    t0 = time.process_time()
    bug = audit_bug(audit, audit.bug, DPSGDBugsSettings(seed=seed, mode="sequential"))
    t1 = time.process_time()
    scale = CONTROL_SCALE.get(name, 1.0) * control_scale
    ctrl = audit_bug(
        audit, "poisson", DPSGDBugsSettings(seed=seed, mode="sequential", runs_scale=scale)
    )
    t2 = time.process_time()
    return {
        "audit": name,
        "seed": seed,
        "bug_rejected": "claim rejected" in bug.lower_bound.note,  # the test's stop
        "bug_refutes": bool(bug.gap.refutes_claim),  # the bound above the claim
        "bug_runs": int(bug.detail.runs),
        "bug_epsilon": round(float(bug.lower_bound.epsilon), 4),
        "claim": round(float(bug.claim.epsilon), 4),
        "control_rejected": "claim rejected" in ctrl.lower_bound.note,
        "control_runs": int(ctrl.detail.runs),
        "fixed_runs": audit.runs,
        "bug_cpu_seconds": round(t1 - t0, 1),
        "control_cpu_seconds": round(t2 - t1, 1),
    }


def _summary(cells: list[dict]) -> list[dict]:
    rows = []
    for name in BUG_AUDITS.names():
        mine = [c for c in cells if c["audit"] == name]
        if not mine:
            continue
        runs = [c["bug_runs"] if c["bug_rejected"] else float("inf") for c in mine]
        median = statistics.median(runs)
        fixed = mine[0]["fixed_runs"]
        rows.append({
            "audit": name, "seeds": len(mine), "fixed_runs": fixed,
            "bug_rejected_seeds": sum(c["bug_rejected"] for c in mine),
            "median_runs_to_rejection": median,
            "ratio": round(median / fixed, 3) if median != float("inf") else None,
            "control_rejected_seeds": sum(c["control_rejected"] for c in mine),
            "control_runs": mine[0]["control_runs"],
            "cpu_seconds": round(sum(c["bug_cpu_seconds"] + c["control_cpu_seconds"]
                                     for c in mine), 1),
        })  # fmt: skip
    return rows


DOCS = Path(__file__).parents[1] / "docs" / "workflows" / "dp-sgd-bugs.md"
MARKERS = ("<!-- sequential-table:start -->", "<!-- sequential-table:end -->")


def docs_table(summary: list[dict]) -> str:
    """The docs page's table (``docs/workflows/dp-sgd-bugs.md``, between :data:`MARKERS`)."""
    lines = [
        "| audit | fixed audit's run pairs | sequential: median run pairs to rejection | ratio "
        "| bug rejected | control rejected (its run pairs) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in summary:
        med = r["median_runs_to_rejection"]
        med_s = "not rejected" if med == float("inf") else f"{med:,.0f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(
            f"| `{r['audit']}` | {r['fixed_runs']:,} | {med_s} | {ratio} | "
            f"{r['bug_rejected_seeds']} of {r['seeds']} | {r['control_rejected_seeds']} of "
            f"{r['seeds']} ({r['control_runs']:,}) |"
        )
    return "\n".join(lines)


def _write_docs(summary: list[dict]) -> None:
    text = DOCS.read_text()
    start, end = MARKERS
    i, j = text.index(start) + len(start), text.index(end)
    DOCS.write_text(text[:i] + "\n" + docs_table(summary) + "\n" + text[j:])


def main(argv: list[str] | None = None) -> int:
    from _cli import bench_parser, parse

    parser = bench_parser(__doc__)
    parser.add_argument("--audits", default=",".join(BUG_AUDITS.names()),
                        help="comma-separated audits (default: all)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0 … N−1 (default 20)")
    parser.add_argument("--control-scale", type=float, default=1.0,
                        help="further fraction of the runs the controls stream")  # fmt: skip
    parser.add_argument("--fresh", action="store_true", help="ignore recorded cells")
    args = parse(parser, argv)
    names = [a for a in args.audits.split(",") if a]
    for name in names:
        BUG_AUDITS.get(name)  # an unknown name fails before anything runs
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    old = [] if args.fresh or not OUT.exists() else json.loads(OUT.read_text())["cells"]
    cells = list(old)
    done = {(c["audit"], c["seed"]) for c in cells}
    for name in names:
        for seed in range(args.seeds):
            if (name, seed) in done:
                continue
            cells.append(c := _cell(name, seed, args.control_scale))
            print(f"{name:>20} seed {seed:>2}: bug {'rejected' if c['bug_rejected'] else 'not'}"
                  f" at {c['bug_runs']} of {c['fixed_runs']} runs; control "
                  f"{'REJECTED' if c['control_rejected'] else 'not rejected'} "
                  f"({c['control_runs']} runs)", flush=True)  # fmt: skip
            OUT.write_text(json.dumps({
                "benchmark": "dpsgd_bugs_sequential",
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                "cells": cells, "summary": _summary(cells),
            }, indent=2) + "\n")  # fmt: skip
    _write_docs(_summary(cells))
    for r in _summary(cells):
        print(f"{r['audit']:>20}: median {r['median_runs_to_rejection']} of {r['fixed_runs']} "
              f"runs (ratio {r['ratio']}), bug rejected {r['bug_rejected_seeds']}/{r['seeds']},"
              f" control rejected {r['control_rejected_seeds']}/{r['seeds']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
