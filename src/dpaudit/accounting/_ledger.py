"""A privacy ledger for a private-prediction interface (PATE-style GNMax / Confident GNMax).

:class:`LedgerRules` is the one ledger arithmetic (a query's charge, composition, ε(δ), the
budget test): :class:`PrivacyLedger` runs it on one account, :mod:`dpaudit.serve.ledger` on each
client's and stores the totals (its ``LedgerConfig`` is a :class:`LedgerRules`).

The ledger accounts for a mechanism *value* (:class:`~dpaudit.mechanisms.GNMax` or
:class:`~dpaudit.mechanisms.ConfidentGNMax`), the same object that answers. Each query is
charged its RDP at every order of a fixed grid, as computed by
:func:`~dpaudit.accounting.noisy_argmax_cost` (the one place the claim is made): the threshold
step (Confident GNMax) for every query and the GNMax step for answered ones; RDP composes by
addition (Mironov 2017, arXiv:1702.07476, Prop. 1). ε(δ) is the composed curve converted with
the conversion chosen at construction (Mironov 2017 Prop. 3, or Balle et al. 2020,
arXiv:1905.09982, Thm 21). A query whose charge would push ε(δ) past the budget is refused and
nothing is charged.

**Concurrency.** :meth:`PrivacyLedger.charge` checks the budget and commits the charge under
one :class:`threading.Lock`, and every counter is updated under it: no interleaving of threads
can accept more charges than the sequential order would, nor lose an update (issue 13).
:meth:`~PrivacyLedger.can_afford` is advisory (another thread may charge in between); the
authoritative answer is whether :meth:`~PrivacyLedger.charge` raises.

The data-dependent ε is itself a function of the data (Papernot et al. 2018, arXiv:1802.08908,
§4); releasing it needs the smooth-sensitivity machinery of
:func:`~dpaudit.accounting.gnss_release`. The ledger reports it as the PATE reference
implementation does.

Where a validity condition of Thm 6 fails for a charged query (data-dependent analysis), that
query is charged the data-independent bound at that order, and the ledger counts it: per order
in :attr:`PrivacyLedger.fallback_counts`, at the order attaining ε(δ) in
:attr:`PrivacyLedger.num_fallback` (shown in the repr and kept in the JSON), so the fallback is
never silent.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_choice, check_delta, check_orders, check_positive, check_votes
from dpaudit.accounting._confident import check_threshold
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._ledger_format import (
    _FORMAT,
    CONVERSIONS,
    _check_reachable,
    _hex,
    _hex_list,
    _parse_document,
    _parse_state,
    _unhex,
    mechanism_from_dict,
    mechanism_to_dict,
)
from dpaudit.accounting._mechanisms import (
    ANALYSES,
    NoisyArgmaxCost,
    check_finite_cost,
    noisy_argmax_cost,
)
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.conversions import DPConversion, rdp_to_dp
from dpaudit.errors import BudgetExhaustedError
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax

__all__ = [
    "LedgerRules",
    "PrivacyLedger",
    "batch_cost",
    "mechanism_from_dict",
    "mechanism_to_dict",
]

_COST_CACHE_SIZE = 1024


def batch_cost(rows: ArrayLike, mask: ArrayLike | None = None) -> FloatArray:
    """The composed RDP of a batch of charged queries: the sum of their rows, ``(K,)``.

    RDP composes by addition at each order (Mironov 2017, arXiv:1702.07476, Prop. 1). One
    function, so the service and anyone checking its journal sum the same way.

    Example:
        >>> batch_cost(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([True, False])).tolist()
        [1.0, 2.0]
    """
    r = np.asarray(rows, dtype=np.float64)
    if mask is not None:
        r = r[np.asarray(mask, dtype=bool)]
    if r.shape[0] == 0:
        return np.zeros(r.shape[1])
    return r.sum(axis=0)


@dataclasses.dataclass(frozen=True)
class LedgerRules:
    """The ledger arithmetic: per-query charges, their composition, ε(δ), the budget test.

    Every ledger runs these rules and nothing else: :class:`PrivacyLedger` on its account,
    the service (``dpaudit.serve.LedgerConfig``, a subclass) on each client's and its own.

    * a query's charge is :func:`~dpaudit.accounting.noisy_argmax_cost` of the mechanism
      value (Papernot et al. 2018, arXiv:1802.08908: Prop. 8 data-independent, Thm 6
      data-dependent with q̃ by ``q``; Confident GNMax's threshold step on every query and its
      GNMax step on answered ones, Alg. 1);
    * charges compose by addition at each order (Mironov 2017, arXiv:1702.07476, Prop. 1),
      in the order given (:meth:`compose`), so a total is the left fold of its charges;
    * a total's ε(δ) is :func:`~dpaudit.conversions.rdp_to_dp` with ``conversion`` (Mironov
      2017 Prop. 3, or Balle et al. 2020, arXiv:1905.09982, Thm 21);
    * a charge is affordable iff the ε(δ) it brings the total to is at most the budget
      (:meth:`fits`).

    Attributes:
        mechanism: :class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax` (threshold T ≥ 0).
        orders: the Rényi orders of every total (strictly increasing; stored as a tuple).
        delta: δ ∈ (0, 1) of ε(δ) and of the budgets.
        analysis: ``"data-independent"`` (default) or ``"data-dependent"``.
        conversion: ``"balle2020"`` (default) or ``"standard"``.
        q: q̃ bound of the data-dependent analysis: ``"union"`` (default, as PATE's
            accountant) or ``"exact"``.

    Raises:
        TypeError: ``mechanism`` is not GNMax or Confident GNMax.
        ValueError: a bad argument, or σ so small that the per-query RDP overflows float64.

    Example:
        >>> rules = LedgerRules(GNMax(40.0), (2.0, 8.0), 1e-5)
        >>> worst, realised = rules.costs([[200, 30, 20]], [True])
        >>> total = rules.compose(np.zeros(2), batch_cost(realised))
        >>> total.tolist(), round(rules.epsilon(total), 4), rules.fits(rules.epsilon(total), 1.0)
        ([0.00125, 0.005], 1.2191, False)
    """

    mechanism: GNMax | ConfidentGNMax
    orders: tuple[float, ...]
    delta: float
    analysis: str = "data-independent"
    conversion: str = "balle2020"
    q: str = "union"

    def __post_init__(self) -> None:
        m = self.mechanism
        if not isinstance(m, (GNMax, ConfidentGNMax)):
            raise TypeError(
                "mechanism must be a GNMax or ConfidentGNMax value (dpaudit.mechanisms), got "
                f"{type(m).__name__}"
            )
        if isinstance(m, ConfidentGNMax):
            check_threshold(m.threshold)
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        check_choice("analysis", self.analysis, ANALYSES)
        grid = RDPCurve.zeros(check_orders(self.orders)).orders  # strictly increasing, read-only
        check_choice("conversion", self.conversion, CONVERSIONS)
        check_choice("q", self.q, ("union", "exact"))
        check_finite_cost(m, grid)
        object.__setattr__(self, "orders", tuple(float(a) for a in grid))
        object.__setattr__(self, "_grid", grid)  # not a field: not compared, not serialised

    @property
    def order_grid(self) -> FloatArray:
        """The orders as a read-only float64 array ``(K,)``."""
        return self._grid  # type: ignore[attr-defined,no-any-return]

    @property
    def num_orders(self) -> int:
        """K, the length of every RDP vector."""
        return len(self.orders)

    # -- one query ----------------------------------------------------------------------------
    def cost(self, votes: ArrayLike | None = None) -> NoisyArgmaxCost:
        """Per-step RDP and fallback masks of queries on ``votes`` ``(..., C)``:
        :func:`~dpaudit.accounting.noisy_argmax_cost` under these rules."""
        return noisy_argmax_cost(
            self.mechanism, self._grid, votes=votes, analysis=self.analysis, q=self.q
        )

    def costs(self, votes: ArrayLike, answered: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Per-query worst-case and realised RDP ``(n, K)`` of answers on ``votes`` ``(n, C)``.

        Worst case: every step (what a budget is checked against, so a refusal never depends
        on the noisy outcome). Realised: ``ρ1 + 1{answered}·ρ2``, the threshold step of
        Confident GNMax alone where it abstained (Papernot et al. 2018, Alg. 1).
        """
        cost = self.cost(np.asarray(votes, dtype=np.float64))
        worst = np.ascontiguousarray(cost.per_use(True), dtype=np.float64)
        realised = np.ascontiguousarray(
            cost.threshold_rdp + np.asarray(answered, dtype=bool)[:, None] * cost.answer_rdp,
            dtype=np.float64,
        )
        return worst, realised

    # -- totals -------------------------------------------------------------------------------
    @staticmethod
    def compose(total: np.ndarray, *charges: ArrayLike | float) -> FloatArray:
        """``((total + c₁) + c₂) + …``: RDP composes by addition at each order (Mironov 2017,
        arXiv:1702.07476, Prop. 1), in IEEE float64 in the order given (so a total is the
        left fold of its charges, bit for bit). An overflow gives ``inf`` silently; the
        budget test refuses it.

        Example:
            >>> LedgerRules.compose(np.array([1.0, 2.0]), np.array([0.5, 0.5]), 0.0).tolist()
            [1.5, 2.5]
        """
        with np.errstate(over="ignore"):
            for charge in charges:
                total = total + charge
        return total

    def to_dp(self, rdp: ArrayLike, delta: float | None = None) -> DPConversion:
        """(ε, δ) of a total and the order attaining it: :func:`~dpaudit.conversions.rdp_to_dp`
        with ``conversion`` (Mironov 2017 Prop. 3 / Balle et al. 2020 Thm 21); δ defaults to
        ``delta``."""
        d = self.delta if delta is None else delta
        return rdp_to_dp(self._grid, rdp, d, conversion=self.conversion)

    def epsilon(self, rdp: ArrayLike, delta: float | None = None) -> float:
        """ε(δ) of a total (:meth:`to_dp`)."""
        return self.to_dp(rdp, delta).epsilon

    @staticmethod
    def fits(epsilon: float, budget: float | None) -> bool:
        """Whether a total of ε(δ) ``epsilon`` stays within ``budget`` (None: no limit)."""
        return budget is None or epsilon <= budget


class PrivacyLedger:
    """Running RDP account of a private-prediction interface, with an optional ε budget.

    Thread-safe: :meth:`charge` is atomic (budget check and commit under one lock).

    Args:
        mechanism: the aggregator that answers: :class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax` (threshold T ≥ 0).
        delta: δ ∈ (0, 1) at which ε is reported and the budget is enforced.
        epsilon_budget: refuse charges that would make ε(δ) exceed this (None: no limit).
        analysis: ``"data-dependent"`` (Papernot et al. 2018 Thm 6, union-bound q̃) or
            ``"data-independent"`` (Prop. 8).
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        conversion: ``"balle2020"`` (default) or ``"standard"`` RDP→(ε, δ).

    Raises:
        TypeError: ``mechanism`` is not GNMax or Confident GNMax.
        ValueError: any bad argument (δ ∉ (0, 1), budget ≤ 0, T < 0, empty orders, bad
            choice), or σ so small that the per-query RDP ``λ/σ²`` overflows float64.

    Example:
        >>> from dpaudit.mechanisms import GNMax
        >>> led = PrivacyLedger(GNMax(40.0), delta=1e-5, epsilon_budget=1.0)
        >>> led.charge([200, 30, 20])
        >>> (led.num_queries, led.num_answered, round(led.epsilon(), 4))
        (1, 1, 0.122)
        >>> led.num_fallback  # ε is attained at λ = 108 > μ1 ≈ 100.5: Thm 6 falls back there
        1
    """

    def __init__(
        self,
        mechanism: GNMax | ConfidentGNMax,
        *,
        delta: float,
        epsilon_budget: float | None = None,
        analysis: str = "data-dependent",
        orders: ArrayLike | None = None,
        conversion: str = "balle2020",
    ) -> None:
        self._rules = LedgerRules(
            mechanism,
            DEFAULT_ORDERS if orders is None else orders,  # type: ignore[arg-type]
            delta,
            analysis=analysis,
            conversion=conversion,
            q="union",
        )
        self._budget = (
            None if epsilon_budget is None else check_positive("epsilon_budget", epsilon_budget)
        )
        k = self._rules.num_orders
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cost_cache: OrderedDict[bytes, NoisyArgmaxCost] = OrderedDict()
        self._rdp = np.zeros(k)
        self._num_queries = 0
        self._num_answered = 0
        self._num_zero_cost = 0
        self._fallback_counts = np.zeros(k, dtype=np.int64)

    # -- pickling: the lock is not copied, a fresh one is made ----------------------------
    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self.__dict__)
        for key in ("_lock", "_cache_lock", "_cost_cache"):
            del state[key]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cost_cache = OrderedDict()

    # -- configuration (read-only) --------------------------------------------------------
    @property
    def rules(self) -> LedgerRules:
        """The arithmetic this ledger runs (mechanism, orders, δ, analysis, conversion)."""
        return self._rules

    @property
    def mechanism(self) -> GNMax | ConfidentGNMax:
        """The mechanism value accounted for."""
        return self._rules.mechanism

    @property
    def sigma(self) -> float:
        """GNMax noise σ (σ2 of Confident GNMax)."""
        return self._rules.mechanism.sigma

    @property
    def threshold(self) -> float | None:
        """Confident GNMax threshold T, or None for plain GNMax."""
        m = self._rules.mechanism
        return m.threshold if isinstance(m, ConfidentGNMax) else None

    @property
    def sigma1(self) -> float | None:
        """Threshold noise σ1 of Confident GNMax, or None."""
        m = self._rules.mechanism
        return m.sigma1 if isinstance(m, ConfidentGNMax) else None

    @property
    def delta(self) -> float:
        """Default δ for :meth:`epsilon` and the budget."""
        return self._rules.delta

    @property
    def epsilon_budget(self) -> float | None:
        """The ε budget (None: unlimited)."""
        return self._budget

    @property
    def analysis(self) -> str:
        """``"data-dependent"`` or ``"data-independent"``."""
        return self._rules.analysis

    @property
    def orders(self) -> FloatArray:
        """The order grid (read-only)."""
        return self._rules.order_grid

    @property
    def conversion(self) -> str:
        """RDP→(ε, δ) conversion used."""
        return self._rules.conversion

    # -- state (each read is a consistent snapshot) ---------------------------------------
    def _snapshot(self) -> tuple[np.ndarray, int, int, int, np.ndarray]:
        with self._lock:
            return (
                self._rdp,
                self._num_queries,
                self._num_answered,
                self._num_zero_cost,
                self._fallback_counts,
            )

    @property
    def num_queries(self) -> int:
        """Queries charged so far (answered or not)."""
        return self._snapshot()[1]

    @property
    def num_answered(self) -> int:
        """Queries whose GNMax step was charged."""
        return self._snapshot()[2]

    @property
    def num_zero_cost(self) -> int:
        """Charged queries whose charge was 0 at every order: the data-dependent analysis
        with q̃ = 0 (one class, or gaps so large that q̃ underflows), where the output is
        constant. Kept so that :meth:`from_json` can check the counts against the curve."""
        return self._snapshot()[3]

    @property
    def fallback_counts(self) -> np.ndarray:
        """Per order, the charged queries that were charged a data-independent fallback there.

        A query counts at order λ when the data-dependent analysis was chosen but a validity
        condition of Papernot et al. 2018 Thm 6 (V1–V4) failed at λ for its threshold step or,
        if answered, its GNMax step, so ``λ/σ²`` (``λ/(2σ1²)``) was charged instead
        (:func:`~dpaudit.accounting.gnmax_rdp_details`). Always 0 for ``"data-independent"``.
        Shape ``(K,)``, int64, a copy.
        """
        return self._snapshot()[4].copy()

    @property
    def num_fallback(self) -> int:
        """Charged queries that were charged a data-independent fallback at the order
        attaining ε(δ) (the ledger's δ and conversion); the largest count over the orders
        when no order gives a finite ε. See :attr:`fallback_counts`."""
        rdp, _, _, _, counts = self._snapshot()
        conv = self._rules.to_dp(rdp)
        if not np.isfinite(conv.order):  # no order gives a finite ε
            return int(counts.max())
        return int(counts[int(np.searchsorted(self.orders, conv.order))])

    @property
    def rdp(self) -> RDPCurve:
        """The composed RDP curve of everything charged so far."""
        return RDPCurve(self.orders, self._snapshot()[0])

    def epsilon(self, delta: float | None = None) -> float:
        """ε(δ) of everything charged so far (the ledger's δ and conversion by default).

        Raises:
            ValueError: δ ∉ (0, 1).
        """
        d = None if delta is None else check_delta(delta, allow_zero=False)
        return self._rules.epsilon(self._snapshot()[0], d)

    # -- charging -------------------------------------------------------------------------
    def _cost(self, votes: ArrayLike) -> NoisyArgmaxCost:
        """The per-step RDP and fallback masks of one query: a pure function of the votes
        (never of the ledger's state), cached for repeated histograms; treat as read-only."""
        v = check_votes("votes", votes, min_classes=1, nonneg=True)
        if v.ndim != 1:
            raise ValueError(f"votes must be one histogram (1-d), got shape {v.shape}")
        key = np.ascontiguousarray(v, dtype=np.float64).tobytes()
        with self._cache_lock:
            cost = self._cost_cache.get(key)
        if cost is None:
            cost = self._rules.cost(v)
            with self._cache_lock:
                self._cost_cache[key] = cost
                if len(self._cost_cache) > _COST_CACHE_SIZE:
                    self._cost_cache.popitem(last=False)
        return cost

    def query_cost(self, votes: ArrayLike) -> FloatArray:
        """Worst-case RDP of one query: threshold step (if any) + GNMax step, shape ``(K,)``.

        Where Thm 6's conditions fail this is the data-independent fallback;
        :meth:`query_fallback` says at which orders (and :meth:`charge` counts it).

        Raises:
            ValueError: ``votes`` not a single non-negative histogram.
        """
        return self._cost(votes).per_use(answered=True)

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
            >>> from dpaudit.mechanisms import GNMax
            >>> led = PrivacyLedger(GNMax(40.0), delta=1e-5, orders=[5.0, 200.0])
            >>> led.query_fallback([200, 30, 20]).tolist()  # Thm 6's V2 (μ1 > λ) fails at 200
            [False, True]
        """
        if not isinstance(answered, (bool, np.bool_)):
            raise TypeError(f"answered must be a bool, got {answered!r}")
        return self._cost(votes).fallback(bool(answered))

    def _within(self, rdp: np.ndarray) -> bool:
        return self._rules.fits(self._rules.epsilon(rdp), self._budget)

    def can_afford(self, votes: ArrayLike) -> bool:
        """Whether charging this query's worst case now keeps ε(δ) within the budget.

        Advisory under concurrency: another thread may charge before this one does.
        """
        cost = self.query_cost(votes)
        return self._within(self._rules.compose(self._snapshot()[0], cost))

    def charge(self, votes: ArrayLike, *, answered: bool = True) -> None:
        """Charge one query: the threshold step (if any) and, if ``answered``, the GNMax step.

        A private-prediction interface calls :meth:`can_afford` before running the
        mechanism (the threshold outcome is not known in advance), then ``charge`` with the
        outcome. Without a threshold every query is answered. The budget check and the
        commit happen under one lock: concurrent charges never overspend.

        Orders at which the query was charged a data-independent fallback (Thm 6's conditions
        failed) are counted in :attr:`fallback_counts` / :attr:`num_fallback`.

        Raises:
            BudgetExhaustedError: the charge would make ε(δ) exceed the budget; nothing is
                charged.
            ValueError: bad ``votes``, ``answered=False`` for plain GNMax, or a total that
                would overflow float64 (nothing is charged).
            TypeError: ``answered`` not a bool.
        """
        if not isinstance(answered, (bool, np.bool_)):
            raise TypeError(f"answered must be a bool, got {answered!r}")
        answered = bool(answered)
        if isinstance(self._rules.mechanism, GNMax) and not answered:
            raise ValueError("answered=False needs a threshold (plain GNMax answers every query)")
        cost = self._cost(votes)  # a pure function of the votes: computed outside the lock
        rho1, rho2 = cost.threshold_rdp, cost.answer_rdp
        fallback = cost.fallback(answered)
        zero_cost = not (np.any(rho1 > 0) or (answered and np.any(rho2 > 0)))
        with self._lock:
            new = self._rules.compose(self._rdp, rho1, rho2 if answered else 0.0)
            if not np.all(np.isfinite(new)):
                raise ValueError("charging this query would overflow the RDP total; not charged")
            if not self._within(new):
                raise BudgetExhaustedError(
                    f"charging this query would raise epsilon to "
                    f"{self._rules.epsilon(new):.6g} > epsilon_budget={self._budget} at "
                    f"delta={self.delta}; nothing was charged"
                )
            self._rdp = new
            self._num_queries += 1
            self._num_answered += int(answered)
            self._num_zero_cost += int(zero_cost)
            self._fallback_counts = self._fallback_counts + fallback

    # -- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """The ledger as JSON (format ``dpaudit.PrivacyLedger/3``): the mechanism by name and
        parameters, floats as ``float.hex()`` so :meth:`from_json` is exact."""
        rdp, nq, na, nz, counts = self._snapshot()
        opt = lambda x: None if x is None else _hex(x)  # noqa: E731
        rules = self._rules
        return json.dumps(
            {
                "format": _FORMAT,
                "mechanism": mechanism_to_dict(rules.mechanism),
                "delta": _hex(rules.delta),
                "epsilon_budget": opt(self._budget),
                "analysis": rules.analysis,
                "conversion": rules.conversion,
                "orders": [_hex(x) for x in rules.orders],
                "rdp": [_hex(x) for x in rdp],
                "num_queries": nq,
                "num_answered": na,
                "num_zero_cost": nz,
                "fallback_counts": [int(c) for c in counts],
                "epsilon": repr(rules.epsilon(rdp)),  # not read back
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Restore a ledger written by :meth:`to_json` (bit-identical state).

        The state must be one that some sequence of :meth:`charge` calls can produce: RDP
        finite, non-negative and non-decreasing in the order, at most the data-independent
        cost of the counted queries (and equal to it for the data-independent analysis),
        enough RDP at each order for its fallback count, non-zero when some query had a
        non-zero charge, and counts that fit each other (answered ≤ queries, every GNMax
        query answered, fallbacks ≤ queries, none for the data-independent analysis).

        Raises:
            TypeError: ``text`` is not a ``str`` (bytes must be decoded first).
            ValueError: not a ledger JSON (not JSON, not an object, another format), a key
                given twice, missing or unexpected, a value of the wrong type, a count too large for
                float64 accounting (> 2**53), or a state no sequence of charges can produce;
                the message names the key.
        """
        data = _parse_document(text)
        opt = lambda k: None if data[k] is None else _unhex(k, data[k])  # noqa: E731
        try:
            led = cls(
                mechanism_from_dict(data["mechanism"]),
                delta=_unhex("delta", data["delta"]),
                epsilon_budget=opt("epsilon_budget"),
                analysis=data["analysis"],
                orders=_hex_list("orders", data["orders"]),
                conversion=data["conversion"],
            )
        except TypeError as exc:  # defensive: every value is a float or str by now
            raise ValueError(f"ledger JSON has a value of the wrong type: {exc}") from exc
        rdp, nq, na, nz, counts = _parse_state(data, led.rules.num_orders)
        _check_reachable(led, rdp, nq, na, nz, counts)
        led._restore(rdp, nq, na, nz, counts)
        return led

    def _restore(self, rdp: np.ndarray, nq: int, na: int, nz: int, counts: np.ndarray) -> None:
        """Install a validated state (used by :meth:`from_json` only)."""
        with self._lock:
            self._rdp = rdp
            self._num_queries, self._num_answered, self._num_zero_cost = nq, na, nz
            self._fallback_counts = counts

    def __repr__(self) -> str:
        rdp, nq, na, _, _ = self._snapshot()
        return (
            f"PrivacyLedger({self.mechanism!r}, delta={self.delta}, "
            f"epsilon_budget={self._budget}, analysis={self.analysis!r}, queries={nq}, "
            f"answered={na}, fallbacks={self.num_fallback}, "
            f"epsilon={self._rules.epsilon(rdp):.6g})"
        )


# -- JSON helpers ------------------------------------------------------------------------------
