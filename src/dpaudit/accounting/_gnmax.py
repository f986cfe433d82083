"""Rényi-DP of the Gaussian noisy argmax (GNMax), data-independent and data-dependent.

Sources: Papernot, Song, Mironov, Raghunathan, Talwar, Erlingsson, *Scalable Private Learning
with PATE* (ICLR 2018, arXiv:1802.08908): Prop. 8 (data-independent), Prop. 7 (union bound
on ``q = Pr[M(D) ≠ i*]``), Thm 6 with Prop. 10's parameters and Lemma 9's condition
(data-dependent). Chadha et al. 2024 (arXiv:2402.09403, §4, Fig. 2–4) plot both bounds; the
exact ``q = 1 − Q(H)_{i*}`` from the noisy-argmax probabilities (Chadha et al. 2024 Eq. 4;
Wang, Schuster, Shumailov, Lie & Papernot 2022, NeurIPS, Thm 1) is a valid and tighter ``q̃``,
since Thm 6 needs only an upper bound on ``Pr[M(D) ≠ i*]``.

Everything is vectorised over a batch of histograms ``(..., C)`` and a grid of orders.
Per-query quantities (μ1, μ2, ε1, ε2, A, B and the order-free conditions V1, V3, V4) are
computed once per histogram; only V2 and the final log-sum-exp are per order.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_memory,
    check_orders,
    check_positive,
    check_votes,
    check_work,
)
from dpaudit.accounting._curve import PerQueryRDP
from dpaudit.accounting._numerics import log1mexp
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = [
    "GNMaxRDP",
    "gnmax_log_q",
    "gnmax_rdp",
    "gnmax_rdp_details",
    "gnmax_rdp_from_log_q",
]

ANALYSES = ("data-dependent", "data-independent")
Q_METHODS = ("union", "exact")

#: Relative slack added to the exact q: :func:`dpaudit.mechanisms.log_argmax_probabilities`
#: guarantees ≤ 1e-9 relative error, so ``q·(1 + 1e-9)`` is a certified upper bound on
#: ``Pr[M(D) ≠ i*]`` as Thm 6 requires.
EXACT_Q_RELATIVE_SLACK = 1e-9


# ----------------------------------------------------------------------------------------
# q̃ (Prop. 7 union bound, or exact)
# ----------------------------------------------------------------------------------------
def log_q_union_flat(v: np.ndarray, sigma: float) -> np.ndarray:
    """Union bound (Prop. 7): ``log Σ_{i≠i*} Φ̄((n_{i*} − n_i)/(√2σ))``, capped at log(1 − 1/m)."""
    n, m = v.shape
    if m == 1:
        return np.full(n, -np.inf)
    rows = np.arange(n)
    istar = np.argmax(v, axis=1)  # first index on ties, as the reference implementation
    gaps = v[rows, istar][:, None] - v
    with np.errstate(over="ignore"):  # gap/σ → ∞ as σ → 0: log Φ̄ → −∞, the limit
        terms = special.log_ndtr(-gaps / (math.sqrt(2.0) * sigma))
    terms[rows, istar] = -np.inf
    log_q = special.logsumexp(terms, axis=1)
    return np.minimum(log_q, math.log1p(-1.0 / m))


def _log_q_exact_flat(v: np.ndarray, sigma: float) -> np.ndarray:
    """``log(1 − Q(H)_{i*})`` from the exact noisy-argmax probabilities (+ certified slack)."""
    from dpaudit.mechanisms import log_argmax_probabilities

    n, m = v.shape
    if m == 1:
        return np.full(n, -np.inf)
    rows = np.arange(n)
    istar = np.argmax(v, axis=1)
    log_probs = np.array(log_argmax_probabilities(v, sigma), dtype=np.float64, copy=True)
    log_probs[rows, istar] = -np.inf
    log_q = special.logsumexp(log_probs, axis=1) + math.log1p(EXACT_Q_RELATIVE_SLACK)
    # Both q̃'s bound Pr[M(D) ≠ i*], so their minimum does too; it matters only where the
    # union bound is itself exact to 1e-9 (C = 2, or very large gaps) and the slack shows.
    return np.minimum(log_q, log_q_union_flat(v, sigma))


def _flat_votes(votes: ArrayLike) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = check_votes("votes", votes, min_classes=1, nonneg=True)
    return arr.reshape(-1, arr.shape[-1]), arr.shape[:-1]


def gnmax_log_q(votes: ArrayLike, sigma: float, *, q: str = "union") -> FloatArray:
    """``log q̃``, an upper bound on the log-probability that GNMax does not return ``i*``.

    Args:
        votes: vote histogram ``(C,)`` or batch ``(..., C)``, non-negative, C ≥ 1.
        sigma: Gaussian noise standard deviation σ > 0 (vote units).
        q: ``"union"`` (Papernot et al. 2018 Prop. 7) or ``"exact"``
            (``1 − Q(H)_{i*}`` from :func:`dpaudit.mechanisms.log_argmax_probabilities`,
            times ``1 + 1e-9`` to cover its stated error, and never above the union bound).

    Returns:
        ``log q̃`` of shape ``votes.shape[:-1]``; capped at ``log(1 − 1/C)``; ``−inf`` for C = 1.

    Raises:
        ValueError: σ ≤ 0, negative or non-finite votes, empty input, unknown ``q``.

    Example:
        >>> float(np.exp(gnmax_log_q([200, 30, 20], 40)))  # doctest: +ELLIPSIS
        0.00205837297308...
    """
    check_choice("q", q, Q_METHODS)
    flat, lead = _flat_votes(votes)
    s = check_positive("sigma", sigma)
    fn = log_q_union_flat if q == "union" else _log_q_exact_flat
    return fn(flat, s).reshape(lead)


# ----------------------------------------------------------------------------------------
# RDP_GN(log q̃, σ, λ)  (Papernot et al. 2018 Thm 6 with Prop. 10's parameters)
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _DDTerms:
    """Per-query quantities of Thm 6 with Prop. 10's parameters (all shape (N,))."""

    log_q: np.ndarray
    mu1: np.ndarray
    log1mq: np.ndarray
    log_a: np.ndarray
    log_b: np.ndarray
    v1: np.ndarray
    v3: np.ndarray
    v4: np.ndarray


