"""ε of the smartnoise GANs' batches as drawn (violation 4, DPGAN's shuffled pass) against
their claims: ``docs/results/synthetic-data/gan-batches.json`` and its table on the synthetic
data page (``python scripts/gan_batches.py [--write]``; the test checks the page against the
file and recomputes its cheap rows).

Settings are those of the recorded audits: `unique-record` (1,000 rows + t), the libraries'
defaults (DPCTGAN σ = 5, 500 draws a batch; DPGAN σ = 3.5, batches of 64), and DPCTGAN's
small public settings of its white-box audit (50 rows + t, σ = 2, 4 draws a batch); the step
counts are the real-row steps each trains at (ε, 10⁻²) (its accountant charges twice as many).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from dpaudit.accounting import shuffled_gaussian_epsilon, with_replacement_gaussian_epsilon

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results" / "synthetic-data" / "gan-batches.json"
DELTA = 1e-2
#: (generator, sampler, claimed ε, noise multiplier, batch size, rows with t, real-row steps
#: or epochs); the shuffled rows count epochs (⌊n/B⌋ steps each).
ROWS = (
    ("smartnoise-dpctgan", "with replacement", 1.0, 5.0, 500, 1001, 10),
    ("smartnoise-dpctgan", "with replacement", 10.0, 5.0, 500, 1001, 336),
    ("smartnoise-dpctgan, small settings", "with replacement", 1.0, 2.0, 4, 51, 60),
    ("smartnoise-dpctgan, small settings", "with replacement", 10.0, 2.0, 4, 51, 1944),
    ("smartnoise-dpgan", "shuffled", 1.0, 3.5, 64, 1001, 20),
    ("smartnoise-dpgan", "shuffled", 10.0, 3.5, 64, 1001, 652),
)
#: Monte Carlo draws of the shuffled rows' noise, by epochs (the long run takes fewer).
SAMPLES = {20: 200_000, 652: 20_000}


#: The shifts per copy of t, in units of C, and their keys: the other rows' clipped gradients
#: opposite to t's (Chua et al.'s instance), orthogonal to it, and 0 on its direction.
SHIFTS = (("shift_2", 2.0), ("shift_sqrt2", math.sqrt(2.0)), ("shift_1", 1.0))


def row(spec: tuple) -> dict:
    generator, sampler, claim, sigma, size, n, count = spec
    out = {"generator": generator, "sampler": sampler, "claim": claim, "delta": DELTA}
    out |= {"noise_multiplier": sigma, "batch_size": size, "num_records": n}
    for key, shift in SHIFTS:
        if sampler == "shuffled":
            est = shuffled_gaussian_epsilon(
                sigma, size, n, count, DELTA, copy_shift=shift, samples=SAMPLES[count]
            )
            out["epochs"] = count
            out[key] = {"epsilon": est.epsilon, "low": est.low, "high": est.high}
            out[key]["samples"] = est.samples
        else:
            eps = with_replacement_gaussian_epsilon(sigma, size, n, count, DELTA, copy_shift=shift)
            out["steps"] = count
            out[key] = {"epsilon": eps}
    return out


def table(rows: list[dict]) -> str:
    lines = [
        "| generator | batches | claim (ε, δ) | steps | ε of the instance: copies shift 2C | "
        "√2·C | C |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        steps = r.get("steps") or r["epochs"] * (r["num_records"] // r["batch_size"])
        cells = []
        for key, _ in SHIFTS:
            c = r[key]
            cell = f"{c['epsilon']:.3f}"
            if "low" in c:
                cell += f" ({c['low']:.3f}–{c['high']:.3f})"
            cells.append(cell)
        lines.append(
            f"| {r['generator']} | {r['sampler']}, B = {r['batch_size']}, σ = "
            f"{r['noise_multiplier']:g} | ({r['claim']:g}, {r['delta']:g}) | {steps:,} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    rows = [row(spec) for spec in ROWS]
    if "--write" in argv:
        OUT.write_text(json.dumps({"delta": DELTA, "rows": rows}, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
