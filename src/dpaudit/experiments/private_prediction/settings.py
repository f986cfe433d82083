"""Settings of the private-prediction audit: one nested frozen dataclass tree.

Sections: ``data`` (the dataset), ``system`` (which systems and their common parameters),
``adversary`` (which adversaries, their queries and training budget), ``engine`` (how the
experiments are sampled) and ``audit`` (the statistics and the claim). The TOML schema, the
config parser and the command-line options are all derived from these classes
(:mod:`dpaudit._settings`, :mod:`dpaudit.cli._options`); each rule lives in one
``__post_init__``.

Example:
    >>> s = PrivatePredictionSettings.of(dataset="digits", teachers=20, sigma=3.0, queries=10)
    >>> s.system.teachers, s.adversary.queries, s.k
    (20, 10, 20)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit import _settings
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
    check_work,
)

__all__ = [
    "DEFAULT_BLOCK",
    "MAX_BLOCKS_PER_QUERY",
    "SAMPLERS",
    "AdversarySettings",
    "AuditSettings",
    "DataSettings",
    "EngineSettings",
    "PrivatePredictionSettings",
    "SystemSettings",
]

SAMPLERS: tuple[str, ...] = ("exact", "monte-carlo")
Q_BOUNDS: tuple[str, ...] = ("union", "exact")


#: The tag of the systems this workflow audits (``SYSTEMS.register(..., tags=...)``).
WORKFLOW = "private-prediction"


def _names(field: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(v).strip().lower() for v in items if str(v).strip())
    if not names:
        raise ValueError(f"{field} must name at least one of {allowed}, got {value!r}")
    for n in names:
        check_choice(field, n, allowed)
    return tuple(dict.fromkeys(names))


def _optional_positive_int(obj: Any, field: str) -> None:
    value = getattr(obj, field)
    if value is not None:
        object.__setattr__(obj, field, check_positive_int(field, value))


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """The dataset (offline; see :mod:`dpaudit.data`)."""

    dataset: str = option("digits", help="dataset: digits, mnist-5k, fashion-mnist or adult")
    n_train: int | None = option(None, help="training rows kept (seeded subset; all if unset)")
    n_test: int | None = option(None, help="test rows kept (all if unset)")

    def __post_init__(self) -> None:
        from dpaudit.data import DATASET_NAMES

        check_choice("dataset", self.dataset, DATASET_NAMES)
        _optional_positive_int(self, "n_train")
        _optional_positive_int(self, "n_test")


@dataclasses.dataclass(frozen=True)
class SystemSettings:
    """The systems under audit and the parameters they share."""

    systems: tuple[str, ...] = option(
        ("pate", "capc"), help="registered systems to audit, comma-separated", flag="--system"
    )
    teachers: int = option(250, help="number of teachers m")
    teachers_per_query: int | None = option(
        None, help="teachers voting per query k <= m (all if unset)"
    )
    sigma: float = option(40.0, help="GNMax noise sigma (vote units)")
    estimator: str = option("logistic", help="teacher model: logistic, ridge, extra-trees, …")
    n_jobs: int = option(
        1, help="workers for training, retraining, models and audits (joblib; -1: all cores)"
    )
    options: Mapping[str, Any] = option(
        default_factory=dict, cli=False, help="per-system options: [system.options.NAME]"
    )

    def __post_init__(self) -> None:
        from dpaudit.systems import ESTIMATOR_NAMES, SYSTEMS

        names = _names("systems", self.systems, SYSTEMS.names())
        for name in names:  # untagged systems (a user's own) are taken as private prediction
            tags = SYSTEMS.tags(name)
            if tags and WORKFLOW not in tags:
                raise ValueError(
                    f"systems: {name!r} is not a private-prediction system (it is audited by "
                    f"`dpaudit audit {sorted(tags)[0]}`); private-prediction systems: "
                    f"{SYSTEMS.names(WORKFLOW)}"
                )
        object.__setattr__(self, "systems", names)
        m = check_positive_int("teachers", self.teachers)
        if m < 2:
            raise ValueError(f"teachers must be at least 2, got {m}")
        if self.teachers_per_query is not None:
            k = check_positive_int("teachers_per_query", self.teachers_per_query)
            if k > m:
                raise ValueError(
                    f"teachers_per_query (k) must be at most teachers (m={m}), got k={k}"
                )
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        check_choice("estimator", self.estimator, ESTIMATOR_NAMES)
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero integer (joblib), got {self.n_jobs!r}")
        for name in self.options:
            if name not in self.systems:
                raise ValueError(f"system.options names {name!r}, which is not audited")


@dataclasses.dataclass(frozen=True)
class AdversarySettings:
    """The adversaries, their queries and their training budget."""

    adversaries: tuple[str, ...] = option(
        ("nat-advq", "pois-advq", "pois-natq"),
        help="registered adversaries, comma-separated",
        flag="--adversary",
    )
    queries: int = option(
        1000, help="n_Q: natural queries, and repetitions composed for adversarial queries"
    )
    candidate_queries: int | None = option(
        None, help="queries tried by adversarial distinguishers (n_Q if unset)"
    )
    instantiations: int = option(2, help="N_g training phases for the histogram models")
    retrainings: int = option(4, help="R retrainings with each crafted point")
    natural_retrainings: int | None = option(
        None,
        help="R for natural distinguishers (one crafted point, its flips counted on every "
        "natural query); R if unset",
    )
    shortlist: int | None = option(
        None,
        help="adversarial distinguishers: model and audit only the K candidates of largest "
        "plug-in leakage (noisy argmax at the expected histograms; no experiment is used); "
        "all candidates if unset",
    )
    confirmations: int = option(
        0,
        help="R_c fresh retrainings of the chosen worst adversarial query: its model, bound "
        "and flip interval come from them, independent of the choice (0: none)",
    )
    neighbour_estimator: str = option("paired", help="neighbour model estimator: paired, direct")

    def __post_init__(self) -> None:
        from dpaudit.attacks import ADVERSARIES, NEIGHBOUR_ESTIMATORS

        object.__setattr__(
            self, "adversaries", _names("adversaries", self.adversaries, ADVERSARIES.names())
        )
        nq = check_positive_int("queries", self.queries)
        if self.candidate_queries is not None:
            cand = check_positive_int("candidate_queries", self.candidate_queries)
            if cand > nq:
                raise ValueError(f"candidate_queries must be at most queries={nq}, got {cand}")
        check_positive_int("instantiations", self.instantiations)
        check_positive_int("retrainings", self.retrainings)
        check_nonneg_int("confirmations", self.confirmations)
        _optional_positive_int(self, "natural_retrainings")
        _optional_positive_int(self, "shortlist")
        check_choice("neighbour_estimator", self.neighbour_estimator, NEIGHBOUR_ESTIMATORS)

    def retrainings_for(self, composition: str) -> int:
        """R for a distinguisher composing over ``"repetitions"`` or ``"queries"``."""
        if composition == "queries" and self.natural_retrainings is not None:
            return self.natural_retrainings
        return self.retrainings

    @property
    def num_candidates(self) -> int:
        """Queries tried by the adversarial distinguishers."""
        return self.queries if self.candidate_queries is None else self.candidate_queries


#: Experiments per engine block when ``block_size`` is unset, per sampler.
DEFAULT_BLOCK = {"exact": 2**26, "monte-carlo": 2**18}
#: Most engine blocks one query's distribution may take (each a seeded block function call):
#: the paper's 10⁸ experiments are 2 exact or 382 Monte-Carlo blocks.
MAX_BLOCKS_PER_QUERY = 10**5


@dataclasses.dataclass(frozen=True)
class EngineSettings:
    """How the experiments are sampled (:mod:`dpaudit.engine`)."""

    sampler: str = option("exact", help="exact (multinomial) or monte-carlo (direct)")
    experiments: int = option(10**8, help="experiments per query under S and under S'")
    block_size: int | None = option(None, help="experiments per block (2^26 exact, 2^18 MC)")
    executor: str = option("serial", help="engine executor: serial, processes, joblib, ray")
    workers: int = option(1, help="engine workers")

    def __post_init__(self) -> None:
        from dpaudit.engine import EXECUTORS

        check_choice("sampler", self.sampler, SAMPLERS)
        t = check_positive_int("experiments", self.experiments)
        if t < 4:
            raise ValueError(f"experiments must be at least 4 (half selects, half bounds), got {t}")
        _optional_positive_int(self, "block_size")
        check_choice("executor", self.executor, EXECUTORS.names())
        check_positive_int("workers", self.workers)
        block = self.block_size or DEFAULT_BLOCK[self.sampler]
        check_work(  # up front: each block is one seeded engine call (~0.1–1 ms at least)
            -(-t // block),
            MAX_BLOCKS_PER_QUERY,
            f"experiments={t} (--experiments) in blocks of block_size={block} (--block-size)",
            "blocks per query and distribution",
            "lower --experiments, raise --block-size, or raise dpaudit.experiments."
            "private_prediction.settings.MAX_BLOCKS_PER_QUERY",
        )


@dataclasses.dataclass(frozen=True)
class AuditSettings:
    """The lower bound's statistics and the claim's analysis."""

    confidence_level: float = option(0.95, help="1 - beta of every composed lower bound")
    delta: float = option(1e-6, help="delta of the epsilon display")
    orders: tuple[float, ...] | None = option(
        None, help="Renyi orders, comma-separated (dpaudit.accounting.DEFAULT_ORDERS if unset)"
    )
    selection_order: float = option(10.0, help="order at which output sets are compared")
    data_dependent_q: str = option("union", help="q bound of the data-dependent claim")
    max_support: int = option(2**14, help="histograms enumerated per model")

    def __post_init__(self) -> None:
        object.__setattr__(self, "confidence_level", check_confidence_level(self.confidence_level))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        if self.orders is not None:
            lam = check_orders(self.orders)
            if lam.size > 1 and not np.all(np.diff(lam) > 0):
                raise ValueError(f"orders must be strictly increasing, got {self.orders!r}")
            object.__setattr__(self, "orders", tuple(float(a) for a in lam))
        sel = check_orders(check_positive("selection_order", self.selection_order))
        object.__setattr__(self, "selection_order", float(sel[0]))
        check_choice("data_dependent_q", self.data_dependent_q, Q_BOUNDS)
        check_positive_int("max_support", self.max_support)

    def order_grid(self) -> np.ndarray:
        """The Rényi orders used."""
        from dpaudit.accounting import DEFAULT_ORDERS

        return np.asarray(DEFAULT_ORDERS if self.orders is None else self.orders, dtype=float)


@dataclasses.dataclass(frozen=True)
class PrivatePredictionSettings:
    """Everything an end-to-end private-prediction audit needs (validated on construction).

    Build it from a TOML file (:func:`dpaudit.experiments.load_config`), nested sections, or
    flat keyword arguments with :meth:`of`.
    """

    name: str = option("private-prediction", help="run name")
    seed: int = option(0, help="root seed of everything random")
    data: DataSettings = option(default_factory=DataSettings, help="the dataset")
    system: SystemSettings = option(default_factory=SystemSettings, help="the systems")
    adversary: AdversarySettings = option(default_factory=AdversarySettings, help="adversaries")
    engine: EngineSettings = option(default_factory=EngineSettings, help="the sampling engine")
    audit: AuditSettings = option(default_factory=AuditSettings, help="bound and claim")

    def __post_init__(self) -> None:
        _settings.check_sections(self)

    @classmethod
    def of(cls, **values: Any) -> PrivatePredictionSettings:
        """Settings from flat keyword arguments (leaf names or dotted paths), e.g.
        ``of(dataset="digits", teachers=30, systems=("capc",), experiments=10**6)``.

        Raises:
            ValueError: an unknown key or an invalid value.
        """
        return _settings.apply_overrides(cls(), values)

    @property
    def k(self) -> int:
        """Teachers per query (k)."""
        s = self.system
        return s.teachers if s.teachers_per_query is None else s.teachers_per_query
