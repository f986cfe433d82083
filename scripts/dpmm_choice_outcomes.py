"""Per-component figures of a dpmm (or smartnoise AIM) white-box audit on ``tree-flip``.

Reads the evaluation journal of ``dpaudit audit synthetic-data --generators dpmm-mst (or
dpmm-aim, smartnoise-aim) --threat-models white-box,white-box-measurements,white-box-selections
--out DIR`` (the three statistics on the same runs); given several directories, the
evaluation run pairs of them all, pooled (audits of the same settings on other seeds). For
MST it writes, per side, the choices' outcome counts against the closed form (McKenna,
Miklau & Sheldon 2021, arXiv:2108.04978: two exponential-mechanism choices of
ε = √(8(ρ/3)/2), coefficient ε/2, sensitivity 1; on tree-flip the three edge scores tie on D
and t moves them by (−1, +1, −1)), the χ² test of the counts, and both components' mean
shifts with their standard errors. For AIM (McKenna, Mullins, Sheldon & Miklau 2022,
arXiv:2201.12677, Alg. 1, as both libraries implement it) it writes each statistic's per-run
values and mean shift against the analysis (:func:`aim_analysis`): the marginals' exact
Σ 1/σ² and the choices' ρ-zCDP ceiling Σ 2 · ε²/8::

    python scripts/dpmm_choice_outcomes.py DIR [DIR …] OUT.json --recorded NAME.json \
        [--generator dpmm-aim --rounds 4] [--pool COMPONENTS.json]

For AIM, ``--pool`` adds the per-run values of an earlier components file of the same
settings (its journals need not be on this machine) before the journals' own.
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


def aim_analysis(rho: float, rounds: int = 4, columns: int = 3) -> dict:
    """AIM's mean shifts on a pair where t moves one cell of every marginal (McKenna et al.
    2022, Alg. 1): it measures the ``columns`` one-way marginals at σ₀ = √(T/(1.8ρ)) (ρ₀ =
    0.9ρ · columns/T), then splits every round, the last one spending what is left among
    them, 0.9 to its measurement and 0.1 to its choice, however many rounds it takes and
    however it anneals σ and ε. A measurement at σ moves the log-likelihood ratio's mean by
    1/σ² = 2 × its ρ, so the marginals' shift is exactly 2(ρ₀ + 0.9(ρ − ρ₀)), and the choices'
    is at most their ρ-zCDP share, 2 · 0.1(ρ − ρ₀) (2 · ε²/8 each). At T = 4 on 3 columns:
    3/σ₁² + 1/σ₂² with σ₁ = √(4/(1.8ρ)), σ₂ = √(1/(1.8 · 0.325ρ))."""
    init = 0.9 * rho * columns / rounds
    measurements = 2 * (init + 0.9 * (rho - init))
    choice = 2 * 0.1 * (rho - init)
    return {"rounds": rounds, "measurements": measurements, "choice_ceiling": choice,
            "white-box": measurements + choice}  # fmt: skip


def aim_components(rows: np.ndarray, rho: float, rounds: int = 4) -> dict:
    """Each statistic's per-run values on both sides and its mean shift against AIM's
    analysis (:func:`aim_analysis`) at ``rounds`` rounds on tree-flip's 3 columns."""
    out = {"analysis": aim_analysis(rho, rounds)}
    for tm, c in COLUMNS.items():
        d_prime, d = rows[:, c], rows[:, c + 1]
        m, se = shift(d_prime, d)
        out[tm] = {"mean_shift": m, "mean_shift_se": se, "D_prime": d_prime.tolist(),
                   "D": d.tolist()}  # fmt: skip
    return out


def pooled_rows(path: Path) -> tuple[np.ndarray, str]:
    """The journal rows an AIM components file was written from (its per-run values in the
    journal's columns, the timings it does not keep as NaN, ρ last) and its seed label."""
    comp = json.loads(path.read_text())
    cols = [comp[tm][side] for tm in COLUMNS for side in ("D_prime", "D")]
    n = len(cols[0])
    rows = np.column_stack(cols + [np.full(n, np.nan)] * 3 + [np.full(n, comp["rho"])])
    return rows, comp["source"].rsplit("(", 1)[1].split(")")[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dirs", type=Path, nargs="+", help="the audits' --out directories")
    ap.add_argument("output", type=Path)
    ap.add_argument("--recorded", required=True, help="its results files' names in the docs")
    ap.add_argument("--generator", default="dpmm-mst",
                    choices=("dpmm-mst", "dpmm-aim", "smartnoise-aim"))  # fmt: skip
    ap.add_argument("--rounds", type=int, default=4, help="AIM's rounds (its setting)")
    ap.add_argument("--pool", type=Path, help="an earlier AIM components file to pool with")
    a = ap.parse_args()
    rows, seeds = [], []
    for d in a.out_dirs:
        tasks = read_task_checkpoint(d / "checkpoints" / f"{a.generator}.tasks")
        rows += [np.asarray(tasks[i], dtype=float) for i in sorted(tasks)]
        seeds.append(json.loads((d / "results.json").read_text())["settings"]["seed"])
    rows, seeds = np.array(rows), [str(s) for s in seeds]
    if a.pool:
        if a.generator == "dpmm-mst":
            ap.error("--pool takes an AIM components file")
        earlier, label = pooled_rows(a.pool)
        rows = np.vstack([earlier, rows])
        seeds.insert(0, label.removeprefix("seeds ").removeprefix("seed ").removesuffix(", pooled"))
    one = len(seeds) == 1  # else audits of the same settings, their evaluation pairs pooled
    seed = f"seed {seeds[0]}" if one else f"seeds {', '.join(seeds)}, pooled"
    rho = float(rows[0, -1])
    journal = "journal of the run" if one else "journals of the runs"
    if a.generator != "dpmm-mst":
        out = {"source": f"evaluation run pairs of the {journal} recorded in "
                         f"{a.recorded} ({seed}): per run, each white-box statistic",
               "run_pairs": len(rows), "rho": rho,
               **aim_components(rows, rho, a.rounds)}  # fmt: skip
        a.output.write_text(json.dumps(out, indent=2) + "\n")
        return
    cf = closed_form(rho)
    s, m = COLUMNS["white-box-selections"], COLUMNS["white-box-measurements"]
    out = {"source": f"evaluation run pairs of the {journal} recorded in {a.recorded} "
                     f"({seed}): per run, the white-box-selections statistic, the "
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
