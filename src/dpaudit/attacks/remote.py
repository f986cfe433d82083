"""A deployed private-prediction service as an attack target, over HTTP.

:func:`remote_interface` returns a :class:`RemoteInterface`: the same callable shape as an
in-process :class:`dpaudit.systems.PrivatePredictor` (``predict(X, *, rng)`` → int labels,
``−1`` abstained, ``−2`` refused), plus the public parameters the service publishes
(``aggregator``, ``ensemble.num_teachers`` / ``num_classes``) and its budget as the
attacker's key sees it (``ledger.epsilon()``). Every attack that takes an interface —
:func:`dpaudit.attacks.extract_histogram` (Wang et al. 2022, "In Differential Privacy, There
is Truth: On Vote Leakage in Ensemble Private Learning", arXiv:2209.10732, Alg. 2) in
particular — runs against a URL unchanged. It speaks the protocol of :mod:`dpaudit.serve`
(``POST /v1/predict``, ``GET /v1/budget``, ``GET /v1/info``) with httpx.

The service draws the noise; ``rng`` is accepted for the interface shape and ignored. The
service answers a request whole or refuses it whole (HTTP 429, nothing charged); to behave
like the in-process interface, which refuses from the first query that does not fit, a
refused batch is split in halves until the longest prefix that fits is answered (at most
``log2(batch)`` extra requests) and the rest is reported :data:`REFUSED`.

:func:`audit_remote_extraction` runs the extraction against a URL and reports what it cost
the service's ledger (the attacker's ε before and after). :func:`craft_remote` and
:func:`distinguish_remote` run the private-prediction adversaries of Chadha et al. 2024
(arXiv:2402.09403, §4.1) against two deployments, S and S′ = S ∪ {crafted point}: a
black-box RDP lower bound on one answer next to the published mechanism's claim.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    Curve,
    LowerBound,
    ResultMixin,
    SelectionRecord,
    package_versions,
)
from dpaudit._typing import ArrayLike, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_flag,
    check_memory,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
    check_rng,
)
from dpaudit.errors import DPAuditError, require

__all__ = [
    "API_KEY_ENV",
    "RemoteBudget",
    "RemoteInfo",
    "RemoteInterface",
    "RemoteInterfaceError",
    "audit_remote_extraction",
    "craft_remote",
    "distinguish_remote",
    "remote_interface",
]

_ABSTAIN = -1
_REFUSED = -2
#: Environment variable read for the API key when none is passed.
API_KEY_ENV = "DPAUDIT_API_KEY"


class RemoteInterfaceError(DPAuditError):
    """The service refused a request for a reason other than the budget, or failed.

    Attributes:
        status: the HTTP status (0: no response).
        code: the service's error code (``"invalid_api_key"``, …).
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = int(status)
        self.code = code
        super().__init__(message)


@dataclasses.dataclass(frozen=True)
class RemoteInfo(ResultMixin):
    """The public parameters a service publishes at ``GET /v1/info``.

    Attributes:
        name, system: the service and the system it serves.
        mechanism: ``"gnmax"`` or ``"confident-gnmax"``.
        sigma: GNMax σ (σ2 of Confident GNMax).
        threshold, sigma1: Confident-GNMax T and σ1 (None for GNMax).
        num_teachers: teachers voting per query.
        num_classes: C.
        num_features: d.
        max_batch: most queries per request.
        cache: whether repeated queries get their first answer (Wang et al. 2022 §5).
        delta, analysis, conversion: how the service accounts.
        global_epsilon_budget: the service's ε budget.
        durable: whether its ledger is on disk.
    """

    name: str
    system: str
    mechanism: str
    sigma: float
    threshold: float | None
    sigma1: float | None
    num_teachers: int
    num_classes: int
    num_features: int
    max_batch: int
    cache: bool
    delta: float
    analysis: str
    conversion: str
    global_epsilon_budget: float
    durable: bool

    @property
    def aggregator(self) -> Any:
        """The mechanism value (:class:`~dpaudit.mechanisms.GNMax` or Confident GNMax)."""
        from dpaudit.mechanisms.values import ConfidentGNMax, GNMax

        if self.mechanism == "confident-gnmax":
            return ConfidentGNMax(self.threshold, self.sigma1, self.sigma)
        return GNMax(self.sigma)

    @property
    def ensemble(self) -> RemoteInfo:
        """Itself: ``num_teachers`` and ``num_classes`` where an in-process interface keeps
        them (``interface.ensemble``), so attacks read both kinds alike."""
        return self


