"""Immutable Rényi-DP curves over an explicit order grid.

RDP composes additively at every fixed order (Mironov 2017, arXiv:1702.07476, Prop. 1), so a
curve is a pair ``(orders, epsilons)`` and composition is ``+``. Conversion to (ε, δ) is
delegated to :func:`dpaudit.conversions.rdp_to_dp` (standard: Mironov 2017 Prop. 3;
improved: Balle et al. 2020, arXiv:1905.09982, Thm 20, as used by Chadha et al. 2024 Thm 1).
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_array, check_orders, check_positive
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.conversions import DPConversion, dp_to_delta, rdp_to_dp

__all__ = ["PerQueryRDP", "RDPCurve"]


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class RDPCurve(ResultMixin):
    """An RDP guarantee ``ρ(λ)`` at each order λ of an explicit grid; immutable.

    ``a + b`` composes two curves (same grid required), ``k * a`` composes ``k`` copies,
    ``sum(curves)`` works. Both arrays are read-only copies.

    Attributes:
        orders: strictly increasing Rényi orders λ > 1, shape ``(K,)``.
        epsilons: ρ(λ) ≥ 0 at each order (``inf`` allowed), shape ``(K,)``.

    Raises:
        ValueError: orders ≤ 1, not strictly increasing or empty; ``epsilons`` of another
            shape, negative or NaN.

    Example:
        >>> one = RDPCurve.gaussian(sigma=40, orders=[2.0, 5.0, 10.0], sensitivity=2**0.5)
        >>> np.round((1000 * one).epsilons, 12).tolist()
        [1.25, 3.125, 6.25]
    """

    orders: FloatArray
    epsilons: FloatArray

    def __post_init__(self) -> None:
        lam = check_orders(self.orders)
        if lam.size > 1 and not np.all(np.diff(lam) > 0):
            raise ValueError(f"orders must be strictly increasing, got {self.orders!r}")
        rho = np.atleast_1d(check_array("epsilons", self.epsilons, finite=False))
        if rho.shape != lam.shape:
            raise ValueError(f"epsilons must have the shape of orders {lam.shape}, got {rho.shape}")
        if np.any(np.isnan(rho)) or np.any(rho < 0):
            raise ValueError(f"epsilons must be non-negative and not NaN, got {self.epsilons!r}")
        object.__setattr__(self, "orders", _frozen(lam))
        object.__setattr__(self, "epsilons", _frozen(rho))

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def zeros(cls, orders: ArrayLike = DEFAULT_ORDERS) -> RDPCurve:
        """The curve of a mechanism that reveals nothing (ρ = 0 at every order)."""
        lam = check_orders(orders)
        return cls(lam, np.zeros_like(lam))

    @classmethod
    def gaussian(
        cls, sigma: float, orders: ArrayLike = DEFAULT_ORDERS, *, sensitivity: float = 1.0
    ) -> RDPCurve:
        """The Gaussian mechanism: ``ρ(λ) = λ·Δ₂²/(2σ²)`` (Mironov 2017, Prop. 7).

        Args:
            sigma: noise standard deviation σ > 0.
            orders: the order grid (default :data:`DEFAULT_ORDERS`).
            sensitivity: L2 sensitivity Δ₂ > 0 (√2 for a vote histogram, 1 for a max count).

        Raises:
            ValueError: σ ≤ 0, Δ₂ ≤ 0, bad orders.
        """
        s = check_positive("sigma", sigma)
        d = check_positive("sensitivity", sensitivity)
        lam = check_orders(orders)
        return cls(lam, lam * d * d / (2.0 * s * s))

    # -- composition ----------------------------------------------------------------------
    def _same_grid(self, other: RDPCurve) -> None:
        if self.orders.shape != other.orders.shape or not np.array_equal(self.orders, other.orders):
            raise ValueError(
                "orders of both RDP curves must be the same grid to compose, got "
                f"{self.orders.size} orders [{self.orders[0]}..{self.orders[-1]}] and "
                f"{other.orders.size} orders [{other.orders[0]}..{other.orders[-1]}]"
            )

    def __add__(self, other: object) -> RDPCurve:
        if isinstance(other, RDPCurve):
            self._same_grid(other)
            return RDPCurve(self.orders, self.epsilons + other.epsilons)
        if isinstance(other, numbers.Integral) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __radd__(self, other: object) -> RDPCurve:
        # Makes ``sum(curves)`` work (it starts from the integer 0).
        return self.__add__(other)

    def __mul__(self, count: object) -> RDPCurve:
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral):
            return NotImplemented
        if count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count}")
        if count == 0:  # zero copies reveal nothing, even where ρ = ∞
            return RDPCurve(self.orders, np.zeros_like(self.epsilons))
        return RDPCurve(self.orders, self.epsilons * int(count))

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RDPCurve):
            return NotImplemented
        return bool(
            np.array_equal(self.orders, other.orders)
            and np.array_equal(self.epsilons, other.epsilons)
        )

    def __hash__(self) -> int:
        return hash((self.orders.tobytes(), self.epsilons.tobytes()))

    def __len__(self) -> int:
        return int(self.orders.size)

    # -- conversion -----------------------------------------------------------------------
    def to_dp(self, delta: float, *, conversion: str = "balle2020") -> DPConversion:
        """(ε, δ)-DP implied by the curve, minimised over its orders (Balle et al. 2020 Thm 20).

        Args:
            delta: target δ in (0, 1).
            conversion: ``"balle2020"`` (Balle et al. 2020 Thm 20; default)
                or ``"standard"`` (Mironov 2017 Prop. 3).

        Returns:
            :class:`~dpaudit.conversions.DPConversion` with ``epsilon`` and the optimal ``order``.

        Raises:
            ValueError: δ ∉ (0, 1), unknown conversion.

        Example:
            >>> curve = 1000 * RDPCurve.gaussian(40, np.arange(2, 101, 0.5), sensitivity=2**0.5)
            >>> round(curve.to_dp(1e-5, conversion="standard").epsilon, 6)
            5.995928
        """
        return rdp_to_dp(self.orders, self.epsilons, delta, conversion=conversion)

    def delta(self, epsilon: float, *, conversion: str = "balle2020") -> DPConversion:
        """The smallest δ such that the curve implies (ε, δ)-DP (the conversion's inverse).

        Args:
            epsilon: target ε ≥ 0.
            conversion: ``"balle2020"`` (default) or ``"standard"``.

        Returns:
            :class:`~dpaudit.conversions.DPConversion` whose ``delta`` is the answer and whose
            ``order`` attains it.

        Raises:
            ValueError: ε < 0 or not finite, unknown conversion.
        """
        return dp_to_delta(self.orders, self.epsilons, epsilon, conversion=conversion)


@dataclasses.dataclass(frozen=True, eq=False)
class PerQueryRDP(ResultMixin):
    """Per-query RDP of a batch of noisy-argmax queries, with where the analysis fell back.

    The common part of :class:`~dpaudit.accounting.GNMaxRDP` and
    :class:`~dpaudit.accounting.LNMaxRDP`.

    Attributes:
        rdp: per-query RDP, shape ``(..., K)``.
        orders: the orders, shape ``(K,)``.
        log_q: ``log q̃`` used, shape ``(...)`` (NaN for the data-independent analysis).
        fallback: ``(..., K)`` True where the data-dependent analysis was requested but a
            validity condition failed, so the data-independent bound was used.
        improved: ``(..., K)`` True where the data-dependent bound was valid and strictly
            below the data-independent one.
    """

    rdp: FloatArray
    orders: FloatArray
    log_q: FloatArray
    fallback: np.ndarray
    improved: np.ndarray

    @property
    def any_fallback(self) -> bool:
        """Whether any (query, order) fell back to the data-independent bound."""
        return bool(np.any(self.fallback))

    def curve(self) -> RDPCurve:
        """The composition of every query in the batch as an :class:`RDPCurve`."""
        total = self.rdp.reshape(-1, self.orders.size).sum(axis=0)
        return RDPCurve(self.orders, total)
