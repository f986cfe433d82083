"""The tables of ``docs/workflows/mechanism.md`` from ``benchmarks/results/mechanism_suite.json``.

``python scripts/mechanism_suite_tables.py`` prints them; ``tests/mechanism_audit`` checks
that the page shows exactly these tables (between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` markers, NAME one of :data:`TABLES`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "mechanism_suite.json"


def _eps(x: float | None) -> str:
    if x is None:
        return "—"
    if math.isinf(x):
        return "∞"
    return f"{x:.4f}" if x < 1 else f"{x:.4g}"


def _ratio(a: float, b: float | None) -> str:
    return "—" if b is None or math.isinf(b) or b == 0 else f"{a / b:.2f}"


def _yes(flag: bool) -> str:
    return "**yes**" if flag else "no"


def _sizes(r: dict) -> str:
    train = "—" if r["attack"] == "llr" else f"{r['train_samples']:,}"
    return f"{train} + {r['select_samples']:,} + {r['samples']:,}"


def _pair(r: dict) -> str:
    a, b = r["pair"]
    return f"{a} → {b}"


def _event(r: dict, width: int = 110) -> str:
    e = r["event"]
    return f"`{e if len(e) <= width else e[:width] + '...'}`"


def _table(columns: list[str], rows: list[str]) -> str:
    """A Markdown table: the header of ``columns``, its rule, then ``rows`` (ready lines)."""
    head = "| " + " | ".join(columns) + " |"
    return "\n".join([head, "|" + "---|" * len(columns), *rows])


def suite(result: dict) -> str:
    """Per suite mechanism: claim, true ε, bound, DP-Sniper's, the ratios, attack, sizes."""
    columns = ["mechanism", "claim ε", "true ε", "dpaudit bound [95 % CI]", "DP-Sniper's bound",
               "÷ DP-Sniper's", "÷ true ε", "refutes", "attack",
               "samples per input (train + select + fresh)", "wall time"]  # fmt: skip
    rows = []
    for r in result["rows"]:
        b = _eps(r["bound"])
        rows.append(
            f"| `{r['mechanism']}` | {_eps(r['claim'])} | {_eps(r['true_epsilon'])} | "
            f"{b} [{b}, ∞) | {_eps(r['published_dp_sniper'])} | "
            f"{_ratio(r['bound'], r['published_dp_sniper'])} | "
            f"{_ratio(r['bound'], r['true_epsilon'])} | {_yes(r['refutes_claim'])} | "
            f"{r['attack']} | {_sizes(r)} | {r['wall_s']:.1f} s |"
        )
    return _table(columns, rows)


def witnesses(result: dict) -> str:
    """The pair, event and counts of every refuted suite mechanism."""
    columns = ["violation", "witness pair (a → a′)", "event S",
               "count in S: a, a′ (of fresh samples)"]  # fmt: skip
    rows = [
        f"| `{r['mechanism']}` | {_pair(r)} | {_event(r)} | "
        f"{r['count_a']:,}, {r['count_b']:,} of {r['samples']:,} |"
        for r in result["rows"]
        if r["refutes_claim"]
    ]
    return _table(columns, rows)


def baseline(result: dict) -> str:
    """dpaudit against the loop + scikit-learn audit, at the same bound."""
    columns = ["mechanism",
               "loop + scikit-learn: bound; samples per input (train = select, fresh); wall",
               "dpaudit at a bound at least as high: bound; samples; wall",
               "speed-up at the same bound"]  # fmt: skip
    rows = [
        f"| `{b['mechanism']}` | {b['baseline_bound']:.4f}; {b['baseline_train_samples']:,}, "
        f"{b['baseline_samples']:,}; {b['baseline_wall_s']:.1f} s | "
        f"{b['dpaudit_bound']:.4f}; {b['dpaudit_train_samples']:,}, "
        f"{b['dpaudit_samples']:,}; {b['dpaudit_wall_s']:.2f} s | {b['speedup']:.0f}× |"
        for b in result["baseline"]
    ]
    return _table(columns, rows)


def statdp(result: dict) -> str:
    """StatDP's list: correct or not, the bound, whether it refutes, the witness."""
    columns = ["mechanism", "correct", "claim ε", "true ε", "dpaudit bound", "refutes", "attack",
               "witness pair (a → a′)", "event S", "count in S: a, a′", "wall time"]  # fmt: skip
    rows = [
        f"| `{r['mechanism']}` | {'yes' if r['private'] else '**no**'} | "
        f"{_eps(r['claim'])} | {_eps(r['true_epsilon'])} | {_eps(r['bound'])} | "
        f"{_yes(r['refutes_claim'])} | {r['attack']} | {_pair(r)} | {_event(r, 80)} | "
        f"{r['count_a']:,}, {r['count_b']:,} of {r['samples']:,} | {r['wall_s']:.1f} s |"
        for r in result["statdp"]
    ]
    return _table(columns, rows)


def samplers(result: dict) -> str:
    """Mironov's membership test on each library's Laplace sampler."""
    columns = ["sampler", "membership rate, input 0", "membership rate, input 1",
               "grid of input 0's outputs", "input 1's outputs on it"]  # fmt: skip
    rows = [
        f"| `{s['mechanism']}` | {s['membership_rate_input0']:.4f} | "
        f"{s['membership_rate_input1']:.4f} | 2^{round(math.log2(s['grid_input0']))} | "
        f"{'yes' if s['input1_on_grid'] else 'no'} |"
        for s in result["library_samplers"]
    ]
    return _table(columns, rows)


#: Marker name → table function.
TABLES = {"suite": suite, "witnesses": witnesses, "baseline": baseline, "statdp": statdp,
          "samplers": samplers}  # fmt: skip


def page_table(text: str, name: str) -> str:
    """The table between a page's ``<!-- name:start -->`` and ``<!-- name:end -->``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    return text[text.index(start) + len(start) : text.index(end)].strip()


def replace_tables(text: str, result: dict) -> str:
    """The page with every marked table regenerated."""
    for name, fn in TABLES.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        a, b = text.index(start) + len(start), text.index(end)
        text = text[:a] + "\n" + fn(result) + "\n" + text[b:]
    return text


if __name__ == "__main__":
    import sys

    res = json.loads(RESULTS.read_text())
    if sys.argv[1:] == ["--write"]:
        page = ROOT / "docs" / "workflows" / "mechanism.md"
        page.write_text(replace_tables(page.read_text(), res))
    else:
        for name, fn in TABLES.items():
            print(f"<!-- {name} -->\n{fn(res)}\n")
