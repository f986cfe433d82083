"""Vote-histogram extraction against a private-prediction interface (Wang et al. 2022 §3–§4).

Three pieces, all in one place for users:

* :func:`reconstruct_histogram` — the estimate Ĥ from answer counts (maximum likelihood or
  the paper's L2 objective) with per-class intervals; :func:`reconstruct_histogram_paper`
  — the paper's own procedure, kept as the baseline.
* :func:`extract_histogram` — the live attack: send one query M times to a
  :class:`~dpaudit.systems.PrivatePredictor` (or any object/callable returning labels), stop
  when the interface's ledger refuses (budget-limited mode), and reconstruct from the labelled
  answers. Confident GNMax is modelled as it works: an abstention (:data:`ABSTAIN`) carries no
  label but was charged; its rate enters the likelihood through ``Φ((max H − T)/σ1)``.
* :func:`extraction_privacy_cost` — what the defender's own accountant charges for those M
  queries (data-dependent and data-independent RDP, composed, converted at δ).

:func:`fixed_histogram_interface` builds a real ``PrivatePredictor`` whose teachers always
vote a given histogram — the way Wang et al. 2022 §4.1 simulates PATE from released histograms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    MAX_COUNT,
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_flag,
    check_memory,
    check_nonneg_int,
    check_orders,
    check_positive_int,
    check_real,
    check_rng,
    check_scale,
    check_votes,
)
from dpaudit.attacks._paper import (
    PaperReconstruction,
    reconstruct_histogram_paper,
    trapezoid_argmax_probabilities,
)
from dpaudit.attacks._reconstruct import (
    INTERVAL_METHODS,
    OBJECTIVES,
    HistogramReconstruction,
    normalised_l1_error,
    project_to_simplex,
    reconstruct_histogram,
)

__all__ = [
    "ExtractionCost",
    "HistogramReconstruction",
    "PaperReconstruction",
    "VoteExtraction",
    "extract_histogram",
    "extraction_privacy_cost",
    "fixed_histogram_interface",
    "normalised_l1_error",
    "project_to_simplex",
    "reconstruct_histogram",
    "reconstruct_histogram_paper",
    "trapezoid_argmax_probabilities",
]

_ABSTAIN = -1
_REFUSED = -2


# --------------------------------------------------------------------------- simulation


def fixed_histogram_interface(
    votes: ArrayLike,
    aggregator: Any,
    *,
    ledger: Any = None,
    cache: bool = False,
) -> Any:
    """A real :class:`~dpaudit.systems.PrivatePredictor` whose teachers vote ``votes``.

    Teacher j is trained on a one-row part labelled with its class, so it always predicts that
    class (a single-class part gives a constant teacher): the ensemble's histogram is ``votes``
    for every query. Paper 003 §4.1 evaluates its attack this way, on histograms released by
    Papernot et al. 2018. Queries are 1-feature rows; send ``[[0.0]]`` repeated.

    Args:
        votes: the integer histogram H (C,), C ≥ 2, Σ H ≥ 1.
        aggregator: :class:`~dpaudit.systems.GNMax` or :class:`~dpaudit.systems.ConfidentGNMax`.
        ledger: optional :class:`~dpaudit.accounting.PrivacyLedger` (budget enforcement).
        cache: answer caching (the mitigation of Wang et al. 2022 §5).

    Returns:
        The ``PrivatePredictor``.

    Raises:
        ValueError: votes not a non-negative integer histogram with C ≥ 2 and Σ ≥ 1, or
            more teachers than the memory cap allows.
        TypeError: non-numeric votes, a non-bool ``cache``.

    Example:
        >>> from dpaudit.systems import GNMax
        >>> api = fixed_histogram_interface([3, 5, 0], GNMax(sigma=1e-6))
        >>> api.predict(np.zeros((2, 1)), rng=0).tolist()
        [1, 1]
    """
    from dpaudit.systems import PrivatePredictor, TeacherEnsemble

    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 1 or not np.all(h == np.round(h)) or h.sum() < 1:
        raise ValueError(f"votes must be a 1-d integer histogram with sum >= 1, got {votes!r}")
    # One fitted one-row teacher per vote (~2 KB each): refuse ensembles beyond the cap.
    check_memory(2048.0 * float(h.sum()), f"fixed_histogram_interface with {h.sum():g} votes")
    check_flag("cache", cache)
    counts = h.astype(np.int64)
    labels = np.repeat(np.arange(counts.size), counts)
    parts = [np.array([j]) for j in range(labels.size)]
    ensemble = TeacherEnsemble.fit(
        np.zeros((labels.size, 1)), labels, partition=parts, num_classes=counts.size
    )
    return PrivatePredictor(ensemble, aggregator, ledger=ledger, cache=cache)


# --------------------------------------------------------------------------- live attack


@dataclasses.dataclass(frozen=True, eq=False)
class VoteExtraction(ResultMixin):
    """Outcome of the live extraction attack.

    Attributes:
        reconstruction: the estimate from the labelled answers (None if none was labelled).
        counts: labelled answers per class.
        num_sent: queries sent.
        num_answered: labelled answers (Σ counts).
        num_abstained: Confident-GNMax abstentions (charged, no label).
        num_refused: queries refused by the ledger (not charged).
        stopped: ``"completed"`` (all ``num_queries`` sent), ``"refused"`` (the interface's
            ledger refused: budget-limited stop) or ``"max-queries"`` (safety cap reached).
        budget_limited: the attack ran until refusal (``num_queries=None``).
        sigma, num_teachers, num_classes, threshold, sigma1: the public parameters used.
        interface_epsilon: ε(δ) the interface's ledger reports after the attack (None if it
            has no ledger).
        seed: entropy of ``rng`` when it was an int.
        method: what was done.
        selection: nothing chosen on the data.
    """

    reconstruction: HistogramReconstruction | None
    counts: IntArray
    num_sent: int
    num_answered: int
    num_abstained: int
    num_refused: int
    stopped: str
    budget_limited: bool
    sigma: float
    num_teachers: int
    num_classes: int
    threshold: float | None
    sigma1: float | None
    interface_epsilon: float | None
    seed: int | None
    method: str = (
        "repeated query, reconstruction by Wang et al. 2022 §3 "
        "(dpaudit.attacks.reconstruct_histogram)"
    )
    selection: str = "none"

    @property
    def votes(self) -> FloatArray | None:
        """The estimated histogram Ĥ (None when no answer was labelled)."""
        return None if self.reconstruction is None else self.reconstruction.votes


def _interface_defaults(interface: Any) -> dict[str, Any]:
    """Public parameters a PrivatePredictor exposes (aggregator σ, T, σ1; ensemble N, C)."""
    out: dict[str, Any] = {}
    agg = getattr(interface, "aggregator", None)
    if agg is not None:
        out["sigma"] = getattr(agg, "sigma", None)
        if hasattr(agg, "threshold") and hasattr(agg, "sigma1"):
            out["threshold"] = agg.threshold
            out["sigma1"] = agg.sigma1
    ens = getattr(interface, "ensemble", None)
    if ens is not None:
        k = getattr(interface, "teachers_per_query", None)
        out["num_teachers"] = k if k is not None else getattr(ens, "num_teachers", None)
        out["num_classes"] = getattr(ens, "num_classes", None)
    return out


def _predict_fn(interface: Any) -> Callable[..., Any]:
    if hasattr(interface, "predict") and callable(interface.predict):
        return interface.predict
    if callable(interface):
        return interface
    raise TypeError(
        "interface must have predict(X, *, rng) or be a callable f(X, *, rng) returning labels, "
        f"got {type(interface).__name__}"
    )


def extract_histogram(
    interface: Any,
    query: ArrayLike,
    *,
    num_queries: int | None,
    sigma: float | None = None,
    num_teachers: int | None = None,
    num_classes: int | None = None,
    threshold: float | None = None,
    sigma1: float | None = None,
    batch_size: int = 1024,
    max_queries: int = 10**6,
    objective: str = "mle",
    intervals: str = "profile",
    confidence_level: float = 0.95,
    round_to_integers: bool = False,
    rng: RngLike = None,
) -> VoteExtraction:
    """Send one query repeatedly to a private interface and reconstruct its vote histogram.

    Paper 003 Alg. 2 against a live interface. Labels ``0..C−1`` are counted; ``ABSTAIN`` (−1,
    Confident GNMax declined: charged, no label) is counted as an abstention; ``REFUSED`` (−2,
    the ledger's budget is exhausted) ends the attack, as every later query would be refused.

    Args:
        interface: a :class:`~dpaudit.systems.PrivatePredictor`, any object with
            ``predict(X, *, rng)``, or a callable ``f(X, *, rng)`` returning int labels.
        query: the query, one feature row (d,) (sent as ``(b, d)`` batches of copies).
        num_queries: queries to send (M), or None for the budget-limited mode: keep querying
            until the interface refuses (at most ``max_queries``).
        sigma: the public answer-noise σ (GNMax σ / Confident-GNMax σ2); default: read from
            ``interface.aggregator``.
        num_teachers: N; default: the interface's ensemble (or its teachers per query).
        num_classes: C; default: the interface's ensemble.
        threshold: Confident-GNMax T; default: read from a Confident-GNMax aggregator.
        sigma1: Confident-GNMax σ1 (with ``threshold``).
        batch_size: queries per ``predict`` call.
        max_queries: safety cap on the queries sent, in either mode (``num_queries`` above
            it is refused before any query is sent).
        objective, intervals, confidence_level, round_to_integers: passed to
            :func:`reconstruct_histogram`.
        rng: randomness handed to the interface (its noise).

    Returns:
        :class:`VoteExtraction`.

    Raises:
        ValueError: missing public parameters, bad sizes, ``num_queries > max_queries``, a
            label outside ``−2..C−1``.
        TypeError: ``interface`` is neither callable nor has ``predict``.

    Example:
        >>> from dpaudit.systems import GNMax
        >>> api = fixed_histogram_interface([30, 200, 20], GNMax(sigma=40))
        >>> res = extract_histogram(api, [0.0], num_queries=20_000, intervals="none", rng=0)
        >>> res.num_answered, int(np.argmax(res.votes))
        (20000, 1)
    """
    predict = _predict_fn(interface)
    public = _public_parameters(interface, sigma, num_teachers, num_classes, threshold, sigma1)
    budget_limited = num_queries is None
    cap = check_positive_int("max_queries", max_queries)
    target = cap if budget_limited else check_positive_int("num_queries", num_queries)
    if target > cap:  # one predict call per batch: the work is linear in the queries
        raise ValueError(
            f"num_queries={target} is above the safety cap max_queries={cap} (pass a larger "
            "max_queries to send more)"
        )
    b = check_positive_int("batch_size", batch_size)
    check_choice("objective", objective, OBJECTIVES)
    check_choice("intervals", intervals, INTERVAL_METHODS)
    check_confidence_level(confidence_level)
    check_flag("round_to_integers", round_to_integers)
    row = _check_query(query)
    check_rng(rng)
    gen = as_generator(rng)
    sent = _send_queries(predict, row, target, b, public.num_classes, gen)
    if sent.stopped == "completed" and budget_limited:
        sent = dataclasses.replace(sent, stopped="max-queries")
    answered = int(sent.counts.sum())
    recon = None
    if answered > 0:
        recon = reconstruct_histogram(
            sent.counts,
            public.sigma,
            public.num_teachers,
            objective=objective,
            intervals=intervals,
            confidence_level=confidence_level,
            round_to_integers=round_to_integers,
            # without the threshold model abstentions carry no information (and are refused)
            abstentions=sent.abstained if public.threshold is not None else 0,
            threshold=public.threshold,
            sigma1=public.sigma1,
            rng=gen,
        )
    return VoteExtraction(
        reconstruction=recon,
        counts=sent.counts,
        num_sent=sent.sent,
        num_answered=answered,
        num_abstained=sent.abstained,
        num_refused=sent.refused,
        stopped=sent.stopped,
        budget_limited=budget_limited,
        sigma=public.sigma,
        num_teachers=public.num_teachers,
        num_classes=public.num_classes,
        threshold=public.threshold,
        sigma1=public.sigma1,
        interface_epsilon=_interface_epsilon(interface),
        seed=seed_entropy(rng),
    )


@dataclasses.dataclass(frozen=True)
class _Public:
    """The public parameters of the attacked mechanism, checked."""

    sigma: float
    num_teachers: int
    num_classes: int
    threshold: float | None
    sigma1: float | None


def _public_parameters(
    interface: Any,
    sigma: float | None,
    num_teachers: int | None,
    num_classes: int | None,
    threshold: float | None,
    sigma1: float | None,
) -> _Public:
    """The arguments given, else what the interface exposes; every one checked."""
    defaults = _interface_defaults(interface)
    sigma = sigma if sigma is not None else defaults.get("sigma")
    num_teachers = num_teachers if num_teachers is not None else defaults.get("num_teachers")
    num_classes = num_classes if num_classes is not None else defaults.get("num_classes")
    if threshold is None and sigma1 is None:
        threshold, sigma1 = defaults.get("threshold"), defaults.get("sigma1")
    for name, value in (
        ("sigma", sigma),
        ("num_teachers", num_teachers),
        ("num_classes", num_classes),
    ):
        if value is None:
            raise ValueError(f"{name} must be given (the interface does not expose it)")
    s = check_scale("sigma", sigma)
    n_teachers = check_positive_int("num_teachers", num_teachers, maximum=MAX_COUNT)
    c = check_positive_int("num_classes", num_classes)
    if c < 2:
        raise ValueError(f"num_classes must be at least 2, got {c}")
    check_memory(8.0 * c * c, f"extract_histogram with num_classes={c}")
    t, s1 = check_threshold_pair(threshold, sigma1)
    return _Public(s, n_teachers, c, t, s1)


def check_threshold_pair(threshold: object, sigma1: object) -> tuple[float | None, float | None]:
    """Confident GNMax's ``(threshold, sigma1)``: both checked, and given together or not at all.

    Raises:
        TypeError: a non-numeric value.
        ValueError: a bad value, or only one of the two.
    """
    t = check_real("threshold", threshold) if threshold is not None else None
    s1 = check_scale("sigma1", sigma1) if sigma1 is not None else None
    if (t is None) != (s1 is None):
        raise ValueError(
            f"threshold and sigma1 must be given together, got threshold={threshold!r}, "
            f"sigma1={sigma1!r}"
        )
    return t, s1


def _check_query(query: ArrayLike) -> np.ndarray:
    row = np.atleast_1d(check_array("query", query, ndim_min=0))
    if row.ndim != 1:
        raise ValueError(f"query must be one feature row (d,), got shape {row.shape}")
    return row


@dataclasses.dataclass(frozen=True)
class _Sent:
    """What the query loop saw."""

    counts: IntArray
    sent: int
    abstained: int
    refused: int
    stopped: str


def _send_queries(
    predict: Callable[..., Any],
    row: np.ndarray,
    target: int,
    batch_size: int,
    num_classes: int,
    gen: np.random.Generator,
) -> _Sent:
    """Send ``row`` up to ``target`` times in batches; stop at the first refusal."""
    c = num_classes
    counts = np.zeros(c, dtype=np.int64)
    sent = abstained = refused = 0
    stopped = "completed"
    while sent < target:
        size = min(batch_size, target - sent)
        labels = _checked_labels(predict(np.repeat(row[None, :], size, axis=0), rng=gen), size, c)
        hit = np.flatnonzero(labels == _REFUSED)
        used = labels if hit.size == 0 else labels[: hit[0]]
        counts += np.bincount(used[used >= 0], minlength=c)
        abstained += int(np.count_nonzero(used == _ABSTAIN))
        sent += used.size
        if hit.size:
            refused = size - used.size
            stopped = "refused"
            break
    return _Sent(counts, sent, abstained, refused, stopped)


def _checked_labels(raw: Any, size: int, c: int) -> np.ndarray:
    labels = np.asarray(raw)
    if labels.shape != (size,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"interface must return {size} integer labels, got array of shape "
            f"{labels.shape} and dtype {labels.dtype}"
        )
    if labels.size and (labels.min() < _REFUSED or labels.max() >= c):
        raise ValueError(
            f"interface returned a label outside -2..{c - 1} (num_classes={c}): "
            f"min {labels.min()}, max {labels.max()}"
        )
    return labels


def _interface_epsilon(interface: Any) -> float | None:
    ledger = getattr(interface, "ledger", None)
    return float(ledger.epsilon()) if ledger is not None and hasattr(ledger, "epsilon") else None


# --------------------------------------------------------------------------- accounting


@dataclasses.dataclass(frozen=True, eq=False)
class ExtractionCost(ResultMixin):
    """The defender's privacy cost of the attacker's queries (Wang et al. 2022 §4.1 "privacy cost").

    Attributes:
        epsilon_data_dependent: ε(δ) under the data-dependent analysis (Papernot et al. 2018
            Thm 6 per query, RDP composed over the queries).
        epsilon_data_independent: ε(δ) under the data-independent analysis (Prop. 8).
        order_data_dependent, order_data_independent: the Rényi orders attaining them.
        data_dependent_fallback: at the optimal order, a validity condition of Thm 6 failed
            and the data-dependent analysis fell back to the data-independent bound.
        delta: δ.
        conversion: ``"balle2020"`` or ``"standard"`` RDP→(ε, δ).
        accounting: ``"realised"`` (Σ ρ1 + answered·ρ2) or ``"expected"`` (Σ ρ1 + p·ρ2, as the
            paper's scripts plan budgets).
        mechanism: ``"gnmax"`` or ``"confident-gnmax"``.
        num_queries: queries charged (M).
        num_answered: answered queries (M for GNMax).
        answer_probability: Pr[answered] per query (1 for GNMax).
        votes, sigma, threshold, sigma1, q: the inputs.
        method: sources.
    """

    epsilon_data_dependent: float
    epsilon_data_independent: float
    order_data_dependent: float
    order_data_independent: float
    data_dependent_fallback: bool
    delta: float
    conversion: str
    accounting: str
    mechanism: str
    num_queries: int
    num_answered: int
    answer_probability: float
    votes: FloatArray
    sigma: float
    threshold: float | None
    sigma1: float | None
    q: str
    method: str = (
        "per-query RDP of GNMax / Confident GNMax (Papernot et al. 2018 Prop. 8, Thm 6, "
        "Alg. 1), composed by addition, converted to (eps, delta) (Balle et al. 2020 Thm 20)"
    )


def extraction_privacy_cost(
    votes: ArrayLike,
    *,
    sigma: float,
    num_queries: int,
    num_answered: int | None = None,
    threshold: float | None = None,
    sigma1: float | None = None,
    delta: float = 1e-5,
    conversion: str = "balle2020",
    accounting: str = "realised",
    orders: ArrayLike | None = None,
    q: str = "union",
) -> ExtractionCost:
    """ε the defender's accountant charges for M repetitions of one query.

    GNMax: ``M·ρ(λ)`` with ρ data-dependent (Thm 6, q̃ from ``q``) or ``λ/σ²``. Confident GNMax:
    realised ``M·ρ1 + A·ρ2`` (A answered) or expected ``M·(ρ1 + p·ρ2)``; data-independent
    ``ρ1 = λ/(2σ1²)``, ``ρ2 = λ/σ2²`` (Papernot et al. 2018, arXiv:1802.08908, §4.2). RDP
    composes by addition at each order (Mironov 2017 Prop. 1); conversion by Balle et al. 2020
    (arXiv:1905.09982) Thm 20 or Mironov 2017 Prop. 3.

    Args:
        votes: the true histogram H (C,) (the defender knows it).
        sigma: GNMax σ (σ2 for Confident GNMax).
        num_queries: M, queries charged.
        num_answered: answered queries (Confident GNMax, realised accounting; default: M·p
            rounded, the expectation).
        threshold: Confident-GNMax T (with ``sigma1``), or None for GNMax.
        sigma1: Confident-GNMax σ1.
        delta: δ ∈ (0, 1).
        conversion: ``"balle2020"`` (default) or ``"standard"``.
        accounting: ``"realised"`` (default) or ``"expected"``.
        orders: Rényi orders (default :data:`dpaudit.accounting.DEFAULT_ORDERS`).
        q: ``"union"`` (PATE's accountant, default) or ``"exact"`` q̃.

    Returns:
        :class:`ExtractionCost`.

    Raises:
        ValueError: bad votes, σ, M, δ, choices; ``num_answered`` > M; only one of
            ``threshold``/``sigma1``; ``num_answered`` for GNMax other than M.

    Example:
        >>> c = extraction_privacy_cost([4, 7, 6, 8, 4, 2, 0, 214, 4, 1], sigma=40,
        ...                             num_queries=10_000)
        >>> c.epsilon_data_dependent < c.epsilon_data_independent
        True
    """
    from dpaudit.accounting import DEFAULT_ORDERS, rdp_to_dp

    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 1:
        raise ValueError(f"votes must be one histogram (1-d), got shape {h.shape}")
    s = check_scale("sigma", sigma)
    m = check_nonneg_int("num_queries", num_queries)
    d = check_delta(delta, allow_zero=False)
    check_choice("conversion", conversion, ("balle2020", "standard"))
    check_choice("accounting", accounting, ("realised", "expected"))
    check_choice("q", q, ("union", "exact"))
    lam = check_orders(DEFAULT_ORDERS if orders is None else orders)
    t, s1 = check_threshold_pair(threshold, sigma1)
    if num_answered is not None:
        check_nonneg_int("num_answered", num_answered)
    if t is None or s1 is None:
        charges = _gnmax_charges(h, s, m, num_answered, lam, q)
    else:
        charges = _confident_charges(h, s, t, s1, m, num_answered, lam, q, accounting)
    rdp_dd, rdp_di, fallback_mask = charges.rdp_dd, charges.rdp_di, charges.fallback
    mechanism, answered, p = charges.mechanism, charges.answered, charges.answer_probability
    conv_dd = rdp_to_dp(lam, rdp_dd, d, conversion=conversion)
    conv_di = rdp_to_dp(lam, rdp_di, d, conversion=conversion)
    at = np.flatnonzero(lam == conv_dd.order)
    fallback = bool(fallback_mask.reshape(-1)[at[0]]) if at.size else False
    return ExtractionCost(
        epsilon_data_dependent=float(conv_dd.epsilon),
        epsilon_data_independent=float(conv_di.epsilon),
        order_data_dependent=float(conv_dd.order),
        order_data_independent=float(conv_di.order),
        data_dependent_fallback=fallback,
        delta=d,
        conversion=conversion,
        accounting=accounting,
        mechanism=mechanism,
        num_queries=m,
        num_answered=answered,
        answer_probability=p,
        votes=h,
        sigma=s,
        threshold=t,
        sigma1=s1,
        q=q,
    )


@dataclasses.dataclass(frozen=True)
class _Charges:
    """Composed RDP of the M queries under both analyses, before conversion."""

    rdp_dd: np.ndarray
    rdp_di: np.ndarray
    fallback: np.ndarray
    mechanism: str
    answered: int
    answer_probability: float


def _gnmax_charges(
    h: np.ndarray, s: float, m: int, num_answered: int | None, lam: np.ndarray, q: str
) -> _Charges:
    """GNMax: every query answered, ``M·ρ(λ)`` (Thm 6 with fallback) and ``M·λ/σ²``."""
    from dpaudit.accounting import gnmax_rdp_details

    if num_answered is not None and int(num_answered) != m:
        raise ValueError(
            f"num_answered must equal num_queries={m} for GNMax (every query is answered), "
            f"got {num_answered}"
        )
    det = gnmax_rdp_details(h, s, lam, analysis="data-dependent", q=q)
    return _Charges(m * det.rdp, m * lam / s**2, np.asarray(det.fallback), "gnmax", m, 1.0)


def _confident_charges(
    h: np.ndarray,
    s: float,
    t: float,
    s1: float,
    m: int,
    num_answered: int | None,
    lam: np.ndarray,
    q: str,
    accounting: str,
) -> _Charges:
    """Confident GNMax: realised ``M·ρ1 + A·ρ2`` or expected ``M·(ρ1 + p·ρ2)``."""
    from dpaudit.accounting import confident_gnmax_cost

    dd = confident_gnmax_cost(h, threshold=t, sigma1=s1, sigma2=s, orders=lam, q=q)
    di = confident_gnmax_cost(
        h, threshold=t, sigma1=s1, sigma2=s, orders=lam, analysis="data-independent", q=q
    )
    p = float(dd.answer_probability)
    if num_answered is None:
        answered = round(m * p)
    else:
        answered = int(num_answered)
        if answered > m:
            raise ValueError(f"num_answered must be at most num_queries={m}, got {answered}")
    if accounting == "realised":
        rdp_dd = m * dd.threshold_rdp + answered * dd.argmax_rdp
        rdp_di = m * di.threshold_rdp + answered * di.argmax_rdp
    else:
        rdp_dd = m * dd.expected_rdp
        rdp_di = m * di.expected_rdp
    fallback = np.asarray(dd.threshold_fallback) | (np.asarray(dd.argmax_fallback) & (answered > 0))
    return _Charges(rdp_dd, rdp_di, fallback, "confident-gnmax", answered, p)
