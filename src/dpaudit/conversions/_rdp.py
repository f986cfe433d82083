"""Conversion of a Rényi-DP curve to (ε, δ)-DP, and back (layer 2).

Formulas (Mironov 2017, arXiv:1702.07476, Prop. 3; Balle et al. 2020, arXiv:1905.09982, Thm 20),
minimised over the orders given:

* standard (Mironov 2017, Prop. 3): ``ε = min_λ ρ(λ) + log(1/δ)/(λ−1)``;
* improved (Balle, Barthe, Gaboardi, Hsu, Sato 2020, Thm 20 as numbered in Chadha et al. 2024's
  Thm 1; Thm 21 of arXiv:1905.09982; Canonne–Kamath–Steinke 2020 Prop. 12):
  ``ε = min_λ ρ(λ) + log((λ−1)/λ) − (log δ + log λ)/(λ−1)``;
* inverse (improved): ``log δ = min_λ (λ−1)(ρ − ε + log(1−1/λ)) − log λ``.

Rules as in dp_accounting's ``compute_epsilon`` / ``compute_delta`` (improved conversion
only): first, an order with ``δ² + expm1(−ρ) > 0`` (evaluated as ``δ > √(−expm1(−ρ))``, which
cannot underflow) gives ε = 0, whatever the order (KL bound: (0, TV)-DP with
``TV ≤ √(1 − e^{−KL})`` (Bretagnolle–Huber) and ``KL ≤ ρ(λ)`` for λ > 1); infinite ρ is
skipped; ε is clipped at 0. The standard conversion is Prop. 3 alone. Unlike dp_accounting,
which skips orders ≤ 1.01 (its closed form loses its digits there), both closed forms are
evaluated at every order λ > 1, written in ``λ − 1`` (exact near 1) with ``log λ =
log1p(λ − 1)`` and ``log((λ−1)/λ) = log(λ − 1) − log1p(λ − 1)``: an order near 1 gives the
large finite ε the theorem states (``rdp_to_dp([1 + 1e-12], [0.1], 1e-5)`` ≈ 1.15·10¹³), and
is never the minimum when a larger order is given too.

:func:`dp_to_delta` is the exact inverse of :func:`rdp_to_dp` within each conversion: for
every ε ≥ 0 it returns the infimum of the δ for which :func:`rdp_to_dp` returns ≤ ε, so the
KL rule appears there as ``δ ≤ √(−expm1(−ρ))`` at every order.
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

#: dp_accounting skips orders at or below this in its closed forms; dpaudit evaluates them
#: stably instead (module notes). Kept for comparisons with dp_accounting.
MIN_CLOSED_FORM_ORDER = 1.01


def _log_terms(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(λ − 1, log λ, log((λ − 1)/λ))`` without cancellation as λ → 1 (``λ − 1`` is exact
    there: Sterbenz). Above :data:`MIN_CLOSED_FORM_ORDER` the usual ``log λ`` and
    ``log1p(−1/λ)``, bit for bit dp_accounting's."""
    gap = lam - 1.0
    near = gap <= MIN_CLOSED_FORM_ORDER - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_lam = np.where(near, np.log1p(gap), np.log(lam))
        log_ratio = np.where(near, np.log(gap) - np.log1p(gap), np.log1p(-1.0 / lam))
    return gap, log_lam, log_ratio


@dataclasses.dataclass(frozen=True)
class DPConversion(ResultMixin):
    """(ε, δ) obtained from an RDP curve, with the order that attains it.

    Attributes:
        epsilon: the converted ε (``inf`` when no order gives a finite value).
        delta: the δ used (or found, for :func:`dp_to_delta`).
        order: the Rényi order at which the minimum is attained (``inf`` if none: no order
            gives a finite ε, or a δ below 1).
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

    Standard (Mironov 2017 Prop. 3): ``ε = min_λ ρ(λ) + log(1/δ)/(λ−1)``. Improved (Balle et
    al. 2020 Thm 20; Canonne–Kamath–Steinke 2020 Prop. 12):
    ``ε = min_λ ρ(λ) + log((λ−1)/λ) − (log δ + log λ)/(λ−1)``, where first any order with
    ``δ² + expm1(−ρ(λ)) > 0`` gives ε = 0 (KL bound, as dp_accounting's ``compute_epsilon``,
    applied at every order). The closed forms are evaluated at every order λ > 1, stably
    near 1 (module notes), and skip infinite ρ; ε is clipped at 0. (Mironov 2017 Prop. 3;
    Balle et al. 2020 Thm 20).

    Args:
        orders: Rényi orders λ > 1 (1-d).
        rdp: the RDP value ρ(λ) ≥ 0 at each order (``inf`` allowed).
        delta: target δ in (0, 1).
        conversion: ``"balle2020"`` (default, tighter) or ``"standard"``.

    Returns:
        :class:`DPConversion` with the smallest ε over the orders and the order attaining it
        (``epsilon = inf`` and ``order = inf`` when every ρ is infinite).

    Raises:
        ValueError: orders ≤ 1, mismatched shapes, negative ρ, δ outside (0, 1).

    Example:
        >>> lam = np.arange(2.0, 101.0, 0.5)
        >>> round(rdp_to_dp(lam, 1000 * lam / 40**2, 1e-5, conversion="standard").epsilon, 6)
        5.995928
        >>> rdp_to_dp([1.005], [0.0], 1e-5).epsilon  # KL rule: ρ = 0 gives ε = 0
        0.0
        >>> f"{rdp_to_dp([1 + 1e-12], [0.1], 1e-5).epsilon:.4g}"  # finite near order 1
        '1.151e+13'
    """
    lam, rho = _check_curve(orders, rdp)
    delta = check_delta(delta, allow_zero=False)
    check_choice("conversion", conversion, _CONVERSIONS)
    log_delta = math.log(delta)
    usable = np.isfinite(rho)
    gap, log_lam, log_ratio = _log_terms(lam)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conversion == "standard":
            eps = rho - log_delta / gap
        else:
            eps = rho + log_ratio - (log_delta + log_lam) / gap
    eps = np.where(usable, eps, np.inf)
    if conversion == "balle2020":
        # dp_accounting's rule δ² + expm1(−ρ) > 0, checked before the order filter, written
        # as δ > √(−expm1(−ρ)) (≥ TV) so that δ² cannot underflow (δ < 1e-154 with ρ = 0).
        eps = np.where(delta > np.sqrt(-np.expm1(-rho)), 0.0, eps)
    if not np.any(np.isfinite(eps)):
        return DPConversion(math.inf, delta, math.inf, conversion)
    idx = int(np.argmin(eps))
    return DPConversion(max(0.0, float(eps[idx])), delta, float(lam[idx]), conversion)


