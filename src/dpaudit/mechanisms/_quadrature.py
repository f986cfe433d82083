"""Quadrature for the output distribution of the Gaussian noisy argmax (private helpers).

Everything here works in standardised units ``v = votes / σ``. For class ``i``

    Q_i = ∫ φ(x − v_i) ∏_{j≠i} Φ(x − v_j) dx                    (paper 000 Eq. 4; paper 003 Thm 1)

and ``ℓ_i(x) = log φ(x − v_i) + Σ_{j≠i} log Φ(x − v_j)`` is its log-integrand.

Facts used for the error control (each is elementary):

(F1) ``log Φ`` is concave with ``−(log Φ)'' = κ(t) = λ(t)(t + λ(t)) ∈ (0, 1)`` decreasing in t,
     where ``λ = φ/Φ`` (Sampford 1953). Hence ``ℓ_i'' = −1 − Σ κ ≤ −1``: every integrand is
     strongly log-concave with curvature at least 1, and its curvature decreases in x.
(F2) The mode ``m_i`` of ``ℓ_i`` satisfies ``m_i − v_i = Σ_{j≠i} λ(m_i − v_j) ≥ λ(m_i − v_max)``;
     since ``λ(t) > −t`` (Mills-ratio inequality) this gives ``m_i ≥ (v_i + v_max)/2``.
(F3) Left of the mode, curvature ≥ 1 gives ``f_i(m_i − t) ≤ f_i(m_i)·exp(−t²/2)``; with
     ``∫ f_i ≥ f_i(m_i)·√(2π/C)`` (curvature ≤ C) the part of the integral left of
     ``m_i − L`` is at most ``Φ̄(L)·√C`` relative.
(F4) Right of any point ``b`` with ``ℓ_i'(b) < 0``, log-concavity gives
     ``∫_b^∞ f_i ≤ f_i(b)/|ℓ_i'(b)|`` (the tangent bound).
(F5) ``f_i`` is entire. By Trefethen & Weideman (SIAM Review 2014, Thm 5.1) the trapezoidal
     error is ≤ 2M(a)/(e^{2πa/h} − 1) with M(a) = sup_{|y|<a} ∫|f(x+iy)|dx. Near x, f
     behaves like a Gaussian of local curvature K(x) = −ℓ''(x), for which
     |f(x+iy)| ≈ f(x)·e^{K(x)y²/2}; optimising a locally gives a contribution
     ≈ 2·f(x)·exp(−2π²/(K(x)h²)) per unit length. We evaluate this estimate on the grid itself
     (K from second differences of ℓ, floored at 1 by (F1)) and require the total to be
     ≤ 1e-13 relative; we also require the h and 2h rules to agree to 1e-4 and the peak to be
     resolved by ≥ 8 nodes. Together these put the discretisation error far below 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT2 = 1 / math.sqrt(2)

# Tail half-width in standard deviations: Φ̄(8.5) = 9.5e-18, so by (F3) the left tail
# is below 1e-16 relative for C ≤ 1000.
TAIL = 8.5
# The shared grid uses 7.5: Φ̄(7.5)·√C ≤ 1e-13 relative for C ≤ 1000 by (F3), still far
# below the 1e-9 target; its right tail is checked a posteriori (F4).
SHARED_TAIL = 7.5
# A class more than 53 standardised units below the top has Q_i ≤ Φ̄(53/√2) < 1e-300.
NEGLIGIBLE_GAP = 53.0
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


def shared_grid_log_q(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log Q for a batch of standardised histograms on one trapezoid grid per histogram.

    Args:
        v: (B, C) standardised votes.

    Returns:
        ``(log_q, ok)``: (B, C) log-probabilities and a boolean mask of the entries whose
        a-posteriori checks passed; the others must be recomputed by :func:`per_class_log_q`.
    """
    b, c = v.shape
    vmax = v.max(axis=1)
    relevant = v >= (vmax - NEGLIGIBLE_GAP)[:, None]
    vmin_rel = np.where(relevant, v, np.inf).min(axis=1)
    # (F2)+(F3): every relevant mode is ≥ (v_i + v_max)/2, so this left end leaves ≤ Φ̄(TAIL)
    # relative mass outside; the right end is TAIL beyond every class's centre.
    x_lo = 0.5 * (vmin_rel + vmax) - SHARED_TAIL
    x_hi = vmax + SHARED_TAIL
    h = 0.3 / math.sqrt(max(1.0, c / 10.0))
    # Round node counts up to a multiple of 4 (plus one, so the 2h rule shares the end
    # points): few distinct grid sizes, so each is one dense array operation.
    n_nodes = 4 * np.ceil((x_hi - x_lo) / (4 * h)).astype(np.int64) + 1
    log_q = np.empty((b, c))
    ok = np.zeros((b, c), dtype=bool)
    # Group histograms with equal node counts so the work is one dense array per group.
    order = np.argsort(n_nodes, kind="stable")
    sorted_n = n_nodes[order]
    starts = np.flatnonzero(np.r_[True, sorted_n[1:] != sorted_n[:-1]])
    ends = np.r_[starts[1:], b]
    for s, e in zip(starts, ends, strict=True):
        n = int(sorted_n[s])
        # Bound the working set to ~4M doubles per chunk.
        step = max(1, int(4_000_000 // max(1, n * c)))
        for cs in range(s, e, step):
            idx = order[cs : min(e, cs + step)]
            lq, good = _shared_grid_block(v[idx], x_lo[idx], n, h, relevant[idx])
            log_q[idx] = lq
            ok[idx] = good
    return log_q, ok


def _shared_grid_block(
    v: np.ndarray, x_lo: np.ndarray, n: int, h: float, relevant: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    x = x_lo[:, None] + h * np.arange(n)[None, :]  # (B, N)
    t = x[:, None, :] - v[:, :, None]  # (B, C, N)
    log_cdf = log_ndtr_fast(t)
    total = log_cdf.sum(axis=1, keepdims=True)  # Σ_j log Φ(x − v_j)
    ell = t
    ell *= t
    ell *= -0.5
    ell -= log_cdf
    ell += total - _LOG_SQRT_2PI  # ℓ_i(x) = log φ(x − v_i) + Σ_{j≠i} log Φ(x − v_j)
    del log_cdf
    peak = ell.max(axis=-1)
    peak_safe = np.where(np.isfinite(peak), peak, 0.0)
    e = np.exp(ell - peak_safe[..., None])
    with np.errstate(divide="ignore"):
        log_fine = np.log(e.sum(axis=-1)) + peak_safe + math.log(h)
        log_coarse = np.log(e[..., ::2].sum(axis=-1)) + peak_safe + math.log(2 * h)
    near_peak = (e >= math.exp(-4.5)).sum(axis=-1)
    with np.errstate(invalid="ignore"):
        disc = np.abs(np.expm1(log_coarse - log_fine))
        # (F4) at the right end: |ℓ'(x_hi)| ≥ (x_hi − v_i) − (C−1)·λ(7.5) ≥ 7.5 − 1e-11·C.
        slope = np.maximum(x[:, -1][:, None] - v - 1e-11 * v.shape[1], 1e-300)
        right_tail = ell[..., -1] - np.log(slope) - log_fine
        # The left end is at least TAIL left of every relevant mode (F2, F3); also require the
        # peak to be interior so the grid brackets the mode.
        interior = (ell[..., 0] < peak) & (ell[..., -1] < peak)
    strip = strip_error_estimate(ell, h, log_fine)
    ok = (
        relevant
        & np.isfinite(log_fine)
        & (strip <= STRIP_RTOL)
        & (disc <= DISCRETISATION_RTOL)
        & (near_peak >= MIN_NODES_NEAR_PEAK)
        & (right_tail <= math.log(SHARED_TAIL_RTOL))
        & interior
    )
    return log_fine, ok


def _class_terms(d: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ℓ, ℓ', ℓ'' (up to the constant) at points z (M,) for offsets d (M, C−1)."""
    t = z[:, None] + d
    lam = mills(t)
    kappa = lam * (t + lam)
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
