"""The f-DP rejection recursion compiled by numba, when numba is installed.

The recursion of the one-run f-DP test (Mahloujifar, Melis & Chaudhuri 2024,
arXiv:2410.22235; stated in :mod:`dpaudit.bounds._fdp`) is a scalar loop of up to ``n_c``
steps that the root search in μ runs some twenty times per sweep point. In pure Python each
step costs about a microsecond, which made the f-DP sweeps most of a white-box DP-SGD audit's
time. :func:`compiled_margin` compiles the one loop :mod:`dpaudit.bounds._fdp` writes to
machine code with numba (``pip install 'dpaudit[fast]'``, part of ``dpaudit[test]``); without
numba it returns None and the loop runs as Python. Both evaluate the same arithmetic in the
same order in IEEE doubles; Φ⁻¹ is SciPy's ``ndtri`` (Cephes) compiled and the standard
library's AS 241 in Python, which agree to about 2·10⁻¹⁵. The tests check that the two give
the same sign on a grid of points and the same μ* to the search tolerance.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Callable

__all__ = ["Margin", "compiled_margin"]

#: ``(mu, m, n_g, n_c, tau, K) -> r + h − n_g/m`` of the rejection recursion.
Margin = Callable[[float, int, int, int, float, int], float]
_Unary = Callable[[float], float]


@functools.cache
def compiled_margin(loop: Callable[[_Unary, _Unary, _Unary], Margin]) -> Margin | None:
    """``loop(ndtri, erfc, exp)`` compiled by numba with SciPy's ``ndtri``; None without numba.

    Compiled once per process, at first use (under a second). ``loop`` builds the margin
    function from the three scalar functions it calls (:func:`dpaudit.bounds._fdp._margin_loop`).
    """
    try:
        import numba
        from numba.extending import get_cython_function_address
    except ImportError:  # the optional extra is not installed: the Python loop runs
        return None
    address = get_cython_function_address("scipy.special.cython_special", "ndtri")
    ndtri = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)
    return numba.njit(nogil=True)(loop(ndtri, math.erfc, math.exp))
