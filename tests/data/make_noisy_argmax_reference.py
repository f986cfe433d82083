"""Regenerate ``noisy_argmax_mpmath.json``: log Q_c(H) at 50 digits with mpmath.

Run from the repository root: ``.venv/bin/python tests/data/make_noisy_argmax_reference.py``.
Each integral of paper 000 Eq. 4 is centred at its mode (mpmath root finder) and split at
multiples of its local scale; tanh-sinh quadrature at 50 significant digits.
"""

from __future__ import annotations

import json
import pathlib
import sys

import mpmath as mp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "mechanisms"))
from test_noisy_argmax import CASES, mp_log_q


def main() -> None:
    rng = np.random.default_rng(5)
    c100 = rng.multinomial(250, rng.dirichlet(np.full(100, 0.2))).astype(float)
    order = np.argsort(c100)
    entries = []
    for votes, sigma in CASES:
        logs = [
            mp.nstr(mp_log_q(tuple(map(float, votes)), sigma, c), 30) for c in range(len(votes))
        ]
        entries.append(
            {
                "votes": list(map(float, votes)),
                "sigma": sigma,
                "classes": list(range(len(votes))),
                "log_q": logs,
            }
        )
    check = [int(order[-1]), int(order[50]), int(order[0])]
    logs = [mp.nstr(mp_log_q(tuple(c100.tolist()), 10.0, c), 30) for c in check]
    entries.append({"votes": c100.tolist(), "sigma": 10.0, "classes": check, "log_q": logs})
    out = {
        "description": "log Q_c(H), Gaussian noisy argmax (paper 000 Eq. 4), mpmath 50 digits",
        "generator": "tests/data/make_noisy_argmax_reference.py",
        "mpmath": mp.__version__,
        "cases": entries,
    }
    path = pathlib.Path(__file__).with_name("noisy_argmax_mpmath.json")
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