def dd_terms(log_q: np.ndarray, sigma: float) -> _DDTerms:
    var = sigma * sigma
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu2 = sigma * np.sqrt(-log_q)
        mu1 = mu2 + 1.0
        eps1 = mu1 / var
        eps2 = mu2 / var
        v1 = mu2 > 1.0
        v3 = (log_q + eps2) < 0.0
        lemma9 = (mu2 - 1.0) * eps2 - mu2 * (np.log(mu1 / (mu1 - 1.0)) + np.log(mu2 / (mu2 - 1.0)))
        v4 = v1 & (log_q <= lemma9)
        log1mq = log1mexp(log_q)
        log_a = log1mq - log1mexp((log_q + eps2) * (1.0 - 1.0 / mu2))
        log_b = eps1 - log_q / (mu1 - 1.0)
    return _DDTerms(log_q, mu1, log1mq, log_a, log_b, v1, v3, v4)


def raw_dd(t: _DDTerms, lam: np.ndarray) -> np.ndarray:
    """Thm 6's bound DD at every (query, order), without validity checks: shape (N, K)."""
    lm1 = lam[None, :] - 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        return (
            np.logaddexp(
                t.log1mq[:, None] + lm1 * t.log_a[:, None],
                t.log_q[:, None] + lm1 * t.log_b[:, None],
            )
            / lm1
        )


@dataclasses.dataclass(frozen=True)
class _RDPGN:
    rdp: np.ndarray  # (N, K)
    valid: np.ndarray | None  # (N, K): V1–V4 hold (or log q̃ = −inf); None without masks
    v1: np.ndarray | None  # (N,)
    v2: np.ndarray | None  # (N, K)
    v3: np.ndarray | None  # (N,)
    v4: np.ndarray | None  # (N,)


