"""A privacy ledger for a private-prediction interface (PATE-style GNMax / Confident GNMax).

Each query is charged its RDP at every order of a fixed grid (composition adds;
``shared/formulas.md`` §1.4–§1.5): the threshold step (if a threshold is set) for every
query and the GNMax step for answered ones. ε(δ) is the RDP curve converted with the
conversion chosen at construction (formulas.md §1.7). A query whose charge would push ε(δ)
past the budget is refused and nothing is charged.

The data-dependent ε is itself a function of the data (Papernot et al. 2018 §4); releasing it
needs the smooth-sensitivity machinery of :func:`~dpaudit.accounting.gnss_release`. The
ledger reports it as the PATE reference implementation does.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_choice, check_delta, check_orders, check_positive, check_votes
from dpaudit.accounting._confident import _threshold_flat, check_threshold
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import ANALYSES, gnmax_rdp
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.conversions import rdp_to_dp
from dpaudit.errors import BudgetExhaustedError

__all__ = ["PrivacyLedger"]

_CONVERSIONS = ("standard", "balle2020")
_FORMAT = "dpaudit.PrivacyLedger/1"


def _hex(x: float) -> str:
    return float(x).hex()


def _unhex(name: str, text: Any) -> float:
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a float.hex() string in the ledger JSON, got {text!r}")
    try:
        return float.fromhex(text)
    except ValueError as exc:
        raise ValueError(f"{name} is not a float.hex() string: {text!r}") from exc


class PrivacyLedger:
    """Running RDP account of a private-prediction interface, with an optional ε budget.

    Args:
        sigma: GNMax noise σ > 0 (σ2 of Confident GNMax).
        delta: δ ∈ (0, 1) at which ε is reported and the budget is enforced.
        epsilon_budget: refuse charges that would make ε(δ) exceed this (None: no limit).
        analysis: ``"data-dependent"`` (Papernot et al. 2018 Thm 6, union-bound q̃) or
            ``"data-independent"`` (Prop. 8).
        threshold: Confident GNMax threshold T ≥ 0, or None for plain GNMax.
        sigma1: threshold noise σ1 > 0 (required with ``threshold``).
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        conversion: ``"balle2020"`` (default) or ``"standard"`` RDP→(ε, δ).

    Raises:
        ValueError: any bad argument (σ ≤ 0, δ ∉ (0, 1), budget ≤ 0, T < 0, σ1 ≤ 0,
            ``threshold`` without ``sigma1`` or vice versa, empty orders, bad choice).

    Example:
        >>> led = PrivacyLedger(sigma=40, delta=1e-5, epsilon_budget=1.0)
        >>> led.charge([200, 30, 20])
        >>> (led.num_queries, led.num_answered, round(led.epsilon(), 4))
        (1, 1, 0.122)
    """

    def __init__(
        self,
        *,
        sigma: float,
        delta: float,
        epsilon_budget: float | None = None,
        analysis: str = "data-dependent",
        threshold: float | None = None,
        sigma1: float | None = None,
        orders: ArrayLike | None = None,
        conversion: str = "balle2020",
    ) -> None:
        self._sigma = check_positive("sigma", sigma)
        self._delta = check_delta(delta, allow_zero=False)
        self._budget = (
            None if epsilon_budget is None else check_positive("epsilon_budget", epsilon_budget)
        )
        self._analysis = check_choice("analysis", analysis, ANALYSES)
        if (threshold is None) != (sigma1 is None):
            raise ValueError(
                f"threshold and sigma1 must be given together, got threshold={threshold!r}, "
                f"sigma1={sigma1!r}"
            )
        self._threshold = None if threshold is None else check_threshold(threshold)
        self._sigma1 = None if sigma1 is None else check_positive("sigma1", sigma1)
        lam = check_orders(DEFAULT_ORDERS if orders is None else orders)
        self._rdp_curve = RDPCurve.zeros(lam)  # validates a strictly increasing grid
        self._orders = self._rdp_curve.orders
        self._conversion = check_choice("conversion", conversion, _CONVERSIONS)
        self._rdp = np.zeros(self._orders.size)
        self._num_queries = 0
        self._num_answered = 0

    # -- configuration (read-only) --------------------------------------------------------
    @property
    def sigma(self) -> float:
        """GNMax noise σ."""
        return self._sigma

    @property
    def delta(self) -> float:
        """Default δ for :meth:`epsilon` and the budget."""
        return self._delta

    @property
    def epsilon_budget(self) -> float | None:
        """The ε budget (None: unlimited)."""
        return self._budget

    @property
    def analysis(self) -> str:
        """``"data-dependent"`` or ``"data-independent"``."""
        return self._analysis

    @property
    def threshold(self) -> float | None:
        """Confident GNMax threshold T, or None."""
        return self._threshold

    @property
    def sigma1(self) -> float | None:
        """Threshold noise σ1, or None."""
        return self._sigma1

    @property
    def orders(self) -> FloatArray:
        """The order grid (read-only)."""
        return self._orders

    @property
    def conversion(self) -> str:
        """RDP→(ε, δ) conversion used."""
        return self._conversion

    # -- state ----------------------------------------------------------------------------
    @property
    def num_queries(self) -> int:
        """Queries charged so far (answered or not)."""
        return self._num_queries

    @property
    def num_answered(self) -> int:
        """Queries whose GNMax step was charged."""
        return self._num_answered

    @property
    def rdp(self) -> RDPCurve:
        """The composed RDP curve of everything charged so far."""
        return RDPCurve(self._orders, self._rdp)

    def epsilon(self, delta: float | None = None) -> float:
        """ε(δ) of everything charged so far (the ledger's δ and conversion by default).

        Raises:
            ValueError: δ ∉ (0, 1).
        """
        d = self._delta if delta is None else check_delta(delta, allow_zero=False)
        return self._eps_of(self._rdp, d)

    # -- charging -------------------------------------------------------------------------
    def _eps_of(self, rdp: np.ndarray, delta: float) -> float:
        return rdp_to_dp(self._orders, rdp, delta, conversion=self._conversion).epsilon

    def _steps(self, votes: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(threshold-step RDP, argmax-step RDP) of one query, each ``(K,)``."""
        v = check_votes("votes", votes, min_classes=1, nonneg=True)
        if v.ndim != 1:
            raise ValueError(f"votes must be one histogram (1-d), got shape {v.shape}")
        rho2 = gnmax_rdp(v, self._sigma, self._orders, analysis=self._analysis, q="union")
        if self._threshold is None:
            return np.zeros_like(rho2), rho2
        top = float(np.round(v.max()))
        z = (top - self._threshold) / self._sigma1
        rho1, _ = _threshold_flat(
            np.array([special.log_ndtr(z)]),
            np.array([special.log_ndtr(-z)]),
            self._sigma1,
            self._orders,
            self._analysis,
        )
        return rho1[0], rho2

    def query_cost(self, votes: ArrayLike) -> FloatArray:
        """Worst-case RDP of one query: threshold step (if any) + GNMax step, shape ``(K,)``.

        Raises:
            ValueError: ``votes`` not a single non-negative histogram.
        """
        rho1, rho2 = self._steps(votes)
        return rho1 + rho2

    def _within(self, rdp: np.ndarray) -> bool:
        return self._budget is None or self._eps_of(rdp, self._delta) <= self._budget

    def can_afford(self, votes: ArrayLike) -> bool:
        """Whether charging this query's worst case keeps ε(δ) within the budget."""
        return self._within(self._rdp + self.query_cost(votes))

    def charge(self, votes: ArrayLike, *, answered: bool = True) -> None:
        """Charge one query: the threshold step (if set) and, if ``answered``, the GNMax step.

        A private-prediction interface calls :meth:`can_afford` before running the
        mechanism (the threshold outcome is not known in advance), then ``charge`` with the
        outcome. Without a threshold every query is answered.

        Raises:
            BudgetExhaustedError: the charge would make ε(δ) exceed the budget; nothing is
                charged.
            ValueError: bad ``votes``, or ``answered=False`` without a threshold.
        """
        if not isinstance(answered, (bool, np.bool_)):
            raise TypeError(f"answered must be a bool, got {answered!r}")
        if self._threshold is None and not answered:
            raise ValueError("answered=False needs a threshold (plain GNMax answers every query)")
        rho1, rho2 = self._steps(votes)
        new = self._rdp + rho1 + (rho2 if answered else 0.0)
        if not self._within(new):
            raise BudgetExhaustedError(
                f"charging this query would raise epsilon to {self._eps_of(new, self._delta):.6g} "
                f"> epsilon_budget={self._budget} at delta={self._delta}; nothing was charged"
            )
        self._rdp = new
        self._num_queries += 1
        self._num_answered += int(bool(answered))

    # -- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """The ledger as JSON; floats as ``float.hex()`` so :meth:`from_json` is exact."""
        opt = lambda x: None if x is None else _hex(x)  # noqa: E731
        return json.dumps(
            {
                "format": _FORMAT,
                "sigma": _hex(self._sigma),
                "delta": _hex(self._delta),
                "epsilon_budget": opt(self._budget),
                "analysis": self._analysis,
                "threshold": opt(self._threshold),
                "sigma1": opt(self._sigma1),
                "conversion": self._conversion,
                "orders": [_hex(x) for x in self._orders],
                "rdp": [_hex(x) for x in self._rdp],
                "num_queries": self._num_queries,
                "num_answered": self._num_answered,
                "epsilon": repr(self.epsilon()),  # for people reading the file; not read back
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Restore a ledger written by :meth:`to_json` (bit-identical state).

        Raises:
            ValueError: not a ledger JSON, or inconsistent content.
        """
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"text is not valid ledger JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"text is not a {_FORMAT} document")
        opt = lambda k: None if data.get(k) is None else _unhex(k, data[k])  # noqa: E731
        orders = [_unhex("orders", x) for x in data["orders"]]
        led = cls(
            sigma=_unhex("sigma", data["sigma"]),
            delta=_unhex("delta", data["delta"]),
            epsilon_budget=opt("epsilon_budget"),
            analysis=data["analysis"],
            threshold=opt("threshold"),
            sigma1=opt("sigma1"),
            orders=orders,
            conversion=data["conversion"],
        )
        rdp = np.array([_unhex("rdp", x) for x in data["rdp"]], dtype=np.float64)
        if rdp.shape != led._orders.shape or np.any(np.isnan(rdp)) or np.any(rdp < 0):
            raise ValueError("rdp in the ledger JSON must be non-negative, one value per order")
        nq, na = data["num_queries"], data["num_answered"]
        if not (isinstance(nq, int) and isinstance(na, int) and 0 <= na <= nq):
            raise ValueError(f"num_queries/num_answered are inconsistent: {nq!r}, {na!r}")
        led._rdp = rdp
        led._num_queries = nq
        led._num_answered = na
        return led

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger(sigma={self._sigma}, delta={self._delta}, "
            f"epsilon_budget={self._budget}, analysis={self._analysis!r}, "
            f"threshold={self._threshold}, sigma1={self._sigma1}, queries={self._num_queries}, "
            f"answered={self._num_answered}, epsilon={self.epsilon():.6g})"
        )
