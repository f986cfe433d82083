"""Privacy of label-DP mechanisms: Laplace and Gaussian noise on one-hot labels, C-ary RR.

ALIBI (Malek, Mironov, Prasad, Shilov & Tramèr 2021, arXiv:2106.03408, §3 and App. A)
randomises a label y by releasing ``e_y + noise``; a label change moves ``e_y`` by L1
distance 2 and L2 distance √2. Randomized response over C classes (Warner 1965; the ε-RR of
Ghazi et al. 2021 used by Malek et al.) keeps the label with probability
``e^ε/(e^ε + C − 1)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import (
    check_in_range,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._orders import DEFAULT_ORDERS

__all__ = [
    "RandomizedResponse",
    "gaussian_label_rdp",
    "laplace_label_epsilon",
    "randomized_response",
    "randomized_response_epsilon",
]


def laplace_label_epsilon(scale: float) -> float:
    """Pure ε of Laplace noise Lap(b) on each coordinate of a one-hot label: ``ε = 2/b``.

    Laplace mechanism with L1 sensitivity 2 (Dwork et al. 2006; Malek et al. 2021 §3).
    A noise standard deviation s corresponds to ``b = s/√2``, i.e. ``ε = 2√2/s``.

    Args:
        scale: Laplace scale b > 0.

    Returns:
        ε (the mechanism is ε-label-DP; also (λ, min(ε, λε²/2))-RDP).

    Raises:
        ValueError: b ≤ 0.

    Example:
        >>> laplace_label_epsilon(0.5)
        4.0
    """
    return 2.0 / check_positive("scale", scale)


def gaussian_label_rdp(
    sigma: float, orders: ArrayLike = DEFAULT_ORDERS, *, count: int = 1
) -> RDPCurve:
    """RDP of Gaussian noise N(0, σ²) on each coordinate of a one-hot label: ``λ/σ²`` per use.

    Gaussian mechanism with L2 sensitivity √2 (Mironov 2017 Prop. 7; noise multiplier σ/√2;
    Malek et al. 2021 App. A). Labels noised ``count`` times (e.g. re-noised each epoch) compose.

    Args:
        sigma: noise standard deviation σ > 0.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        count: number of noisings ≥ 0.

    Returns:
        :class:`RDPCurve` with ``ρ(λ) = count·λ/σ²``.

    Raises:
        ValueError: σ ≤ 0, bad orders, negative count.

    Example:
        >>> round(gaussian_label_rdp(1.0).to_dp(1e-5).epsilon, 9)
        7.077391578
    """
    s = check_positive("sigma", sigma)
    lam = check_orders(orders)
    n = check_nonneg_int("count", count)
    with np.errstate(divide="ignore", over="ignore"):  # σ → 0: nλ/σ² = ∞, the limit
        return RDPCurve(lam, n * lam / (s * s))


@dataclasses.dataclass(frozen=True)
class RandomizedResponse(ResultMixin):
    """C-ary ε-randomized response (Ghazi et al. 2021; Malek et al. 2021).

    Attributes:
        keep_probability: ``e^ε/(e^ε + C − 1)``, the probability of reporting the true label.
        other_probability: ``1/(e^ε + C − 1)``, of each other label.
        epsilon: ε.
        num_classes: C.
    """

    keep_probability: float
    other_probability: float
    epsilon: float
    num_classes: int


def randomized_response(epsilon: float, num_classes: int) -> RandomizedResponse:
    """The output probabilities of ε-randomized response over C classes.

    Args:
        epsilon: ε ≥ 0.
        num_classes: C ≥ 2.

    Returns:
        :class:`RandomizedResponse`.

    Raises:
        ValueError: ε < 0, C < 2.

    Example:
        >>> round(randomized_response(2.0, 10).keep_probability, 10)
        0.4508530604
    """
    eps = check_real("epsilon", epsilon)
    if eps < 0:
        raise ValueError(f"epsilon must be non-negative, got {eps}")
    c = check_positive_int("num_classes", num_classes)
    if c < 2:
        raise ValueError(f"num_classes must be at least 2, got {c}")
    # e^ε/(e^ε + C − 1) = 1/(1 + (C−1)e^{−ε}): no overflow for large ε.
    keep = 1.0 / (1.0 + (c - 1) * math.exp(-eps))
    other = math.exp(-eps) / (1.0 + (c - 1) * math.exp(-eps))
    return RandomizedResponse(keep, other, eps, c)


def randomized_response_epsilon(keep_probability: float, num_classes: int) -> float:
    """ε of C-ary randomized response that keeps the label with probability p.

    ``ε = log(p·(C − 1)/(1 − p))`` (inverting ``p = e^ε/(e^ε + C − 1)``), for ``1/C ≤ p < 1``.

    Args:
        keep_probability: p ∈ [1/C, 1).
        num_classes: C ≥ 2.

    Returns:
        ε ≥ 0.

    Raises:
        ValueError: C < 2, p outside [1/C, 1).

    Example:
        >>> round(randomized_response_epsilon(0.4508530604, 10), 8)
        2.0
    """
    c = check_positive_int("num_classes", num_classes)
    if c < 2:
        raise ValueError(f"num_classes must be at least 2, got {c}")
    p = check_in_range("keep_probability", keep_probability, 1.0 / c, 1.0, low_inclusive=True)
    return max(0.0, math.log(p * (c - 1)) - math.log1p(-p))
