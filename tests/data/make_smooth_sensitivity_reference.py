"""Regenerate ``smooth_sensitivity_mpmath.json``: GNMax local sensitivity at 60 digits.

Run from the repository root: ``.venv/bin/python tests/data/make_smooth_sensitivity_reference.py``
(about a minute). The oracle (``mp_local_sensitivity`` in
``tests/accounting/test_accounting_smooth.py``) evaluates Papernot et al. 2018
(arXiv:1802.08908) App. B, Algorithms 3–5 with mpmath at 60 significant digits, where q, q0,
q1, B_L and B_U are ordinary numbers with an unbounded exponent. The random cases (seeded
below) stress the regimes where float64 underflows: half have σ ≤ 1, over 40% have λ ≥ 20.
Each case stores its inputs, log q0, log q1, the plateau value and the entries the walk of
Algorithms 4–5 visited (every other entry equals the plateau).
"""

from __future__ import annotations

import json
import pathlib
import sys

import mpmath as mp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "accounting"))
from test_accounting_smooth import ISSUE_CASES, mp_local_sensitivity

SEED = 20240613
NUM_RANDOM = 220


def random_cases(seed: int, n: int) -> list[tuple[list[float], int, float, float]]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        m = int(rng.integers(2, 11))
        n_t = int(rng.integers(1, 151))
        alpha = float(rng.choice([0.05, 0.3, 1.0, 5.0]))
        votes = rng.multinomial(n_t, rng.dirichlet(np.full(m, alpha))).astype(float)
        # σ: half in [0.1, 1], half in [1, 100]; λ: 45% in [20, 100], the rest in [1.5, 20]
        lo, hi = (0.1, 1.0) if i % 2 == 0 else (1.0, 100.0)
        sigma = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        lo, hi = (20.0, 100.0) if rng.random() < 0.45 else (1.5, 20.0)
        lam = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        cases.append((votes.tolist(), n_t, round(sigma, 6), round(lam, 4)))
    return cases


def _entry(votes, n_t, sigma, lam) -> dict:
    out = {"votes": votes, "num_teachers": n_t, "sigma": sigma, "order": lam}
    try:
        res, bf = mp_local_sensitivity(votes, n_t, sigma, lam)
    except ValueError as exc:  # no crossing above log q = -1e4: the analysis does not apply
        out["error"] = str(exc)
        return out
    with mp.workdps(60):
        plateau = bf.ls(bf.q1)
        out["log_q0"] = mp.nstr(mp.log(bf.q0), 25)
        out["log_q1"] = mp.nstr(mp.log(bf.q1), 25)
    out["plateau"] = mp.nstr(plateau, 25)
    out["visited"] = [[d, mp.nstr(x, 25)] for d, x in enumerate(res) if x != plateau]
    return out


def main() -> None:
    cases = list(ISSUE_CASES) + random_cases(SEED, NUM_RANDOM)
    entries = [_entry(*case) for case in cases]
    doc = {
        "description": (
            "GNMax local sensitivity at distance d (Papernot et al. 2018 arXiv:1802.08908 "
            "App. B, Alg. 3-5, union-bound q), mpmath at 60 digits; entries not listed in "
            "'visited' equal 'plateau'"
        ),
        "generator": "tests/data/make_smooth_sensitivity_reference.py",
        "oracle": "tests/accounting/test_accounting_smooth.py::mp_local_sensitivity",
        "seed": SEED,
        "mpmath": mp.__version__,
        "cases": entries,
    }
    path = pathlib.Path(__file__).with_name("smooth_sensitivity_mpmath.json")
    path.write_text(json.dumps(doc, indent=0) + "\n")


if __name__ == "__main__":
    main()
