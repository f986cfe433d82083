"""Settings of the group-privacy audit of private prediction (Chadha et al. 2024,
arXiv:2402.09403, App. C; :mod:`dpaudit.experiments.group_privacy.pipeline`).

Example:
    >>> s = GroupPrivacySettings(dataset="digits", teachers=20, sigma=2.0, queries=50)
    >>> s.group_sizes, s.adversaries
    ((1, 2, 4, 8), ('pate-group', 'capc-teacher', 'knn-group'))
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
)

__all__ = ["GroupPrivacySettings"]


def _names(value: object) -> tuple[str, ...]:
    from dpaudit.attacks import GROUP_ADVERSARIES

    items = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[arg-type]
    names = tuple(dict.fromkeys(str(v).strip().lower() for v in items if str(v).strip()))
    if not names:
        raise ValueError(f"adversaries must name at least one group adversary, got {value!r}")
    for n in names:
        check_choice("adversaries", n, GROUP_ADVERSARIES.names())
    return names


def _sizes(value: object) -> tuple[int, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[arg-type]
    if not items:
        raise ValueError(f"group_sizes must hold at least one size, got {value!r}")
    sizes = []
    for v in items:
        if isinstance(v, str):
            v = v.strip()
            if not v.lstrip("-").isdigit():
                raise ValueError(f"group_sizes must be integers m >= 1, got {value!r}")
            v = int(v)
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v < 1:
            raise ValueError(f"group_sizes must be integers m >= 1, got m={v} in {value!r}")
        sizes.append(check_positive_int("group_sizes", v))
    return tuple(sorted(set(sizes)))


@dataclasses.dataclass(frozen=True)
class GroupPrivacySettings(ResultMixin):
    """Everything the group-privacy audit needs (validated at construction; messages name
    the field). Checks that need the dataset (a group larger than a teacher's data, more
    poison than the pool) run before any training (:func:`.stages.check_sizes`)."""

    name: str = option("group-privacy", help="run name")
    seed: int = option(0, help="root seed of everything random")
    dataset: str = option("digits", help="dataset: digits, mnist-5k, fashion-mnist, …")
    n_train: int | None = option(None, help="training rows kept (seeded subset; all if unset)")
    adversaries: tuple[str, ...] = option(
        ("pate-group", "capc-teacher", "knn-group"),
        help="group adversaries (dpaudit.attacks.GROUP_ADVERSARIES), comma-separated",
        flag="--adversary",
    )
    group_sizes: tuple[int, ...] = option(
        (1, 2, 4, 8), help="group sizes m (1 is the single-point comparison), comma-separated"
    )
    teachers: int = option(250, help="teachers of PATE and CaPC")
    sigma: float = option(40.0, help="the GNMax sigma every claim uses (vote units)")
    noise_factor: float = option(
        1.0, help="planted bug: the noisy argmax adds sigma*noise_factor (claims keep sigma)"
    )
    knn_k: int = option(200, help="Private-kNN voters per query (sampling rate 1 here)")
    estimator: str = option("logistic", help="teacher model of PATE and CaPC")
    queries: int = option(1000, help="n_Q natural queries audited (test rows)")
    proxy_queries: int = option(500, help="held-out test rows the adversaries optimise on")
    pool: int = option(500, help="held-out test rows the adversaries poison with")
    audited_queries: int = option(
        64, help="changed queries bounded: those of largest exact divergence (no sample used)"
    )
    experiments: int = option(10**8, help="experiments per query under S and under S'")
    joint_experiments: int = option(
        200_000,
        help="joint experiments (all changed queries answered) of the pooled 2-cut; 0: none",
    )
    confidence_level: float = option(0.95, help="1 - beta of every composed lower bound")
    orders: tuple[float, ...] = option(
        (2.0, 4.0, 8.0, 16.0, 32.0, 64.0), help="Renyi orders (>= 2 for the generic rule)"
    )
    report_order: float = option(8.0, help="order of the summary table's RDP values")
    delta: float = option(1e-6, help="delta of the epsilon display")
    exact_distance: int = option(3, help="largest m whose exact worst-case group RDP is computed")

    def __post_init__(self) -> None:
        from dpaudit.data import DATASET_NAMES

        put = object.__setattr__
        check_nonneg_int("seed", self.seed)
        check_choice("dataset", self.dataset, DATASET_NAMES)
        if self.n_train is not None:
            check_positive_int("n_train", self.n_train)
        put(self, "adversaries", _names(self.adversaries))
        put(self, "group_sizes", _sizes(self.group_sizes))
        if check_positive_int("teachers", self.teachers) < 2:
            raise ValueError(f"teachers must be at least 2, got {self.teachers}")
        put(self, "sigma", check_positive("sigma", self.sigma))
        put(self, "noise_factor", check_positive("noise_factor", self.noise_factor))
        check_positive_int("knn_k", self.knn_k)
        for field in ("queries", "proxy_queries", "pool", "exact_distance", "audited_queries"):
            check_positive_int(field, getattr(self, field))
        if check_nonneg_int("joint_experiments", self.joint_experiments) in (1, 2, 3):
            raise ValueError(
                f"joint_experiments must be 0 or at least 4, got {self.joint_experiments}"
            )
        if check_positive_int("experiments", self.experiments) < 4:
            raise ValueError(f"experiments must be at least 4, got {self.experiments}")
        put(self, "confidence_level", check_confidence_level(self.confidence_level))
        lam = check_orders(self.orders)
        if lam.size > 1 and not np.all(np.diff(lam) > 0):
            raise ValueError(f"orders must be strictly increasing, got {self.orders!r}")
        put(self, "orders", tuple(float(a) for a in lam))
        rep = float(check_orders(check_positive("report_order", self.report_order))[0])
        if rep not in self.orders:
            raise ValueError(f"report_order must be one of orders {self.orders}, got {rep}")
        put(self, "report_order", rep)
        put(self, "delta", check_delta(self.delta, allow_zero=False))

    def order_grid(self) -> np.ndarray:
        """The Rényi orders."""
        return np.asarray(self.orders, dtype=np.float64)
