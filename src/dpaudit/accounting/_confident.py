"""Confident GNMax: the noisy threshold step, its RDP, and the expected per-query cost.

Sources: Papernot et al. 2018 (ICLR, arXiv:1802.08908), Algorithm 1 (Confident GNMax) and
§4 / App. B; Malek et al. 2021 (arXiv:2106.03408) Alg. 2 use it for PATE-FM.

Step 1 adds ``N(0, σ1²)`` to the *max count only* (sensitivity 1) and answers iff the noisy
max reaches ``T``; step 2 (if answered) is GNMax with noise σ2. Step 1 is the Gaussian
mechanism with L2 sensitivity 1, i.e. (λ, λ/(2σ1²))-RDP = RDP_GN at σ := √2·σ1; its output
is a bit whose likely value has probability ≥ ½, so the data-dependent analysis uses
``q̃₁ = min(p, 1 − p)`` with ``p = Φ̄((T − round(max n))/σ1)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_choice,
    check_mask,
    check_orders,
    check_positive,
    check_real,
    check_votes,
)
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import (
    ANALYSES,
    check_analysis,
    check_rdp_table,
    gnmax_rdp_details,
    rdp_gn_flat,
)
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = [
    "ConfidentGNMaxCost",
    "answer_log_probability",
    "answer_probability",
    "confident_gnmax_cost",
    "threshold_rdp",
]


def check_threshold(threshold: object) -> float:
    """The voting threshold T ≥ 0 (ValueError naming ``threshold`` otherwise)."""
    t = check_real("threshold", threshold)
    if t < 0:
        raise ValueError(f"threshold must be non-negative, got {t}")
    return t


def _max_counts(votes: ArrayLike) -> np.ndarray:
    arr = check_votes("votes", votes, min_classes=1, nonneg=True)
    # The reference implementation rounds the max count so fractional votes work.
    return np.round(arr.max(axis=-1))


def _refuse_large_table_early(votes: ArrayLike, orders: ArrayLike) -> None:
    """The per-query RDP table's size from the inputs' shapes alone, before the votes are
    checked and transformed (an O(n) pass that an oversized request must not pay for). Inputs
    whose shapes cannot be read are left to the full checks, which name them."""
    try:
        shape, num_orders = np.shape(votes), np.size(orders)
    except (ValueError, TypeError):
        return
    if len(shape) >= 2:
        check_rdp_table(int(np.prod(shape[:-1], dtype=np.float64)), int(num_orders))


def _log_p_and_1mp(
    votes: ArrayLike, threshold: float, sigma1: float
) -> tuple[np.ndarray, np.ndarray]:
    top = _max_counts(votes)
    t = check_threshold(threshold)
    s1 = check_positive("sigma1", sigma1)
    with np.errstate(over="ignore"):  # (max − T)/σ1 → ±∞ as σ1 → 0: p → 0 or 1, the limit
        z = (top - t) / s1
    return special.log_ndtr(z), special.log_ndtr(-z)


def answer_log_probability(votes: ArrayLike, threshold: float, sigma1: float) -> FloatArray:
    """``log Pr[answered] = log Φ̄((T − round(max_j n_j))/σ1)`` (Papernot et al. 2018 Alg. 1).

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        threshold: voting threshold T ≥ 0.
        sigma1: threshold-noise standard deviation σ1 > 0.

    Returns:
        Log-probabilities of shape ``votes.shape[:-1]``.

    Raises:
        ValueError: negative votes, T < 0, σ1 ≤ 0.

    Example:
        >>> float(answer_log_probability([230, 15, 5], 150, 20))  # doctest: +ELLIPSIS
        -3.16717433...e-05
    """
    return _log_p_and_1mp(votes, threshold, sigma1)[0]


def answer_probability(votes: ArrayLike, threshold: float, sigma1: float) -> FloatArray:
    """``Pr[answered]``: the exponential of :func:`answer_log_probability` (same arguments).

    Returns:
        Probabilities of shape ``votes.shape[:-1]``.

    Raises:
        ValueError: negative votes, T < 0, σ1 ≤ 0.

    Example:
        >>> round(float(answer_probability([100, 50], 100, 10)), 6)
        0.5
    """
    return np.exp(answer_log_probability(votes, threshold, sigma1))


def _threshold_flat(
    log_p: np.ndarray, log_1mp: np.ndarray, sigma1: float, lam: np.ndarray, analysis: str
) -> tuple[np.ndarray, np.ndarray]:
    flat_p, flat_1mp = log_p.reshape(-1), log_1mp.reshape(-1)
    sig = math.sqrt(2.0) * sigma1
    if analysis == "data-independent":
        with np.errstate(divide="ignore", over="ignore"):  # σ1 → 0: λ/(2σ1²) = ∞
            rdp = np.broadcast_to(lam / (sig * sig), (flat_p.size, lam.size)).copy()
        return rdp, np.zeros_like(rdp, dtype=bool)
    res = rdp_gn_flat(np.minimum(flat_p, flat_1mp), sig, lam)
    return res.rdp, ~res.valid


def threshold_rdp(
    votes: ArrayLike,
    threshold: float,
    sigma1: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    analysis: str = "data-dependent",
) -> FloatArray:
    """RDP of Confident GNMax's threshold step (noise on the max count only).

    Data-independent: ``λ/(2σ1²)``. Data-dependent: ``RDP_GN(log min(p, 1−p), √2·σ1, λ)``
    (Papernot et al. 2018 §4 and App. B), falling back to ``λ/(2σ1²)``
    where Thm 6's conditions fail (see :func:`confident_gnmax_cost` for the mask).

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        threshold: voting threshold T ≥ 0.
        sigma1: threshold-noise σ1 > 0.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"``.

    Returns:
        RDP of shape ``(..., len(orders))``.

    Raises:
        ValueError: negative votes, T < 0, σ1 ≤ 0, bad orders or analysis.

    Example:
        >>> float(threshold_rdp([230, 15, 5], 150, 20, [10.0])[0])  # doctest: +ELLIPSIS
        3.21213316...e-05
    """
    check_choice("analysis", analysis, ANALYSES)
    log_p, log_1mp = _log_p_and_1mp(votes, threshold, sigma1)
    lam = check_orders(orders)
    rdp, _ = _threshold_flat(log_p, log_1mp, float(sigma1), lam, analysis)
    return rdp.reshape(*log_p.shape, lam.size)


@dataclasses.dataclass(frozen=True, eq=False)
class ConfidentGNMaxCost(ResultMixin):
    """Per-query cost of Confident GNMax (Papernot et al. 2018 Alg. 1, §4 and App. B).

    Attributes:
        orders: ``(K,)``.
        threshold_rdp: ρ1, step 1 (charged for every query), ``(..., K)``.
        argmax_rdp: ρ2, step 2 (charged only if answered), ``(..., K)``.
        answer_probability: p = Pr[answered], ``(...)``.
        expected_rdp: ``E[ρ] = ρ1 + p·ρ2``, ``(..., K)``.
        second_moment: ``E[ρ²] = ρ1² + 2ρ1·p·ρ2 + p·ρ2²``, ``(..., K)``.
        threshold_fallback, argmax_fallback: ``(..., K)`` where a data-dependent step fell
            back to its data-independent bound (Thm 6's conditions failed).
        threshold, sigma1, sigma2, analysis, q, method: the inputs and sources.
    """

    orders: FloatArray
    threshold_rdp: FloatArray
    argmax_rdp: FloatArray
    answer_probability: FloatArray
    expected_rdp: FloatArray
    second_moment: FloatArray
    threshold_fallback: np.ndarray
    argmax_fallback: np.ndarray
    threshold: float
    sigma1: float
    sigma2: float
    analysis: str
    q: str
    method: str = "Papernot et al. 2018 Alg. 1 (Confident GNMax), Thm 6 per step"

    def realised(self, answered: ArrayLike) -> RDPCurve:
        """Total RDP of the batch given which queries were answered: Σ ρ1 + 1{answered}·ρ2.

        Args:
            answered: booleans of shape ``(...)`` (the batch shape).

        Raises:
            ValueError: ``answered`` has another shape.
        """
        mask = check_mask("answered", answered)
        if mask.shape != self.answer_probability.shape:
            raise ValueError(
                f"answered must be booleans of shape {self.answer_probability.shape}, "
                f"got {answered!r}"
            )
        k = self.orders.size
        total = self.threshold_rdp.reshape(-1, k).sum(axis=0) + (
            mask.reshape(-1, 1) * self.argmax_rdp.reshape(-1, k)
        ).sum(axis=0)
        return RDPCurve(self.orders, total)

    def expected(self) -> RDPCurve:
        """Expected total RDP of the batch, Σ (ρ1 + p·ρ2) (for planning and plots)."""
        return RDPCurve(self.orders, self.expected_rdp.reshape(-1, self.orders.size).sum(axis=0))


def confident_gnmax_cost(
    votes: ArrayLike,
    *,
    threshold: float,
    sigma1: float,
    sigma2: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    analysis: str = "data-dependent",
    q: str = "union",
) -> ConfidentGNMaxCost:
    """Per-query RDP of Confident GNMax: threshold step, argmax step, expected cost.

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``, non-negative.
        threshold: voting threshold T ≥ 0.
        sigma1: threshold-noise σ1 > 0 (added to the max count only).
        sigma2: GNMax noise σ2 > 0.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        analysis: ``"data-dependent"`` (default) or ``"data-independent"`` (both steps).
        q: ``"union"`` or ``"exact"`` for the argmax step's q̃.

    Returns:
        :class:`ConfidentGNMaxCost`.

    Raises:
        ValueError: negative votes, T < 0, σ1 ≤ 0, σ2 ≤ 0, bad orders or choice.

    Example:
        >>> c = confident_gnmax_cost([230, 15, 5] + [0] * 7, threshold=150, sigma1=20,
        ...                          sigma2=40, orders=[10.0])
        >>> float(c.expected_rdp[0])  # doctest: +ELLIPSIS
        0.000154876211...
    """
    check_analysis(analysis, q)
    _refuse_large_table_early(votes, orders)
    log_p, log_1mp = _log_p_and_1mp(votes, threshold, sigma1)
    s2 = check_positive("sigma2", sigma2)
    lam = check_orders(orders)
    check_rdp_table(log_p.size, lam.size)
    lead = log_p.shape
    rho1, fb1 = _threshold_flat(log_p, log_1mp, float(sigma1), lam, analysis)
    step2 = gnmax_rdp_details(votes, s2, lam, analysis=analysis, q=q)
    rho2 = step2.rdp.reshape(-1, lam.size)
    p = np.exp(log_p.reshape(-1))[:, None]
    # A step never taken (p = 0) adds nothing even at ρ2 = ∞; overflows give inf (the limit).
    with np.errstate(over="ignore", invalid="ignore"):
        taken = p > 0
        expected = rho1 + np.where(taken, p * rho2, 0.0)
        second = (
            rho1 * rho1
            + np.where(taken, 2.0 * rho1 * p * rho2, 0.0)
            + np.where(taken, p * rho2 * rho2, 0.0)
        )
    shape = (*lead, lam.size)
    return ConfidentGNMaxCost(
        orders=lam,
        threshold_rdp=rho1.reshape(shape),
        argmax_rdp=rho2.reshape(shape),
        answer_probability=np.exp(log_p),
        expected_rdp=expected.reshape(shape),
        second_moment=second.reshape(shape),
        threshold_fallback=fb1.reshape(shape),
        argmax_fallback=step2.fallback,
        threshold=check_threshold(threshold),
        sigma1=float(sigma1),
        sigma2=s2,
        analysis=analysis,
        q=q,
    )
