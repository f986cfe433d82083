"""Shared type aliases (layer 1)."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["ArrayLike", "FloatArray", "IntArray", "RngLike"]

FloatArray: TypeAlias = NDArray[np.float64]
IntArray: TypeAlias = NDArray[np.int64]
RngLike: TypeAlias = np.random.Generator | int | np.random.SeedSequence | None
