"""The aGRAPA betting loop compiled by numba, when numba is installed.

A :class:`dpaudit.bounds.BettingEProcess` updates every column of its family from every
observation: the white-box per-step claim test of a DP-SGD run feeds it 24 columns × a few
thousand canary pairs per training step. NumPy evaluates aGRAPA's bets (Waudby-Smith & Ramdas
2023, arXiv:2010.09686, §B.3; stated in :mod:`dpaudit.bounds._sequential`) from prefix sums in
about ten passes over the batch, each with its temporary array; the loop below makes one pass,
about 9× faster, and was the largest part of a white-box audit's time. Without numba
(``pip install 'dpaudit[fast]'``, part of ``dpaudit[test]``) :func:`compiled_agrapa` returns
None and the vectorised NumPy version runs. The two evaluate the same bets; they may differ in
the last bits (the prefix sums are accumulated in another order), which the tests bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpaudit.bounds._compiled import compiled

__all__ = ["compiled_agrapa", "compiled_paired_agrapa"]


def _agrapa_bet_python(s: float, s2: float, k: float, max_bet: float) -> float:
    """aGRAPA's bet from the sums ``s``, ``s2`` of the ``k − 1`` past scaled observations and
    one pseudo-observation (mean 0, second moment 1/4): ``clip(μ̂/m̂₂, 0, max_bet)`` with
    ``μ̂ = s/k``, ``m̂₂ = (s2 + 1/4)/k`` (Waudby-Smith & Ramdas 2023, arXiv:2010.09686, §B.3).
    Both loops call it; compiled before them when numba is installed."""
    bet = (s / k) / ((s2 + 0.25) / k)
    if bet < 0.0:
        return 0.0
    if bet > max_bet:
        return max_bet
    return bet


_agrapa_bet = _agrapa_bet_python  # the loops' bet (its compiled version once they compile)


def _agrapa_loop(
    y: np.ndarray,
    sums: np.ndarray,
    sums_sq: np.ndarray,
    bet_count: float,
    log_wealth: np.ndarray,
    max_bet: float,
) -> np.ndarray:
    """The log-wealth path of aGRAPA bets on the scaled observations ``y`` (columns × n).

    Bet ``t`` of column ``j`` is ``clip(μ̂/m̂₂, 0, max_bet)`` with ``μ̂ = S/k`` and
    ``m̂₂ = (S₂ + 1/4)/k`` from the sums ``S``, ``S₂`` of the observations before it and
    ``k = bet_count + t + 1`` (one pseudo-observation at mean 0, second moment 1/4).
    ``sums``, ``sums_sq`` and ``log_wealth`` are updated in place to their values after the
    batch.
    """
    columns, n = y.shape
    path = np.empty((columns, n))
    for j in range(columns):
        s, s2, w = sums[j], sums_sq[j], log_wealth[j]
        for t in range(n):
            bet = _agrapa_bet(s, s2, bet_count + t + 1.0, max_bet)
            yt = y[j, t]
            w += math.log1p(bet * yt)
            path[j, t] = w
            s += yt
            s2 += yt * yt
        sums[j], sums_sq[j], log_wealth[j] = s, s2, w
    return path


def _compiled_loop(loop: Callable) -> Callable | None:
    """``loop`` compiled, with the :func:`_agrapa_bet` it calls compiled first (numba resolves
    the global at compile time: it must be a compiled function by then)."""
    global _agrapa_bet
    bet = compiled(_agrapa_bet_python)
    if bet is None:
        return None
    _agrapa_bet = bet
    return compiled(loop)


def compiled_agrapa() -> Callable[..., np.ndarray] | None:
    """:func:`_agrapa_loop` compiled by numba (once per process, at first use); None without
    numba (NumPy's version then runs)."""
    return _compiled_loop(_agrapa_loop)


def _paired_agrapa_loop(
    pos: np.ndarray,
    neg: np.ndarray,
    factor: np.ndarray,
    delta: float,
    scale: np.ndarray,
    sums: np.ndarray,
    sums_sq: np.ndarray,
    bet_count: float,
    log_wealth: np.ndarray,
    max_log_wealth: np.ndarray,
    threshold: float,
    max_bet: float,
) -> np.ndarray:
    """:func:`_agrapa_loop` on a DP claim's statistics ``z = pos − factor_j·neg − δ`` of
    paired witness values (one column per ε of the grid, ``factor_j = e^ε_j``, scaled by
    ``scale_j``), formed inside the loop — the same arithmetic, so the same bits, as
    forming ``z`` first — with no path kept: ``sums``, ``sums_sq``, ``log_wealth`` and
    ``max_log_wealth`` are updated in place, and the index of the first observation at which
    each column's log-wealth reaches ``threshold`` (-1: none) is returned. Memory is that of
    the pairs, not of the pairs times the grid."""
    columns, n = factor.size, pos.size
    first = np.full(columns, -1, dtype=np.int64)
    for j in range(columns):
        s, s2, w, top = sums[j], sums_sq[j], log_wealth[j], max_log_wealth[j]
        f, sc = factor[j], scale[j]
        for t in range(n):
            bet = _agrapa_bet(s, s2, bet_count + t + 1.0, max_bet)
            yt = (pos[t] - f * neg[t] - delta) / sc
            if bet > 0.0:  # no bet leaves the wealth as it is (log1p(±0) = ±0)
                w += math.log1p(bet * yt)
                if w > top:
                    top = w
                if first[j] < 0 and w >= threshold:
                    first[j] = t
            s += yt
            s2 += yt * yt
        sums[j], sums_sq[j], log_wealth[j], max_log_wealth[j] = s, s2, w, top
    return first


def compiled_paired_agrapa() -> Callable[..., np.ndarray] | None:
    """:func:`_paired_agrapa_loop` compiled by numba; None without numba (the claim's
    statistics are then formed as an array and fed to the generic update)."""
    return _compiled_loop(_paired_agrapa_loop)
