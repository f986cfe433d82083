"""TOML configs of the private-prediction audit, validated before any training.

A config is a flat TOML table whose keys are the fields of
:class:`dpaudit.experiments.private_prediction.PrivatePredictionSettings`. It is checked in
two steps, both before a dataset is loaded or a teacher trained:

1. a pydantic model (``extra="forbid"``, the ``cli`` extra; imported lazily) checks the
   types and rejects unknown keys;
2. the settings dataclass checks the values: unknown dataset, ``teachers_per_query > teachers``
   (k > m), ``sigma ≤ 0``, non-positive ``experiments``, … — each error names the key.

Shipped configs (``configs/`` at the repository root): ``demo.toml`` (what ``make demo`` and
``dpaudit demo`` run), ``paper-mnist.toml`` and ``paper-fashion-mnist.toml`` (paper 000
App. D.1: 250 teachers, σ = 40, 1000 queries, 10^8 experiments per query).

Example:
    >>> s = parse_config({"dataset": "digits", "teachers": 20, "sigma": 3.0, "queries": 10})
    >>> s.teachers, s.k
    (20, 20)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomllib

from dpaudit.errors import require
from dpaudit.experiments.private_prediction import PrivatePredictionSettings

__all__ = [
    "CONFIG_DIR",
    "DEMO_CONFIG",
    "config_model",
    "demo_settings",
    "find_config",
    "load_config",
    "parse_config",
]

#: ``configs/`` of a source checkout (editable install); absent in a wheel.
CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs"

#: The demo (``configs/demo.toml`` holds the same values; a test keeps them equal): digits,
#: 30 teachers (≈ 45 training images each), σ = 4 (σ/m as paper 000's 40/250 ≈ 0.16 …
#: slightly lower), PATE and CaPC, all three adversaries, 40 queries, 10^8 experiments per
#: query (exact sampler). About a minute on 2 cores.
DEMO_CONFIG: Mapping[str, Any] = MappingProxyType(
    {
        "name": "demo",
        "dataset": "digits",
        "algorithms": ["pate", "capc"],
        "adversaries": ["nat-advq", "pois-advq", "pois-natq"],
        "teachers": 30,
        "sigma": 4.0,
        "queries": 40,
        "experiments": 100_000_000,
        "instantiations": 3,
        "retrainings": 8,
        "seed": 0,
    }
)


@functools.lru_cache(maxsize=1)
def config_model():
    """The pydantic model of a config file (built on first use; needs the ``cli`` extra).

    Returns:
        A ``pydantic.BaseModel`` subclass with one optional field per settings field and
        ``extra="forbid"``.
    """
    pydantic = require("pydantic", "cli")

    class PrivatePredictionConfig(pydantic.BaseModel):
        """Schema of a private-prediction audit config (TOML)."""

        model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

        name: str | None = None
        dataset: str | None = None
        algorithms: list[str] | str | None = None
        adversaries: list[str] | str | None = None
        teachers: int | None = None
        teachers_per_query: int | None = None
        sigma: float | None = None
        queries: int | None = None
        candidate_queries: int | None = None
        experiments: int | None = None
        instantiations: int | None = None
        retrainings: int | None = None
        estimator: str | None = None
        neighbour_estimator: str | None = None
        data_dependent_q: str | None = None
        sampler: str | None = None
        block_size: int | None = None
        executor: str | None = None
        workers: int | None = None
        n_jobs: int | None = None
        confidence_level: float | None = None
        delta: float | None = None
        orders: list[float] | None = None
        selection_order: float | None = None
        seed: int | None = None
        n_train: int | None = None
        n_test: int | None = None
        max_support: int | None = None

    return PrivatePredictionConfig


def parse_config(
    data: Mapping[str, Any], *, overrides: Mapping[str, Any] | None = None
) -> PrivatePredictionSettings:
    """Validate a config mapping (and optional overrides) into settings.

    Args:
        data: the config's keys and values (as read from TOML).
        overrides: values that replace those of ``data`` (``None`` values are ignored), e.g.
            command-line options.

    Returns:
        :class:`PrivatePredictionSettings`.

    Raises:
        ValueError: an unknown key, a value of the wrong type, or an invalid value (unknown
            dataset, k > m, σ ≤ 0, non-positive experiments, …); the message names the key.

    Example:
        >>> parse_config({"dataset": "mnist"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: dataset must be one of (...), got 'mnist'
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"config must be a mapping of keys to values, got {type(data).__name__}")
    merged = dict(data)
    for key, value in (overrides or {}).items():
        if value is not None:
            merged[key] = value
    pydantic = require("pydantic", "cli")
    try:
        model = config_model()(**merged)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"invalid config: {problems}") from None
    values = {k: v for k, v in model.model_dump().items() if v is not None}
    for key in ("algorithms", "adversaries", "orders"):
        if key in values and not isinstance(values[key], str):
            values[key] = tuple(values[key])
    return PrivatePredictionSettings(**values)


def load_config(
    path: str | Path, *, overrides: Mapping[str, Any] | None = None
) -> PrivatePredictionSettings:
    """Read a TOML config file and validate it (see :func:`parse_config`).

    Args:
        path: the ``.toml`` file.
        overrides: values replacing the file's (``None`` ignored).

    Returns:
        :class:`PrivatePredictionSettings`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not valid TOML, or an invalid config (the message names the key).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {str(p)!r} is not valid TOML: {exc}") from exc
    return parse_config(data, overrides=overrides)


def find_config(name: str) -> Path:
    """Path of a shipped config by name (``"demo"``, ``"paper-mnist"``,
    ``"paper-fashion-mnist"``) or file name.

    Raises:
        FileNotFoundError: not found in :data:`CONFIG_DIR`.
    """
    stem = name[:-5] if name.endswith(".toml") else name
    path = CONFIG_DIR / f"{stem}.toml"
    if not path.is_file():
        raise FileNotFoundError(
            f"config {name!r} not found in {str(CONFIG_DIR)!r} (available: "
            f"{sorted(p.stem for p in CONFIG_DIR.glob('*.toml')) if CONFIG_DIR.is_dir() else []})"
        )
    return path


def demo_settings(*, overrides: Mapping[str, Any] | None = None) -> PrivatePredictionSettings:
    """The demo's settings: ``configs/demo.toml`` when present, else :data:`DEMO_CONFIG`."""
    path = CONFIG_DIR / "demo.toml"
    if path.is_file():
        return load_config(path, overrides=overrides)
    return parse_config(DEMO_CONFIG, overrides=overrides)
