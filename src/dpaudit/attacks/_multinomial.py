"""Exact output distribution of the noisy argmax on multinomial histograms.

The computational core of the multinomial (PATE) histogram models of Chadha et al. 2024
("Auditing Private Prediction", arXiv:2402.09403, §5.1), used by :mod:`dpaudit.attacks.parametric`
and :mod:`dpaudit.attacks.knn`.

Each experiment of an audit draws a fresh histogram H, so its output is one draw from the
mixture ``p̄ = E_H[Q(H)]`` (Q the noisy-argmax output probabilities, Chadha et al. 2024 Eq. 4).
For multinomial histograms (exchangeable teachers) ``p̄`` is computed exactly by
Poissonisation: ``Mult(K, p)`` is the law of independent ``Poisson(K p_i)`` conditioned on their
sum being K, so ``E[Q_c(H)] = κ·∫ [z^K] (g_c ∏_{i≠c} G_i)(z; x) dx`` with
``G_i(z; x) = Σ_h Poi(h; K p_i) Φ(x − h_i/σ) z^h``, ``g_c`` the same with φ, and κ the
normaliser; the coefficients are products of non-negative sequences (no cancellation), the
x-integral is the trapezoidal rule of :mod:`dpaudit.mechanisms` on a grid of step ``0.25/√C``
(tails beyond 9 standard deviations and binomial tails below 1e-20 dropped). Agreement with
brute-force enumeration is ≤ 1e-14 in the tests. A PATE model's two rows (one vote added from
P or from P′) come from one pass with first-order dual numbers
(:func:`_multinomial_pair_output`, step ``0.5/√C``), instead of one product per added vote.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special, stats

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_array, check_memory, check_nonneg_int, check_scale

__all__ = ["clear_output_cache", "multinomial_output_probabilities"]

#: Binomial tail dropped on each side of a class count (multinomial mass outside the box).
_COUNT_TAIL = 1e-20
#: Standard deviations of Gaussian tail beyond the grid of the x-integral.
_HALF_WIDTH = 9.0
#: Grid step of the x-integral in :func:`_multinomial_pair_output`: ``min(cap, scale/√C)``.
#: The trapezoidal rule converges like ``exp(−a/h²)`` on these entire integrands; measured
#: against a 8× finer grid (C = 2…20, k ≤ 250, σ = 0.5…40), the discretisation error first
#: shows at 1.25/√C (5e-10 relative) and is below the 1e-13 rounding floor from 1.0/√C
#: down; half of the onset step leaves it below 1e-30.
_PAIR_STEP_SCALE = 0.5
_PAIR_STEP_CAP = 0.2


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise full convolution of non-negative ``(U, n)`` and ``(U, m)`` arrays."""
    if a.shape[1] < b.shape[1]:
        a, b = b, a
    u, n = a.shape
    m = b.shape[1]
    if m == 1:
        return a * b
    pad = np.zeros((u, n + 2 * (m - 1)))
    pad[:, m - 1 : m - 1 + n] = a
    windows = sliding_window_view(pad, m, axis=1)  # [u, k, j] = pad[u, k + j]
    return np.matmul(windows, b[:, ::-1, None])[..., 0]


def _pair_at(a: np.ndarray, off_a: int, b: np.ndarray, off_b: int, total: int) -> np.ndarray:
    """``Σ_s a[s]·b[total − s]`` per row, for sequences starting at indices off_a, off_b."""
    t = total - off_a - off_b
    s_lo = max(0, t - (b.shape[1] - 1))
    s_hi = min(a.shape[1] - 1, t)
    if s_hi < s_lo:
        return np.zeros(a.shape[0])
    s = np.arange(s_lo, s_hi + 1)
    return np.einsum("us,us->u", a[:, s], b[:, t - s])


