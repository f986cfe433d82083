"""Shared type aliases and protocols (layer 1)."""

from __future__ import annotations

from typing import Protocol, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["ArrayLike", "FloatArray", "IntArray", "Progress", "ProgressLike", "RngLike"]

FloatArray: TypeAlias = NDArray[np.float64]
IntArray: TypeAlias = NDArray[np.int64]
RngLike: TypeAlias = np.random.Generator | int | np.random.SeedSequence | None


class Progress(Protocol):
    """Where a long computation reports how far it has got.

    ``progress(done, total, description)`` is called with ``done = 0`` before the first unit
    of work, after each unit (``done`` increasing), and with ``done = total`` at the end
    (that call means "finished"). ``description`` names the stage and may change between
    stages, each stage starting again at ``done = 0``. A callback must not raise and must
    not influence the result: the same ``rng`` gives the same numbers with or without it.
    """

    def __call__(self, done: int, total: int, description: str) -> None:
        """Report that ``done`` of ``total`` units of ``description`` are finished."""


ProgressLike: TypeAlias = Progress | bool | None
"""A ``progress`` argument: a :class:`Progress` callback, ``True`` for the default rich
progress bar (extra ``cli``), ``False`` or ``None`` for none. Normalised by
:func:`dpaudit._validate.check_progress`."""