#: Rows per block in :func:`rdp_gn_flat`: keeps the (rows × orders) temporaries in cache
#: instead of allocating several 100-MB arrays for 10^5 queries.
_BLOCK_ROWS = 2048


#: Largest per-query RDP table (queries × orders) of the GNMax-family accounting (~40 ns
#: per entry, so ~20 s; its memory is also checked against the memory cap). Raise
#: ``dpaudit.accounting._gnmax.MAX_RDP_ENTRIES`` for larger batches.
MAX_RDP_ENTRIES = 5 * 10**8


def check_rdp_table(num_queries: int, num_orders: int) -> None:
    """Refuse, before allocating, a per-query RDP table of ``num_queries × num_orders``."""
    what = (
        f"the per-query RDP of votes with {num_queries} histograms at orders=<{num_orders} orders>"
    )
    check_work(
        float(num_queries) * num_orders,
        MAX_RDP_ENTRIES,
        what,
        "table entries",
        "pass fewer histograms or orders, or raise dpaudit.accounting._gnmax.MAX_RDP_ENTRIES",
    )
    check_memory(32.0 * num_queries * num_orders, what)


def rdp_gn_flat(
    log_q: np.ndarray, sigma: float, lam: np.ndarray, *, with_masks: bool = True
) -> _RDPGN:
    """RDP_GN(log q̃, σ, λ) (Papernot et al. 2018 Thm 6) for log q̃ (N,) and orders (K,).

    Only rows where the order-free conditions V1, V3, V4 hold evaluate Thm 6, in blocks of
    :data:`_BLOCK_ROWS`; V2 (μ1 > λ) is applied per order inside the block.
    """
    n, k = log_q.size, lam.size
    check_rdp_table(n, k)
    with np.errstate(divide="ignore", over="ignore"):  # σ² underflows: λ/σ² = ∞, the limit
        rho_ind = lam / (sigma * sigma)
    lm1 = lam - 1.0
    t = dd_terms(log_q, sigma)
    order_free = t.v1 & t.v3 & t.v4
    rdp = np.empty((n, k))
    rdp[...] = rho_ind
    ok = np.zeros((n, k), dtype=bool) if with_masks else None
    rows = np.flatnonzero(order_free)
    for start in range(0, rows.size, _BLOCK_ROWS):
        r = rows[start : start + _BLOCK_ROWS]
        x = lm1 * t.log_a[r, None]
        x += t.log1mq[r, None]
        y = lm1 * t.log_b[r, None]
        y += t.log_q[r, None]
        np.logaddexp(x, y, out=x)
        x /= lm1
        v2 = t.mu1[r, None] > lam
        if ok is not None:
            ok[r] = v2 & np.isfinite(x)
            v2 = ok[r]
        np.maximum(x, 0.0, out=x)
        np.fmin(x, rho_ind, out=x)  # fmin: a NaN (never expected when V1–V4 hold) gives λ/σ²
        rdp[r] = np.where(v2, x, rho_ind)
    zero = np.isneginf(log_q)
    if zero.any():  # the output is constant: 0-RDP, no condition needed
        rdp[zero] = 0.0
        if ok is not None:
            ok[zero] = True
    if ok is None:
        return _RDPGN(rdp, None, None, None, None, None)
    v2_all = (t.mu1[:, None] > lam[None, :]) | zero[:, None]
    return _RDPGN(rdp, ok, t.v1 | zero, v2_all, t.v3 | zero, t.v4 | zero)


def _check_log_q(log_q: ArrayLike) -> np.ndarray:
    arr = check_array("log_q", log_q, finite=False)
    if np.any(np.isnan(arr)) or np.any(arr > 0) or np.any(np.isposinf(arr)):
        raise ValueError(f"log_q must be ≤ 0 (a log-probability) and not NaN, got {log_q!r}")
    return arr