@dataclasses.dataclass(frozen=True)
class RemoteBudget(ResultMixin):
    """The budget of the attacker's key, and the service's, at ``GET /v1/budget``."""

    client: str
    epsilon_spent: float
    epsilon_budget: float
    epsilon_remaining: float
    num_queries: int
    num_answered: int
    num_cached: int
    num_requests: int
    global_epsilon_spent: float
    global_epsilon_budget: float
    delta: float
    analysis: str
    conversion: str


class _RemoteLedger:
    """``interface.ledger`` of a remote interface: the key's ε as the service reports it."""

    def __init__(self, interface: RemoteInterface) -> None:
        self._interface = interface

    def epsilon(self) -> float:
        """ε(δ) the service has charged the attacker's key."""
        return self._interface.budget().epsilon_spent


def _error_of(response: Any) -> RemoteInterfaceError:
    try:
        body = response.json()
        code, message = str(body.get("error", "")), str(body.get("message", body))
    except ValueError:
        code, message = "", response.text[:200]
    return RemoteInterfaceError(
        response.status_code, code, f"the service answered HTTP {response.status_code}: {message}"
    )


class RemoteInterface:
    """A :mod:`dpaudit.serve` service as a private-prediction interface (module notes).

    Args:
        url: the service's base URL (``http://127.0.0.1:8000``).
        api_key: the attacker's key (default: the ``DPAUDIT_API_KEY`` environment variable).
        timeout: seconds per request.
        split_refused: on a refused batch, answer its longest prefix that fits.
        transport: an httpx transport (tests: ``httpx.ASGITransport(app)``).

    Raises:
        ValueError: no API key, or a URL that is not http(s).
        MissingDependencyError: httpx is not installed (extra ``serve``).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        split_refused: bool = True,
        transport: Any = None,
    ) -> None:
        httpx = require("httpx", "serve")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL, got {url!r}")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key:
            raise ValueError(f"api_key must be given (or set {API_KEY_ENV})")
        check_positive("timeout", timeout)
        split = check_flag("split_refused", split_refused)
        self._url = url.rstrip("/")
        self._client = httpx.Client(
            base_url=self._url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            transport=transport,
        )
        self._split = split
        self._info: RemoteInfo | None = None
        self.num_requests = 0
        self.num_refused_requests = 0

    def __repr__(self) -> str:  # never shows the key
        return f"RemoteInterface({self._url!r})"

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self._url

    def _get(self, path: str) -> dict[str, Any]:
        r = self._client.get(path)
        if r.status_code != 200:
            raise _error_of(r)
        return r.json()

    @property
    def info(self) -> RemoteInfo:
        """The service's public parameters (fetched once)."""
        if self._info is None:
            data = self._get("/v1/info")
            names = {f.name for f in dataclasses.fields(RemoteInfo)}
            self._info = RemoteInfo(**{k: v for k, v in data.items() if k in names})
        return self._info

    @property
    def aggregator(self) -> Any:
        """The service's mechanism value (public parameters)."""
        return self.info.aggregator

    @property
    def ensemble(self) -> RemoteInfo:
        """``num_teachers`` (voting per query) and ``num_classes``."""
        return self.info

    @property
    def teachers_per_query(self) -> None:
        """None: ``ensemble.num_teachers`` is already the count voting per query."""
        return None

    @property
    def ledger(self) -> _RemoteLedger:
        """The attacker's account (``ledger.epsilon()``)."""
        return _RemoteLedger(self)

    def budget(self) -> RemoteBudget:
        """The attacker's budget and the service's (``GET /v1/budget``)."""
        data = self._get("/v1/budget")
        names = {f.name for f in dataclasses.fields(RemoteBudget)}
        return RemoteBudget(**{k: v for k, v in data.items() if k in names})

    def _post(self, rows: np.ndarray) -> IntArray | None:
        """Labels of one request, or None when the budget refused it."""
        self.num_requests += 1
        r = self._client.post("/v1/predict", json={"queries": rows.tolist()})
        if r.status_code == 429:
            self.num_refused_requests += 1
            return None
        if r.status_code != 200:
            raise _error_of(r)
        labels = np.asarray(r.json()["labels"], dtype=np.int64)
        if labels.shape != (rows.shape[0],):
            raise RemoteInterfaceError(200, "bad_response", "the service returned a wrong count")
        return labels

    def _prefix(self, rows: np.ndarray) -> IntArray:
        """Answer the longest prefix of ``rows`` the budget allows; REFUSED after it."""
        labels = self._post(rows)
        if labels is not None:
            return labels
        n = rows.shape[0]
        if not self._split or n == 1:
            return np.full(n, _REFUSED, dtype=np.int64)
        half = n // 2
        first = self._prefix(rows[:half])
        if np.any(first == _REFUSED):
            return np.concatenate([first, np.full(n - half, _REFUSED, dtype=np.int64)])
        return np.concatenate([first, self._prefix(rows[half:])])

    def predict(self, X: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Labels for the queries, in order (``rng`` is ignored: the service draws the noise).

        Batches above the service's ``max_batch`` are sent as several requests; once a query
        is refused, the later queries of this call are reported refused without being sent.

        Returns:
            int64 ``(n,)``: a label, −1 (abstained, charged) or −2 (refused, not charged).

        Raises:
            RemoteInterfaceError: the service rejected the request (bad key, bad queries) or
                failed.
        """
        del rng
        Xa = check_array("X", X, ndim_min=1)
        if Xa.ndim == 1:
            Xa = Xa[None, :]
        out = np.full(Xa.shape[0], _REFUSED, dtype=np.int64)
        step = self.info.max_batch
        for lo in range(0, Xa.shape[0], step):
            part = self._prefix(Xa[lo : lo + step])
            out[lo : lo + part.size] = part
            if np.any(part == _REFUSED):
                break
        return out

    __call__ = predict

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> RemoteInterface:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remote_interface(url: str, api_key: str | None = None, **kwargs: Any) -> RemoteInterface:
    """A deployed :mod:`dpaudit.serve` service as an interface (see :class:`RemoteInterface`).

    Example:
        >>> api = remote_interface("http://127.0.0.1:8000", "dpa_...")  # doctest: +SKIP
        >>> extract_histogram(api, query, num_queries=1000)  # doctest: +SKIP
    """
    return RemoteInterface(url, api_key, **kwargs)


def _extraction_entry(
    interface: RemoteInterface,
    before: RemoteBudget,
    after: RemoteBudget,
    extraction: Any,
    confidence_level: float,
) -> AuditEntry:
    """The entry of a remote extraction: no ε lower bound; the claim is the key's ε after."""
    info = interface.info
    consumed = Claim(
        analysis=f"service ledger ({after.analysis})",
        source=(
            f"the ledger of {info.name} at {interface.url}: ε(δ) of everything charged to the "
            f"key after the attack (ε = {before.epsilon_spent:.6g} before it; RDP composes, ε "
            "does not add)"
        ),
        epsilon=after.epsilon_spent,
        delta=after.delta,
        conversion=after.conversion,
    )
    return AuditEntry(
        system=info.system,
        adversary="vote-extraction",
        lower_bound=LowerBound(
            method="repeated-query vote extraction (Wang et al. 2022, arXiv:2209.10732, Alg. 2)",
            confidence_level=confidence_level,
            note="histogram extraction is not a privacy-loss bound: no ε lower bound",
        ),
        claims=(consumed,),
        selections=(SelectionRecord("query", "explicit", "the query was given by the user"),),
        detail=extraction,
    )


def _check_interface(name: str, value: object) -> RemoteInterface:
    if not isinstance(value, RemoteInterface):
        raise TypeError(
            f"{name} must be a RemoteInterface (remote_interface(url)), got {value!r:.80}"
        )
    return value


def _check_row(query: ArrayLike) -> np.ndarray:
    row = np.atleast_1d(check_array("query", query, ndim_min=0))
    if row.ndim != 1:
        raise ValueError(f"query must be one feature row (d,), got shape {row.shape}")
    return row


def _check_batch(batch_size: int, row: np.ndarray) -> int:
    """A batch size whose request body (``batch_size`` copies of the row) fits the memory cap."""
    batch = check_positive_int("batch_size", batch_size)
    check_memory(8.0 * batch * row.size, f"a batch of batch_size={batch} rows of {row.size}")
    return batch


def audit_remote_extraction(
    interface: RemoteInterface,
    query: ArrayLike,
    *,
    num_queries: int | None,
    batch_size: int = 256,
    max_queries: int = 10**6,
    objective: str = "mle",
    intervals: str = "profile",
    confidence_level: float = 0.95,
    rng: RngLike = None,
) -> AuditResult:
    """Extract a live service's vote histogram and report what it cost its ledger.

    Runs :func:`dpaudit.attacks.extract_histogram` (Wang et al. 2022, arXiv:2209.10732,
    Alg. 2) against ``interface`` — ``num_queries`` repetitions of ``query``, or until the
    service refuses (``num_queries=None``) — and reads the attacker's budget before and after.

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"vote-extraction-remote"``): one entry whose
        claim is the ε the service's ledger reports for the attacker's key after the attack
        (the service's own accounting; histogram extraction is not a privacy-loss lower bound, so
        the lower bound carries no ε), ``detail`` the
        :class:`~dpaudit.attacks.VoteExtraction` and ``settings`` the service's public
        parameters and the attack's.

    Raises:
        RemoteInterfaceError: the service rejected the key or the query.
        ValueError: bad attack arguments.
    """
    from dpaudit._rng import seed_entropy
    from dpaudit.attacks.extraction import INTERVAL_METHODS, OBJECTIVES, extract_histogram

    # every argument is checked before the service is contacted
    _check_interface("interface", interface)
    row = _check_row(query)
    check_positive_int("max_queries", max_queries)
    if num_queries is not None:
        check_positive_int("num_queries", num_queries)
    _check_batch(batch_size, row)
    check_choice("objective", objective, OBJECTIVES)
    check_choice("intervals", intervals, INTERVAL_METHODS)
    check_confidence_level(confidence_level)
    check_rng(rng)
    info = interface.info
    t0 = time.perf_counter()
    before = interface.budget()
    t1 = time.perf_counter()
    extraction = extract_histogram(
        interface,
        query,
        num_queries=num_queries,
        batch_size=batch_size,
        max_queries=max_queries,
        objective=objective,
        intervals=intervals,
        confidence_level=confidence_level,
        rng=rng,
    )
    t2 = time.perf_counter()
    after = interface.budget()
    entry = _extraction_entry(interface, before, after, extraction, confidence_level)
    settings = {
        "url": interface.url,
        "service": info.to_dict(),
        "query": np.asarray(query, dtype=np.float64).tolist(),
        "num_queries": num_queries,
        "batch_size": batch_size,
        "objective": objective,
        "intervals": intervals,
        "confidence_level": confidence_level,
    }
    return AuditResult(
        workflow="vote-extraction-remote",
        entries=(entry,),
        settings=settings,
        seed=seed_entropy(rng),
        timings={
            "budget_before": t1 - t0,
            "extraction": t2 - t1,
            "total": time.perf_counter() - t0,
        },
        versions=package_versions("httpx"),
        detail={"budget_before": before, "budget_after": after},
        note=(
            f"the attack sent {extraction.num_sent} queries; the key's ε went from "
            f"{before.epsilon_spent:.6g} to {after.epsilon_spent:.6g} at δ = {after.delta:g} "
            f"({after.analysis}); the service's global "
            f"ε is now {after.global_epsilon_spent:.6g} of {after.global_epsilon_budget:g}"
        ),
    )


# =============================================================================================
# The private-prediction adversaries against two deployments (S and S′)
# =============================================================================================


def craft_remote(
    interface: RemoteInterface,
    query: ArrayLike,
    *,
    true_label: int,
    crafter: str = "poisoning",
    num_queries: int = 2000,
    batch_size: int = 256,
    rng: RngLike = None,
) -> Any:
    """The point an adversary of Chadha et al. 2024 (arXiv:2402.09403, §4.1) adds, from a
    live service.

    ``"natural"``: the query with its true label. ``"poisoning"``: the query with the second
    most common label among the teachers' votes (§5.1) — a black-box attacker does not see the
    votes, so they are estimated by extracting the histogram through the interface
    (:func:`dpaudit.attacks.extract_histogram`, ``num_queries`` answers, charged to the key).

    Returns:
        :class:`~dpaudit.attacks.CraftedPoint` (``votes``: the rounded estimate used).

    Raises:
        ValueError: unknown crafter, bad query or label.
    """
    from dpaudit.attacks.adversaries import craft_natural, craft_poison
    from dpaudit.attacks.extraction import extract_histogram

    # every argument is checked before the service is contacted
    _check_interface("interface", interface)
    check_choice("crafter", crafter, ("natural", "poisoning"))
    x = np.asarray(check_array("query", query, ndim=1), dtype=np.float64)
    check_nonneg_int("true_label", true_label)
    check_positive_int("num_queries", num_queries)
    _check_batch(batch_size, x)
    check_rng(rng)
    if crafter == "natural":
        return craft_natural(x, true_label)
    ext = extract_histogram(
        interface, x, num_queries=num_queries, batch_size=batch_size, intervals="none",
        round_to_integers=True, rng=rng,
    )  # fmt: skip
    if ext.reconstruction is None:
        raise ValueError("the service answered none of the queries: no votes to craft from")
    votes = ext.reconstruction.integer_votes
    return craft_poison(x, votes, true_label=true_label)


def _answer_counts(interface: Any, row: np.ndarray, repetitions: int, batch: int, c: int):
    """Counts of each answer (classes, then abstentions) to ``repetitions`` copies of a query."""
    counts = np.zeros(c + 1, dtype=np.int64)
    sent = 0
    while sent < repetitions:
        n = min(batch, repetitions - sent)
        labels = np.asarray(interface.predict(np.repeat(row[None, :], n, axis=0)))
        if np.any(labels == _REFUSED):
            raise ValueError(
                f"the service refused after {sent + int(np.argmax(labels == _REFUSED))} of "
                f"{repetitions} queries: the key's budget is too small for this audit"
            )
        counts[:c] += np.bincount(labels[labels >= 0], minlength=c)
        counts[c] += int(np.count_nonzero(labels == _ABSTAIN))
        sent += n
    return counts


def _distinguish_entry(
    info: RemoteInfo, adversary: str, audit: Any, lam: np.ndarray, counts: Any, counts2: Any
) -> AuditEntry:
    """The lower-bound curve of one answer next to the published mechanism's claim."""
    from dpaudit.accounting import mechanism_rdp, rdp_to_dp

    claim_rdp = np.asarray(mechanism_rdp(info.aggregator, lam), dtype=np.float64)
    lower = np.asarray(audit.epsilons, dtype=np.float64)
    delta = info.delta
    return AuditEntry(
        system=info.system,
        adversary=adversary,
        lower_bound=LowerBound(
            method="2-cut RDP audit of one repeated query's answers from two deployments "
            "(Chadha et al. 2024, arXiv:2402.09403, §4.2, App. B)",
            confidence_level=audit.confidence_level,
            epsilon=float(rdp_to_dp(lam, lower, delta).epsilon),
            delta=delta,
            epsilon_is_valid=False,
            rdp=Curve(lam, lower),
            note="per answer; the RDP curve is the valid bound, its ε is for display only",
        ),
        claims=(
            Claim(
                analysis="data-independent",
                source="Papernot et al. 2018, arXiv:1802.08908, Prop. 8 (per answer)",
                epsilon=float(rdp_to_dp(lam, claim_rdp, delta).epsilon),
                delta=delta,
                rdp=Curve(lam, claim_rdp),
                conversion="balle2020",
            ),
        ),
        selections=(audit.selection,),
        detail={"counts": counts, "counts_neighbour": counts2, "audit": audit},
    )


def distinguish_remote(
    interface: RemoteInterface,
    neighbour: RemoteInterface,
    query: ArrayLike,
    *,
    repetitions: int,
    batch_size: int = 256,
    orders: ArrayLike | None = None,
    confidence_level: float = 0.95,
    adversary: str = "remote-advq",
    rng: RngLike = None,
) -> AuditResult:
    """A black-box RDP audit of one answer from two live deployments, S and S′.

    The adversarial distinguisher of Chadha et al. 2024 (arXiv:2402.09403, §4.1): the same
    query is asked ``repetitions`` times of the service trained on S (``interface``) and of
    the one trained on S′ = S ∪ {crafted point} (``neighbour``, e.g. ``dpaudit serve`` with
    ``[canary]``). The answer counts give a 2-cut RDP lower bound on one answer's privacy loss
    (:func:`dpaudit.bounds.rdp_audit`: Clopper–Pearson intervals, the output set chosen on a
    random half of the answers and bounded on the other, §4.2 and App. B), next to the
    per-answer claim of the mechanism the service publishes (data-independent,
    :func:`dpaudit.accounting.mechanism_rdp`; Papernot et al. 2018, arXiv:1802.08908,
    Prop. 8). Abstentions of Confident GNMax are one more output.

    The deployments keep their training randomness fixed (the same seed, only the receiving
    teacher retrained), so the bound is on the prediction mechanism given those teachers —
    which is what the analysis of GNMax claims for any teachers: a valid lower bound above the
    claim refutes it.

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"private-prediction-remote"``) with one entry
        (RDP lower-bound curve, claim curve, the gap) and the counts in ``detail``.

    Raises:
        ValueError: the two services publish different mechanisms or classes, a refused query,
            bad arguments.
    """
    from dpaudit._rng import seed_entropy
    from dpaudit.accounting import DEFAULT_ORDERS
    from dpaudit.bounds import rdp_audit

    # every argument is checked before the services are contacted
    _check_interface("interface", interface)
    _check_interface("neighbour", neighbour)
    reps = check_positive_int("repetitions", repetitions)
    row = np.asarray(check_array("query", query, ndim=1), dtype=np.float64)
    batch = _check_batch(batch_size, row)
    lam = check_orders(DEFAULT_ORDERS if orders is None else orders)
    check_confidence_level(confidence_level)
    if not isinstance(adversary, str):
        raise TypeError(f"adversary must be a string (a label), got {adversary!r:.80}")
    check_rng(rng)
    a, b = interface.info, neighbour.info
    if (a.aggregator, a.num_classes, a.num_features) != (
        b.aggregator,
        b.num_classes,
        b.num_features,
    ):
        raise ValueError(
            f"the two services differ in their public parameters: {a.aggregator!r}, "
            f"C={a.num_classes} vs {b.aggregator!r}, C={b.num_classes}"
        )
    t0 = time.perf_counter()
    counts = _answer_counts(interface, row, reps, batch, a.num_classes)
    counts2 = _answer_counts(neighbour, row, reps, batch, a.num_classes)
    t1 = time.perf_counter()
    audit = rdp_audit(counts, counts2, lam, confidence_level=confidence_level, rng=rng)
    entry = _distinguish_entry(a, adversary, audit, lam, counts, counts2)
    return AuditResult(
        workflow="private-prediction-remote",
        entries=(entry,),
        settings={
            "url": interface.url,
            "neighbour_url": neighbour.url,
            "service": a.to_dict(),
            "query": row.tolist(),
            "repetitions": reps,
            "batch_size": batch,
            "confidence_level": confidence_level,
            "orders": lam.tolist(),
        },
        seed=seed_entropy(rng),
        timings={"queries": t1 - t0, "bound": time.perf_counter() - t1},
        versions=package_versions("httpx"),
        detail={"budget": interface.budget(), "budget_neighbour": neighbour.budget()},
        note=(
            f"{reps} answers from each deployment; outputs are the classes and abstentions. "
            "The deployments share their training randomness (fixed teachers)."
        ),
    )