def _count_range(p: float, k: int) -> tuple[int, int]:
    """Counts of a Bin(k, p) class outside which the mass is below 1e-20 on each side.

    Found on the exact cdf / survival function (``scipy.stats.binom.ppf``/``isf`` lose the
    far tails in floating point and would return the whole range).
    """
    if p >= 1.0:
        return k, k
    h = np.arange(k + 1)
    cdf = stats.binom.cdf(h, k, p)
    sf = stats.binom.sf(h, k, p)
    lo = int(np.argmax(cdf >= _COUNT_TAIL))  # first count with P(X ≤ h) ≥ tail
    hi = int(np.argmax(sf < _COUNT_TAIL)) if np.any(sf < _COUNT_TAIL) else k
    return max(lo - 1, 0), min(hi + 1, k)


def _check_distribution(name: str, value: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    p = check_array(name, value, ndim=1, nonneg=True)
    if p.size < 2:
        raise ValueError(f"{name} must have at least 2 classes, got shape {p.shape}")
    if num_classes is not None and p.size != num_classes:
        raise ValueError(f"{name} must have {num_classes} classes, got {p.size}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got sum {p.sum()!r}")
    p = p / p.sum()
    p.setflags(write=False)
    return p


def multinomial_output_probabilities(
    probabilities: ArrayLike,
    num_votes: int,
    sigma: float,
    *,
    offset: ArrayLike | None = None,
) -> FloatArray:
    """Exact ``E_M[Q(M + offset)]`` for ``M ~ Mult(num_votes, probabilities)``.

    ``Q(H)`` is the output distribution of the Gaussian noisy argmax (Chadha et al. 2024 Eq. 4). The
    expectation over the multinomial is evaluated by Poissonisation (module notes):
    ``P(M = h) = ∏_i Poi(h_i; K p_i) / Z_K`` on ``Σ h_i = K``, so for each x on the
    integration grid ``E[φ(x − v_c) ∏_{i≠c} Φ(x − v_i)]`` is the coefficient of ``z^K`` in a
    product of one power series per class; classes with ``p_i = 0`` contribute a constant
    factor and the most probable class is the remainder ``K − Σ_{i≠top} h_i``. ``Z_K`` is the
    Poisson mass of the same truncated box, so truncation and rounding of the Poisson
    weights cancel to first order. Error: < 1e-13 absolute per class (tested against
    brute-force enumeration and, for point masses, against
    :func:`dpaudit.mechanisms.argmax_probabilities`).

    Args:
        probabilities: the class distribution p of one vote, shape ``(C,)``, summing to 1.
        num_votes: K ≥ 0, the number of multinomial votes.
        sigma: noise standard deviation σ > 0 (vote units).
        offset: votes added to every histogram, shape ``(C,)`` (default zeros); e.g. the one
            vote of an affected teacher.

    Returns:
        ``(C,)`` output probabilities, summing to 1 within 1e-12.

    Raises:
        ValueError, TypeError: bad probabilities, K, σ or offset.

    Example:
        >>> p = multinomial_output_probabilities([0.8, 0.2], 10, 2.0)
        >>> round(float(p.sum()), 12)
        1.0
    """
    p = _check_distribution("probabilities", probabilities)
    k = check_nonneg_int("num_votes", num_votes)
    s = check_scale("sigma", sigma)
    c = p.size
    if offset is None:
        off = np.zeros(c)
    else:
        off = check_array("offset", offset, ndim=1, nonneg=True)
        if off.size != c:
            raise ValueError(f"offset must have {c} entries, got shape {off.shape}")
    _check_output_memory(p, k, s, off)
    return _multinomial_output(tuple(p.tolist()), k, s, tuple(off.tolist())).copy()


def _check_output_memory(p: np.ndarray, k: int, sigma: float, off: np.ndarray) -> None:
    """Refuse, before any work, a call of :func:`_multinomial_output` beyond the memory cap.

    The count ranges need three ``(K + 1)`` arrays; the power series are ``(u, W)`` arrays
    (u grid points, W the summed count ranges), about ``2·C + 4`` of them alive at once.
    """
    what = f"multinomial_output_probabilities with num_votes={k}, sigma={sigma:g}"
    nz = np.flatnonzero(p > 0)
    if k == 0 or nz.size == 1:
        return
    check_memory(24.0 * (k + 1), what)
    ranges = [_count_range(float(p[i]), k) for i in nz]
    v_lo = max(max((lo + off[i]) / sigma for (lo, _), i in zip(ranges, nz, strict=True)),
               float(off.max()) / sigma)  # fmt: skip
    v_hi = max(max((hi + off[i]) / sigma for (_, hi), i in zip(ranges, nz, strict=True)),
               float(off.max()) / sigma)  # fmt: skip
    step = min(0.1, 0.25 / math.sqrt(p.size))
    u = math.ceil(((v_hi + _HALF_WIDTH + step) - (v_lo - _HALF_WIDTH)) / step)
    width = sum(hi - lo + 1 for lo, hi in ranges)
    check_memory(8.0 * u * width * (2 * p.size + 4), f"{what} and {p.size} classes")


@functools.lru_cache(maxsize=4096)
def _multinomial_output(
    p_t: tuple[float, ...], k: int, sigma: float, off_t: tuple[float, ...]
) -> np.ndarray:
    from dpaudit.mechanisms import argmax_probabilities

    p = np.asarray(p_t)
    off = np.asarray(off_t)
    c = p.size
    nz = [int(i) for i in np.flatnonzero(p > 0)]
    if k == 0 or len(nz) == 1:
        votes = off.copy()
        if k:
            votes[nz[0]] += k
        out = np.asarray(argmax_probabilities(votes, sigma), dtype=np.float64)
        out.setflags(write=False)
        return out
    zero = [int(i) for i in np.flatnonzero(p <= 0)]
    top = max(nz, key=lambda i: (p[i], -i))
    others = [i for i in nz if i != top]
    ranges = {i: _count_range(float(p[i]), k) for i in nz}
    # Lower bound on the largest vote (any class's lowest count) and the largest vote.
    v_lo = max(max((ranges[i][0] + off[i]) / sigma for i in nz), float(off.max()) / sigma)
    v_hi = max(max((ranges[i][1] + off[i]) / sigma for i in nz), float(off.max()) / sigma)
    step = min(0.1, 0.25 / math.sqrt(c))
    x = np.arange(v_lo - _HALF_WIDTH, v_hi + _HALF_WIDTH + step, step)
    u = x.size
    weights, big_g, small_g = {}, {}, {}
    for i in nz:
        lo, hi = ranges[i]
        h = np.arange(lo, hi + 1)
        w = stats.poisson.pmf(h, k * p[i])
        z = x[:, None] - (h[None, :] + off[i]) / sigma
        weights[i] = w
        big_g[i] = w[None, :] * special.ndtr(z)
        small_g[i] = w[None, :] * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    log_phi_zero = {i: special.log_ndtr(x - off[i] / sigma) for i in zero}
    log_z = np.sum([log_phi_zero[i] for i in zero], axis=0) if zero else np.zeros(u)
    # Normaliser: Poisson mass of the truncated box at total K (same weights as the sums).
    norm_seq = np.ones((1, 1))
    norm_off = 0
    for i in nz:
        norm_seq = _conv(norm_seq, weights[i][None, :])
        norm_off += ranges[i][0]
    idx = k - norm_off
    z_k = float(norm_seq[0, idx]) if 0 <= idx < norm_seq.shape[1] else 0.0
    if not z_k > 0:  # pragma: no cover - the box always contains the mode
        raise FloatingPointError("multinomial normaliser underflowed")
    # Prefix / suffix products over the non-top classes.
    prefix = [(np.ones((u, 1)), 0)]
    for i in others:
        a, o = prefix[-1]
        prefix.append((_conv(a, big_g[i]), o + ranges[i][0]))
    suffix = [(np.ones((u, 1)), 0)]
    for i in reversed(others):
        a, o = suffix[-1]
        suffix.append((_conv(a, big_g[i]), o + ranges[i][0]))
    suffix = suffix[::-1]  # suffix[j] = product over others[j:]
    top_lo = ranges[top][0]
    rest, rest_off = prefix[-1]
    out = np.zeros(c)
    # Target = top class.
    vals = _pair_at(small_g[top], top_lo, rest, rest_off, k)
    out[top] = float(np.sum(vals * np.exp(log_z)))
    # Targets among the zero classes: φ/Φ at their own offset times the common product.
    base = _pair_at(big_g[top], top_lo, rest, rest_off, k)
    for i in zero:
        z = x - off[i] / sigma
        log_ratio = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi) - log_phi_zero[i]
        out[i] = float(np.sum(base * np.exp(log_ratio + log_z)))
    # Targets among the other non-zero classes.
    for j, i in enumerate(others):
        a, o = prefix[j]
        t = _conv(a, small_g[i])
        b, ob = suffix[j + 1]
        t = _conv(t, b)
        vals = _pair_at(big_g[top], top_lo, t, o + ranges[i][0] + ob, k)
        out[i] = float(np.sum(vals * np.exp(log_z)))
    out *= step / z_k
    out.setflags(write=False)
    return out


