"""Settings of the private-prediction service: one nested frozen dataclass tree.

Sections: ``data`` and ``system`` (the same classes as the private-prediction audit,
:mod:`dpaudit.experiments.private_prediction.settings`: which registered system to train and
deploy, on which offline dataset), ``budget`` (the privacy accounting of the answers),
``server`` (where it listens, the durable ledger, limits, caching) and ``canary`` (a point
added to one teacher's part, to deploy the neighbouring dataset of a black-box audit). The
TOML schema and the ``dpaudit serve`` options are derived from these classes
(:mod:`dpaudit._settings`).

Example:
    >>> s = ServeSettings.of(teachers=20, sigma=4.0, ledger=":memory:")
    >>> s.system.systems, s.system.teachers, s.server.durable
    (('pate',), 20, False)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit import _settings
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
)
from dpaudit.experiments.private_prediction.settings import DataSettings, SystemSettings

__all__ = [
    "ANALYSES",
    "CONVERSIONS",
    "MEMORY_LEDGER",
    "SYNCHRONOUS",
    "BudgetSettings",
    "CanarySettings",
    "ServeSettings",
    "ServerSettings",
]

#: Accounting analyses of the answers (see :class:`BudgetSettings`).
ANALYSES: tuple[str, ...] = ("data-independent", "data-dependent")
#: RDP → (ε, δ) conversions (:func:`dpaudit.accounting.rdp_to_dp`).
CONVERSIONS: tuple[str, ...] = ("balle2020", "standard")
#: SQLite ``synchronous`` levels of the durable ledger.
SYNCHRONOUS: tuple[str, ...] = ("full", "normal")
#: ``server.ledger`` value that keeps the ledger in memory (no durability; benchmarks).
MEMORY_LEDGER = ":memory:"


def _default_system() -> SystemSettings:
    return SystemSettings(systems=("pate",))


@dataclasses.dataclass(frozen=True)
class BudgetSettings:
    """How the answers are accounted for, and the service-wide budget.

    ``analysis = "data-independent"`` (the default) charges every answer the same
    ``α/σ²`` (Papernot et al. 2018, arXiv:1802.08908, Prop. 8): the reported ε and every
    refusal are then independent of the data. ``"data-dependent"`` charges Thm 6 of the same
    paper per answer; that ε is itself a function of the votes (§4 there) and the budget
    responses publish it without the smooth-sensitivity release.
    """

    epsilon: float = option(
        10.0, help="global epsilon budget of the service (all clients)", flag="--global-epsilon"
    )
    client_epsilon: float = option(1.0, help="default epsilon budget of a new API key")
    delta: float = option(1e-5, help="delta at which every budget is enforced")
    analysis: str = option("data-independent", help="per-answer RDP: data-independent|-dependent")
    conversion: str = option("balle2020", help="RDP to (eps, delta): balle2020 or standard")
    orders: tuple[float, ...] | None = option(
        None, help="Renyi orders, comma-separated (dpaudit.accounting.DEFAULT_ORDERS if unset)"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(
            self, "client_epsilon", check_positive("client_epsilon", self.client_epsilon)
        )
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        check_choice("analysis", self.analysis, ANALYSES)
        check_choice("conversion", self.conversion, CONVERSIONS)
        if self.orders is not None:
            lam = check_orders(self.orders)
            if lam.size > 1 and not np.all(np.diff(lam) > 0):
                raise ValueError(f"orders must be strictly increasing, got {self.orders!r}")
            object.__setattr__(self, "orders", tuple(float(a) for a in lam))

    def order_grid(self) -> np.ndarray:
        """The Rényi orders used."""
        from dpaudit.accounting import DEFAULT_ORDERS

        return np.asarray(DEFAULT_ORDERS if self.orders is None else self.orders, dtype=float)


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """Where the service listens, its ledger, and its limits."""

    host: str = option("127.0.0.1", help="interface to bind (loopback by default)")
    port: int = option(8000, help="TCP port (0: an ephemeral port, printed at start)")
    ledger: str = option(
        "dpaudit-ledger.sqlite", help="SQLite ledger file (':memory:': not durable)"
    )
    synchronous: str = option("full", help="SQLite synchronous level of the ledger: full|normal")
    max_batch: int = option(256, help="most queries in one request")
    cache: bool = option(False, help="answer a repeated query with its first answer, free")
    record_votes: bool = option(
        True, help="record each answer's vote histogram in the ledger (for dpaudit monitor)"
    )
    noise_seed: int | None = option(
        None, help="seed of the answer noise (tests and reproductions only; fresh if unset)"
    )
    lifetime: float | None = option(None, help="stop by itself after this many seconds")
    access_log: bool = option(True, help="log one line per request (never the API key)")

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host.strip():
            raise ValueError(f"host must be a non-empty string, got {self.host!r}")
        port = check_nonneg_int("port", self.port)
        if port > 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        if not isinstance(self.ledger, str) or not self.ledger.strip():
            raise ValueError(f"ledger must be a file path or ':memory:', got {self.ledger!r}")
        if self.durable and Path(self.ledger).is_dir():
            raise ValueError(f"ledger must be a file, but {self.ledger!r} is a directory")
        check_choice("synchronous", self.synchronous, SYNCHRONOUS)
        check_positive_int("max_batch", self.max_batch)
        if self.noise_seed is not None:
            check_nonneg_int("noise_seed", self.noise_seed)
        if self.lifetime is not None:
            object.__setattr__(self, "lifetime", check_positive("lifetime", self.lifetime))

    @property
    def durable(self) -> bool:
        """Whether the ledger is a SQLite file (False for ``:memory:``)."""
        return self.ledger != MEMORY_LEDGER


@dataclasses.dataclass(frozen=True)
class CanarySettings:
    """A point added to one teacher's part: the service then deploys S′ = S ∪ {point}.

    For black-box audits over HTTP (:func:`dpaudit.attacks.distinguish_remote`): two services
    from one config, one with the canary, are the neighbouring pair. Only that teacher is
    retrained (same seed), every other teacher is the same (Chadha et al. 2024,
    arXiv:2402.09403, Alg. 1 with the crafted point; CaPC's chosen party, or PATE conditioned
    on its partition).
    """

    features: tuple[float, ...] | None = option(
        None, help="features of the point S' adds (audit deployments)", flag="--canary-features"
    )
    label: int | None = option(None, help="its label", flag="--canary-label")
    teacher: int = option(0, help="the teacher (part) that receives it", flag="--canary-teacher")

    def __post_init__(self) -> None:
        if (self.features is None) != (self.label is None):
            raise ValueError("canary features and label must be given together")
        if self.label is not None:
            check_nonneg_int("label", self.label)
        check_nonneg_int("teacher", self.teacher)
        if self.features is not None and not all(np.isfinite(self.features)):
            raise ValueError("canary features must be finite numbers")

    @property
    def enabled(self) -> bool:
        """Whether a point is added."""
        return self.features is not None


@dataclasses.dataclass(frozen=True)
class ServeSettings:
    """Everything ``dpaudit serve`` needs: the system to deploy, its budget, the server.

    Build it from a TOML file (:func:`dpaudit._settings.load_toml`), nested sections, or
    flat keyword arguments with :meth:`of`.
    """

    name: str = option("dpaudit-serve", help="service name")
    seed: int = option(0, help="seed of the data subset and the teachers' training")
    data: DataSettings = option(default_factory=DataSettings, help="the training data")
    system: SystemSettings = option(default_factory=_default_system, help="the system")
    budget: BudgetSettings = option(default_factory=BudgetSettings, help="privacy budget")
    server: ServerSettings = option(default_factory=ServerSettings, help="the server")
    canary: CanarySettings = option(default_factory=CanarySettings, help="the point S' adds")

    def __post_init__(self) -> None:
        _settings.check_sections(self)
        if len(self.system.systems) != 1:
            raise ValueError(
                f"system.systems must name exactly one system to serve, got {self.system.systems}"
            )
        if self.budget.client_epsilon > self.budget.epsilon:
            raise ValueError(
                f"budget.client_epsilon={self.budget.client_epsilon} exceeds the global "
                f"budget.epsilon={self.budget.epsilon}"
            )

    @property
    def system_name(self) -> str:
        """The one registered system served."""
        return self.system.systems[0]

    @classmethod
    def of(cls, **values: Any) -> ServeSettings:
        """Settings from flat keyword arguments (leaf names or dotted paths), e.g.
        ``of(teachers=20, ledger=":memory:", max_batch=64)``.

        Raises:
            ValueError: an unknown, ambiguous or invalid setting.
        """
        return _settings.apply_overrides(cls(), values)
