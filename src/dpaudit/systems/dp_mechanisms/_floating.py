"""A textbook floating-point Laplace sampler, and the test that breaks it.

Mironov 2012 ("On Significance of the Least Significant Bits for Differential Privacy", CCS)
shows that the naive sampler ``x + s·(−b·ln U)`` (``U`` uniform on a grid of doubles, ``s`` a
random sign) is not ε-DP for any ε: the noise values it can produce form a sparse, known set
of doubles, and ``x + noise`` rounded to a double leaves that set for most outputs when
``x ≠ 0``. An output that is a producible noise value (``o − 0 ∈ N``) is evidence for the
input 0; an output that is not is proof of another input. :func:`naive_laplace_producible`
is that membership test, the feature the audit's classifier uses.
"""

from __future__ import annotations

import numpy as np

from dpaudit.systems.dp_mechanisms._spec import MECHANISMS, MechanismSpec

__all__ = ["naive_laplace", "naive_laplace_producible"]

_GRID = 2.0**53  # U = k / 2^53, k uniform in [1, 2^53)
EPS = 0.1


def naive_laplace(database: np.ndarray, size: int, rng: np.random.Generator, *, eps: float = EPS):
    """``size`` outputs of ``database[0] + Laplace(1/eps)`` drawn the naive way (Mironov 2012,
    CCS, §3: inverse-CDF with a 53-bit uniform and the double logarithm).

    Example:
        >>> out = naive_laplace(np.array([0.0]), 4, np.random.default_rng(0))
        >>> out.shape
        (4, 1)
    """
    k = rng.integers(1, 2**53, size=size, dtype=np.int64)
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    noise = sign * (-(1.0 / eps) * np.log(k / _GRID))
    return (float(database[0]) + noise)[:, None]


def naive_laplace_producible(outputs: np.ndarray, *, eps: float = EPS) -> np.ndarray:
    """1.0 where an output is a noise value the naive sampler can produce from input 0.

    Inverts ``|o| = −(1/eps)·ln(k/2^53)`` to the nearest grid index ``k`` and checks the
    neighbouring indices (Mironov 2012, CCS, §4's attack). Returns an ``(n, 1)`` feature.

    Example:
        >>> out = naive_laplace(np.array([0.0]), 1000, np.random.default_rng(0))
        >>> float(naive_laplace_producible(out).mean())
        1.0
    """
    o = np.abs(np.asarray(outputs, dtype=float)[:, 0])
    k0 = np.rint(np.exp(-o * eps) * _GRID)
    hit = np.zeros(o.size, dtype=bool)
    for step in (-2, -1, 0, 1, 2):
        k = np.clip(k0 + step, 1, _GRID - 1)
        hit |= -(1.0 / eps) * np.log(k / _GRID) == o
    return hit.astype(float)[:, None]


def _features(outputs: np.ndarray) -> np.ndarray:
    return np.hstack([np.asarray(outputs, dtype=float), naive_laplace_producible(outputs)])


MECHANISMS.register(
    "naive-float-laplace",
    MechanismSpec(
        "naive-float-laplace", naive_laplace, EPS, 1,
        "Mironov 2012, CCS (naive inverse-CDF Laplace in double precision)",
        true_epsilon=np.inf, private=False, features=_features,
        note="the output set of input 0 is a sparse set of doubles; other inputs leave it",
    ),
    replace=True,
    tags=("floating-point",),
)  # fmt: skip
