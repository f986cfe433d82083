"""The private prediction interface A(S) of paper 000 Alg. 1 (prediction phase).

:class:`PrivatePredictor` glues a :class:`TeacherEnsemble` (the training phase) to a noisy
aggregator (GNMax or Confident GNMax) and, optionally, to a privacy ledger that enforces a
budget, and to an answer cache (the mitigation of paper 000 §5.4 and paper 003 §5: a repeated
query returns its first answer and costs nothing more). The claimed guarantee travels with it
(``ledger``, ``claimed_rdp``), so an audit compares the implementation with the analysis of the
same object.

:meth:`PrivatePredictor.predict` may be called from several threads: its charge-then-answer
section (cache lookup, budget check, ledger charge, bookkeeping) runs under one lock, so the
interface never overspends nor loses a record, whatever ledger is attached (issue 13).
"""

from __future__ import annotations

import hashlib
import math
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, IntArray, RngLike
from dpaudit._validate import check_choice, check_orders, check_positive_int
from dpaudit.errors import BudgetExhaustedError
from dpaudit.mechanisms.values import ABSTAIN, REFUSED, ConfidentGNMax, GNMax, NoisyArgmax
from dpaudit.systems.private_prediction._ensemble import TeacherEnsemble

if TYPE_CHECKING:
    from dpaudit.accounting import PrivacyLedger, RDPCurve

__all__ = ["Aggregator", "Ledger", "PrivatePredictor", "make_ledger"]


Aggregator = NoisyArgmax
"""A noisy aggregator: a :class:`dpaudit.mechanisms.NoisyArgmax` value (GNMax, Confident GNMax,
LNMax)."""


@runtime_checkable
class Ledger(Protocol):
    """What the predictor needs from a privacy ledger (``dpaudit.accounting.PrivacyLedger``)."""

    def can_afford(self, votes: ArrayLike) -> bool: ...

    def charge(self, votes: ArrayLike, *, answered: bool = True) -> Any: ...


def make_ledger(
    aggregator: GNMax | ConfidentGNMax,
    *,
    delta: float,
    epsilon_budget: float | None = None,
    analysis: str = "data-dependent",
    orders: ArrayLike | None = None,
    conversion: str = "balle2020",
) -> PrivacyLedger:
    """A :class:`dpaudit.accounting.PrivacyLedger` that accounts for ``aggregator``.

    The ledger holds the aggregator's mechanism value itself, so the claim is made about the
    mechanism that actually answers: ``PrivacyLedger(aggregator, delta=..., ...)``.

    Args:
        aggregator: :class:`GNMax` or :class:`ConfidentGNMax`.
        delta: δ ∈ (0, 1) at which ε is reported and the budget enforced.
        epsilon_budget: refuse queries past this ε (None: no limit).
        analysis: ``"data-dependent"`` (Papernot et al. 2018 Thm 6) or ``"data-independent"``.
        orders: Rényi orders (default :data:`dpaudit.accounting.DEFAULT_ORDERS`).
        conversion: RDP→(ε, δ): ``"balle2020"`` (Balle et al. 2020, arXiv:1905.09982) or
            ``"standard"``.

    Returns:
        A fresh ledger.

    Raises:
        TypeError: ``aggregator`` is not GNMax or Confident GNMax.
        ValueError: bad δ, budget, analysis, orders or conversion.

    Example:
        >>> led = make_ledger(GNMax(sigma=40.0), delta=1e-5, epsilon_budget=2.0)
        >>> led.mechanism, led.threshold
        (GNMax(sigma=40.0), None)
    """
    from dpaudit.accounting import PrivacyLedger

    if not isinstance(aggregator, (GNMax, ConfidentGNMax)):
        raise TypeError(
            f"aggregator must be GNMax or ConfidentGNMax, got {type(aggregator).__name__}"
        )
    return PrivacyLedger(
        aggregator,
        delta=delta,
        epsilon_budget=epsilon_budget,
        analysis=analysis,
        orders=orders,
        conversion=conversion,
    )


def _query_key(row: np.ndarray) -> bytes:
    """Cache key of one query: a hash of its feature bytes in a canonical dtype and layout."""
    canonical = np.ascontiguousarray(row, dtype=np.float64)
    return hashlib.blake2b(canonical.tobytes(), digest_size=16).digest()


