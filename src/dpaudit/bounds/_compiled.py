"""Loops compiled by numba when numba is installed (``pip install 'dpaudit[fast]'``, part of
``dpaudit[test]``).

A few statistics run a scalar loop many times: the f-DP rejection recursion
(:mod:`dpaudit.bounds._fdp_kernel`), aGRAPA's bets (:mod:`dpaudit.bounds._sequential_kernel`)
and the δ term of the one-run p-value (:mod:`dpaudit.bounds._one_run`). Each loop is written
once as plain Python over floats and NumPy arrays; :func:`compiled` returns it compiled, or
None without numba, and the caller then runs its NumPy (or Python) version. The tests check
that both give the same numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

__all__ = ["compiled"]

F = TypeVar("F", bound=Callable)


@functools.cache
def compiled(loop: F) -> F | None:
    """``loop`` compiled by numba (at its first call), None without numba. The machine code is
    cached on disk (numba's ``cache=True``, beside the module, keyed on its source), so later
    processes — test workers, pool workers — load it instead of compiling again."""
    try:
        import numba
    except ImportError:  # the optional extra is not installed
        return None
    return numba.njit(nogil=True, cache=True)(loop)