def dp_to_delta(
    orders: ArrayLike, rdp: ArrayLike, epsilon: float, *, conversion: str = "balle2020"
) -> DPConversion:
    """The smallest δ such that the RDP curve implies (ε, δ)-DP (inverse of :func:`rdp_to_dp`).

    Per order, the δ at which the closed form of :func:`rdp_to_dp` equals ε, minimised over
    the orders (Mironov 2017, arXiv:1702.07476, Prop. 3; Balle et al. 2020 Thm 20):

    * standard (Mironov 2017 Prop. 3): ``log δ(λ) = (λ−1)(ρ(λ) − ε)``;
    * improved (Balle et al. 2020 Thm 20, Chadha et al. 2024 Thm 1; Canonne–Kamath–Steinke 2020
      Prop. 12): ``log δ(λ) = (λ−1)(ρ(λ) − ε + log(1 − 1/λ)) − log λ``, and, at every order
      (also λ ≤ 1.01), the KL bound ``δ(λ) ≤ √(−expm1(−ρ(λ)))`` (Bretagnolle–Huber with
      ``KL ≤ ρ(λ)``; dp_accounting's ``compute_delta``), so ρ = 0 gives δ = 0.

    The closed forms skip infinite ρ only, as :func:`rdp_to_dp` does, so the two are
    inverse within each conversion: δ(ε) is the infimum of the δ ∈ (0, 1) for which
    ``rdp_to_dp(orders, rdp, δ).epsilon ≤ ε`` (any larger δ gives ≤ ε, any smaller one > ε).
    δ is capped at 1 (1 with ``order = inf`` when no order gives a bound).

    Args:
        orders: Rényi orders λ > 1 (1-d).
        rdp: the RDP value ρ(λ) ≥ 0 at each order (``inf`` allowed).
        epsilon: target ε ≥ 0 (finite).
        conversion: ``"balle2020"`` (default, tighter) or ``"standard"``.

    Returns:
        :class:`DPConversion` whose ``delta`` is the answer, ``epsilon`` the ε given and
        ``order`` the order attaining the minimum.

    Raises:
        ValueError: orders ≤ 1, mismatched shapes, negative or NaN ρ, ε < 0 or not finite,
            unknown conversion.
        TypeError: ε not a real number.

    Example:
        >>> lam = np.arange(2.0, 101.0, 0.5)
        >>> conv = dp_to_delta(lam, 1000 * lam / 40**2, 5.995927881, conversion="standard")
        >>> (f"{conv.delta:.6g}", conv.order)
        ('1e-05', 5.5)
        >>> f"{dp_to_delta([2.0, 4.0], [1e-12, 2e-12], 0.0).delta:.6g}"  # KL: √(1 − e^{−ρ})
        '1e-06'
    """
    lam, rho = _check_curve(orders, rdp)
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise ValueError(f"epsilon must be non-negative, got {epsilon}")
    check_choice("conversion", conversion, _CONVERSIONS)
    usable = np.isfinite(rho)
    gap, log_lam, log_ratio = _log_terms(lam)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conversion == "standard":
            log_delta = gap * (rho - epsilon)
        else:
            log_delta = gap * (rho - epsilon + log_ratio) - log_lam
        log_delta = np.where(usable, log_delta, np.inf)
        if conversion == "balle2020":
            log_delta = np.fmin(log_delta, 0.5 * np.log(-np.expm1(-rho)))
    if not np.any(log_delta < np.inf):
        return DPConversion(epsilon, 1.0, math.inf, conversion)
    idx = int(np.argmin(log_delta))
    delta = math.exp(min(0.0, float(log_delta[idx])))
    return DPConversion(epsilon, delta, float(lam[idx]), conversion)
