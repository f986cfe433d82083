"""Exact noisy-argmax draws from the joint law of (maximum, argmax): a ziggurat over cells.

For standardised votes ``v`` (noise ``N(0, 1)`` per class) the noisy maximum
``M = max_c (v_c + Z_c)`` and its argmax ``J`` have the joint density

    g_j(t) = φ(t − v_j) · ∏_{i≠j} Φ(t − v_i),          Σ_j ∫ g_j = 1

(the integrand of Q_j(H); Chadha et al. 2024, arXiv:2402.09403, Eq. 4; Wang et al. 2022,
arXiv:2209.10732, Thm 1), so one draw of the mechanism's output is one draw of ``J`` under
this law. This module samples it by rejection from a piecewise-constant envelope, the way
the ziggurat method samples a single normal (Marsaglia & Tsang 2000, J. Stat. Softw. 5(8)):
the naive simulation spends one ziggurat normal per class, this about one uniform per draw.

**Cells.** ``t ∈ [lo, hi)`` is cut into bins of width ``w = 2⁻⁸``; on bin ``[a, b]`` every
``g_j`` is bracketed *rigorously*, because ``∏_{i≠j} Φ(t − v_i)`` increases in t and
``φ(t − v_j)`` is unimodal at ``v_j``:

    L_j = φ_min · ∏_{i≠j} Φ(a − v_i)  ≤  g_j(t)  ≤  φ_max · ∏_{i≠j} Φ(b − v_i) = U_j,

with ``φ_max = φ(distance from v_j to [a, b])``, ``φ_min = min(φ(a − v_j), φ(b − v_j))``,
both widened by a relative ``1e-12·(1 + |log|)`` against rounding. Outside the bins the
envelopes are normal tails: ``g_j(t) ≤ φ(t − v_j)`` on ``t ≥ hi`` (mass ``Φ̄(hi − v_j)``)
and ``g_j(t) ≤ φ(t − v_j)·∏_{i≠j} Φ(lo − v_i)`` on ``t < lo`` (mass ``F(lo) = ∏_i
Φ(lo − v_i)``). ``lo`` (≥ −7.75 from the top) and ``hi = 7.75`` are set so the tails hold
≲ 1e-14 of the mass; they are sampled exactly all the same.

**A draw.** A point under the envelope is uniform on the region ``{(t, y, j): y < U_j on t's
bin}`` (tails: under their envelope). It lies under ``g_j`` for sure when ``y < L_j``: those
parts are merged per class into one outcome "class j" of mass ``S_j = w·Σ_bins L_j``
(the value of t is not needed, so it is not generated). The rest, mass ``D = w·Σ(U_j − L_j)``
plus the tails, is one outcome "maybe". Each draw takes one uniform for the outcome
(Walker's alias table over the C + 1 outcomes, padded to a power of two so the index and the
remainder of ``u·K`` are independent); a "maybe" draw picks its cell with probability
proportional to its mass, then ``t`` (uniform on the bin, or a truncated normal in a tail)
and ``y``, and is accepted if ``y < g_j(t)``. Rejected draws are drawn again from the start,
so the accepted draws are i.i.d. from the target: the counts are exact in distribution.
About 0.3–1 % of draws are "maybe" at ``w = 2⁻⁸`` and C = 10, and ≲ 1 % are rejected.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy import special

#: Bin width of the envelope (a power of two, so bin edges are exact).
WIDTH = 2.0**-8
#: Right end of the bins, above the top standardised vote: Φ̄(7.75) = 4.6e-15 per class.
HI = 7.75
#: The left end is the largest multiple of 1/4 in [−7.75, 0] with F(lo) ≤ this.
LO_MASS = 1e-14
#: Largest table built (cells = bins × C): 2^19 cells, ~13 MB kept, ~100 MB while building.
MAX_CELLS = 2**19
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_MARGIN = 1e-12


class JointTable(NamedTuple):
    """Envelope of the joint law for one standardised histogram (see the module docstring)."""

    v: np.ndarray  # (C,) standardised votes minus their maximum (−inf allowed)
    lo: float
    n_bins: int
    sure: np.ndarray  # (C,) S_j, mass accepted without a test
    threshold: np.ndarray  # (K,) alias table over C + 1 outcomes (C = "maybe"), K = 2^k
    alias: np.ndarray  # (K,)
    cum: np.ndarray  # (n_bins·C + 2C,) cumulative "maybe" masses: bins, upper, lower tails
    lower: np.ndarray  # (n_bins·C,) L_j per bin (row-major: bin, class)
    upper: np.ndarray  # (n_bins·C,) U_j per bin
    log_lo: np.ndarray  # (C,) log Φ(lo − v_i)


def cells_estimate(v: np.ndarray) -> int:
    """Number of envelope cells :func:`joint_table` builds for ``v`` (cheap)."""
    return _n_bins(_pick_lo(v - np.max(v)), HI) * v.size


def joint_table(v: np.ndarray, *, lo: float | None = None, hi: float = HI) -> JointTable:
    """The envelope table of standardised votes ``v`` (cached per histogram).

    ``lo`` and ``hi`` override the bin range (tests use a narrow range to put real mass in
    the tails; any range gives the same law).
    """
    v = np.asarray(v, dtype=np.float64)
    return _table_for(v.tobytes(), lo, float(hi))


@functools.lru_cache(maxsize=8)
def _table_for(key: bytes, lo: float | None, hi: float) -> JointTable:
    v = np.frombuffer(key, dtype=np.float64)
    v = v - v.max()
    lo = _pick_lo(v) if lo is None else float(lo)
    n_bins = _n_bins(lo, hi)
    edges = lo + WIDTH * np.arange(n_bins + 1)
    log_phi = special.log_ndtr(edges[:, None] - v)  # (B + 1, C)
    others = _log_others(log_phi)
    a, b = edges[:-1, None], edges[1:, None]
    near = np.clip(v, a, b) - v
    far = np.maximum(np.abs(a - v), np.abs(b - v))
    with np.errstate(invalid="ignore"):  # −inf votes: −inf − (−inf) terms, masked below
        log_u = -0.5 * near**2 - _LOG_SQRT_2PI + others[1:]
        log_l = -0.5 * far**2 - _LOG_SQRT_2PI + others[:-1]
    with np.errstate(invalid="ignore"):
        upper, lower = _widen(log_u, log_l)
    finite = np.isfinite(v)
    upper[:, ~finite] = 0.0
    lower[:, ~finite] = 0.0
    # Tails: mass Φ̄(hi − v_j) above hi, F(lo) below lo (0 for a class that cannot win).
    log_lo = log_phi[0]
    upper_tail = np.where(finite, special.ndtr(v - edges[-1]), 0.0)
    lower_tail = np.where(finite, math.exp(float(log_lo.sum())), 0.0)
    maybe = np.concatenate([((upper - lower) * WIDTH).ravel(), upper_tail, lower_tail])
    cum = np.cumsum(maybe)
    sure = lower.sum(axis=0) * WIDTH
    threshold, alias = _alias(np.r_[sure, cum[-1]])
    upper, lower = upper.ravel(), lower.ravel()
    for arr in (v, sure, threshold, alias, cum, lower, upper, log_lo):
        arr.setflags(write=False)
    return JointTable(v, lo, n_bins, sure, threshold, alias, cum, lower, upper, log_lo)


def _pick_lo(v: np.ndarray) -> float:
    grid = -0.25 * np.arange(32)  # 0, −0.25, …, −7.75
    log_f = special.log_ndtr(grid[:, None] - v).sum(axis=1)
    return float(grid[np.argmax(log_f <= math.log(LO_MASS))])


def _n_bins(lo: float, hi: float) -> int:
    return max(1, math.ceil((hi - lo) / WIDTH))


def _log_others(log_phi: np.ndarray) -> np.ndarray:
    """``Σ_{i≠j} log Φ_i`` for every j along the last axis, as prefix + suffix sums (no
    cancellation, and −inf terms stay −inf only where they belong)."""
    zero = np.zeros((*log_phi.shape[:-1], 1))
    prefix = np.cumsum(np.concatenate([zero, log_phi[..., :-1]], axis=-1), axis=-1)
    suffix = np.cumsum(np.concatenate([zero, log_phi[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return prefix + suffix


def _widen(log_u: np.ndarray, log_l: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower density bounds, widened by ``1e-12·(1 + |log|)`` against rounding."""
    upper = np.exp(log_u + _MARGIN * (1.0 + np.abs(log_u)))
    lower = np.exp(log_l - _MARGIN * (1.0 + np.abs(log_l)))
    return upper, np.minimum(lower, upper)


