"""Quadrature for the output distribution of the Gaussian noisy argmax (private helpers).

Everything here works in standardised units ``v = votes / σ``. For class ``i``

    Q_i = ∫ φ(x − v_i) ∏_{j≠i} Φ(x − v_j) dx                    (Chadha et al. 2024 Eq. 4; Wang et
    al. 2022 Thm 1)

and ``ℓ_i(x) = log φ(x − v_i) + Σ_{j≠i} log Φ(x − v_j)`` is its log-integrand.

Facts used for the error control (each is elementary):

(F1) ``log Φ`` is concave with ``−(log Φ)'' = κ(t) = λ(t)(t + λ(t)) ∈ (0, 1)`` decreasing in t,
     where ``λ = φ/Φ`` (Sampford 1953). Hence ``ℓ_i'' = −1 − Σ κ ≤ −1``: every integrand is
     strongly log-concave with curvature at least 1, and its curvature decreases in x.
(F2) The mode ``m_i`` of ``ℓ_i`` satisfies ``m_i − v_i = Σ_{j≠i} λ(m_i − v_j) ≥ λ(m_i − v_max)``;
     since ``λ(t) > −t`` (Mills-ratio inequality) this gives ``m_i ≥ (v_i + v_max)/2``.
(F3) By (F1) the curvature at ``x < m_i`` is ≥ K = −ℓ_i''(m_i) and at ``x > m_i`` it is ≤ K, so
     ``f_i(m_i − t) ≤ f_i(m_i)·exp(−K t²/2)`` and ``f_i(m_i + t) ≥ f_i(m_i)·exp(−K t²/2)``
     for t > 0. The part of the integral left of ``m_i − L`` is therefore at most
     ``f_i(m_i)·√(2π/K)·Φ̄(L√K)`` and the part right of ``m_i`` at least ``f_i(m_i)·√(2π/K)/2``:
     cutting at ``m_i − L`` loses at most ``2·Φ̄(L·√K) ≤ 2·Φ̄(L)`` relative, whatever C.
(F4) Right of any point ``b`` with ``ℓ_i'(b) < 0``, log-concavity gives
     ``∫_b^∞ f_i ≤ f_i(b)/|ℓ_i'(b)|`` (the tangent bound).
(F5) ``f_i`` is entire. By Trefethen & Weideman (SIAM Review 2014, Thm 5.1) the trapezoidal
     error is ≤ 2M(a)/(e^{2πa/h} − 1) with M(a) = sup_{|y|<a} ∫|f(x+iy)|dx. Near x, f
     behaves like a Gaussian of local curvature K(x) = −ℓ''(x), for which
     |f(x+iy)| ≈ f(x)·e^{K(x)y²/2}; optimising a locally gives a contribution
     ≈ 2·f(x)·exp(−2π²/(K(x)h²)) per unit length. We evaluate this estimate on the grid itself
     (K from second differences of ℓ, floored at 1 by (F1); on the shared grid the common
     upper bound ``1 − Δ²S/h²``, see :func:`_shared_grid_block`) and require the total to be
     ≤ 1e-13 relative; we also require the h and 2h rules to agree to 1e-4 and the peak to be
     resolved by ≥ 8 nodes. For a Gaussian shape the 2h error ≈ 2·(h error/2)^{1/4}, so a 2h
     error ≤ 1e-4 means an h error ≈ 1e-17. These are estimates (the integrands are only
     close to Gaussian), confirmed against mpmath; (F3) and (F4) are bounds.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpaudit._validate import check_memory

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT2 = 1 / math.sqrt(2)

# Left extent of the per-class grids in local standard deviations: by (F3) the left tail
# lost is ≤ 2·Φ̄(8.5) = 1.9e-17 relative.
TAIL = 8.5
# The shared grid starts 7.5 left of the lower bound (F2) on every mode: ≤ 2·Φ̄(7.5) =
# 6.4e-14 relative lost by (F3), for any C; its right tail is checked a posteriori (F4).
SHARED_TAIL = 7.5
# Step of the shared grid for C ≤ 10 (scaled by √(10/C) above).
SHARED_STEP = 0.3
# (class, node) values per chunk of the shared grid: small enough to stay in cache.
CHUNK_ELEMENTS = 2**16
# A class more than 53 standardised units below the top has Q_i ≤ Φ̄(53/√2) < 1e-300.
NEGLIGIBLE_GAP = 53.0
# A class more than DEEP_GAP standardised units below the top has
# log Q_i ≤ log Φ̄(DEEP_GAP/√2) < −DEEP_GAP²/4 = −2.5e11 (compare with the top class alone).
# Such classes leave every other integrand unchanged in double precision: those integrands
# live at x ≥ −DEEP_GAP/2 − 9 (F2, F3), where Φ(x − v_j) = 1 − Φ̄(≥ 5e5) rounds to 1. Their
# own log Q_i comes from the Laplace bounds of :func:`deep_log_q`, whose absolute error
# ½·log C is ≤ 1.4e-11·|log Q_i| for C ≤ 1000. (Double-precision quadrature starts failing
# its checks near gap 1e8, where the rounding error of ℓ, ~1e-16·gap², reaches 1.)
DEEP_GAP = 1e6
# A-posteriori acceptance (F5): the local strip estimate ≤ 1e-13 relative, |T_h − T_2h| ≤
# 1e-4·T_h, and at least 8 nodes within e^-4.5 of the peak.
DISCRETISATION_RTOL = 1e-4
STRIP_RTOL = 1e-13
MIN_NODES_NEAR_PEAK = 8
TAIL_RTOL = 1e-16
SHARED_TAIL_RTOL = 1e-13


def log_ndtr_fast(t: np.ndarray) -> np.ndarray:
    """``log Φ(t)`` to ~1e-16 absolute error.

    ``log(ndtr(t))`` costs half of ``scipy.special.log_ndtr``; it is accurate in absolute
    terms wherever Φ(t) does not underflow (t > −37.5). Entries that underflowed are
    recomputed with ``log_ndtr``.
    """
    with np.errstate(divide="ignore"):
        out = np.log(special.ndtr(t))
    bad = out < -700.0
    if bad.any():
        out[bad] = special.log_ndtr(t[bad])
    return out


def mills(t: np.ndarray) -> np.ndarray:
    """``λ(t) = φ(t)/Φ(t)`` via ``erfcx`` (no underflow or cancellation)."""
    return _SQRT_2_OVER_PI / special.erfcx(-t * _INV_SQRT2)


def _logsumexp_last(a: np.ndarray) -> np.ndarray:
    m = np.max(a, axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m_safe), axis=-1)) + m_safe[..., 0]
    return out


def strip_error_estimate(
    ell: np.ndarray, h: np.ndarray | float, log_total: np.ndarray
) -> np.ndarray:
    """Upper estimate of the relative trapezoidal error of (F5) from grid values.

    Args:
        ell: (..., N) log-integrand at equally spaced nodes.
        h: step (scalar or broadcastable to ``ell[..., 0]``).
        log_total: (...) log of the trapezoidal sum.

    Returns:
        ``N·max_k 2h·f_k·exp(−2π²/(K_k h²)) / T`` (≥ the sum of the local contributions),
        with ``K_k`` the largest second difference of −ℓ over the node's two cells, floored at 1.
    """
    h = np.asarray(h, dtype=np.float64)
    h_b = h[..., None] if h.ndim else h
    with np.errstate(invalid="ignore"):
        second = 2 * ell[..., 1:-1]
        second -= ell[..., 2:]
        second -= ell[..., :-2]
        second /= h_b * h_b
    curv = np.maximum(second[..., 1:], second[..., :-1])  # nodes 1..N−3 with neighbours
    curv = np.where(np.isfinite(curv), np.maximum(curv, 1.0), np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = ell[..., 1:-2] - 2 * math.pi**2 / (curv * (h_b * h_b))
        worst = terms.max(axis=-1)
        out = np.exp(worst + np.log(2 * h * ell.shape[-1]) - log_total)
    return np.where(np.isfinite(out), out, np.inf)


def shared_grid_log_q(
    v: np.ndarray,
    lattice: tuple[np.ndarray, float] | None = None,
    *,
    weights_mills: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log Q for a batch of standardised histograms on one trapezoid grid per histogram.

    Args:
        v: (B, C) standardised votes.
        lattice: optional ``(D, σ)`` with ``D`` integer-valued (B, C) vote differences and
            ``v = D/σ`` (integer votes). The grid is then aligned with the lattice
            ``u·ℤ``, ``u = 1/(σ·m)``, on which every argument ``x − v_j`` falls, so ``log Φ``
            is tabulated once per lattice point instead of once per (histogram, class,
            node): the same values, about twice as fast.

        weights_mills: also return ``E_i[λ(x − v_k)] = ∫ f_i(x)·λ(x − v_k) dx / Q_i`` for
            every pair (i, k), (B, C, C), on the same grid (the ratios of
            :func:`per_class_log_q`, for the Jacobian); valid where ``ok``.

    Returns:
        ``(log_q, ok, extra)``: (B, C) log-probabilities, a boolean mask of the entries whose
        a-posteriori checks passed (the others must be recomputed by :func:`per_class_log_q`)
        and the Mills-weighted ratios or an empty array.
    """
    b, c = v.shape
    vmax = v.max(axis=1)
    relevant = v >= (vmax - NEGLIGIBLE_GAP)[:, None]
    vmin_rel = np.where(relevant, v, np.inf).min(axis=1)
    # (F2)+(F3): every relevant mode is ≥ (v_i + v_max)/2, so this left end is at least
    # SHARED_TAIL left of it; the right end is SHARED_TAIL beyond every class's centre.
    x_lo = 0.5 * (vmin_rel + vmax) - SHARED_TAIL
    x_hi = vmax + SHARED_TAIL
    h = SHARED_STEP / math.sqrt(max(1.0, c / 10.0))
    table = None
    if lattice is not None:
        table = _lattice_table(v, lattice[0], lattice[1], x_lo, x_hi, h, relevant)
    if table is not None:
        h, x_lo = table.h, table.x_lo
    # Round node counts up to a multiple of 4 (plus one, so the 2h rule shares the end
    # points): few distinct grid sizes, so each is one dense array operation.
    n_nodes = 4 * np.ceil((x_hi - x_lo) / (4 * h)).astype(np.int64) + 1
    # A chunk holds at least one histogram: about four (C, N) float64 arrays at once.
    check_memory(
        32.0 * c * float(n_nodes.max()),
        f"the noisy-argmax quadrature of votes with C={c} classes ({int(n_nodes.max())} "
        "nodes per class)",
    )
    log_q = np.empty((b, c))
    ok = np.zeros((b, c), dtype=bool)
    extra = np.empty((b, c, c)) if weights_mills else np.empty((0,))
    # Group histograms with equal node counts so the work is one dense array per group.
    order = np.argsort(n_nodes, kind="stable")
    sorted_n = n_nodes[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_n[1:] != sorted_n[:-1])))
    ends = np.append(starts[1:], b)
    for s, e in zip(starts, ends, strict=True):
        n = int(sorted_n[s])
        # Chunks of ~CHUNK_ELEMENTS (class, node) values keep the working set in cache.
        step = max(1, CHUNK_ELEMENTS // (n * c))
        for cs in range(s, e, step):
            idx = order[cs : min(e, cs + step)]
            if table is None:
                x = x_lo[idx, None] + h * np.arange(n)[None, :]  # (B, N)
                t = x[:, None, :] - v[idx, :, None]  # (B, C, N)
                log_cdf = log_ndtr_fast(t)
                ell = t
                ell *= t
                ell *= -0.5
                ell -= _LOG_SQRT_2PI
                ell -= log_cdf  # log φ(x − v_i) − log Φ(x − v_i)
            else:
                k = table.index(idx, n)
                log_cdf = table.log_cdf.take(k)
                ell = table.log_mills.take(k)
            lam = np.exp(ell) if weights_mills else None  # λ(x − v_i), (B, C, N)
            total = log_cdf.sum(axis=1)  # S(x) = Σ_j log Φ(x − v_j), (B, N)
            ell += total[:, None, :]
            lq, good, ratios = _shared_grid_block(
                ell, total, v[idx], x_lo[idx] + h * (n - 1), h, lam
            )
            log_q[idx] = lq
            ok[idx] = good & relevant[idx]
            if weights_mills:
                extra[idx] = ratios
    return log_q, ok, extra


class _LatticeTable:
    """``log Φ`` and ``log φ − log Φ`` at the lattice points ``u·i``, i = lo..hi."""

    def __init__(self, lo, hi, u, q, a0, dm):
        self.u, self.q, self.h = u, q, q * u
        self.a0, self.dm, self.lo, self.hi = a0, dm, lo, hi
        self.x_lo = a0 * u
        t = u * np.arange(lo, hi + 1)
        self.log_cdf = log_ndtr_fast(t)
        self.log_mills = -0.5 * t * t - _LOG_SQRT_2PI - self.log_cdf

    def index(self, rows: np.ndarray, n: int) -> np.ndarray:
        """Table positions of ``x_k − v_j`` for the rows given, shape (B, C, N)."""
        start = (self.a0[rows] - self.lo)[:, None] - self.dm[rows]  # (B, C)
        k = start[:, :, None] + self.q * np.arange(n)
        # Classes more than NEGLIGIBLE_GAP below the top are clipped to the last point,
        # t ≥ 9, where log Φ rounds to 0 as it does at their true argument (≥ 19); their
        # own entries are not relevant and are recomputed elsewhere.
        np.minimum(k, self.hi - self.lo, out=k)
        return k


def _lattice_table(v, d, sigma, x_lo, x_hi, h, relevant) -> _LatticeTable | None:
    # u = 1/(σ·m) ≤ h so that the step h' = q·u ∈ (h/2, h] is a lattice multiple. The table
    # cannot pay when σ·h ≥ 2^24 (more than 2^24 lattice points on a grid at least 15 wide)
    # and cannot be indexed when σ·h ≤ 2^-52 (or underflows to 0); both use direct evaluation.
    sh = sigma * h
    if not 2.0**-52 < sh < 2.0**24:
        return None
    m = max(1, math.ceil(1.0 / (sigma * h)))
    u = 1.0 / (sigma * m)
    q = max(1, math.floor(h / u * (1 + 1e-12)))
    a0 = np.floor(x_lo / u).astype(np.int64)  # grid starts on the lattice, at or left of x_lo
    n_max = 4 * math.ceil(float(np.max(x_hi - a0 * u)) / (4 * q * u)) + 1
    dm = np.where(relevant, d, 0.0) * m
    lo = int(a0.min())
    hi = int(np.max(a0 + q * (n_max - 1) - dm.min(axis=1)))
    hi = max(hi, lo + 1, math.ceil(9.0 / u))
    b, c = v.shape
    if hi - lo > 0.5 * b * c * n_max or hi - lo > 2**24:
        return None  # tabulating costs more than evaluating directly
    dm = np.where(relevant, dm, -(hi - lo + 1.0)).astype(np.int64)
    return _LatticeTable(lo, hi, u, q, a0, dm)


def _shared_grid_block(
    ell: np.ndarray,
    total: np.ndarray,
    v: np.ndarray,
    x_end: np.ndarray,
    h: float,
    lam: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Trapezoid sums and the a-posteriori checks for ell (B, C, N) on grids ending at x_end;
    with ``lam`` (B, C, N) = λ(x − v_k) also the ratios ``Σ_x f_i·λ_k / Σ_x f_i`` (B, C, C).

    ``total`` (B, N) is ``S(x) = Σ_j log Φ(x − v_j)``, so ``ℓ_i = −(x − v_i)²/2 − log √(2π)
    + S − log Φ(x − v_i)``. Since log Φ is concave its second differences are ≤ 0, hence the
    discrete curvature of every ``ℓ_i`` is at most ``K(x) = 1 − Δ²S(x)/h²``, one curvature
    per histogram and node instead of per class. The strip estimate (F5) with this ``K`` is
    an upper bound of the one with each class's own curvature.
    """
    # One error state for the whole block (each ``np.errstate`` costs microseconds, which
    # count when a solver asks for one small histogram at a time): −inf logs, inf/NaN
    # curvatures and 0/0 ratios are all handled explicitly below.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        peak = ell.max(axis=-1)
        peak_safe = np.where(np.isfinite(peak), peak, 0.0)
        e = np.exp(ell - peak_safe[..., None])
        e_sum = e.sum(axis=-1)
        log_fine = np.log(e_sum) + peak_safe + math.log(h)
        log_coarse = np.log(e[..., ::2].sum(axis=-1)) + peak_safe + math.log(2 * h)
        near_peak = np.count_nonzero(e >= math.exp(-4.5), axis=-1)
        ratios = None
        if lam is not None:
            ratios = np.matmul(e, lam.transpose(0, 2, 1)) / e_sum[..., None]
        disc = np.abs(np.expm1(log_coarse - log_fine))
        # (F4) at the right end: |ℓ'(x_hi)| ≥ (x_hi − v_i) − (C−1)·λ(7.5) ≥ 7.5 − 1e-11·C.
        slope = np.maximum(x_end[:, None] - v - 1e-11 * v.shape[1], 1e-300)
        right_tail = ell[..., -1] - np.log(slope) - log_fine
        # The left end is at least TAIL left of every relevant mode (F2, F3); also require
        # the peak to be interior so the grid brackets the mode.
        interior = (ell[..., 0] < peak) & (ell[..., -1] < peak)
        second = 2 * total[:, 1:-1] - total[:, 2:] - total[:, :-2]  # −Δ²S at nodes 1..N−2
        curv = 1.0 + np.maximum(second[:, 1:], second[:, :-1]) / (h * h)  # nodes 1..N−3
        penalty = np.where(np.isfinite(curv), 2 * math.pi**2 / (np.maximum(curv, 1.0) * h * h), 0.0)
        worst = (ell[..., 1:-2] - penalty[:, None, :]).max(axis=-1)
        strip = np.exp(worst + math.log(2 * h * ell.shape[-1]) - log_fine)
    strip = np.where(np.isfinite(strip), strip, np.inf)
    ok = (
        np.isfinite(log_fine)
        & (strip <= STRIP_RTOL)
        & (disc <= DISCRETISATION_RTOL)
        & (near_peak >= MIN_NODES_NEAR_PEAK)
        & (right_tail <= math.log(SHARED_TAIL_RTOL))
        & interior
    )
    return log_fine, ok, ratios


def check_offsets_memory(num_entries: int, num_classes: int) -> None:
    """Refuse a per-class fallback whose ``(M, C − 1)`` offsets exceed the memory cap.

    Called before :func:`per_class_log_q`'s inputs are built: the offsets and the
    Mills-weighted ratios of the Jacobian take ``M·(C − 1)`` float64 each, twice over.
    """
    check_memory(
        16.0 * num_entries * max(num_classes - 1, 1),
        f"the per-class noisy-argmax quadrature of {num_entries} entries of votes with "
        f"C={num_classes} classes",
    )


def _class_terms(d: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arguments t, ℓ' and −ℓ'' at points z (M,) for offsets d (M, C−1)."""
    t = z[:, None] + d
    lam = mills(t)
    with np.errstate(invalid="ignore"):
        kappa = lam * (t + lam)
    # κ ∈ (0, 1) (F1). Far left ``t + λ ≈ −1/t`` cancels, so κ = 1 is used there: an upper
    # bound, which keeps the Newton iteration of class_modes monotone. Far right κ
    # underflows (0·∞ at t = ∞).
    kappa = np.where(t < -1e4, 1.0, np.where(t > 40.0, 0.0, kappa))
    np.clip(kappa, 0.0, 1.0, out=kappa)
    grad = -z + lam.sum(axis=1)
    curv = 1.0 + kappa.sum(axis=1)
    return t, grad, curv


def class_modes(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mode and curvature of ℓ_i for offsets ``d[m, j] = v_i − v_j`` (j ≠ i).

    Newton's method on ℓ' is globally convergent from the start ``max(0, −min d)/2``, which is
    left of the root by (F2): ℓ' is decreasing and convex (κ decreasing), so every Newton
    iterate stays left of the root and increases monotonically.
    """
    z = 0.5 * np.maximum(0.0, -d.min(axis=1))
    active = np.ones(z.shape, dtype=bool)
    curv = np.ones_like(z)
    for _ in range(200):
        _, grad, cv = _class_terms(d[active], z[active])
        step = grad / cv
        z[active] += step
        curv[active] = cv
        done = np.abs(step) <= 1e-12 * (1.0 + np.abs(z[active]))
        if done.all():
            break
        idx = np.flatnonzero(active)
        active[idx[done]] = False
    _, _, curv = _class_terms(d, z)
    return z, curv


def deep_log_q(vi: np.ndarray, d: np.ndarray) -> np.ndarray:
    """log Q_i for classes more than ``DEEP_GAP`` below the top (Laplace's method, bounded).

    Args:
        vi: (M,) standardised votes of the classes (≤ −DEEP_GAP, possibly −inf).
        d: (M, C−1) offsets ``v_i − v_j`` (+inf for classes at −inf).

    Returns:
        ``ℓ_i(m_i) + ½·log(2π/K_i)`` with ``m_i`` the mode and ``K_i = −ℓ_i''(m_i)``. By (F1)
        ``1 ≤ −ℓ_i'' ≤ C`` everywhere, so ``f_i(m_i)·exp(−C·t²/2) ≤ f_i(m_i + t) ≤
        f_i(m_i)·exp(−t²/2)`` and ``log Q_i`` lies in ``[ℓ_i(m_i) + ½·log(2π/C), ℓ_i(m_i) +
        ½·log 2π]``, which contains the value returned: its error is at most ½·log C, i.e.
        ≤ 1.4e-11·|log Q_i| for C ≤ 1000 since ``log Q_i < −2.5e11``. ``−inf`` where the
        gap exceeds 2.7e154 (then ``log Q_i ≤ log Φ̄(gap/√2) < −1.8e308``, below every double)
        or where ``ℓ_i(m_i)`` itself overflows (``log Q_i`` within a factor ~2 of that limit).
    """
    out = np.full(vi.shape, -np.inf)
    todo = vi > -2.7e154
    if not todo.any():
        return out
    d = d[todo]
    with np.errstate(over="ignore", invalid="ignore"):
        z, curv = class_modes(d)
        ell = -(0.5 * z) * z - _LOG_SQRT_2PI + special.log_ndtr(z[:, None] + d).sum(axis=1)
        out[todo] = ell + 0.5 * np.log(2 * math.pi / curv)
    return out


def per_class_log_q(d: np.ndarray, *, weights_mills: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """log Q_i on a grid centred at each class's own mode (the robust path).

    Args:
        d: (M, C−1) offsets ``v_i − v_j`` over the other classes j.
        weights_mills: also return ``∫ f_i(x)·λ(x − v_j) dx / Q_i`` for every j (M, C−1),
            used for the Jacobian.

    Returns:
        ``(log_q, extra)`` with ``extra`` the Mills-weighted ratios or an empty array.

    The grid spans ``TAIL`` local standard deviations left of the mode (enough by (F3),
    since curvature only grows to the left) and extends to the right until the tangent bound
    (F4) is below ``TAIL_RTOL``; the step starts at 0.5 local s.d. and is halved until the
    h/2h difference is below ``DISCRETISATION_RTOL`` (F5).
    """
    m_count = d.shape[0]
    out = np.empty(m_count)
    extra = np.empty(d.shape) if weights_mills else np.empty((0,))
    if m_count == 0:
        return out, extra
    mode, curv = class_modes(d)
    s = 1.0 / np.sqrt(curv)
    pending = np.arange(m_count)
    right = np.full(m_count, TAIL)
    h_rel = np.full(m_count, 0.5)
    for _ in range(12):
        if pending.size == 0:
            break
        # Process pending entries in groups of equal grid geometry.
        key = np.stack([right[pending], h_rel[pending]], axis=1)
        uniq, inverse = np.unique(key, axis=0, return_inverse=True)
        still = []
        for g in range(uniq.shape[0]):
            sel = pending[inverse.ravel() == g]
            r, hr = uniq[g]
            n_left = math.ceil(TAIL / hr)
            n_right = math.ceil(r / hr)
            n_right += (n_left + n_right) % 2  # odd node count overall for the 2h rule
            k = np.arange(-n_left, n_right + 1)
            chunk = max(1, int(4_000_000 // (k.size * d.shape[1])))
            for cs in range(0, sel.size, chunk):
                rows = sel[cs : cs + chunk]
                hz = hr * s[rows]
                z = mode[rows, None] + hz[:, None] * k[None, :]  # (R, N)
                t = z[:, None, :] + d[rows][:, :, None]  # (R, C−1, N)
                ell = log_ndtr_fast(t).sum(axis=1) - 0.5 * z * z - _LOG_SQRT_2PI
                log_fine = _logsumexp_last(ell) + np.log(hz)
                log_coarse = _logsumexp_last(ell[:, ::2]) + np.log(2 * hz)
                _, grad_end, _ = _class_terms(d[rows], z[:, -1])
                with np.errstate(divide="ignore", invalid="ignore"):
                    tail = np.where(grad_end < 0, ell[:, -1] - np.log(-grad_end) - log_fine, np.inf)
                    disc = np.abs(np.expm1(log_coarse - log_fine))
                good_tail = tail <= math.log(TAIL_RTOL)
                strip = strip_error_estimate(ell, hz, log_fine)
                good_disc = (disc <= DISCRETISATION_RTOL) & (strip <= STRIP_RTOL)
                out[rows] = log_fine
                if weights_mills:
                    w = np.exp(ell - ell.max(axis=1, keepdims=True))
                    lam = mills(t)
                    extra[rows] = (lam * w[:, None, :]).sum(axis=2) / w.sum(axis=1)[:, None]
                bad_tail = rows[~good_tail]
                right[bad_tail] *= 2.0
                bad_disc = rows[good_tail & ~good_disc]
                h_rel[bad_disc] *= 0.5
                still.append(rows[~(good_tail & good_disc)])
        pending = np.concatenate(still) if still else np.empty(0, dtype=np.int64)
    if pending.size:
        import warnings

        from dpaudit.errors import ConvergenceWarning

        warnings.warn(
            f"noisy-argmax quadrature did not meet its tolerance for {pending.size} class(es)",
            ConvergenceWarning,
            stacklevel=3,
        )
    return out, extra
