"""Per-run figures of a PrivBayes white-box audit, against both statistics' exact mean shifts.

Reads the evaluation journal of ``dpaudit audit synthetic-data --generators
datasynthesizer-privbayes --threat-models white-box-laplace,white-box-network --out DIR``
(both statistics on the same runs) and writes, per statistic, its per-run values on D ∪ {t}
and on D, its mean shift with the standard error, and the exact shifts: the noisy counts'
(:func:`dpaudit.attacks._synthetic_privbayes.laplace_llr_mean_shift`, with their bound;
PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017) with d columns and degree k
releases d − k count vectors at Laplace scale ``b = (d − k)/(ε/2)``, each moved by one in t's
cell) and the network's (:func:`~dpaudit.attacks._synthetic_privbayes.network_llr_mean_shift`
at the network's budget ε/2)::

    python scripts/privbayes_counts_shift.py DIR OUT.json --recorded NAME.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_privbayes import laplace_llr_mean_shift, network_llr_mean_shift
from dpaudit.engine._task_checkpoint import read_task_checkpoint

#: The journal's columns per task: (D ∪ {t}, D) for each threat model in the command's order.
COLUMNS = {"white-box-laplace": 0, "white-box-network": 2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path, help="the audit's --out directory")
    ap.add_argument("output", type=Path)
    ap.add_argument("--recorded", required=True, help="its results file's name in the docs")
    a = ap.parse_args()
    settings = json.loads((a.out_dir / "results.json").read_text())["settings"]
    if settings["threat_models"] != list(COLUMNS):
        raise SystemExit(f"the audit must run {list(COLUMNS)}, got {settings['threat_models']}")
    tasks = read_task_checkpoint(a.out_dir / "checkpoints" / "datasynthesizer-privbayes.tasks")
    rows = np.array([np.asarray(tasks[i], dtype=float) for i in sorted(tasks)])
    eps, vectors = settings["epsilon"], settings["columns"] - settings["degree"]
    scale = vectors / (eps / 2)
    wc = WORST_CASE_DATASETS.get(settings["dataset"])(columns=settings["columns"],
                                                      rows=settings["rows"])  # fmt: skip
    network = network_llr_mean_shift(wc.D, wc.target, wc.domain, eps / 2, settings["degree"])
    out = {"source": f"evaluation run pairs of the journal of the run recorded in "
                     f"{a.recorded} (seed {settings['seed']}): per run, each white-box statistic",
           "run_pairs": len(rows), "epsilon": eps, "vectors": vectors, "scale": scale,
           "analysis": {"mean_shift": laplace_llr_mean_shift([scale] * vectors),
                        "bound": vectors / scale, "network_mean_shift": network}}  # fmt: skip
    for tm, c in COLUMNS.items():
        d_prime, d = rows[:, c], rows[:, c + 1]
        se = math.sqrt(d_prime.var(ddof=1) / len(d_prime) + d.var(ddof=1) / len(d))
        out[tm] = {"mean_shift": float(d_prime.mean() - d.mean()), "mean_shift_se": se,
                   "D_prime": d_prime.tolist(), "D": d.tolist()}  # fmt: skip
    a.output.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