def _alias(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table (Walker 1977, ACM TOMS 3(3); built as in Vose 1991, IEEE TSE
    17(9)) for weights ``p``, padded with zero weights to ``K = 2^k`` entries: with
    ``x = u·K``, outcome ``i = ⌊x⌋`` if ``x − i < threshold[i]`` else ``alias[i]``."""
    k = 1 << max(1, (p.size - 1).bit_length())
    q = np.zeros(k)
    q[: p.size] = p * (k / p.sum())
    alias = np.arange(k)
    small = [i for i in range(k) if q[i] < 1.0]
    large = [i for i in range(k) if q[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        alias[s] = g
        q[g] -= 1.0 - q[s]
        (small if q[g] < 1.0 else large).append(g)
    q[small + large] = 1.0  # rounding leftovers: probability-one entries
    return q, alias


def sample_joint(table: JointTable, size: int, gen: np.random.Generator) -> np.ndarray:
    """Counts ``(C,)`` of ``size`` exact noisy-argmax draws under ``table``'s histogram."""
    c = table.v.size
    k = table.threshold.size
    counts = np.zeros(c, dtype=np.int64)
    todo = size
    while todo:
        x = gen.random(todo)
        x *= k
        i = x.astype(np.intp)
        x -= i
        key = i * 2
        key += x >= table.threshold[i]
        pairs = np.bincount(key, minlength=2 * k).reshape(k, 2)
        outcome = pairs[:, 0].astype(np.int64)
        np.add.at(outcome, table.alias, pairs[:, 1])
        counts += outcome[:c]
        n_maybe = int(outcome[c])
        accepted = _maybe(table, n_maybe, gen)
        counts += accepted
        todo = n_maybe - int(accepted.sum())
    return counts


def _maybe(table: JointTable, n: int, gen: np.random.Generator) -> np.ndarray:
    """Counts of the accepted draws among ``n`` proposals from the "maybe" cells."""
    v, c = table.v, table.v.size
    counts = np.zeros(c, dtype=np.int64)
    if n == 0:
        return counts
    cell = np.searchsorted(table.cum, gen.random(n) * table.cum[-1], side="right")
    np.minimum(cell, table.cum.size - 1, out=cell)
    u1, u2 = gen.random(n), gen.random(n)
    nb = table.lower.size
    binned = cell < nb
    # Bin cells: t uniform on the bin, y uniform on [L_j, U_j]; accept y < g_j(t). On the
    # bins t − v_i ≥ lo ≥ −7.75, so the product of Φ's cannot underflow.
    cb, ub = cell[binned], u1[binned]
    jb = cb % c
    t = table.lo + WIDTH * (cb // c + ub)
    g = special.ndtr(t[:, None] - v)
    rows = np.arange(t.size)
    g[rows, jb] = np.exp(-0.5 * (t - v[jb]) ** 2 - _LOG_SQRT_2PI)
    low = table.lower[cb]
    y = low + u2[binned] * (table.upper[cb] - low)
    ok = y < g.prod(axis=1)
    counts += np.bincount(jb[ok], minlength=c)
    if binned.all():
        return counts
    # Tails (rare): t ~ N(v_j, 1) given t ≥ hi (envelope φ(t − v_j), accept with
    # ∏_{i≠j} Φ(t − v_i)) or given t < lo (accept with ∏_{i≠j} Φ(t − v_i)/Φ(lo − v_i)).
    tail = cell[~binned] - nb
    upper, j = tail < c, tail % c
    u1, u2 = 1.0 - u1[~binned], u2[~binned]  # u1 in (0, 1]
    hi = table.lo + WIDTH * table.n_bins
    with np.errstate(divide="ignore", invalid="ignore"):  # underflowed tails: rejected
        t = np.where(
            upper,
            v[j] - special.ndtri(u1 * special.ndtr(v[j] - hi)),
            v[j] + special.ndtri(u1 * special.ndtr(table.lo - v[j])),
        )
        log_phi = special.log_ndtr(t[:, None] - v)
        log_phi[np.arange(t.size), j] = 0.0
        log_accept = log_phi.sum(axis=1) - np.where(upper, 0.0, _log_others(table.log_lo)[j])
        ok = np.log(u2) < log_accept
    counts += np.bincount(j[ok], minlength=c)
    return counts
