"""Compare two recorded runs: their settings, seeds, versions and every entry's numbers.

:func:`compare_runs` lines up two :class:`~dpaudit.store.RunRecord` s: the settings that
differ (by dotted path), the seed, package versions, total wall time, and per attacked
configuration (system × adversary) the lower bound's ε, the primary claim's ε, the exact ε
and the gap ratio claim / lower bound of each run.

Example:
    >>> flatten({"system": {"sigma": 2.0, "systems": ["pate"]}, "seed": 0})
    {'system.sigma': 2.0, 'system.systems': ['pate'], 'seed': 0}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dpaudit._results import ResultMixin
from dpaudit.store.runs import RunRecord

__all__ = ["EntryComparison", "RunComparison", "SettingDifference", "compare_runs", "flatten"]

_MISSING = "(unset)"


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{dotted.path: leaf}`` (lists are leaves)."""
    if not isinstance(data, Mapping):
        return {prefix or "value": data}
    out: dict[str, Any] = {}
    for k, v in data.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, path))
        else:
            out[path] = v
    return out


@dataclasses.dataclass(frozen=True)
class SettingDifference(ResultMixin):
    """One setting that differs: its dotted path and the two values (``"(unset)"`` if absent)."""

    path: str
    a: Any
    b: Any


@dataclasses.dataclass(frozen=True)
class EntryComparison(ResultMixin):
    """One system × adversary in both runs (None where a run lacks it or the number).

    Attributes:
        system, adversary: the configuration.
        lower_a, lower_b: the lower bound's ε.
        claim_a, claim_b: the primary claim's ε.
        exact_a, exact_b: the exact ε, where known.
        ratio_a, ratio_b: claim / lower bound.
        refutes_a, refutes_b: whether the lower bound refuted the claim.
    """

    system: str
    adversary: str | None
    lower_a: float | None
    lower_b: float | None
    claim_a: float | None
    claim_b: float | None
    exact_a: float | None
    exact_b: float | None
    ratio_a: float | None
    ratio_b: float | None
    refutes_a: bool | None
    refutes_b: bool | None


@dataclasses.dataclass(frozen=True)
class RunComparison(ResultMixin):
    """Two runs side by side (see :func:`compare_runs`)."""

    a: str
    b: str
    workflow_a: str
    workflow_b: str
    status_a: str
    status_b: str
    seed_a: int | None
    seed_b: int | None
    settings: tuple[SettingDifference, ...]
    versions: tuple[SettingDifference, ...]
    entries: tuple[EntryComparison, ...]
    total_seconds_a: float | None
    total_seconds_b: float | None


def _num(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        return {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}.get(x)
    return float(x)


def _entries(run: RunRecord) -> dict[tuple[str, str | None], dict[str, Any]]:
    result = run.result or {}
    out = {}
    for e in result.get("entries", []) or []:
        claims = e.get("claims") or []
        gap = e.get("gap") or {}
        exact = e.get("exact") or {}
        out[(e.get("system"), e.get("adversary"))] = {
            "lower": _num((e.get("lower_bound") or {}).get("epsilon")),
            "claim": _num(claims[0].get("epsilon")) if claims else None,
            "exact": _num(exact.get("epsilon")),
            "ratio": _num(gap.get("ratio")),
            "refutes": gap.get("refutes_claim"),
        }
    return out


def _diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[SettingDifference, ...]:
    fa, fb = flatten(a), flatten(b)
    keys = sorted(set(fa) | set(fb))
    return tuple(
        SettingDifference(k, fa.get(k, _MISSING), fb.get(k, _MISSING))
        for k in keys
        if fa.get(k, _MISSING) != fb.get(k, _MISSING)
    )


def compare_runs(a: RunRecord, b: RunRecord) -> RunComparison:
    """Line two runs up (module notes). Both should carry their results (``store.get``)."""
    ea, eb = _entries(a), _entries(b)
    rows = []
    for key in list(dict.fromkeys([*ea, *eb])):
        x, y = ea.get(key, {}), eb.get(key, {})
        rows.append(
            EntryComparison(
                key[0],
                key[1],
                x.get("lower"),
                y.get("lower"),
                x.get("claim"),
                y.get("claim"),
                x.get("exact"),
                y.get("exact"),
                x.get("ratio"),
                y.get("ratio"),
                x.get("refutes"),
                y.get("refutes"),
            )
        )
    return RunComparison(
        a=a.id,
        b=b.id,
        workflow_a=a.workflow,
        workflow_b=b.workflow,
        status_a=a.status,
        status_b=b.status,
        seed_a=a.seed,
        seed_b=b.seed,
        settings=_diff(
            a.settings if isinstance(a.settings, Mapping) else {},
            b.settings if isinstance(b.settings, Mapping) else {},
        ),
        versions=_diff(a.versions or {}, b.versions or {}),
        entries=tuple(rows),
        total_seconds_a=_num((a.timings or {}).get("total")),
        total_seconds_b=_num((b.timings or {}).get("total")),
    )
