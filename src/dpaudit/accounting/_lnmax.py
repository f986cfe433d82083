"""Rényi-DP of the Laplace noisy argmax (LNMax, PATE 2017).

Sources: Papernot, Abadi, Erlingsson, Goodfellow, Talwar, *Semi-supervised Knowledge Transfer
for Deep Learning from Private Training Data* (ICLR 2017): Lemma 4 (bound on q), Thm 3
(data-dependent moments), as restated in RDP form in ``shared/formulas.md`` §1.3. ε-DP implies
(λ, λε²/2)-RDP and (λ, ε)-RDP (Bun & Steinke 2016 Prop. 3.3; Mironov 2017 Prop. 5).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_choice, check_orders, check_positive, check_votes
from dpaudit.accounting._gnmax import ANALYSES
from dpaudit.accounting._numerics import log1mexp
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = ["lnmax_log_q", "lnmax_rdp"]


def _lnmax_log_q_flat(v: np.ndarray, b: float) -> np.ndarray:
    n, m = v.shape
    if m == 1:
        return np.full(n, -np.inf)
    rows = np.arange(n)
    istar = np.argmax(v, axis=1)
    delta = (v[rows, istar][:, None] - v) / b
    # Pr[n_j + Z_j ≥ n_{i*} + Z_{i*}] = (2 + Δ_j)/(4·e^{Δ_j}) exactly for Laplace noise.
    terms = np.log(2.0 + delta) - delta - math.log(4.0)
    terms[rows, istar] = -np.inf
    return np.minimum(special.logsumexp(terms, axis=1), math.log1p(-1.0 / m))


def lnmax_log_q(votes: ArrayLike, b: float) -> FloatArray:
    """``log q̃`` for LNMax: ``log min(Σ_{j≠i*} (2+Δ_j)·e^{−Δ_j}/4, 1 − 1/m)``.

    ``Δ_j = (n_{i*} − n_j)/b``.

    PATE 2017 Lemma 4 with the exact pairwise probability (formulas.md §1.3).

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


def lnmax_rdp(
    votes: ArrayLike,
    b: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
) -> FloatArray:
    """Per-query RDP of LNMax (Laplace noisy argmax, noise scale b, ε = 2/b).

    Data-independent: ``min(λε²/2, ε)``. Data-dependent (PATE 2017 Thm 3; formulas.md §1.3):
    additionally ``ρ_dd(λ) = log[(1−q̃)·((1−q̃)/(1 − e^ε q̃))^{λ−1} + q̃·e^{ε(λ−1)}]/(λ−1)``,
    used only where ``q̃ ≤ 1/(e^ε + 1)``.

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
    check_choice("analysis", analysis, ANALYSES)
    arr = check_votes("votes", votes, min_classes=1, nonneg=True)
    scale = check_positive("b", b)
    lam = check_orders(orders)
    eps = 2.0 / scale
    lead = arr.shape[:-1]
    flat = arr.reshape(-1, arr.shape[-1])
    base = np.minimum(lam * eps * eps / 2.0, eps)
    rdp = np.broadcast_to(base, (flat.shape[0], lam.size)).copy()
    if analysis == "data-dependent":
        lq = _lnmax_log_q_flat(flat, scale)
        usable = lq <= -math.log1p(math.exp(eps))  # q̃ ≤ 1/(e^ε + 1)
        if usable.any():
            lqu = lq[usable][:, None]
            lm1 = lam[None, :] - 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                l1mq = log1mexp(lqu)
                dd = np.logaddexp(l1mq + lm1 * (l1mq - log1mexp(eps + lqu)), lqu + eps * lm1) / lm1
            rdp[usable] = np.minimum(rdp[usable], np.maximum(dd, 0.0))
    return rdp.reshape(*lead, lam.size)
