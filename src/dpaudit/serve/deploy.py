"""Deploy a registered system from :class:`~dpaudit.serve.settings.ServeSettings`.

:func:`build_service` loads the offline training data, trains the system once
(``system.build(X, y, rng=seed)``, e.g. :meth:`dpaudit.systems.PATE.build`), opens the
ledger (SQLite file, or memory) for the system's mechanism, and returns the
:class:`~dpaudit.serve.service.PredictionService`. Any system registered in
:data:`dpaudit.systems.SYSTEMS` whose object has a ``build`` returning a private-prediction
interface (teachers' ``votes`` and a GNMax / Confident-GNMax ``aggregator``) can be served.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit.serve.ledger import LedgerBase, LedgerConfig, MemoryLedger
from dpaudit.serve.service import PredictionService
from dpaudit.serve.settings import ServeSettings
from dpaudit.serve.sqlite_ledger import SQLiteLedger

__all__ = ["TrainingData", "build_service", "load_training_data", "noise_generator", "open_ledger"]


@dataclasses.dataclass(frozen=True, eq=False)
class TrainingData:
    """The rows a service's teachers are trained on.

    Attributes:
        dataset: the dataset's name.
        X: features ``(n, d)``.
        y: labels ``(n,)``.
        num_classes: C.
    """

    dataset: str
    X: np.ndarray
    y: np.ndarray
    num_classes: int


def load_training_data(settings: ServeSettings) -> TrainingData:
    """The training rows of ``settings.data``, subset as the private-prediction audit does
    (a seeded subset of ``n_train`` rows).

    Raises:
        MissingDatasetError: the dataset is not installed (the message says what to do).
        ValueError: fewer training rows than teachers.
    """
    from dpaudit.data import load_subset

    d = settings.data
    ds = load_subset(d.dataset, n_train=d.n_train, n_test=d.n_test, seed=settings.seed)
    X, y = ds.X_train, ds.y_train
    if settings.system.teachers > X.shape[0]:
        raise ValueError(
            f"teachers must be at most the {X.shape[0]} training rows of {ds.name}, got "
            f"{settings.system.teachers}"
        )
    return TrainingData(ds.name, np.asarray(X), np.asarray(y), int(ds.num_classes))


def noise_generator(seed: int | None, start: int) -> np.random.Generator:
    """The answer-noise generator of one server start.

    ``seed=None``: fresh OS entropy. Otherwise start 0 uses ``default_rng(seed)`` (what an
    in-process interface given ``rng=seed`` uses) and start ``s > 0`` the independent stream
    ``SeedSequence(seed, spawn_key=(s,))``, so a restarted service never replays the noise of
    an earlier start (replayed noise on other queries would correlate answers the accounting
    assumes independent).
    """
    if seed is None:
        return np.random.default_rng()
    if start == 0:
        return np.random.default_rng(seed)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(start,)))


def open_ledger(settings: ServeSettings, mechanism: Any) -> LedgerBase:
    """The ledger of ``settings`` for ``mechanism``: SQLite (durable) or memory."""
    b = settings.budget
    config = LedgerConfig(
        mechanism=mechanism,
        orders=tuple(b.order_grid()),
        delta=b.delta,
        analysis=b.analysis,
        conversion=b.conversion,
    )
    if settings.server.durable:
        return SQLiteLedger(
            settings.server.ledger,
            config,
            global_budget=b.epsilon,
            synchronous=settings.server.synchronous,
        )
    return MemoryLedger(config, global_budget=b.epsilon)


def _with_canary(interface: Any, settings: ServeSettings) -> Any:
    """The interface whose teacher ``canary.teacher`` is retrained with the canary added."""
    from dpaudit.systems import PrivatePredictor

    c = settings.canary
    ens = interface.ensemble
    if len(c.features) != ens.num_features:
        raise ValueError(
            f"canary.features must have {ens.num_features} values, got {len(c.features)}"
        )
    if c.label >= ens.num_classes:
        raise ValueError(f"canary.label must be below {ens.num_classes}, got {c.label}")
    if c.teacher >= ens.num_teachers:
        raise ValueError(f"canary.teacher must be below {ens.num_teachers}, got {c.teacher}")
    neighbour = ens.with_point(
        np.asarray(c.features, dtype=np.float64), c.label, partition=c.teacher
    )
    return PrivatePredictor(
        neighbour, interface.aggregator, teachers_per_query=interface.teachers_per_query
    )


def build_service(
    settings: ServeSettings,
    *,
    data: TrainingData | None = None,
    ledger: LedgerBase | None = None,
    progress: bool = False,
) -> PredictionService:
    """Train the configured system and put it behind a ledger.

    With ``settings.canary`` the deployed teachers are those of S′ = S ∪ {canary}: the
    receiving teacher retrained with it, every other one unchanged.

    Args:
        settings: the service's settings.
        data: training rows (default: :func:`load_training_data`).
        ledger: a ledger to use instead of opening ``settings.server.ledger``.
        progress: rich progress bars while the teachers train.

    Returns:
        The :class:`~dpaudit.serve.service.PredictionService`.

    Raises:
        ValueError: the system cannot be deployed (no ``build``), bad data, a ledger file
            made for another mechanism.
    """
    from dpaudit.systems import SYSTEMS

    if not isinstance(settings, ServeSettings):
        raise TypeError(f"settings must be ServeSettings, got {type(settings).__name__}")
    system = SYSTEMS.get(settings.system_name)(settings.system)
    if not callable(getattr(system, "build", None)):
        raise ValueError(
            f"system {settings.system_name!r} has no build(X, y, ...) returning a deployable "
            "interface; it cannot be served"
        )
    rows = load_training_data(settings) if data is None else data
    led = open_ledger(settings, system.mechanism) if ledger is None else ledger  # before training
    try:
        interface = system.build(
            rows.X, rows.y, rng=settings.seed, num_classes=rows.num_classes, progress=progress
        )
    except BaseException:
        if ledger is None:
            led.close()
        raise
    if settings.canary.enabled:
        interface = _with_canary(interface, settings)
    start = led.record_start() if hasattr(led, "record_start") else 0
    return PredictionService(
        interface,
        led,
        name=settings.name,
        system=settings.system_name,
        max_batch=settings.server.max_batch,
        cache=settings.server.cache,
        noise_rng=noise_generator(settings.server.noise_seed, start),
        record_votes=settings.server.record_votes,
    )
