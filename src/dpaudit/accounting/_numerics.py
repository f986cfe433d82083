"""Log-space helpers shared by the accounting modules."""

from __future__ import annotations

import numpy as np

__all__ = ["log1mexp"]


def log1mexp(x: np.ndarray | float) -> np.ndarray:
    """``log(1 − eˣ)`` for ``x ≤ 0``, accurate everywhere (Mächler 2012, "Accurately computing
    log(1 − exp(−|a|))").

    Uses ``log1p(−eˣ)`` when ``x < −1`` and ``log(−expm1(x))`` otherwise; ``−inf`` at 0.
    Positive ``x`` gives NaN (callers mask it).
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x < -1.0, np.log1p(-np.exp(np.minimum(x, -1.0))), np.log(-np.expm1(x)))
