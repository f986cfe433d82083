"""A tiny DP-SGD LiDP audit for the tests (data generated here; seconds, not minutes).

Importable by the tests of this directory and by subprocesses given this directory on
``PYTHONPATH`` (the kill -9 test)."""

from __future__ import annotations

import copy

import numpy as np

from dpaudit import _settings
from dpaudit.experiments.lidp_dpsgd.settings import LiDPDPSGDSettings
from dpaudit.systems import LabelledData

BASE = {
    "seed": 3,
    "data": {"num_train": 32, "canary_pool": 60, "pooling": 1},
    "canaries": {"counts": [4], "kind": "signs", "statistic": "margin"},
    "training": {"steps": 6, "noise_multiplier": 1.0, "learning_rate": 2.0},
    "audit": {"num_runs": 4, "num_tuning_runs": 2},
    "execution": {"executor": "serial"},
}


def tiny_pool(n: int = 200, d: int = 16, classes: int = 4) -> LabelledData:
    """Gaussian class clusters in [0, 1]-ish features."""
    g = np.random.default_rng(0)
    y = g.integers(0, classes, n)
    centres = g.random((classes, d))
    X = (centres[y] + 0.2 * g.standard_normal((n, d))).astype(np.float32)
    X[:, 0] = np.arange(n) / n  # row id (the tests recover which rows were drawn)
    return LabelledData(X, y, classes)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict):
            out[k] = _merge(out.get(k, {}), v)
        else:
            out[k] = v
    return out


def tiny_settings(**over: dict) -> LiDPDPSGDSettings:
    """The tiny settings with per-section overrides, e.g. ``audit={"num_runs": 6}``."""
    return _settings.from_mapping(LiDPDPSGDSettings, _merge(BASE, over))


#: The kill -9 test: 2 × (12 audited + 8 tuning) = 40 training runs with k = 4.
KILL_OVERRIDES = {"audit": {"num_runs": 12, "num_tuning_runs": 8, "run_grid": [6, 12]}}
