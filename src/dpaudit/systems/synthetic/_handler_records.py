"""Record layouts the smartnoise-synth and dpmm workers share (a helper script beside their
handlers, imported by them in the libraries' environments; standard library and numpy only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def aim_choice(qualities: dict, key: Any, epsilon: float, sensitivity: float, frame: dict,
               column: Callable[[Any], int]) -> dict:  # fmt: skip
    """One AIM exponential-mechanism choice (McKenna, Mullins, Sheldon & Miklau 2022,
    arXiv:2201.12677, Alg. 1) in the layout the white-box statistic reads: the candidate
    cliques (columns as indices, ``column``), the scores ``q`` the library drew from, ε, the
    sensitivity, the index chosen, each candidate's weight, its bias term √(2/π) σ n_cl and
    the model estimate ``xhat`` of its marginal. ``frame``: the locals of the library's
    ``worst_approximated`` (its ``candidates`` weights, ``model`` and ``sigma``)."""
    cands, model, sigma, keys = frame["candidates"], frame["model"], frame["sigma"], list(qualities)
    return {
        "candidates": [[column(c) for c in cl] for cl in keys],
        "q": [float(qualities[cl]) for cl in keys], "epsilon": float(epsilon),
        "sensitivity": float(sensitivity), "chosen": keys.index(key),
        "weights": [float(cands[cl]) for cl in keys],
        "bias": [float(np.sqrt(2 / np.pi) * sigma * model.domain.size(cl)) for cl in keys],
        "xhat": [[float(v) for v in np.asarray(model.project(cl).datavector()).ravel()]
                 for cl in keys],
    }  # fmt: skip
