"""Per-component figures of a dpmm white-box audit on ``tree-flip``, from its journal.

Reads the evaluation journal of ``dpaudit audit synthetic-data --generators dpmm-mst (or
dpmm-aim) --threat-models white-box,white-box-measurements,white-box-selections --out DIR``
(the three statistics on the same runs). For MST it writes, per side, the choices' outcome
counts against the closed form (McKenna, Miklau & Sheldon 2021, arXiv:2108.04978: two
exponential-mechanism choices of ε = √(8(ρ/3)/2), coefficient ε/2, sensitivity 1; on
tree-flip the three edge scores tie on D and t moves them by (−1, +1, −1)), the χ² test of the
counts, and both components' mean shifts with their standard errors. For AIM at 4 rounds
(McKenna, Mullins, Sheldon & Miklau 2022, arXiv:2201.12677, Alg. 1) it writes each
statistic's per-run values and mean shift against the analysis: the marginals' exact
3/σ₁² + 1/σ₂² and the one choice's ρ-zCDP ceiling 2 · ε²/8::

    python scripts/dpmm_choice_outcomes.py DIR OUT.json --recorded NAME.json [--generator dpmm-aim]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import chisquare

from dpaudit.engine._task_checkpoint import read_task_checkpoint

#: The journal's columns per task: (D ∪ {t}, D) for each threat model in the command's order.
COLUMNS = {"white-box": 0, "white-box-measurements": 2, "white-box-selections": 4}


def closed_form(rho: float) -> dict:
    """The choices' three log-likelihood ratios and their probabilities on each side."""
    e = math.exp(math.sqrt(8 * rho / 3 / 2))
    llr = [math.log(3 * e / (e + 2)), math.log(3 / (e + 2)) + math.log(2 * e / (e + 1)),
           math.log(3 / (e + 2)) + math.log(2 / (e + 1))]  # fmt: skip
    p_dp = [e / (e + 2), 2 / (e + 2) * e / (e + 1), 2 / (e + 2) / (e + 1)]
    return {"orders": ["(a,c) first", "(a,b) or (b,c) first, then (a,c)",
                       "(a,b) or (b,c) first, then the other"],
            "llr": llr, "p_D": [1 / 3] * 3, "p_D_prime": p_dp,
            "mean_shift": float(np.dot(p_dp, llr) - np.mean(llr))}  # fmt: skip


def side(sel: np.ndarray, meas: np.ndarray, cf: dict, probs: list[float]) -> dict:
    """Outcome counts (each run's choice LLR read as its nearest closed-form value)."""
    dev = np.abs(sel[:, None] - np.asarray(cf["llr"])[None, :])
    counts = np.bincount(dev.argmin(1), minlength=3)
    expected = np.asarray(probs) * len(sel)
    test = chisquare(counts, expected)
    return {"counts": counts.tolist(), "expected": expected.tolist(),
            "chi2": float(test.statistic), "p_value": float(test.pvalue),
            "max_deviation_from_closed_form": float(dev.min(1).max()),
            "mean": float(sel.mean()), "variance": float(sel.var(ddof=1)),
            "selections_llr": sel.tolist(), "measurements_llr": meas.tolist()}  # fmt: skip


def shift(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean of ``a`` minus mean of ``b``, with its standard error."""
    return float(a.mean() - b.mean()), float(
        math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    )


def aim_components(rows: np.ndarray, rho: float) -> dict:
    """Each statistic's per-run values on both sides and its mean shift against AIM's
    analysis at 4 rounds on 3 columns (σ₁ = √(4/(1.8ρ)) on the one-way marginals, then one
    round on the remaining 0.325ρ: σ₂ = √(1/(1.8 · 0.325ρ)), ε = √(0.8 · 0.325ρ))."""
    measurements = 1.8 * rho * 3 / 4 + 1.8 * 0.325 * rho
    choice = 2 * 0.8 * 0.325 * rho / 8
    out = {"analysis": {"measurements": measurements, "choice_ceiling": choice,
                        "white-box": measurements + choice}}  # fmt: skip
    for tm, c in COLUMNS.items():
        d_prime, d = rows[:, c], rows[:, c + 1]
        m, se = shift(d_prime, d)
        out[tm] = {"mean_shift": m, "mean_shift_se": se, "D_prime": d_prime.tolist(),
                   "D": d.tolist()}  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path, help="the audit's --out directory")
    ap.add_argument("output", type=Path)
    ap.add_argument("--recorded", required=True, help="its results file's name in the docs")
    ap.add_argument("--generator", default="dpmm-mst", choices=("dpmm-mst", "dpmm-aim"))
    a = ap.parse_args()
    tasks = read_task_checkpoint(a.out_dir / "checkpoints" / f"{a.generator}.tasks")
    rows = np.array([np.asarray(tasks[i], dtype=float) for i in sorted(tasks)])
    rho = float(rows[0, -1])
    seed = json.loads((a.out_dir / "results.json").read_text())["settings"]["seed"]
    if a.generator == "dpmm-aim":
        out = {"source": f"evaluation run pairs of the journal of the run recorded in "
                         f"{a.recorded} (seed {seed}): per run, each white-box statistic",
               "run_pairs": len(rows), "rho": rho, **aim_components(rows, rho)}  # fmt: skip
        a.output.write_text(json.dumps(out, indent=2) + "\n")
        return
    cf = closed_form(rho)
    s, m = COLUMNS["white-box-selections"], COLUMNS["white-box-measurements"]
    out = {"source": f"evaluation run pairs of the journal of the run recorded in {a.recorded} "
                     f"(seed {seed}): per run, the white-box-selections statistic, the "
                     "log-likelihood ratio of dpmm MST's two exponential-mechanism choices, and "
                     "the white-box-measurements statistic",
           "run_pairs": len(rows), "rho": rho, "closed_form": cf,
           "D_prime": side(rows[:, s], rows[:, m], cf, cf["p_D_prime"]),
           "D": side(rows[:, s + 1], rows[:, m + 1], cf, cf["p_D"])}  # fmt: skip
    out["mean_shift"], out["mean_shift_se"] = shift(rows[:, s], rows[:, s + 1])
    out["measurements_mean_shift"], out["measurements_mean_shift_se"] = shift(
        rows[:, m], rows[:, m + 1]
    )
    out["measurements_closed_form"] = 10 * rho / 9
    a.output.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
