"""A privacy ledger for a private-prediction interface (PATE-style GNMax / Confident GNMax).

Each query is charged its RDP at every order of a fixed grid (composition adds;
``shared/formulas.md`` §1.4–§1.5): the threshold step (if a threshold is set) for every
query and the GNMax step for answered ones. ε(δ) is the RDP curve converted with the
conversion chosen at construction (formulas.md §1.7). A query whose charge would push ε(δ)
past the budget is refused and nothing is charged.

The data-dependent ε is itself a function of the data (Papernot et al. 2018 §4); releasing it
needs the smooth-sensitivity machinery of :func:`~dpaudit.accounting.gnss_release`. The
ledger reports it as the PATE reference implementation does.

Where a validity condition of Thm 6 fails for a charged query (data-dependent analysis), that
query is charged the data-independent bound at that order, and the ledger counts it: per order
in :attr:`PrivacyLedger.fallback_counts`, at the order attaining ε(δ) in
:attr:`PrivacyLedger.num_fallback` (shown in the repr and kept in the JSON), so the fallback is
never silent (issue 4, item 2).
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
from dpaudit.accounting._gnmax import ANALYSES, gnmax_rdp_details
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.conversions import rdp_to_dp
from dpaudit.errors import BudgetExhaustedError

__all__ = ["PrivacyLedger"]

_CONVERSIONS = ("standard", "balle2020")
_FORMAT = "dpaudit.PrivacyLedger/2"  # /2 adds fallback_counts
_FORMAT_PREFIX = "dpaudit.PrivacyLedger/"
_REQUIRED_KEYS = (
    "format",
    "sigma",
    "delta",
    "epsilon_budget",
    "analysis",
    "threshold",
    "sigma1",
    "conversion",
    "orders",
    "rdp",
    "num_queries",
    "num_answered",
    "fallback_counts",
)
_OPTIONAL_KEYS = ("epsilon",)  # written for people reading the file; not read back


def _hex(x: float) -> str:
    return float(x).hex()


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer in the ledger JSON, got {value!r}")
    return value


def _hex_list(name: str, value: Any) -> list[float]:
    if not isinstance(value, list):
        raise ValueError(f"{name} must be a list of float.hex() strings in the ledger JSON")
    return [_unhex(name, x) for x in value]


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
        >>> led.num_fallback  # ε is attained at λ = 108 > μ1 ≈ 100.5: Thm 6 falls back there
        1
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
        self._fallback_counts = np.zeros(self._orders.size, dtype=np.int64)

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
    def fallback_counts(self) -> np.ndarray:
        """Per order, the charged queries that were charged a data-independent fallback there.

        A query counts at order λ when the data-dependent analysis was chosen but a validity
        condition of Papernot et al. 2018 Thm 6 (V1–V4) failed at λ for its threshold step or,
        if answered, its GNMax step, so ``λ/σ²`` (``λ/(2σ1²)``) was charged instead
        (:func:`~dpaudit.accounting.gnmax_rdp_details`). Always 0 for ``"data-independent"``.
        Shape ``(K,)``, int64, a copy.
        """
        return self._fallback_counts.copy()

    @property
    def num_fallback(self) -> int:
        """Charged queries that were charged a data-independent fallback at the order
        attaining ε(δ) (the ledger's δ and conversion); the largest count over the orders
        when no order gives a finite ε. See :attr:`fallback_counts`."""
        conv = rdp_to_dp(self._orders, self._rdp, self._delta, conversion=self._conversion)
        if np.isnan(conv.order):
            return int(self._fallback_counts.max())
        return int(self._fallback_counts[int(np.searchsorted(self._orders, conv.order))])

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

    def _steps(self, votes: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(threshold-step RDP, argmax-step RDP, their fallback masks) of one query, ``(K,)``."""
        v = check_votes("votes", votes, min_classes=1, nonneg=True)
        if v.ndim != 1:
            raise ValueError(f"votes must be one histogram (1-d), got shape {v.shape}")
        det = gnmax_rdp_details(v, self._sigma, self._orders, analysis=self._analysis, q="union")
        rho2, fb2 = det.rdp, det.fallback
        if self._threshold is None:
            return np.zeros_like(rho2), rho2, np.zeros_like(fb2), fb2
        top = float(np.round(v.max()))
        z = (top - self._threshold) / self._sigma1
        rho1, fb1 = _threshold_flat(
            np.array([special.log_ndtr(z)]),
            np.array([special.log_ndtr(-z)]),
            self._sigma1,
            self._orders,
            self._analysis,
        )
        return rho1[0], rho2, fb1[0], fb2

    def query_cost(self, votes: ArrayLike) -> FloatArray:
        """Worst-case RDP of one query: threshold step (if any) + GNMax step, shape ``(K,)``.

        Where Thm 6's conditions fail this is the data-independent fallback;
        :meth:`query_fallback` says at which orders (and :meth:`charge` counts it).

        Raises:
            ValueError: ``votes`` not a single non-negative histogram.
        """
        rho1, rho2, _, _ = self._steps(votes)
        return rho1 + rho2

    def query_fallback(self, votes: ArrayLike, *, answered: bool = True) -> np.ndarray:
        """Orders at which charging this query would use a data-independent fallback.

        True at λ where the data-dependent analysis was chosen but a validity condition of
        Papernot et al. 2018 Thm 6 fails there for the threshold step or (if ``answered``) the
        GNMax step, exactly what :meth:`charge` adds to :attr:`fallback_counts`.

        Returns:
            Booleans of shape ``(K,)`` (all False for ``"data-independent"``).

        Raises:
            ValueError: ``votes`` not a single non-negative histogram.
            TypeError: ``answered`` not a bool.

        Example:
            >>> led = PrivacyLedger(sigma=40, delta=1e-5, orders=[5.0, 200.0])
            >>> led.query_fallback([200, 30, 20]).tolist()  # Thm 6's V2 (μ1 > λ) fails at 200
            [False, True]
        """
        if not isinstance(answered, (bool, np.bool_)):
            raise TypeError(f"answered must be a bool, got {answered!r}")
        _, _, fb1, fb2 = self._steps(votes)
        return fb1 | (fb2 & bool(answered))

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

        Orders at which the query was charged a data-independent fallback (Thm 6's conditions
        failed) are counted in :attr:`fallback_counts` / :attr:`num_fallback`.

        Raises:
            BudgetExhaustedError: the charge would make ε(δ) exceed the budget; nothing is
                charged.
            ValueError: bad ``votes``, or ``answered=False`` without a threshold.
            TypeError: ``answered`` not a bool.
        """
        if not isinstance(answered, (bool, np.bool_)):
            raise TypeError(f"answered must be a bool, got {answered!r}")
        if self._threshold is None and not answered:
            raise ValueError("answered=False needs a threshold (plain GNMax answers every query)")
        rho1, rho2, fb1, fb2 = self._steps(votes)
        new = self._rdp + rho1 + (rho2 if answered else 0.0)
        if not self._within(new):
            raise BudgetExhaustedError(
                f"charging this query would raise epsilon to {self._eps_of(new, self._delta):.6g} "
                f"> epsilon_budget={self._budget} at delta={self._delta}; nothing was charged"
            )
        self._rdp = new
        self._num_queries += 1
        self._num_answered += int(bool(answered))
        self._fallback_counts += fb1 | (fb2 & bool(answered))

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
                "fallback_counts": [int(c) for c in self._fallback_counts],
                "epsilon": repr(self.epsilon()),  # for people reading the file; not read back
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Restore a ledger written by :meth:`to_json` (bit-identical state).

        Raises:
            ValueError: not a ledger JSON (not JSON, not an object, another format), a key
                missing or unexpected, or a value of the wrong type or inconsistent (bad
                configuration, ``rdp``/``fallback_counts`` not one entry per order, counts
                that do not fit ``num_queries``); the message names the key.
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"text is not valid ledger JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"text is not a {_FORMAT} document (not a JSON object)")
        fmt = data.get("format")
        if fmt != _FORMAT:
            if isinstance(fmt, str) and fmt.startswith(_FORMAT_PREFIX):
                raise ValueError(
                    f"text is a {fmt} document; this version reads {_FORMAT} only (/1 has no "
                    "fallback_counts, so it cannot be restored without loss)"
                )
            raise ValueError(f"text is not a {_FORMAT} document (format={fmt!r})")
        missing = [k for k in _REQUIRED_KEYS if k not in data]
        if missing:
            raise ValueError(f"ledger JSON is missing key(s) {missing}")
        unexpected = sorted(set(data) - set(_REQUIRED_KEYS) - set(_OPTIONAL_KEYS))
        if unexpected:
            raise ValueError(f"ledger JSON has unexpected key(s) {unexpected}")
        opt = lambda k: None if data[k] is None else _unhex(k, data[k])  # noqa: E731
        try:
            led = cls(
                sigma=_unhex("sigma", data["sigma"]),
                delta=_unhex("delta", data["delta"]),
                epsilon_budget=opt("epsilon_budget"),
                analysis=data["analysis"],
                threshold=opt("threshold"),
                sigma1=opt("sigma1"),
                orders=_hex_list("orders", data["orders"]),
                conversion=data["conversion"],
            )
        except TypeError as exc:  # defensive: every value is a float or str by now
            raise ValueError(f"ledger JSON has a value of the wrong type: {exc}") from exc
        k = led._orders.size
        rdp = np.array(_hex_list("rdp", data["rdp"]), dtype=np.float64)
        if rdp.shape != (k,) or np.any(np.isnan(rdp)) or np.any(rdp < 0):
            raise ValueError(
                f"rdp in the ledger JSON must be {k} non-negative values (one per order)"
            )
        nq = _count("num_queries", data["num_queries"])
        na = _count("num_answered", data["num_answered"])
        if na > nq:
            raise ValueError(f"num_queries/num_answered are inconsistent: {nq!r}, {na!r}")
        fbc = data["fallback_counts"]
        if not isinstance(fbc, list) or len(fbc) != k:
            raise ValueError(f"fallback_counts must be a list of {k} integers (one per order)")
        counts = [_count("fallback_counts", c) for c in fbc]
        if any(c > nq for c in counts):
            raise ValueError(f"fallback_counts must not exceed num_queries={nq}, got {counts}")
        led._rdp = rdp
        led._num_queries = nq
        led._num_answered = na
        led._fallback_counts = np.array(counts, dtype=np.int64)
        return led

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger(sigma={self._sigma}, delta={self._delta}, "
            f"epsilon_budget={self._budget}, analysis={self._analysis!r}, "
            f"threshold={self._threshold}, sigma1={self._sigma1}, queries={self._num_queries}, "
            f"answered={self._num_answered}, fallbacks={self.num_fallback}, "
            f"epsilon={self.epsilon():.6g})"
        )