def gnmax_rdp_from_log_q(
    log_q: ArrayLike, sigma: float, orders: ArrayLike = DEFAULT_ORDERS
) -> FloatArray:
    """``RDP_GN(log q̃, σ, λ)``: Thm 6 of Papernot et al. 2018 given ``log q̃``.

    ``min(λ/σ², DD)`` where Thm 6's conditions V1–V4 hold (Prop. 10 parameters), else
    ``λ/σ²`` (Prop. 8); 0 where ``log q̃ = −∞``. Use :func:`gnmax_rdp_details` to see which
    orders fell back.

    Args:
        log_q: ``log q̃ ≤ 0``, any shape ``S`` (``−inf`` allowed).
        sigma: σ > 0 of a mechanism that is (λ, λ/σ²)-RDP (GNMax with noise σ; the threshold
            step with noise σ1 uses σ = √2·σ1).
        orders: Rényi orders λ > 1 (default :data:`DEFAULT_ORDERS`).

    Returns:
        RDP of shape ``S + (len(orders),)``, ≥ 0.

    Raises:
        ValueError: ``log q̃ > 0`` or NaN, σ ≤ 0, bad orders.

    Example:
        >>> float(gnmax_rdp_from_log_q(-8.200699289, 40, [20.0])[0])  # doctest: +ELLIPSIS
        0.000249051...
    """
    lq = _check_log_q(log_q)
    s = check_positive("sigma", sigma)
    lam = check_orders(orders)
    return rdp_gn_flat(lq.reshape(-1), s, lam, with_masks=False).rdp.reshape(*lq.shape, lam.size)


# ----------------------------------------------------------------------------------------
# Public entry points
# ----------------------------------------------------------------------------------------
def check_analysis(analysis: object, q: object) -> None:
    """``analysis`` in :data:`ANALYSES` and ``q`` in :data:`Q_METHODS` (ValueError else)."""
    check_choice("analysis", analysis, ANALYSES)
    check_choice("q", q, Q_METHODS)


def _checked(
    votes: ArrayLike, sigma: float, orders: ArrayLike, analysis: str, q: str
) -> tuple[np.ndarray, tuple[int, ...], float, np.ndarray]:
    """Checked arguments of the GNMax entry points: flat votes, batch shape, σ, orders."""
    check_analysis(analysis, q)
    flat, lead = _flat_votes(votes)
    s, lam = check_positive("sigma", sigma), check_orders(orders)
    check_rdp_table(flat.shape[0], lam.size)
    return flat, lead, s, lam


@dataclasses.dataclass(frozen=True, eq=False)
class GNMaxRDP(PerQueryRDP):
    """Per-query RDP of GNMax with a per-order report of which analysis applied.

    Attributes:
        rdp, orders, log_q: as :class:`~dpaudit.accounting._curve.PerQueryRDP`.
        fallback: ``(..., K)`` True where the data-dependent analysis was requested but a
            validity condition of Thm 6 failed, so the data-independent ``λ/σ²`` was used.
        improved: ``(..., K)`` True where the data-dependent bound was valid and strictly
            below ``λ/σ²`` (or 0 because ``q̃ = 0``).
        v1, v3, v4: ``(...)`` order-free conditions μ2 > 1, q̃·e^{ε2} < 1, Lemma 9.
        v2: ``(..., K)`` the per-order condition μ1 > λ.
        sigma: σ.
        analysis: ``"data-dependent"`` or ``"data-independent"``.
        q: ``"union"`` or ``"exact"``.
        method: the sources.
    """

    v1: np.ndarray
    v2: np.ndarray
    v3: np.ndarray
    v4: np.ndarray
    sigma: float
    analysis: str
    q: str
    method: str = (
        "Papernot et al. 2018 Prop. 8 (data-independent), Thm 6 + Prop. 7/10 (data-dependent)"
    )


