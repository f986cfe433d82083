"""The settings cell of the private-prediction systems (what their :data:`SYSTEMS` factories take).

PATE, CaPC, Private-kNN and PromptPATE are built from the same cell: the parameters a
private-prediction audit shares between the systems it compares (m teachers, k per query, the
GNMax σ, the teacher model, the workers) and, per system, the options of that system
(``options["private-knn"]``, ``options["prompt-pate"]``). The private-prediction workflow's
``[system]`` section has these fields and is passed as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["PrivatePredictionCell"]


@dataclasses.dataclass(frozen=True)
class PrivatePredictionCell:
    """Settings of a private-prediction system (validated by the system it builds).

    Attributes:
        teachers: number of teachers m.
        sigma: GNMax noise σ (vote units).
        teachers_per_query: teachers voting per query k ≤ m (None: all).
        estimator: teacher model of PATE and CaPC (:data:`ESTIMATOR_NAMES`).
        n_jobs: joblib workers of training and retraining.
        options: per-system options by system name (``{"private-knn": {...}}``).

    Example:
        >>> from dpaudit.systems import SYSTEMS
        >>> SYSTEMS.get("pate")(PrivatePredictionCell(teachers=20, sigma=4.0)).num_teachers
        20
    """

    teachers: int = 250
    sigma: float = 40.0
    teachers_per_query: int | None = None
    estimator: str = "logistic"
    n_jobs: int = 1
    options: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
