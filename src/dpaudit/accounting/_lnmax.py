"""Rényi-DP of the Laplace noisy argmax (LNMax, PATE 2017).

Sources: Papernot, Abadi, Erlingsson, Goodfellow, Talwar, *Semi-supervised Knowledge Transfer
for Deep Learning from Private Training Data* (ICLR 2017, arXiv:1610.05755): Lemma 4 (bound
on q), Thm 3 (data-dependent moments), restated in RDP form (moments at order λ − 1 are the
RDP at order λ times λ − 1; Mironov 2017, arXiv:1702.07476). ε-DP implies
(λ, λε²/2)-RDP and (λ, ε)-RDP (Bun & Steinke 2016 Prop. 3.3; Mironov 2017 Prop. 5).

The data-dependent bound needs ``q̃ ≤ 1/(e^ε + 1)``; where that fails the data-independent
bound is used, and :func:`lnmax_rdp_details` reports it per query and order (``fallback``), as
:func:`~dpaudit.accounting.gnmax_rdp_details` does for GNMax.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_choice, check_orders, check_positive, check_votes
from dpaudit.accounting._curve import PerQueryRDP
from dpaudit.accounting._gnmax import ANALYSES, check_rdp_table
from dpaudit.accounting._numerics import log1mexp
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = ["LNMaxRDP", "lnmax_log_q", "lnmax_rdp", "lnmax_rdp_details"]


def _lnmax_log_q_flat(v: np.ndarray, b: float) -> np.ndarray:
    n, m = v.shape
    if m == 1:
        return np.full(n, -np.inf)
    rows = np.arange(n)
    istar = np.argmax(v, axis=1)
    with np.errstate(over="ignore"):  # Δ/b → ∞ as b → 0: that class never wins (limit)
        delta = (v[rows, istar][:, None] - v) / b
    # Pr[n_j + Z_j ≥ n_{i*} + Z_{i*}] = (2 + Δ_j)/(4·e^{Δ_j}) exactly for Laplace noise.
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isinf(delta), -np.inf, np.log(2.0 + delta) - delta) - math.log(4.0)
    terms[rows, istar] = -np.inf
    return np.minimum(special.logsumexp(terms, axis=1), math.log1p(-1.0 / m))


def lnmax_log_q(votes: ArrayLike, b: float) -> FloatArray:
    """``log q̃`` for LNMax: ``log min(Σ_{j≠i*} (2+Δ_j)·e^{−Δ_j}/4, 1 − 1/m)``.

    ``Δ_j = (n_{i*} − n_j)/b``.

    Papernot et al. 2017 (arXiv:1610.05755) Lemma 4 with the exact pairwise probability
    ``Pr[n_j + Z_j ≥ n_{i*} + Z_{i*}] = (2 + Δ_j)/(4·e^{Δ_j})`` of Laplace noise.

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        b: Laplace scale b > 0 (per-query ε = 2/b).

    Returns:
        ``log q̃`` of shape ``votes.shape[:-1]``.

    Raises:
        ValueError: b ≤ 0, negative or non-finite votes.

    Example:
        >>> round(float(lnmax_log_q([230, 15, 5] + [0] * 7, 20)), 9)
        -7.955387307
    """
    arr = check_votes("votes", votes, min_classes=1, nonneg=True)
    scale = check_positive("b", b)
    flat = arr.reshape(-1, arr.shape[-1])
    return _lnmax_log_q_flat(flat, scale).reshape(arr.shape[:-1])


@dataclasses.dataclass(frozen=True, eq=False)
class LNMaxRDP(PerQueryRDP):
    """Per-query RDP of LNMax with a per-order report of which analysis applied.

    Attributes:
        rdp, orders, log_q: as :class:`~dpaudit.accounting._curve.PerQueryRDP`.
        fallback: ``(..., K)`` True where the data-dependent analysis was requested but its
            validity condition ``q̃ ≤ 1/(e^ε + 1)`` failed (or the bound was not finite), so
            the data-independent ``min(λε²/2, ε)`` was used.
        improved: ``(..., K)`` True where the data-dependent bound was valid and strictly
            below the data-independent one.
        q_condition: ``(...)`` whether ``q̃ ≤ 1/(e^ε + 1)`` (Papernot et al. 2017 Thm 3;
            False for the data-independent analysis).
        b: Laplace scale b.
        epsilon: per-query pure-DP ε = 2/b.
        analysis: ``"data-dependent"`` or ``"data-independent"``.
        method: the sources.
    """

    q_condition: np.ndarray
    b: float
    epsilon: float
    analysis: str
    method: str = (
        "Papernot et al. 2017 Thm 3 + Lemma 4 (data-dependent); ε-DP ⇒ (λ, min(λε²/2, ε))-RDP "
        "(Bun & Steinke 2016 Prop. 3.3, Mironov 2017 Prop. 5)"
    )


def lnmax_rdp_details(
    votes: ArrayLike,
    b: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
) -> LNMaxRDP:
    """Per-query RDP of LNMax with the validity of the data-dependent bound reported.

    Same computation as :func:`lnmax_rdp`; the result also says where the data-dependent
    analysis fell back to ``min(λε²/2, ε)`` (``fallback``) because ``q̃ > 1/(e^ε + 1)``.

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        b: Laplace scale b > 0 (per-query ε = 2/b).
        orders: Rényi orders λ > 1 (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"``.

    Returns:
        :class:`LNMaxRDP`.

    Raises:
        ValueError: b ≤ 0, negative or non-finite votes, bad orders or analysis.

    Example:
        >>> res = lnmax_rdp_details([[230, 15, 5], [10, 9, 8]], 20, [2.0, 10.0])
        >>> res.fallback.tolist()  # q̃ ≈ 0.64 > 1/(e^0.1 + 1) for the second histogram
        [[False, False], [True, True]]
    """
    check_choice("analysis", analysis, ANALYSES)
    arr = check_votes("votes", votes, min_classes=1, nonneg=True)
    scale = check_positive("b", b)
    lam = check_orders(orders)
    with np.errstate(over="ignore"):  # b → 0: ε = ∞, the limit
        eps = 2.0 / scale
    lead = arr.shape[:-1]
    flat = arr.reshape(-1, arr.shape[-1])
    n, k = flat.shape[0], lam.size
    check_rdp_table(n, k)
    shape = (*lead, k)
    with np.errstate(over="ignore"):
        base = np.minimum(lam * eps * eps / 2.0, eps)
    rdp = np.broadcast_to(base, (n, k)).copy()
    if analysis == "data-independent":
        false_nk = np.zeros(shape, dtype=bool)
        return LNMaxRDP(
            rdp.reshape(shape), lam, _lnmax_log_q_flat(flat, scale).reshape(lead), false_nk,
            false_nk.copy(),
            np.zeros(lead, dtype=bool), scale, eps, analysis,
        )  # fmt: skip
    lq = _lnmax_log_q_flat(flat, scale)
    # q̃ ≤ 1/(e^ε + 1); logaddexp(0, ε) = log(1 + e^ε) does not overflow for large ε.
    usable = lq <= -np.logaddexp(0.0, eps)
    valid = np.zeros((n, k), dtype=bool)
    if usable.any():
        lqu = lq[usable][:, None]
        lm1 = lam[None, :] - 1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            l1mq = log1mexp(lqu)
            dd = np.logaddexp(l1mq + lm1 * (l1mq - log1mexp(eps + lqu)), lqu + eps * lm1) / lm1
        ok = np.isfinite(dd)
        valid[usable] = ok
        rdp[usable] = np.where(ok, np.minimum(rdp[usable], np.maximum(dd, 0.0)), rdp[usable])
    improved = valid & (rdp < base[None, :])
    return LNMaxRDP(
        rdp.reshape(shape),
        lam,
        lq.reshape(lead),
        (~valid).reshape(shape),
        improved.reshape(shape),
        usable.reshape(lead),
        scale,
        eps,
        analysis,
    )


def lnmax_rdp(
    votes: ArrayLike,
    b: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
) -> FloatArray:
    """Per-query RDP of LNMax (Laplace noisy argmax, noise scale b, ε = 2/b).

    Data-independent: ``min(λε²/2, ε)``. Data-dependent (Papernot et al. 2017 Thm 3):
    additionally ``ρ_dd(λ) = log[(1−q̃)·((1−q̃)/(1 − e^ε q̃))^{λ−1} + q̃·e^{ε(λ−1)}]/(λ−1)``,
    used only where ``q̃ ≤ 1/(e^ε + 1)``; elsewhere the data-independent bound is the
    fallback, which this array cannot show: :func:`lnmax_rdp_details` reports it (same values).

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        b: Laplace scale b > 0.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"``.

    Returns:
        RDP of shape ``(..., len(orders))``.

    Raises:
        ValueError: b ≤ 0, negative votes, bad orders or analysis.

    Example:
        >>> np.round(lnmax_rdp([230, 15, 5] + [0] * 7, 20, [2.0, 10.0]), 10).tolist()
        [7.37797e-05, 9.37446e-05]
    """
    return lnmax_rdp_details(votes, b, orders, analysis=analysis).rdp
