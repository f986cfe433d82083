"""Handler of the diffprivlib worker (runs in ``.venvs/diffprivlib``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy
and diffprivlib (0.6.6 does not import with scikit-learn ≥ 1.7, which dpaudit uses). One
operation, ``sample``: ``size`` outputs of IBM diffprivlib's ``Laplace(epsilon,
sensitivity=1)`` or ``Geometric(epsilon, sensitivity=1)`` on one value, the mechanism seeded
with ``random_state=seed`` (so the samples reproduce from the audit's seed).
"""

from __future__ import annotations

import numpy as np

DISTRIBUTION = "diffprivlib"


def op_sample(body, arrays):
    """``body``: ``kind`` (laplace | geometric), ``epsilon``, ``value``, ``size``, ``seed``."""
    from diffprivlib.mechanisms import Geometric, Laplace

    eps, seed = float(body["epsilon"]), int(body["seed"])
    if body["kind"] == "laplace":
        m, x = Laplace(epsilon=eps, sensitivity=1.0, random_state=seed), float(body["value"])
    else:
        m, x = Geometric(epsilon=eps, sensitivity=1, random_state=seed), round(body["value"])
    out = np.array([m.randomise(x) for _ in range(int(body["size"]))], dtype=np.float64)
    return {}, {"outputs": out}
