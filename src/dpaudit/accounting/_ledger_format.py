"""The file format of :class:`dpaudit.accounting.PrivacyLedger` (``dpaudit.PrivacyLedger/3``):
the mechanism value as JSON, floats as exact hex strings, strict parsing (no repeated keys, no
unknown keys, counts below 2**53, a state the ledger's own arithmetic can reach)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dpaudit.accounting._mechanisms import (
    noisy_argmax_cost,
)
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax

__all__ = ["CONVERSIONS", "mechanism_from_dict", "mechanism_to_dict"]

CONVERSIONS = ("standard", "balle2020")
_FORMAT = "dpaudit.PrivacyLedger/3"  # /3: the mechanism value, num_zero_cost
_FORMAT_PREFIX = "dpaudit.PrivacyLedger/"
_REQUIRED_KEYS = (
    "format",
    "mechanism",
    "delta",
    "epsilon_budget",
    "analysis",
    "conversion",
    "orders",
    "rdp",
    "num_queries",
    "num_answered",
    "num_zero_cost",
    "fallback_counts",
)
_OPTIONAL_KEYS = ("epsilon",)  # written for people reading the file; not read back
_MECHANISM_KEYS = {"gnmax": ("sigma",), "confident-gnmax": ("threshold", "sigma1", "sigma2")}
#: Per-query costs kept per ledger, keyed by the histogram's bytes: an interface queried
#: repeatedly on one input (the vote-extraction attacks) computes Thm 6 once.
#: Counts above 2**53 cannot be matched against a float64 RDP total (nor reached in practice).
_MAX_COUNT = 2**53


def mechanism_to_dict(mechanism: GNMax | ConfidentGNMax) -> dict[str, str]:
    """The mechanism value by name and parameters as ``float.hex()`` strings (exact): what
    every ledger file stores.

    Example:
        >>> mechanism_to_dict(GNMax(40.0))
        {'name': 'gnmax', 'sigma': '0x1.4000000000000p+5'}
    """
    out = {"name": mechanism.name}
    for key in _MECHANISM_KEYS[mechanism.name]:
        out[key] = _hex(getattr(mechanism, key))
    return out


def mechanism_from_dict(obj: Any) -> GNMax | ConfidentGNMax:
    """Read :func:`mechanism_to_dict` back (exactly those keys).

    Raises:
        ValueError: not such an object, or parameters the mechanism refuses.

    Example:
        >>> mechanism_from_dict(mechanism_to_dict(GNMax(40.0))) == GNMax(40.0)
        True
    """
    if not isinstance(obj, dict) or obj.get("name") not in _MECHANISM_KEYS:
        raise ValueError(
            f"mechanism in the ledger JSON must be an object with name in "
            f"{sorted(_MECHANISM_KEYS)}, got {obj!r}"
        )
    keys = _MECHANISM_KEYS[obj["name"]]
    if set(obj) != {"name", *keys}:
        raise ValueError(f"mechanism {obj['name']!r} in the ledger JSON needs exactly {keys}")
    params = [_unhex(f"mechanism.{k}", obj[k]) for k in keys]
    try:
        return GNMax(*params) if obj["name"] == "gnmax" else ConfidentGNMax(*params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"mechanism in the ledger JSON: {exc}") from exc


def _hex(x: float) -> str:
    return float(x).hex()


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer in the ledger JSON, got {value!r}")
    if value > _MAX_COUNT:
        raise ValueError(
            f"{name}={value} in the ledger JSON exceeds 2**53: no float64 RDP total can account "
            "for that many charges"
        )
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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object refusing a key given twice (json.loads would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


def _parse_document(text: str) -> dict[str, Any]:
    """The JSON object of a /3 ledger document with exactly the expected keys."""
    if not isinstance(text, str):  # bytes too: to_json writes str, decode explicitly
        raise TypeError(f"text must be a str (the output of to_json), got {type(text).__name__}")
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"text is not valid ledger JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"text is not a {_FORMAT} document (not a JSON object)")
    fmt = data.get("format")
    if fmt != _FORMAT:
        if isinstance(fmt, str) and fmt.startswith(_FORMAT_PREFIX):
            raise ValueError(
                f"text is a {fmt} document; this version reads {_FORMAT} only (earlier formats "
                "lack the mechanism value and the zero-cost count, so their state cannot be "
                "checked)"
            )
        raise ValueError(f"text is not a {_FORMAT} document (format={fmt!r})")
    missing = [k for k in _REQUIRED_KEYS if k not in data]
    if missing:
        raise ValueError(f"ledger JSON is missing key(s) {missing}")
    unexpected = sorted(set(data) - set(_REQUIRED_KEYS) - set(_OPTIONAL_KEYS))
    if unexpected:
        raise ValueError(f"ledger JSON has unexpected key(s) {unexpected}")
    return data


def _parse_state(data: dict[str, Any], k: int) -> tuple[np.ndarray, int, int, int, np.ndarray]:
    """rdp, counts and fallback counts, each of the right type and shape."""
    rdp = np.array(_hex_list("rdp", data["rdp"]), dtype=np.float64)
    if rdp.shape != (k,) or not np.all(np.isfinite(rdp)) or np.any(rdp < 0):
        raise ValueError(
            f"rdp in the ledger JSON must be {k} finite non-negative values (one per order)"
        )
    nq = _count("num_queries", data["num_queries"])
    na = _count("num_answered", data["num_answered"])
    nz = _count("num_zero_cost", data["num_zero_cost"])
    if na > nq or nz > nq:
        raise ValueError(
            f"num_queries/num_answered/num_zero_cost are inconsistent: {nq!r}, {na!r}, {nz!r} "
            "(neither count may exceed num_queries)"
        )
    fbc = data["fallback_counts"]
    if not isinstance(fbc, list) or len(fbc) != k:
        raise ValueError(f"fallback_counts must be a list of {k} integers (one per order)")
    counts = [_count("fallback_counts", c) for c in fbc]
    if any(c > nq for c in counts):
        raise ValueError(f"fallback_counts must not exceed num_queries={nq}, got {counts}")
    return rdp, nq, na, nz, np.array(counts, dtype=np.int64)


def _check_reachable(
    led: Any, rdp: np.ndarray, nq: int, na: int, nz: int, counts: np.ndarray
) -> None:
    """Refuse a state no sequence of charges produces (issue 13).

    Per query and order the charge is ``ρ1 + 1{answered}·ρ2`` with ``0 ≤ ρ ≤`` the
    data-independent cost ``c`` (equal to it under that analysis), non-decreasing in the order
    (Rényi divergence, and Thm 6's bound — a power mean of fixed A, B — both are; so is
    ``min(·, λ/σ²)`` and the fallback to λ/σ² above μ1), and a fallback charges ``c`` at that
    order. Float sums of n charges are exact to ``n·2⁻⁵³`` relative: ``slack`` allows for it.
    """
    di = noisy_argmax_cost(led.mechanism, led.orders)
    c1, c2 = di.threshold_rdp, di.answer_rdp
    gnmax = isinstance(led.mechanism, GNMax)
    slack = 1e-9 + 2.3e-16 * nq
    if gnmax and na != nq:
        raise ValueError(f"num_answered={na} must equal num_queries={nq} for plain GNMax")
    if led.analysis == "data-independent" and np.any(counts):
        raise ValueError("fallback_counts must be 0 under the data-independent analysis")
    drop = rdp[:-1] - rdp[1:]
    if np.any(drop > 1e-9 * rdp.max()):
        raise ValueError("rdp in the ledger JSON decreases with the order; charges never do")
    cap = nq * c1 + na * c2
    if np.any(rdp > cap * (1.0 + slack)):
        raise ValueError(
            f"rdp in the ledger JSON exceeds the data-independent cost of num_queries={nq} "
            f"(num_answered={na}) queries at some order"
        )
    if led.analysis == "data-independent" and np.any(rdp < cap * (1.0 - slack)):
        raise ValueError(
            f"rdp in the ledger JSON is not the data-independent cost of num_queries={nq} "
            f"(num_answered={na}) queries"
        )
    per_fallback = c2 if gnmax else np.minimum(c1, c2)
    if np.any(rdp < counts * per_fallback * (1.0 - slack)):
        raise ValueError("rdp in the ledger JSON is below the cost of its fallback_counts")
    if nq > nz and not np.any(rdp > 0):
        raise ValueError(
            f"rdp in the ledger JSON is 0 at every order, but {nq - nz} of num_queries={nq} "
            "queries had a non-zero charge (num_zero_cost counts the others)"
        )
    if nz > 0 and led.analysis == "data-independent" and np.any(c1 + c2 > 0):
        zero_possible = not np.any(c1 > 0) and (nq - na >= nz or not np.any(c2 > 0))
        if not zero_possible:
            raise ValueError(
                f"num_zero_cost={nz} is impossible under the data-independent analysis: every "
                "query is charged λ/σ² > 0"
            )