def _band(a: np.ndarray, b: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Coefficients ``lo..hi`` of the row-wise product of the series ``a`` and ``b``
    (relative indices; zero outside the product's range), ``(U, hi − lo + 1)``.

    ``out[:, m − lo] = Σ_t a[:, t]·b[:, m − t]``: ``(hi − lo + 1)·len(a)`` products per row
    instead of the ``len(a)·len(b)`` of the full product.
    """
    u, n = a.shape
    nb = b.shape[1]
    # b over indices hi, hi−1, …, lo − n + 1 (zero outside [0, nb)), so that window w
    # (length n) holds b[m − t] for m = hi − w and t = 0…n − 1.
    first, last = lo - n + 1, hi
    rev = np.zeros((u, last - first + 1))
    src_lo, src_hi = max(first, 0), min(last, nb - 1)
    if src_hi >= src_lo:
        rev[:, last - src_hi : last - src_lo + 1] = b[:, src_lo : src_hi + 1][:, ::-1]
    windows = sliding_window_view(rev, n, axis=1)  # (u, hi − lo + 1, n)
    return np.matmul(windows, a[:, :, None])[..., 0][:, ::-1]


_Dual = tuple[np.ndarray, np.ndarray | None]


def _dual_conv(a: _Dual, b: _Dual) -> _Dual:
    """Product of two first-order dual series ``(V, D)``: ``(V_a V_b, V_a D_b + D_a V_b)``
    (``D = None`` stands for zero)."""
    v = _conv(a[0], b[0])
    parts = [_conv(a[0], b[1]) if b[1] is not None else None]
    parts.append(_conv(a[1], b[0]) if a[1] is not None else None)
    parts = [x for x in parts if x is not None]
    return v, (parts[0] + parts[1] if len(parts) == 2 else parts[0] if parts else None)


def _dual_pair(a: _Dual, off_a: int, b: _Dual, off_b: int, total: int) -> tuple[np.ndarray, ...]:
    """Coefficient ``total`` of the dual product of ``a`` and ``b`` (offsets off_a, off_b)."""
    v = _pair_at(a[0], off_a, b[0], off_b, total)
    d = np.zeros_like(v)
    if b[1] is not None:
        d += _pair_at(a[0], off_a, b[1], off_b, total)
    if a[1] is not None:
        d += _pair_at(a[1], off_a, b[0], off_b, total)
    return v, d


def _pair_grid(
    p: np.ndarray, k1: int, sigma: float, nz: list[int]
) -> tuple[dict[int, tuple[int, int]], np.ndarray, float]:
    """Count box per voted class (Bin(k1, p_i) within 1e-20 tails, one more for the added
    vote) and the x-grid of the integral (step :data:`_PAIR_STEP_SCALE`/√C)."""
    ranges = {}
    for i in nz:
        lo, hi = _count_range(float(p[i]), k1)
        ranges[i] = (lo, hi + 1)
    v_lo = max(ranges[i][0] / sigma for i in nz)
    v_hi = max(ranges[i][1] / sigma for i in nz)
    step = min(_PAIR_STEP_CAP, _PAIR_STEP_SCALE / math.sqrt(p.size))
    return ranges, np.arange(v_lo - _HALF_WIDTH, v_hi + _HALF_WIDTH + step, step), step


def _dual_class_series(
    p: np.ndarray,
    q: np.ndarray,
    k1: int,
    sigma: float,
    ranges: dict[int, tuple[int, int]],
    x: np.ndarray,
) -> tuple[dict[int, _Dual], dict[int, _Dual], dict[int, _Dual]]:
    """Per voted class i, the dual series ``(G_i, q_i·G̃_i)`` with Φ (``big``), with φ
    (``small``) and of the bare weights (``norm``): weights ``Poi(h; k1·p_i)`` and
    ``Poi(h − 1; k1·p_i)`` over the class's count box."""
    big: dict[int, _Dual] = {}
    small: dict[int, _Dual] = {}
    norm: dict[int, _Dual] = {}
    for i, (lo, hi) in ranges.items():
        h = np.arange(lo, hi + 1)
        lam = k1 * p[i]
        w = stats.poisson.pmf(h, lam)
        wt = q[i] * stats.poisson.pmf(h - 1, lam) if q[i] > 0 else None
        z = x[:, None] - h[None, :] / sigma
        cdf = special.ndtr(z)
        pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        big[i] = (w[None, :] * cdf, None if wt is None else wt[None, :] * cdf)
        small[i] = (w[None, :] * pdf, None if wt is None else wt[None, :] * pdf)
        norm[i] = (w[None, :], None if wt is None else wt[None, :])
    return big, small, norm


def _dual_normalisers(
    norm: dict[int, _Dual], ranges: dict[int, tuple[int, int]], k: int
) -> tuple[float, float]:
    """Poisson mass of the count box at total k: of the weights (row 0) and of the ε-term
    (row 1)."""
    tot: _Dual = (np.ones((1, 1)), None)
    off = 0
    for i in ranges:
        tot = _dual_conv(tot, norm[i])
        off += ranges[i][0]
    z_v, z_d = (float(t[0]) for t in _dual_pair(tot, off, (np.ones((1, 1)), None), 0, k))
    return z_v, z_d


def _dual_targets(
    big: dict[int, _Dual],
    small: dict[int, _Dual],
    ranges: dict[int, tuple[int, int]],
    others: list[int],
    top: int,
    k: int,
    c: int,
) -> tuple[np.ndarray, _Dual, int]:
    """The integrands ``(2, C, U)`` of every voted class as target (zero-order and ε rows),
    and the product over all voted classes but the top (with its offset).

    ``prefix[j]`` is the product over ``others[:j]``, ``suffix[j]`` that over
    ``others[j + 1:]`` and the top; target ``others[j]`` pairs its φ-series with their
    product on the band of coefficients that reaches total k (:func:`_band`).
    """
    u = big[top][0].shape[0]
    prefix: list[tuple[_Dual, int]] = [((np.ones((u, 1)), None), 0)]
    for i in others[:-1]:
        a, o = prefix[-1]
        prefix.append((_dual_conv(a, big[i]), o + ranges[i][0]))
    suffix: list[tuple[_Dual, int]] = [(big[top], ranges[top][0])]
    for i in reversed(others[1:]):
        a, o = suffix[-1]
        suffix.append((_dual_conv(a, big[i]), o + ranges[i][0]))
    suffix = suffix[::-1]
    vals = np.zeros((2, c, u))
    for j, i in enumerate(others):
        (a, oa), (b, ob) = prefix[j], suffix[j]
        g = small[i]
        t = k - ranges[i][0] - oa - ob  # the band's last index, paired with g[:, 0]
        lo_b = t - (g[0].shape[1] - 1)
        band_v = _band(a[0], b[0], lo_b, t)[:, ::-1]
        band_d = np.zeros_like(band_v)
        if b[1] is not None:
            band_d += _band(a[0], b[1], lo_b, t)[:, ::-1]
        if a[1] is not None:
            band_d += _band(a[1], b[0], lo_b, t)[:, ::-1]
        vals[0, i] = np.einsum("us,us->u", g[0], band_v)
        vals[1, i] = np.einsum("us,us->u", g[0], band_d)
        if g[1] is not None:
            vals[1, i] += np.einsum("us,us->u", g[1], band_v)
    rest = _dual_conv(prefix[-1][0], big[others[-1]])
    rest_off = prefix[-1][1] + ranges[others[-1]][0]
    vals[:, top] = _dual_pair(small[top], ranges[top][0], rest, rest_off, k)
    return vals, rest, rest_off


@functools.lru_cache(maxsize=1024)
def _multinomial_pair_output(
    p_t: tuple[float, ...], q_t: tuple[float, ...], k1: int, sigma: float
) -> np.ndarray:
    """``[E Q(M + e_Y), E Q(M + e_Y′)]`` for ``M ~ Mult(k1, p)``, ``Y ~ p``, ``Y′ ~ q``, ``(2, C)``.

    The same Poissonisation as :func:`_multinomial_output` (Chadha et al. 2024, arXiv:
    2402.09403, §5.1), for both rows in one pass. With ``λ_i = k1·p_i`` and
    ``Poi(h − 1; λ) = Poi(h; λ)·h/λ``, the law of ``M + e_{Y′}`` on ``Σ h_i = k1 + 1`` is
    ``∏_i Poi(h_i; λ_i)·Σ_y (q_y/λ_y)·h_y / Z_{k1}``: the first-order (ε) term of the product
    of the class series ``G_i + ε·q_i·G̃_i``, where ``G̃_i`` carries the weights
    ``Poi(h − 1; λ_i)`` (dual numbers). With ``q = p`` the weight is the constant
    ``(k1 + 1)/k1``, so the zero-order term gives row 0. Each target class needs the product
    of the other classes at the coefficients around ``k1 + 1`` only: prefix and suffix products
    over the classes, joined on that band (:func:`_band`). Every term is a sum of products of
    non-negative numbers. A class with ``p_y = 0 < q_y`` (its vote only from ``Y′``) adds
    ``q_y·E Q(M + e_y)`` from :func:`_multinomial_output`. Requires ``k1 ≥ 1`` and at least
    two classes with ``p_i > 0``.
    """
    p = np.asarray(p_t)
    q = np.asarray(q_t)
    c = p.size
    k = k1 + 1
    nz = [int(i) for i in np.flatnonzero(p > 0)]
    zero = [int(i) for i in np.flatnonzero(p <= 0)]
    top = max(nz, key=lambda i: (p[i], -i))
    others = [i for i in nz if i != top]
    ranges, x, step = _pair_grid(p, k1, sigma, nz)
    big, small, norm = _dual_class_series(p, q, k1, sigma, ranges, x)
    z_v, z_d = _dual_normalisers(norm, ranges, k)
    if not (z_v > 0 and (z_d > 0 or not q[nz].any())):  # pragma: no cover - box has the mode
        raise FloatingPointError("multinomial normaliser underflowed")
    vals, rest, rest_off = _dual_targets(big, small, ranges, others, top, k, c)
    # The zero classes: φ/Φ at count 0 times the product of all the others.
    log_phi_zero = special.log_ndtr(x)
    if zero:
        base = np.stack(_dual_pair(big[top], ranges[top][0], rest, rest_off, k))
        ratio = np.exp(-0.5 * x * x - 0.5 * math.log(2.0 * math.pi) - log_phi_zero)
        for i in zero:
            vals[:, i] = base * ratio
    out = step * np.einsum("rcu,u->rc", vals, np.exp(len(zero) * log_phi_zero))
    out[0] /= z_v
    mass = float(q[nz].sum())
    out[1] = out[1] * (mass / z_d) if mass > 0 else 0.0
    for y in zero:
        if q[y] > 0:
            off_y = np.zeros(c)
            off_y[y] = 1.0
            out[1] += q[y] * _multinomial_output(p_t, k1, sigma, tuple(off_y.tolist()))
    out.setflags(write=False)
    return out


def clear_output_cache() -> None:
    """Forget the cached exact output distributions (for benchmarks that time them cold)."""
    _multinomial_output.cache_clear()
    _multinomial_pair_output.cache_clear()
