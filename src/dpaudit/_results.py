"""Result types shared by every layer (layer 1).

Results are frozen dataclasses. :class:`ResultMixin` gives them ``to_dict()`` and
``to_json()`` that turn numpy arrays and scalars into plain lists and numbers and keep
±inf/NaN representable (as the strings ``"inf"``, ``"-inf"``, ``"nan"``) so JSON is strict.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np

__all__ = ["ConfidenceInterval", "ResultMixin", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Recursively convert dataclasses, numpy types, tuples and non-finite floats for JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
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