def gnmax_rdp_details(
    votes: ArrayLike,
    sigma: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
    q: str = "union",
) -> GNMaxRDP:
    """Per-query RDP of GNMax with the validity of Thm 6 reported per order.

    Same computation as :func:`gnmax_rdp`; the result also says where the data-dependent
    analysis fell back to ``λ/σ²`` (``fallback``) and which of V1–V4 failed.

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        sigma: GNMax noise σ > 0.
        orders: Rényi orders λ > 1 (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"``.
        q: ``"union"`` (default) or ``"exact"``; ignored by the data-independent analysis.

    Returns:
        :class:`GNMaxRDP`.

    Raises:
        ValueError: σ ≤ 0, negative/non-finite votes, empty orders, orders ≤ 1, bad choice.

    Example:
        >>> res = gnmax_rdp_details([200, 30, 20], 40, [5.0, 200.0])
        >>> res.fallback.tolist()  # μ1 ≈ 100.5 < 200: V2 fails at λ = 200
        [False, True]
    """
    flat, lead, s, lam = _checked(votes, sigma, orders, analysis, q)
    n, k = flat.shape[0], lam.size
    shape = (*lead, k)
    log_q = log_q_union_flat(flat, s) if q == "union" else _log_q_exact_flat(flat, s)
    if analysis == "data-independent":
        with np.errstate(divide="ignore", over="ignore"):  # σ → 0: λ/σ² = ∞, the limit
            rdp = np.broadcast_to(lam / (s * s), (n, k)).copy()
        false_nk = np.zeros(shape, dtype=bool)
        false_n = np.zeros(lead, dtype=bool)
        return GNMaxRDP(
            rdp.reshape(shape), lam, log_q.reshape(lead), false_nk, false_nk.copy(),
            false_n, false_nk.copy(), false_n.copy(), false_n.copy(), s, analysis, q,
        )  # fmt: skip
    res = rdp_gn_flat(log_q, s, lam)
    with np.errstate(divide="ignore", over="ignore"):
        rho_ind = lam / (s * s)
    improved = res.valid & (res.rdp < rho_ind[None, :])
    return GNMaxRDP(
        res.rdp.reshape(shape),
        lam,
        log_q.reshape(lead),
        (~res.valid).reshape(shape),
        improved.reshape(shape),
        res.v1.reshape(lead),
        res.v2.reshape(shape),
        res.v3.reshape(lead),
        res.v4.reshape(lead),
        s,
        analysis,
        q,
    )


def gnmax_rdp(
    votes: ArrayLike,
    sigma: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
    q: str = "union",
) -> FloatArray:
    """Per-query Rényi-DP of the Gaussian noisy argmax (GNMax).

    * ``analysis="data-independent"``: ``λ/σ²`` (Papernot et al. 2018 Prop. 8: Gaussian
      mechanism with L2 sensitivity √2).
    * ``analysis="data-dependent"``: Thm 6 with Prop. 10's parameters, at ``q̃`` from the union
      bound (Prop. 7, ``q="union"``) or from the exact output probabilities (``q="exact"``,
      ``1 − Q(H)_{i*}``, Chadha et al. 2024 Eq. 4; valid and tighter). Orders where a
      condition V1–V4 fails fall back to ``λ/σ²`` (Prop. 8). The returned array cannot say where:
      call :func:`gnmax_rdp_details` (same values) for the per-order ``fallback`` report and
      which of V1–V4 failed; :class:`~dpaudit.accounting.PrivacyLedger` counts fallbacks.

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)`` of non-negative vote counts.
        sigma: GNMax noise standard deviation σ > 0 (vote units).
        orders: Rényi orders λ > 1 (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"``.
        q: ``"union"`` (default) or ``"exact"``.

    Returns:
        RDP of each query at each order, shape ``(..., len(orders))``.

    Raises:
        ValueError: σ ≤ 0, negative or non-finite votes, empty or ≤ 1 orders, bad choice.

    Example:
        >>> np.round(gnmax_rdp([200, 30, 20], 40, [5.0, 20.0]), 10).tolist()
        [0.0006043317, 0.0013113537]
    """
    flat, lead, s, lam = _checked(votes, sigma, orders, analysis, q)
    if analysis == "data-independent":
        with np.errstate(divide="ignore", over="ignore"):  # σ → 0: λ/σ² = ∞, the limit
            return np.broadcast_to(lam / (s * s), (*lead, lam.size)).copy()
    log_q = log_q_union_flat(flat, s) if q == "union" else _log_q_exact_flat(flat, s)
    return rdp_gn_flat(log_q, s, lam, with_masks=False).rdp.reshape(*lead, lam.size)
