"""Settings of the vote-leakage reproduction (Wang et al. 2022, arXiv:2209.10732).

One nested frozen settings tree (:mod:`dpaudit._settings`): the top level holds the seed, δ,
the output directory and the histograms to attack; one table per part of the evaluation —
``[query_limited]`` (Fig. 6), ``[budget_limited]`` (Fig. 4a), ``[noise_sweep]`` (§4.2) and
``[attribute_inference]`` (§2, App. E). Parsing is strict (:func:`dpaudit._settings.from_mapping`):
an unknown key, a wrong type (``"30"`` for an integer, ``true`` for a number) or a bad value is
a ``ValueError`` naming the key path, e.g. ``query_limited.sigmas``.

The shipped configuration of the full reproduction is ``dpaudit/configs/vote_leakage_mnist.toml``
(:func:`load_vote_leakage_config` ``("vote_leakage_mnist")``).

Example:
    >>> cfg = VoteLeakageConfig.from_dict({"seed": 3, "noise_sweep": {"sigmas": [20, 100]}})
    >>> cfg.seed, cfg.noise_sweep.sigmas, cfg.query_limited.num_queries
    (3, (20.0, 100.0), 10000)
    >>> VoteLeakageConfig.from_dict({"noise_sweep": {"repetitions": "5"}})
    Traceback (most recent call last):
    ...
    ValueError: noise_sweep.repetitions must be an integer, got '5' (str)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpaudit._results import ResultMixin
from dpaudit._settings import from_mapping, load_config, load_toml, option
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_in_range,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.experiments.vote_leakage.extraction import ESTIMATORS

__all__ = [
    "SHIPPED_CONFIGS",
    "AttributeConfig",
    "BudgetLimitedConfig",
    "NoiseSweepConfig",
    "QueryLimitedConfig",
    "VoteLeakageConfig",
    "load_vote_leakage_config",
]

#: Configurations shipped in ``dpaudit/configs`` (name → file).
SHIPPED_CONFIGS = {"vote_leakage_mnist": "configs/vote_leakage_mnist.toml"}
_INTERVALS = ("profile", "bootstrap", "none")


def _check_bool(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")


def _numbers(section: Any, table: str, name: str) -> None:
    """A non-empty tuple of positive numbers (stored as floats)."""
    key = f"{table}.{name}"
    value = getattr(section, name)
    if not isinstance(value, (tuple, list)) or not value:
        raise ValueError(f"{key} must be a non-empty list of numbers, got {value!r}")
    object.__setattr__(section, name, tuple(check_positive(key, v) for v in value))


def _positive(section: Any, table: str, *names: str) -> None:
    for name in names:
        object.__setattr__(section, name, check_positive(f"{table}.{name}", getattr(section, name)))


def _positive_ints(section: Any, table: str, *names: str) -> None:
    for name in names:
        check_positive_int(f"{table}.{name}", getattr(section, name))


@dataclasses.dataclass(frozen=True)
class QueryLimitedConfig(ResultMixin):
    """``[query_limited]``: the query-limited attack (Wang et al. 2022 Fig. 6)."""

    enabled: bool = option(True, help="run the query-limited attack")
    sigmas: tuple[float, ...] = option(
        (40.0, 60.0, 80.0, 100.0), help="GNMax noise levels σ of the interface"
    )
    num_queries: int = option(10_000, help="answers M per histogram and σ")
    repetitions: int = option(5, help="independent answer sets per cell (the paper ran one)")
    estimators: tuple[str, ...] = option(ESTIMATORS, help="reconstructions: mle, l2, paper")
    intervals: str = option("profile", help="per-class intervals: profile, bootstrap or none")
    paper_threshold: float = option(200.0, help="Confident-GNMax T of the paper's cost dots")
    paper_sigma1: float = option(150.0, help="Confident-GNMax σ1 of the paper's cost dots")

    def __post_init__(self) -> None:
        t = "query_limited"
        _check_bool(f"{t}.enabled", self.enabled)
        _numbers(self, t, "sigmas")
        _positive_ints(self, t, "num_queries", "repetitions")
        if not isinstance(self.estimators, (tuple, list)) or not self.estimators:
            raise ValueError(f"{t}.estimators must be a non-empty list, got {self.estimators!r}")
        object.__setattr__(
            self,
            "estimators",
            tuple(check_choice(f"{t}.estimators", e, ESTIMATORS) for e in self.estimators),
        )
        check_choice(f"{t}.intervals", self.intervals, _INTERVALS)
        object.__setattr__(
            self, "paper_threshold", check_real(f"{t}.paper_threshold", self.paper_threshold)
        )
        _positive(self, t, "paper_sigma1")


@dataclasses.dataclass(frozen=True)
class BudgetLimitedConfig(ResultMixin):
    """``[budget_limited]``: the canonical MNIST PATE (Papernot et al. 2018, arXiv:1802.08908)."""

    enabled: bool = option(True, help="run the budget-limited attack")
    threshold: float = option(200.0, help="Confident-GNMax threshold T")
    sigma1: float = option(150.0, help="Confident-GNMax threshold noise σ1")
    sigma2: float = option(40.0, help="Confident-GNMax answer noise σ2")
    budget: float = option(1.97, help="ε budget of the interface at delta")
    repetitions: int = option(3, help="independent attacks per histogram")
    batch_size: int = option(512, help="queries per predict call of the live attack")

    def __post_init__(self) -> None:
        t = "budget_limited"
        _check_bool(f"{t}.enabled", self.enabled)
        object.__setattr__(self, "threshold", check_real(f"{t}.threshold", self.threshold))
        _positive(self, t, "sigma1", "sigma2", "budget")
        _positive_ints(self, t, "repetitions", "batch_size")


@dataclasses.dataclass(frozen=True)
class NoiseSweepConfig(ResultMixin):
    """``[noise_sweep]``: more noise helps the attacker (Wang et al. 2022 §4.2)."""

    enabled: bool = option(True, help="run the noise sweep")
    sigmas: tuple[float, ...] = option(
        (5.0, 10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0, 150.0, 200.0, 300.0),
        help="GNMax noise grid (increasing)",
    )
    num_queries: int = option(10_000, help="answers M per histogram and σ")
    repetitions: int = option(5, help="answer sets per (histogram, σ)")

    def __post_init__(self) -> None:
        t = "noise_sweep"
        _check_bool(f"{t}.enabled", self.enabled)
        _numbers(self, t, "sigmas")
        _positive_ints(self, t, "num_queries", "repetitions")


@dataclasses.dataclass(frozen=True)
class AttributeConfig(ResultMixin):
    """``[attribute_inference]``: PhD inference on UCI Adult (Wang et al. 2022 §2, App. E)."""

    enabled: bool = option(True, help="run the attribute-inference experiment")
    num_teachers: int = option(250, help="random-forest teachers")
    n_estimators: int = option(100, help="trees per random forest")
    test_fraction: float = option(0.2, help="held-out share of the pooled data")
    threshold: float = option(0.75, help="consensus below this flags a PhD holder")
    sigma: float = option(40.0, help="GNMax σ of the private interface (end to end)")
    queries_per_individual: int = option(1000, help="repeated queries M per test individual")
    max_members: int | None = option(None, help="cap on PhD holders in the test set")
    end_to_end: bool = option(True, help="also extract the histograms through the interface")
    n_jobs: int = option(1, help="joblib workers for teacher training (-1: all cores)")

    def __post_init__(self) -> None:
        t = "attribute_inference"
        _check_bool(f"{t}.enabled", self.enabled)
        _check_bool(f"{t}.end_to_end", self.end_to_end)
        _positive_ints(self, t, "num_teachers", "n_estimators", "queries_per_individual")
        if self.max_members is not None:
            check_positive_int(f"{t}.max_members", self.max_members)
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise ValueError(f"{t}.n_jobs must be a non-zero integer, got {self.n_jobs!r}")
        check_in_range(f"{t}.test_fraction", self.test_fraction, 0.0, 1.0)
        check_in_range(f"{t}.threshold", self.threshold, 0.0, 1.0, high_inclusive=True)
        _positive(self, t, "sigma")


@dataclasses.dataclass(frozen=True)
class VoteLeakageConfig(ResultMixin):
    """The whole vote-leakage reproduction (Wang et al. 2022, arXiv:2209.10732).

    Top-level keys: ``seed``, ``delta``, ``out_dir``, ``histograms`` (figure labels to keep,
    e.g. ``["H1", "M1", "L1"]``; default all 15); tables ``[query_limited]``,
    ``[budget_limited]``, ``[noise_sweep]``, ``[attribute_inference]`` (fields as in the
    section classes; unknown keys are errors).
    """

    seed: int = option(0, help="root seed; every random stream is keyed from it")
    delta: float = option(1e-5, help="δ of every privacy cost")
    out_dir: str = option("runs/vote_leakage", help="output directory of the report")
    histograms: tuple[str, ...] | None = option(
        None, help="figure labels of the histograms to attack (default: all 15)"
    )
    query_limited: QueryLimitedConfig = option(
        default_factory=QueryLimitedConfig, help="query-limited attack (Fig. 6)"
    )
    budget_limited: BudgetLimitedConfig = option(
        default_factory=BudgetLimitedConfig, help="budget-limited attack (Fig. 4a)"
    )
    noise_sweep: NoiseSweepConfig = option(
        default_factory=NoiseSweepConfig, help="more noise helps the attacker (§4.2)"
    )
    attribute_inference: AttributeConfig = option(
        default_factory=AttributeConfig, help="PhD inference on UCI Adult (§2, App. E)"
    )

    def __post_init__(self) -> None:
        check_nonneg_int("seed", self.seed)
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        if not isinstance(self.out_dir, str):
            raise ValueError(f"out_dir must be a string, got {self.out_dir!r}")
        if self.histograms is not None:
            labels = self.histograms
            if not isinstance(labels, (list, tuple)) or not labels:
                raise ValueError(f"histograms must be a non-empty list of labels, got {labels!r}")
            from dpaudit.data import load_mnist_vote_histograms

            load_mnist_vote_histograms().subset(labels)  # validates the labels
            object.__setattr__(self, "histograms", tuple(labels))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VoteLeakageConfig:
        """Build and validate a config from a plain mapping (e.g. parsed TOML).

        Raises:
            ValueError: unknown keys, wrong types or bad values (the message names the key).
        """
        return from_mapping(cls, data)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> VoteLeakageConfig:
        """Read a TOML config file.

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid TOML or settings.
        """
        return load_toml(Path(path), cls)


def load_vote_leakage_config(path_or_name: str | os.PathLike[str]) -> VoteLeakageConfig:
    """A config from a TOML file, or a shipped one by name (:data:`SHIPPED_CONFIGS`).

    ``"vote_leakage_mnist"`` (also ``"vote_leakage_mnist.toml"`` or the former path
    ``"configs/vote_leakage_mnist.toml"`` when no such file exists) reads the package's copy.

    Raises:
        FileNotFoundError: neither a file nor a shipped name.
        ValueError: invalid TOML or settings.

    Example:
        >>> load_vote_leakage_config("vote_leakage_mnist").budget_limited.budget
        1.97
    """
    return load_config(os.fspath(path_or_name), VoteLeakageConfig)
