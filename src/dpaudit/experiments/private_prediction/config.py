"""TOML configs of the private-prediction audit, validated before any training.

A config is a TOML document with the sections of
:class:`~dpaudit.experiments.private_prediction.PrivatePredictionSettings` (``[data]``,
``[system]``, ``[adversary]``, ``[engine]``, ``[audit]``, and ``name`` / ``seed`` at the top).
It is parsed strictly by :mod:`dpaudit._settings` (unknown keys, wrong types such as
``teachers = "30"`` or ``teachers = true``, and bad values are a ``ValueError`` naming the key),
before a dataset is loaded or a teacher trained. Its JSON Schema is :func:`config_schema`.

Shipped configs live inside the package (``dpaudit/configs/*.toml``, read with
``importlib.resources``): ``demo`` (what ``make demo`` and ``dpaudit demo`` run),
``paper-mnist`` and ``paper-fashion-mnist`` (Chadha et al. 2024, arXiv:2402.09403, App. D.1).

Example:
    >>> s = parse_config({"data": {"dataset": "digits"}, "system": {"teachers": 20}})
    >>> s.system.teachers, s.k
    (20, 20)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpaudit import _settings
from dpaudit._settings import find_config, shipped_configs
from dpaudit.experiments.private_prediction.settings import PrivatePredictionSettings

__all__ = [
    "config_schema",
    "demo_settings",
    "find_config",
    "load_config",
    "parse_config",
    "shipped_configs",
]


def parse_config(
    data: Mapping[str, Any], *, overrides: Mapping[str, Any] | None = None
) -> PrivatePredictionSettings:
    """Validate a config mapping (and optional overrides) into settings.

    Args:
        data: the config's tables and values (as read from TOML).
        overrides: ``{dotted path or unique leaf name: value}`` replacing those of ``data``
            (``None`` values are ignored), e.g. command-line options.

    Returns:
        :class:`PrivatePredictionSettings`.

    Raises:
        ValueError: an unknown key, a value of the wrong type, or an invalid value (unknown
            dataset, k > m, σ ≤ 0, non-positive experiments, …); the message names the key.

    Example:
        >>> parse_config({"data": {"dataset": "mnist"}})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: [data] dataset must be one of (...), got 'mnist'
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"config must be a mapping of keys to values, got {type(data).__name__}")
    settings = _settings.from_mapping(PrivatePredictionSettings, data)
    return _settings.apply_overrides(settings, overrides or {})


def load_config(
    path: str | Path, *, overrides: Mapping[str, Any] | None = None
) -> PrivatePredictionSettings:
    """Read a TOML config file and validate it (see :func:`parse_config`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not valid TOML, or an invalid config (the message names the key).
    """
    settings = _settings.load_config(path, PrivatePredictionSettings)
    return _settings.apply_overrides(settings, overrides or {})


def demo_settings(*, overrides: Mapping[str, Any] | None = None) -> PrivatePredictionSettings:
    """The demo's settings (the shipped ``demo`` config)."""
    return load_config(find_config("demo"), overrides=overrides)


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a private-prediction config (derived from the settings classes)."""
    return _settings.schema(PrivatePredictionSettings)
