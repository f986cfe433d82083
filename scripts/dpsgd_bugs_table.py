"""The table of ``docs/workflows/dp-sgd-bugs.md`` from ``benchmarks/results/dpsgd_bugs.json``.

``python scripts/dpsgd_bugs_table.py`` prints it; ``tests/dpsgd_bugs`` checks that the page
shows exactly this table.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "dpsgd_bugs.json"
START, END = "<!-- bugs-table:start -->", "<!-- bugs-table:end -->"


def _setting(r: dict) -> str:
    s = r["setting"]
    return (f"n = {r['fillers']}, B = {s['batch_size']}, {s['epochs']} ep., σ = "
            f"{s['noise_multiplier']:g}, d = {s['dimension']}, δ = {r['delta']:g}")  # fmt: skip


def table(result: dict) -> str:
    """Markdown: per audit, the bug's row and the correct implementation's beside it."""
    rows = [
        "| audit | variant | setting | claim ε | dpaudit ε ≥ (95 %) | refuted | runs (D′/D) | "
        "wall |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    for r in result["catalogue"]:
        rows.append(
            f"| {r['audit']} | {r['variant']} | {_setting(r)} | {r['claim']:.2f} | "
            f"{r['bound']:.2f} | {'**yes**' if r['refutes_claim'] else 'no'} | "
            f"{r['runs']:,} + {r['pilot_runs']:,} pilot | {r['wall_s']:.0f} s |"
        )
    rows += ["", "| correct implementation under | seeds | runs (D′/D) | refuted | largest bound | "
             "claim ε |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for name, c in result["controls"].items():
        rows.append(
            f"| {name} | {c['seeds']} | {c['runs']:,} + {c['pilot_runs']:,} pilot | "
            f"{c['refuted']} | {c['bound_max']:.2f} | {c['claim']:.2f} |"
        )
    rows += ["", f"Opacus {result['opacus']}, torch {result['torch']}; the catalogue (every bug "
             f"and its control) took {result['catalogue_wall_s'] / 60:.0f} min on "
             f"{result['workers']} worker processes (load {result['load_before'][0]:.1f} before, "
             f"{result['load_after'][0]:.1f} after the whole benchmark)."]  # fmt: skip
    return "\n".join(rows)


def page_table(text: str) -> str:
    """The table between the markers of a page."""
    return text[text.index(START) + len(START) : text.index(END)].strip()


if __name__ == "__main__":
    print(table(json.loads(RESULTS.read_text())))
