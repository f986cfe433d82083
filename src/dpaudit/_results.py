"""Result types shared by every layer (layer 1).

Results are frozen dataclasses. :class:`ResultMixin` gives them ``to_dict()`` and
``to_json()`` that turn numpy arrays and scalars into plain lists and numbers and keep
±inf/NaN representable (as the strings ``"inf"``, ``"-inf"``, ``"nan"``) so JSON is strict.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "AuditEntry",
    "AuditResult",
    "Claim",
    "ConfidenceInterval",
    "Curve",
    "Gap",
    "LowerBound",
    "ResultMixin",
    "SelectionRecord",
    "package_versions",
    "to_jsonable",
]


def to_jsonable(value: Any) -> Any:
    """Recursively convert dataclasses, numpy types, tuples and non-finite floats for JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()] if value.ndim else to_jsonable(value.item())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    return value


class ResultMixin:
    """``to_dict`` / ``to_json`` for frozen result dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        """The result as plain Python types (lists, floats, str), JSON-ready."""
        return to_jsonable(self)

    def to_json(self, **kwargs: Any) -> str:
        """The result as a strict JSON string."""
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)


@dataclasses.dataclass(frozen=True)
class ConfidenceInterval(ResultMixin):
    """A confidence interval ``[low, high]`` (either end may be infinite for one-sided ones)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (self.low <= self.high) and not (math.isnan(self.low) or math.isnan(self.high)):
            raise ValueError(f"ConfidenceInterval needs low <= high, got ({self.low}, {self.high})")

    def __iter__(self):
        yield self.low
        yield self.high

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the closed interval."""
        return self.low <= value <= self.high


# =============================================================================================
# The one result type of every audit workflow
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class Curve(ResultMixin):
    """An RDP curve: ε(α) at explicit Rényi orders α.

    Attributes:
        orders: Rényi orders α > 1, increasing.
        epsilons: RDP ε(α) at each order (same length).
    """

    orders: Any
    epsilons: Any

    def __post_init__(self) -> None:
        o = np.asarray(self.orders, dtype=np.float64)
        e = np.asarray(self.epsilons, dtype=np.float64)
        if o.ndim != 1 or e.shape != o.shape:
            raise ValueError(
                f"Curve needs 1-d orders and epsilons of the same length, got {o.shape}, {e.shape}"
            )
        object.__setattr__(self, "orders", o)
        object.__setattr__(self, "epsilons", e)


@dataclasses.dataclass(frozen=True)
class LowerBound(ResultMixin):
    """What the attack shows: a statistically valid lower bound.

    Attributes:
        method: the statistics used (e.g. ``"2-cut RDP audit, Clopper-Pearson"``).
        confidence_level: 1 − β: the bound holds with at least this probability, every
            data-dependent choice included.
        epsilon: an ε lower bound (pure ε when ``delta`` is 0 or None, else ε at ``delta``),
            or a display value when ``epsilon_is_valid`` is False.
        delta: δ of ``epsilon``.
        epsilon_is_valid: whether ``epsilon`` itself is a valid lower bound (an RDP lower
            bound converted to (ε, δ) is not: it is shown for comparison only).
        interval: a confidence interval on the estimated quantity, where the method has one.
        rdp: an RDP lower-bound curve, valid at ``confidence_level`` at every order at once.
        note: anything a reader must know to interpret the number.
    """

    method: str
    confidence_level: float
    epsilon: float | None = None
    delta: float | None = None
    epsilon_is_valid: bool = True
    interval: ConfidenceInterval | None = None
    rdp: Curve | None = None
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Claim(ResultMixin):
    """An upper bound on the privacy loss: what an analysis claims (or the exact value).

    Attributes:
        analysis: which analysis (``"data-dependent"``, ``"data-independent"``, ``"exact"``,
            ``"accountant (RDP)"`` …).
        source: its source, by authors, year and theorem.
        epsilon: ε at ``delta`` (pure ε when ``delta`` is 0 or None).
        delta: δ of ``epsilon``.
        rdp: the RDP curve behind ``epsilon``, where there is one.
        conversion: how RDP became (ε, δ) (e.g. ``"balle2020"``).
    """

    analysis: str
    source: str
    epsilon: float | None = None
    delta: float | None = None
    rdp: Curve | None = None
    conversion: str | None = None


@dataclasses.dataclass(frozen=True)
class SelectionRecord(ResultMixin):
    """How one data-dependent choice of an audit was paid for.

    Attributes:
        choice: what was chosen (``"output set"``, ``"worst query"``, ``"threshold"`` …).
        strategy: ``"split"`` (chosen on a held-out part), ``"bonferroni"`` (paid by a union
            bound), ``"explicit"`` (fixed in advance) or ``"none"`` (no choice made).
        detail: how exactly.
    """

    choice: str
    strategy: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Gap(ResultMixin):
    """The lower bound next to the primary claim.

    Attributes:
        claim: the analysis compared with (the entry's first claim).
        epsilon_lower: the lower bound's ε (display value when not itself valid).
        epsilon_claim: the claim's ε.
        ratio: ``epsilon_claim / epsilon_lower`` (inf when the lower bound is 0).
        rdp_excess: ``max_α (lower(α) − claim(α))`` over the common orders (None without
            both curves); positive means the RDP claim is refuted.
        refutes_claim: whether a *valid* lower bound exceeds the claim (a bug in the system
            or its analysis, at the stated confidence).
    """

    claim: str
    epsilon_lower: float | None
    epsilon_claim: float | None
    ratio: float | None
    rdp_excess: float | None
    refutes_claim: bool


def _gap(lower: LowerBound, claim: Claim | None) -> Gap | None:
    if claim is None:
        return None
    lo, hi = lower.epsilon, claim.epsilon
    ratio = None
    if lo is not None and hi is not None:
        ratio = math.inf if lo <= 0 else hi / lo
    excess = None
    if lower.rdp is not None and claim.rdp is not None:
        common, i, j = np.intersect1d(lower.rdp.orders, claim.rdp.orders, return_indices=True)
        if common.size:
            excess = float(np.max(lower.rdp.epsilons[i] - claim.rdp.epsilons[j]))
    refutes = bool(
        (excess is not None and excess > 1e-9 * max(1.0, float(np.max(claim.rdp.epsilons))))
        or (
            lower.epsilon_is_valid
            and lo is not None
            and hi is not None
            and lo > hi * (1 + 1e-12) + 1e-12
        )
    )
    return Gap(claim.analysis, lo, hi, ratio, excess, refutes)


@dataclasses.dataclass(frozen=True)
class AuditEntry(ResultMixin):
    """One attacked configuration: a system, an adversary, its lower bound and the claims.

    Attributes:
        system: the system's registered name.
        adversary: the adversary or attack variant (None where there is one attack).
        lower_bound: what the attack shows.
        claims: the claimed upper bounds, primary first (the one the system ships).
        exact: the exact privacy loss of this attack's neighbouring pair, where it is known
            (an upper bound for this adversary; None otherwise).
        selections: how every data-dependent choice was paid for.
        detail: workflow-specific detail (per-query results, sweeps, …).
        gap: the lower bound next to the primary claim (computed).
    """

    system: str
    adversary: str | None
    lower_bound: LowerBound
    claims: tuple[Claim, ...] = ()
    exact: Claim | None = None
    selections: tuple[SelectionRecord, ...] = ()
    detail: Any = None
    gap: Gap | None = dataclasses.field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "claims", tuple(self.claims))
        object.__setattr__(self, "selections", tuple(self.selections))
        object.__setattr__(self, "gap", _gap(self.lower_bound, self.claim))

    @property
    def claim(self) -> Claim | None:
        """The primary claim (first of ``claims``), or None."""
        return self.claims[0] if self.claims else None

    def claim_of(self, analysis: str) -> Claim:
        """The claim of one analysis.

        Raises:
            KeyError: no claim of that analysis.
        """
        for c in self.claims:
            if c.analysis == analysis:
                return c
        have = [c.analysis for c in self.claims]
        raise KeyError(f"no claim of analysis {analysis!r}; have {have}")


def package_versions(*names: str) -> dict[str, str]:
    """Installed versions of dpaudit, numpy, scipy and the named packages (missing: left out)."""
    versions = {name: _version(name) for name in ("dpaudit", "numpy", "scipy", *names)}
    return {name: v for name, v in versions.items() if v is not None}


@functools.cache
def _version(name: str) -> str | None:
    """``importlib.metadata.version(name)``, looked up once per process: each lookup scans
    every installed distribution (about 9 ms), and every audit result records a few."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@dataclasses.dataclass(frozen=True)
class AuditResult(ResultMixin):
    """The result of every audit workflow: lower bounds next to claims, and how they were made.

    Attributes:
        workflow: which workflow (``"private-prediction"``, ``"vote-leakage"``,
            ``"lidp-gaussian"`` …).
        entries: one :class:`AuditEntry` per attacked configuration.
        settings: the validated settings the run used.
        seed: the root seed (None if the caller passed a generator).
        timings: wall seconds per stage.
        versions: versions of dpaudit and its numeric dependencies.
        detail: workflow-specific detail of the whole run.
        note: what the numbers mean.
    """

    workflow: str
    entries: tuple[AuditEntry, ...]
    settings: Any
    seed: int | None
    timings: Any
    versions: Any
    detail: Any = None
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))

    def entry(self, system: str, adversary: str | None = None) -> AuditEntry:
        """The entry of one system (and adversary).

        Raises:
            KeyError: no such entry.
        """
        for e in self.entries:
            if e.system == system and (adversary is None or e.adversary == adversary):
                return e
        raise KeyError(f"no entry for system={system!r}, adversary={adversary!r}")

    def write_json(self, path: Any) -> Any:
        """Write the result as strict JSON to ``path`` (parents created) and return the path."""
        from pathlib import Path

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.to_json() + "\n")
        return p