def _check_ledger_matches(ledger: Any, aggregator: Any) -> None:
    """Refuse a ledger whose mechanism (or noise parameters) differ from the aggregator's."""
    mechanism = getattr(ledger, "mechanism", None)
    if mechanism is not None and mechanism != aggregator:
        raise ValueError(
            f"ledger.mechanism={mechanism!r} does not match the aggregator {aggregator!r}; "
            "the ledger must account for the mechanism that answers"
        )

    def differs(attr: str, expected: float | None) -> bool:
        if not hasattr(ledger, attr):
            return False
        got = getattr(ledger, attr)
        if expected is None or got is None:
            return (expected is None) != (got is None)
        return not math.isclose(float(got), float(expected), rel_tol=1e-12, abs_tol=0.0)

    confident = isinstance(aggregator, ConfidentGNMax)
    checks = {
        "sigma": aggregator.sigma,
        "threshold": aggregator.threshold if confident else None,
        "sigma1": aggregator.sigma1 if confident else None,
    }
    for attr, expected in checks.items():
        if differs(attr, expected):
            raise ValueError(
                f"ledger.{attr}={getattr(ledger, attr)!r} does not match the aggregator's "
                f"{attr}={expected!r}; the ledger must account for the mechanism that answers"
            )


class PrivatePredictor:
    """A private prediction interface: teachers' votes → noisy aggregation, under a budget.

    Queries are processed in order. For each query: a cached answer (``cache=True``, same
    feature bytes seen before) is returned at no cost; otherwise, if a ledger is attached and
    cannot afford the query, the query and every later uncached query are refused
    (:data:`REFUSED` = -2, no privacy spent); otherwise the aggregator answers — a label, or
    :data:`ABSTAIN` = -1 when Confident GNMax declines (privacy spent all the same) — and the
    ledger is charged with the query's votes and whether it was answered.

    Args:
        ensemble: the trained :class:`TeacherEnsemble`.
        aggregator: :class:`GNMax` or :class:`ConfidentGNMax`.
        ledger: optional privacy ledger (``dpaudit.accounting.PrivacyLedger``, e.g. from
            :func:`make_ledger`, or any object with ``can_afford(votes)`` and
            ``charge(votes, *, answered)``); its ``sigma`` (and ``threshold``/``sigma1``) must
            match the aggregator's where it exposes them.
        cache: return the first answer to a repeated query, at no further cost.
        teachers_per_query: k, the number of teachers chosen at random per query (Alg. 1
            CHOOSE); ``None`` uses all m.

    Raises:
        TypeError: ``ensemble``/``aggregator``/``ledger`` of the wrong kind.
        ValueError: ``teachers_per_query`` not in [1, m]; ledger parameters differ from the
            aggregator's.

    Example:
        >>> from dpaudit.systems import GNMax, PrivatePredictor, TeacherEnsemble
        >>> from dpaudit.data import load_digits
        >>> ds = load_digits(seed=0)
        >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=20, rng=0)
        >>> api = PrivatePredictor(ens, GNMax(sigma=2.0), cache=True)
        >>> api.predict(ds.X_test[:5], rng=0).tolist()
        [2, 2, 3, 0, 8]
    """

    def __init__(
        self,
        ensemble: TeacherEnsemble,
        aggregator: GNMax | ConfidentGNMax | Aggregator,
        *,
        ledger: Ledger | None = None,
        cache: bool = False,
        teachers_per_query: int | None = None,
    ) -> None:
        if not isinstance(ensemble, TeacherEnsemble):
            raise TypeError(f"ensemble must be a TeacherEnsemble, got {type(ensemble).__name__}")
        if not isinstance(aggregator, Aggregator):
            raise TypeError(
                "aggregator must be GNMax or ConfidentGNMax (or alike), got "
                f"{type(aggregator).__name__}"
            )
        if ledger is not None:
            if not isinstance(ledger, Ledger):
                raise TypeError(
                    f"ledger must have can_afford(votes) and charge(votes, *, answered), got "
                    f"{type(ledger).__name__}"
                )
            _check_ledger_matches(ledger, aggregator)
        if not isinstance(cache, (bool, np.bool_)):
            raise TypeError(f"cache must be a bool, got {cache!r}")
        if teachers_per_query is not None:
            k = check_positive_int("teachers_per_query", teachers_per_query)
            if k > ensemble.num_teachers:
                raise ValueError(
                    f"teachers_per_query must be at most the number of teachers "
                    f"m={ensemble.num_teachers}, got {k}"
                )
            teachers_per_query = k
        self._ensemble = ensemble
        self._aggregator = aggregator
        self._ledger = ledger
        self._cache_enabled = bool(cache)
        self._teachers_per_query = teachers_per_query
        self._lock = threading.Lock()  # guards everything below (the charge-then-answer state)
        self._cache: dict[bytes, int] = {}
        self._refused = False
        self._charged_votes: list[np.ndarray] = []
        self._charged_answered: list[bool] = []
        self._num_cached = 0
        self._num_refused = 0

    # ----------------------------------------------------------------- the interface

    @property
    def ensemble(self) -> TeacherEnsemble:
        """The teachers behind the interface."""
        return self._ensemble

    @property
    def aggregator(self) -> GNMax | ConfidentGNMax | Aggregator:
        """The noisy aggregator."""
        return self._aggregator

    @property
    def ledger(self) -> Ledger | None:
        """The attached privacy ledger (the claimed guarantee), or None."""
        return self._ledger

    @property
    def cache_enabled(self) -> bool:
        """Whether repeated queries get their first answer at no cost."""
        return self._cache_enabled

    @property
    def teachers_per_query(self) -> int | None:
        """k teachers chosen per query (None: all m)."""
        return self._teachers_per_query

    @property
    def exhausted(self) -> bool:
        """True once a query has been refused: every later uncached query is refused too."""
        with self._lock:
            return self._refused

    @property
    def num_charged(self) -> int:
        """Queries that spent privacy (answered or abstained)."""
        with self._lock:
            return len(self._charged_answered)

    @property
    def num_answered(self) -> int:
        """Charged queries that returned a label."""
        with self._lock:
            return int(sum(self._charged_answered))

    @property
    def num_cached(self) -> int:
        """Queries served from the cache (no cost)."""
        with self._lock:
            return self._num_cached

    @property
    def num_refused(self) -> int:
        """Queries refused for lack of budget (no cost)."""
        with self._lock:
            return self._num_refused

    def _charged(self) -> tuple[IntArray, np.ndarray]:
        """(charged votes, answered flags): one consistent snapshot."""
        with self._lock:
            votes, answered = list(self._charged_votes), list(self._charged_answered)
        if not votes:
            return np.zeros((0, self._ensemble.num_classes), dtype=np.int64), np.zeros(0, bool)
        return np.stack(votes), np.array(answered, dtype=bool)

    @property
    def charged_votes(self) -> IntArray:
        """The vote histograms of the charged queries, in order, shape (num_charged, C)."""
        return self._charged()[0]

    @property
    def charged_answered(self) -> np.ndarray:
        """Whether each charged query was answered (False: Confident GNMax abstained)."""
        return self._charged()[1]

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def votes(self, X: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """The (noiseless) vote histograms the interface aggregates, shape (n, C).

        With ``teachers_per_query=k`` a fresh random k-subset is drawn per query with ``rng``.
        This is the teachers' internal state, not a private output: it spends nothing.
        """
        teachers = self._teachers_per_query
        if teachers is None or teachers == self._ensemble.num_teachers:
            return self._ensemble.votes(X)
        return self._ensemble.votes(X, teachers=teachers, rng=rng)

    def predict(self, X: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Private labels for the queries, in order.

        Thread-safe: concurrent calls release their queries one at a time (cache lookup,
        budget check, ledger charge and bookkeeping under one lock), so the attached ledger is
        never overspent and every charge is recorded, whatever the interleaving.

        Args:
            X: queries, shape (n, d) (or (d,) for one query).
            rng: randomness of the teacher subsets and of the aggregator's noise.

        Returns:
            int64 array (n,): a label in ``0..C-1``, :data:`ABSTAIN` (-1: Confident GNMax did
            not answer; privacy spent) or :data:`REFUSED` (-2: budget exhausted; nothing spent).

        Raises:
            ValueError: wrong feature count, non-finite values.

        Example:
            >>> from dpaudit.systems import ConfidentGNMax, PrivatePredictor, TeacherEnsemble
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=20, rng=0)
            >>> api = PrivatePredictor(ens, ConfidentGNMax(threshold=19, sigma1=1.0, sigma2=2.0))
            >>> api.predict(ds.X_test[:6], rng=0).tolist()
            [-1, -1, 3, 0, -1, -1]
        """
        gen = as_generator(rng)
        Xa = np.asarray(X)
        if Xa.ndim == 1:
            Xa = Xa[None, :]
        votes = self.votes(Xa, rng=gen)
        noise = self._aggregator.draw_noise(votes.shape[0], votes.shape[1], rng=gen)
        proposed = np.asarray(
            self._aggregator.decide(votes.astype(np.float64), noise), dtype=np.int64
        )
        if self._ledger is None and not self._cache_enabled:
            with self._lock:
                self._charged_votes.extend(votes)
                self._charged_answered.extend((proposed != ABSTAIN).tolist())
            return proposed
        keys = [_query_key(row) if self._cache_enabled else b"" for row in Xa]
        with self._lock:  # the charge-then-answer section: one query at a time
            return self._release(votes, proposed, keys)

    def _release(self, votes: np.ndarray, proposed: IntArray, keys: list[bytes]) -> IntArray:
        """Per query in order: cached answer, refusal, or charge and answer (lock held)."""
        out = np.empty(votes.shape[0], dtype=np.int64)
        for i in range(votes.shape[0]):
            key = keys[i]
            if self._cache_enabled and key in self._cache:
                # already released: repeating it is post-processing, free even when exhausted
                out[i] = self._cache[key]
                self._num_cached += 1
                continue
            if self._refused or not self._afford(votes[i]):
                out[i] = REFUSED
                self._num_refused += 1
                continue
            label = int(proposed[i])
            answered = label != ABSTAIN
            if self._ledger is not None:
                try:
                    self._ledger.charge(votes[i], answered=answered)
                except BudgetExhaustedError:
                    self._refused = True
                    out[i] = REFUSED
                    self._num_refused += 1
                    continue
            self._charged_votes.append(votes[i])
            self._charged_answered.append(answered)
            if self._cache_enabled:
                self._cache[key] = label
            out[i] = label
        return out

    def _afford(self, votes: np.ndarray) -> bool:
        if self._ledger is None:
            return True
        if self._ledger.can_afford(votes):
            return True
        self._refused = True
        return False

    # ----------------------------------------------------------------- the claim

    def claimed_rdp(
        self, orders: ArrayLike | None = None, *, analysis: str | None = None
    ) -> RDPCurve:
        """The RDP the system claims for the queries it has charged so far, composed.

        Per charged query (RDP composes by addition at each order, Mironov 2017 Prop. 1):
        GNMax — data-independent λ/σ² (Papernot et al. 2018, arXiv:1802.08908, Prop. 8),
        data-dependent Thm 6 with the union-bound q̃ (Prop. 7); Confident GNMax — the threshold
        step on every query plus the GNMax step at σ2 on answered ones (Alg. 1). Both come from
        :func:`dpaudit.accounting.mechanism_rdp`, which is what
        :class:`dpaudit.accounting.PrivacyLedger` charges, so with the ledger's analysis and
        orders the curve equals ``ledger.rdp``.

        Args:
            orders: Rényi orders λ > 1 (default: the ledger's, else
                :data:`dpaudit.accounting.DEFAULT_ORDERS`).
            analysis: ``"data-dependent"`` or ``"data-independent"`` (default: the ledger's
                analysis, else ``"data-independent"``); computed by
                :func:`dpaudit.accounting.mechanism_rdp` from the aggregator's value.

        Returns:
            :class:`dpaudit.accounting.RDPCurve` (zero before any charged query).

        Raises:
            ValueError: an order ≤ 1, unknown or unsupported analysis.

        Example:
            >>> from dpaudit.systems import GNMax, PrivatePredictor, TeacherEnsemble
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=20, rng=0)
            >>> api = PrivatePredictor(ens, GNMax(sigma=40.0))
            >>> _ = api.predict(ds.X_test[:100], rng=0)
            >>> api.claimed_rdp([2.0, 8.0]).epsilons.round(12).tolist()  # 100·λ/σ²
            [0.125, 0.5]
        """
        from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve, mechanism_rdp

        ledger = self._ledger
        if orders is None:
            orders = getattr(ledger, "orders", None)
            orders = DEFAULT_ORDERS if orders is None else orders
        lam = check_orders(orders)
        if analysis is None:
            analysis = getattr(ledger, "analysis", None) or "data-independent"
        check_choice("analysis", analysis, ("data-dependent", "data-independent"))
        charged, answered = self._charged()
        votes = charged.astype(np.float64)
        if votes.shape[0] == 0:
            return RDPCurve.zeros(lam)
        total = np.zeros(lam.size)
        for mask, flag in ((answered, True), (~answered, False)):
            if mask.any():
                per = mechanism_rdp(
                    self._aggregator, lam, votes=votes[mask], analysis=analysis, answered=flag
                )
                total = total + per.sum(axis=0)
        return RDPCurve(lam, np.asarray(total, dtype=np.float64))

    def __repr__(self) -> str:
        return (
            f"PrivatePredictor({self._aggregator!r}, teachers={self._ensemble.num_teachers}, "
            f"k={self._teachers_per_query}, cache={self._cache_enabled}, "
            f"ledger={type(self._ledger).__name__ if self._ledger is not None else None}, "
            f"charged={self.num_charged}, refused={self.num_refused})"
        )
