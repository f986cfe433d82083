"""Conversion of a Rényi-DP curve to (ε, δ)-DP, and back (layer 2).

Formulas (``shared/formulas.md`` §1.7), minimised over the orders given:

* standard (Mironov 2017, Prop. 3): ``ε = min_λ ρ(λ) + log(1/δ)/(λ−1)``;
* improved (Balle, Barthe, Gaboardi, Hsu, Sato 2020, Thm 20 as numbered in paper 000's
  Thm 1; Thm 21 of arXiv:1905.09982; Canonne–Kamath–Steinke 2020 Prop. 12):
  ``ε = min_λ ρ(λ) + log((λ−1)/λ) − (log δ + log λ)/(λ−1)``;
* inverse (improved): ``log δ = min_λ (λ−1)(ρ − ε + log(1−1/λ)) − log λ``.

Rules as in dp_accounting's ``compute_epsilon``: an order with ``δ² + expm1(−ρ) > 0`` gives
ε = 0 (improved conversion only), orders ≤ 1.01 are skipped (they give ∞), infinite ρ is
skipped, and ε is clipped at 0.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import check_array, check_choice, check_delta, check_orders, check_real

__all__ = ["DPConversion", "dp_to_delta", "rdp_to_dp"]

_CONVERSIONS = ("standard", "balle2020")


@dataclasses.dataclass(frozen=True)
class DPConversion(ResultMixin):
    """(ε, δ) obtained from an RDP curve, with the order that attains it.

    Attributes:
        epsilon: the converted ε (``inf`` when no order gives a finite value).
        delta: the δ used (or found, for :func:`dp_to_delta`).
        order: the Rényi order at which the minimum is attained (``nan`` if none).
        conversion: ``"standard"`` or ``"balle2020"``.
    """

    epsilon: float
    delta: float
    order: float
    conversion: str


def _check_curve(orders: ArrayLike, rdp: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    lam = check_orders(orders)
    rho = check_array("rdp", rdp, finite=False)
    rho = np.atleast_1d(rho)
    if rho.shape != lam.shape:
        raise ValueError(f"rdp must have the same shape as orders {lam.shape}, got {rho.shape}")
    if np.any(np.isnan(rho)) or np.any(rho < 0):
        raise ValueError(f"rdp must be non-negative and not NaN, got {rho!r}")
    return lam, rho


def rdp_to_dp(
    orders: ArrayLike, rdp: ArrayLike, delta: float, *, conversion: str = "balle2020"
) -> DPConversion:
    """Convert an RDP curve ``ρ(λ)`` over ``orders`` to (ε, δ)-DP.

    Args:
        orders: Rényi orders λ > 1 (1-d).
        rdp: the RDP value ρ(λ) ≥ 0 at each order (``inf`` allowed).
        delta: target δ in (0, 1).
        conversion: ``"balle2020"`` (default, tighter) or ``"standard"``.

    Returns:
        :class:`DPConversion` with the smallest ε over the orders and the order attaining it.

    Raises:
        ValueError: orders ≤ 1, mismatched shapes, negative ρ, δ outside (0, 1).

    Example:
        >>> lam = np.arange(2.0, 101.0, 0.5)
        >>> round(rdp_to_dp(lam, 1000 * lam / 40**2, 1e-5, conversion="standard").epsilon, 6)
        5.995928
    """
    lam, rho = _check_curve(orders, rdp)
    delta = check_delta(delta, allow_zero=False)
    check_choice("conversion", conversion, _CONVERSIONS)
    log_delta = math.log(delta)
    usable = np.isfinite(rho) & (lam > 1.01)
    with np.errstate(divide="ignore", invalid="ignore"):
        if conversion == "standard":
            eps = rho - log_delta / (lam - 1)
        else:
            eps = rho + np.log1p(-1.0 / lam) - (log_delta + np.log(lam)) / (lam - 1)
            # dp_accounting rule: δ² + expm1(−ρ) > 0 means ε = 0 suffices at this order.
            eps = np.where(delta**2 + np.expm1(-rho) > 0, 0.0, eps)
    eps = np.where(usable, eps, np.inf)
    if not np.any(np.isfinite(eps)):
        return DPConversion(math.inf, delta, math.nan, conversion)
    idx = int(np.argmin(eps))
    return DPConversion(max(0.0, float(eps[idx])), delta, float(lam[idx]), conversion)


def dp_to_delta(
    orders: ArrayLike, rdp: ArrayLike, epsilon: float, *, conversion: str = "balle2020"
) -> DPConversion:
    """The smallest δ such that the RDP curve implies (ε, δ)-DP.

    Standard: ``log δ = min_λ (λ−1)(ρ − ε)``; improved (Balle et al. 2020):
    ``log δ = min_λ (λ−1)(ρ − ε + log(1 − 1/λ)) − log λ``. δ is capped at 1.

    Raises:
        ValueError: bad orders/curve, or ε < 0.
    """
    lam, rho = _check_curve(orders, rdp)
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise ValueError(f"epsilon must be non-negative, got {epsilon}")
    check_choice("conversion", conversion, _CONVERSIONS)
    with np.errstate(divide="ignore", invalid="ignore"):
        if conversion == "standard":
            log_delta = (lam - 1) * (rho - epsilon)
        else:
            log_delta = (lam - 1) * (rho - epsilon + np.log1p(-1.0 / lam)) - np.log(lam)
    log_delta = np.where(np.isfinite(rho), log_delta, np.inf)
    idx = int(np.argmin(log_delta))
    delta = float(min(1.0, math.exp(min(0.0, float(log_delta[idx])))))
    return DPConversion(epsilon, delta, float(lam[idx]), conversion)
