"""Settings of the label-DP audit: one nested frozen dataclass tree.

The reproduction of Malek, Mironov, Prasad, Shilov & Tramèr 2021 ("Antipodes of Label
Differential Privacy", arXiv:2106.03408, Tables 1 and 6): label-DP mechanisms trained at
several *accuracy levels*, each with flipped-label canaries, the memorization attack and the
claim. Sections:

* top level — ``name``, ``seed``, ``mechanisms`` (which systems run), ``delta``;
* ``[data]`` — the dataset and its seeded subset; ``[canaries]`` — N;
* ``[levels]`` — the names of the accuracy levels; one list entry per level in each of
  ``[alibi]`` (claimed ε), ``[agibi]`` (σ), ``[rr]`` (ε), ``[soft_rr]`` (claimed ε) and
  ``[pate]`` (teachers, T, σ1, σ2, query budget, answers K) — the noise that gives each
  mechanism the level's accuracy;
* ``[training]`` — network and optimiser (:class:`dpaudit.systems.label_dp.TrainingSettings`);
  ``[consistency]`` — PATE-FM's semi-supervised objective
  (:class:`dpaudit.systems.label_dp.ConsistencySettings`);
* ``[attack]`` — the abstention-threshold grid, how τ is chosen (held-out half or
  Bonferroni), the confidence level and the variant reported as the lower bound;
* ``[validation]`` — App. C: extra runs with N/runs canaries each, pooled.

Parsing is strict (:mod:`dpaudit._settings`); every rule lives in a ``__post_init__``, so bad
input (noise ≤ 0, a budget ≤ 0, lists of the wrong length, an unknown mechanism) is a
``ValueError`` naming the key before any data are loaded or any model trained. The shipped
configurations are ``label-dp-demo`` and ``label-dp-fashion-mnist``
(:func:`load_label_dp_config`).

Example:
    >>> s = LabelDPSettings()
    >>> s.levels.names, s.mechanisms
    (('high', 'medium', 'low'), ('alibi', 'agibi', 'rr', 'pate-fm'))
    >>> from_mapping(LabelDPSettings, {"alibi": {"epsilons": [8, 4]}})
    Traceback (most recent call last):
    ...
    ValueError: alibi.epsilons must list one value per accuracy level (3), got 2
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from dpaudit._settings import from_mapping, load_config, option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_in_range,
    check_positive,
    check_positive_int,
)
from dpaudit.attacks import DEFAULT_ATTACK_THRESHOLDS
from dpaudit.systems.label_dp import (
    PRIORS,
    AGIBICell,
    ALIBICell,
    ConsistencySettings,
    PATEFMCell,
    RRCell,
    SoftRRCell,
    TrainingSettings,
)

__all__ = [
    "LABEL_DP_CONFIGS",
    "LABEL_DP_MECHANISMS",
    "AGIBISettings",
    "ALIBISettings",
    "AttackSettings",
    "CanarySettings",
    "DataSettings",
    "LabelDPSettings",
    "LevelSettings",
    "PATESettings",
    "RRSettings",
    "SoftRRSettings",
    "ValidationSettings",
    "from_mapping",
    "load_label_dp_config",
]

#: The mechanisms of the audit, in table order.
LABEL_DP_MECHANISMS: tuple[str, ...] = ("alibi", "agibi", "rr", "soft-rr", "pate-fm")
#: Shipped configurations (name → file in ``dpaudit/configs``).
LABEL_DP_CONFIGS = {
    "label-dp-demo": "label-dp-demo.toml",
    "label-dp-fashion-mnist": "label-dp-fashion-mnist.toml",
}
_DATASETS = ("digits", "mnist-5k", "fashion-mnist", "adult")
_VARIANTS = ("cgr", "acgr")
#: The section of each mechanism's per-level settings (``pate-fm`` is ``[pate]``).
_SECTIONS = {
    "alibi": "alibi",
    "agibi": "agibi",
    "rr": "rr",
    "soft-rr": "soft_rr",
    "pate-fm": "pate",
}


def _names(field: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(v).strip().lower() for v in items if str(v).strip())
    if not names:
        raise ValueError(f"{field} must name at least one of {allowed}, got {value!r}")
    for n in names:
        check_choice(field, n, allowed)
    return tuple(dict.fromkeys(names))


def _positives(section: Any, key: str, field: str, *, integer: bool = False) -> None:
    values = getattr(section, field)
    if not isinstance(values, tuple) or not values:
        raise ValueError(f"{key} must be a non-empty list, got {values!r}")
    check = check_positive_int if integer else check_positive
    object.__setattr__(section, field, tuple(check(key, v) for v in values))


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """The dataset and its seeded subset (offline; :mod:`dpaudit.data`)."""

    dataset: str = option("fashion-mnist", help="digits, mnist-5k or fashion-mnist")
    n_train: int | None = option(6000, help="training rows kept (seeded subset; all if unset)")
    n_test: int | None = option(2000, help="test rows kept (all if unset)")

    def __post_init__(self) -> None:
        check_choice("data.dataset", self.dataset, _DATASETS)
        for name in ("n_train", "n_test"):
            if getattr(self, name) is not None:
                check_positive_int(f"data.{name}", getattr(self, name))


@dataclasses.dataclass(frozen=True)
class CanarySettings:
    """Game 3's canaries (Malek et al. 2021 App. B)."""

    count: int = option(300, help="N flipped-label canaries in the training set", flag="--canaries")

    def __post_init__(self) -> None:
        check_positive_int("canaries.count", self.count)


@dataclasses.dataclass(frozen=True)
class LevelSettings:
    """The accuracy levels (one entry per level in every mechanism's lists)."""

    names: tuple[str, ...] = option(
        ("high", "medium", "low"), help="accuracy-level names, comma-separated", flag="--levels"
    )

    def __post_init__(self) -> None:
        if not isinstance(self.names, tuple) or not self.names:
            raise ValueError(f"levels.names must be a non-empty list, got {self.names!r}")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"levels.names must be distinct, got {self.names!r}")


@dataclasses.dataclass(frozen=True)
class ALIBISettings:
    """ALIBI per level: its claimed ε (Laplace scale b = 2/ε) and the prior."""

    epsilons: tuple[float, ...] = option(
        (8.0, 4.0, 2.0), help="ALIBI's claimed epsilon per level", flag="--alibi-epsilons"
    )
    prior: str = option("model", help="posterior prior: model or uniform", flag="--alibi-prior")

    def __post_init__(self) -> None:
        _positives(self, "alibi.epsilons", "epsilons")
        check_choice("alibi.prior", self.prior, PRIORS)

    def cell(self, run: LabelDPSettings, level: int, num_classes: int) -> ALIBICell:
        """ALIBI's settings cell at accuracy level ``level``."""
        return ALIBICell(self.epsilons[level], self.prior, run.training)


@dataclasses.dataclass(frozen=True)
class AGIBISettings:
    """AGIBI per level: the Gaussian noise σ."""

    sigmas: tuple[float, ...] = option(
        (0.5, 0.8, 1.2), help="AGIBI's noise sigma per level", flag="--agibi-sigmas"
    )
    prior: str = option("model", help="posterior prior: model or uniform", flag="--agibi-prior")

    def __post_init__(self) -> None:
        _positives(self, "agibi.sigmas", "sigmas")
        check_choice("agibi.prior", self.prior, PRIORS)

    def cell(self, run: LabelDPSettings, level: int, num_classes: int) -> AGIBICell:
        """AGIBI's settings cell at accuracy level ``level``."""
        return AGIBICell(self.sigmas[level], self.prior, run.delta, run.training)


@dataclasses.dataclass(frozen=True)
class RRSettings:
    """Randomized response per level: ε."""

    epsilons: tuple[float, ...] = option(
        (4.0, 2.5, 1.5), help="randomized response's epsilon per level", flag="--rr-epsilons"
    )

    def __post_init__(self) -> None:
        _positives(self, "rr.epsilons", "epsilons")

    def cell(self, run: LabelDPSettings, level: int, num_classes: int) -> RRCell:
        """Randomized response's settings cell at accuracy level ``level`` (C classes)."""
        return RRCell(self.epsilons[level], num_classes, run.training)


@dataclasses.dataclass(frozen=True)
class SoftRRSettings:
    """Soft-RR (Laplace + simplex projection) per level: its claimed ε (b = 2/ε)."""

    epsilons: tuple[float, ...] = option(
        (8.0, 4.0, 2.0), help="Soft-RR's claimed epsilon per level", flag="--soft-rr-epsilons"
    )

    def __post_init__(self) -> None:
        _positives(self, "soft_rr.epsilons", "epsilons")

    def cell(self, run: LabelDPSettings, level: int, num_classes: int) -> SoftRRCell:
        """Soft-RR's settings cell at accuracy level ``level``."""
        return SoftRRCell(self.epsilons[level], run.training)


@dataclasses.dataclass(frozen=True)
class PATESettings:
    """PATE-FM per level (Malek et al. 2021 Table 3 layout) and its training budget."""

    teachers: tuple[int, ...] = option(
        (10, 20, 20), help="teachers m per level", flag="--pate-teachers"
    )
    thresholds: tuple[float, ...] = option(
        (7.0, 14.0, 14.0), help="Confident-GNMax threshold T per level", flag="--pate-thresholds"
    )
    sigma1: tuple[float, ...] = option(
        (3.0, 6.0, 8.0), help="threshold-step noise sigma1 per level", flag="--pate-sigma1"
    )
    sigma2: tuple[float, ...] = option(
        (1.5, 3.0, 5.0), help="answer-step noise sigma2 per level", flag="--pate-sigma2"
    )
    queries: tuple[int, ...] = option(
        (600, 600, 600), help="student query budget per level", flag="--pate-queries"
    )
    answers: tuple[int, ...] = option(
        (300, 300, 300), help="answers K the student stops at, per level", flag="--pate-answers"
    )
    teacher_steps: int = option(300, help="optimisation steps per teacher")
    batch_size: int = option(
        64, help="labelled rows per step of teachers and student", flag="--pate-batch-size"
    )
    student_steps: int = option(1000, help="optimisation steps of the student")
    order: float | None = option(
        None, help="Renyi order of the smooth-sensitivity release (dd optimum if unset)"
    )

    def __post_init__(self) -> None:
        for name in ("teachers", "queries", "answers"):
            _positives(self, f"pate.{name}", name, integer=True)
        for name in ("thresholds", "sigma1", "sigma2"):
            _positives(self, f"pate.{name}", name)
        for m in self.teachers:
            if m < 2:
                raise ValueError(f"pate.teachers must be at least 2, got {m}")
        for q, k in zip(self.queries, self.answers, strict=False):
            if k > q:
                raise ValueError(f"pate.answers must be at most pate.queries ({q}), got {k}")
        check_positive_int("pate.teacher_steps", self.teacher_steps)
        check_positive_int("pate.batch_size", self.batch_size)
        check_positive_int("pate.student_steps", self.student_steps)
        if self.order is not None and check_positive("pate.order", self.order) <= 1:
            raise ValueError(f"pate.order must be > 1, got {self.order}")

    def cell(self, run: LabelDPSettings, level: int, num_classes: int) -> PATEFMCell:
        """PATE-FM's settings cell at accuracy level ``level`` (teachers and student train
        with ``pate.batch_size``)."""
        return PATEFMCell(
            num_teachers=self.teachers[level], threshold=self.thresholds[level],
            sigma1=self.sigma1[level], sigma2=self.sigma2[level], queries=self.queries[level],
            answers=self.answers[level], teacher_steps=self.teacher_steps,
            student_steps=self.student_steps,
            training=dataclasses.replace(run.training, batch_size=self.batch_size),
            consistency=run.consistency, delta=run.delta, order=self.order,
        )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class AttackSettings:
    """The memorization attack: thresholds, how τ is chosen, the statistics."""

    thresholds: tuple[float, ...] = option(
        DEFAULT_ATTACK_THRESHOLDS, help="abstention-threshold grid in [0, 1]", flag="--thresholds"
    )
    selection: str = option("split", help="how tau is paid for: split or bonferroni")
    split_fraction: float = option(0.5, help="share of the canaries that chooses tau (split)")
    confidence_level: float = option(0.95, help="1 - beta of the lower bounds")
    variant: str = option("cgr", help="lower bound reported per entry: cgr (exact CP) or acgr")

    def __post_init__(self) -> None:
        if not isinstance(self.thresholds, tuple) or not self.thresholds:
            raise ValueError(f"attack.thresholds must be a non-empty list, got {self.thresholds!r}")
        for t in self.thresholds:
            check_in_range(
                "attack.thresholds", t, 0.0, 1.0, low_inclusive=True, high_inclusive=True
            )
        check_choice("attack.selection", self.selection, ("split", "bonferroni"))
        check_in_range("attack.split_fraction", self.split_fraction, 0.0, 1.0)
        check_confidence_level(self.confidence_level, "attack.confidence_level")
        check_choice("attack.variant", self.variant, _VARIANTS)


@dataclasses.dataclass(frozen=True)
class ValidationSettings:
    """Malek et al. 2021 App. C: one run with N canaries against ``runs`` runs with N/runs."""

    runs: int = option(0, help="runs with N/runs canaries each (0: skip)", flag="--validation-runs")
    mechanism: str = option("alibi", help="mechanism validated", flag="--validation-mechanism")
    level: str = option("high", help="accuracy level validated", flag="--validation-level")

    def __post_init__(self) -> None:
        if self.runs != 0 and check_positive_int("validation.runs", self.runs) < 2:
            raise ValueError(f"validation.runs must be 0 (skip) or at least 2, got {self.runs}")
        check_choice("validation.mechanism", self.mechanism, LABEL_DP_MECHANISMS)


@dataclasses.dataclass(frozen=True)
class LabelDPSettings:
    """Everything one label-DP audit run needs (module notes)."""

    name: str = option("label-dp", help="run name")
    seed: int = option(0, help="root seed of data, canaries, noise, training and splits")
    mechanisms: tuple[str, ...] = option(
        ("alibi", "agibi", "rr", "pate-fm"),
        help="mechanisms to train and attack, comma-separated",
        flag="--mechanism",
    )
    delta: float = option(1e-5, help="delta of the (epsilon, delta) claims")
    data: DataSettings = option(default_factory=DataSettings, help="dataset")
    canaries: CanarySettings = option(default_factory=CanarySettings, help="canaries")
    levels: LevelSettings = option(default_factory=LevelSettings, help="accuracy levels")
    alibi: ALIBISettings = option(default_factory=ALIBISettings, help="ALIBI")
    agibi: AGIBISettings = option(default_factory=AGIBISettings, help="AGIBI")
    rr: RRSettings = option(default_factory=RRSettings, help="randomized response")
    soft_rr: SoftRRSettings = option(default_factory=SoftRRSettings, help="Soft-RR")
    pate: PATESettings = option(default_factory=PATESettings, help="PATE-FM")
    training: TrainingSettings = option(default_factory=TrainingSettings, help="training")
    consistency: ConsistencySettings = option(
        default_factory=ConsistencySettings, help="PATE-FM's consistency objective"
    )
    attack: AttackSettings = option(default_factory=AttackSettings, help="the attack")
    validation: ValidationSettings = option(
        default_factory=ValidationSettings, help="App. C validation"
    )

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        names = _names("mechanisms", self.mechanisms, LABEL_DP_MECHANISMS)
        object.__setattr__(self, "mechanisms", names)
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        self._check_level_lists()
        n_train = self.data.n_train
        if n_train is not None and self.canaries.count > n_train:
            raise ValueError(
                f"canaries.count={self.canaries.count} is larger than the training set "
                f"(data.n_train={n_train})"
            )
        v = self.validation
        if v.runs:
            if v.mechanism not in names:
                raise ValueError(f"validation.mechanism {v.mechanism!r} is not in mechanisms")
            if v.level not in self.levels.names:
                raise ValueError(f"validation.level {v.level!r} is not one of levels.names")
            if self.canaries.count < 2 * v.runs:
                raise ValueError(
                    f"canaries.count={self.canaries.count} is too small for "
                    f"validation.runs={v.runs} (N/runs canaries each, at least 2)"
                )

    def _check_level_lists(self) -> None:
        k = len(self.levels.names)
        lists = {
            "alibi": {"alibi.epsilons": self.alibi.epsilons},
            "agibi": {"agibi.sigmas": self.agibi.sigmas},
            "rr": {"rr.epsilons": self.rr.epsilons},
            "soft-rr": {"soft_rr.epsilons": self.soft_rr.epsilons},
            "pate-fm": {
                f"pate.{f}": getattr(self.pate, f)
                for f in ("teachers", "thresholds", "sigma1", "sigma2", "queries", "answers")
            },
        }
        for mech in self.mechanisms:
            for key, values in lists[mech].items():
                if len(values) != k:
                    raise ValueError(
                        f"{key} must list one value per accuracy level ({k}), got {len(values)}"
                    )

    def system_cell(self, mechanism: str, level: int, num_classes: int) -> Any:
        """The settings cell of ``mechanism`` at accuracy level ``level`` (index), from its
        section: what ``SYSTEMS.get(mechanism)`` takes."""
        return getattr(self, _SECTIONS[mechanism]).cell(self, level, num_classes)

    @property
    def cells(self) -> list[tuple[str, str, int]]:
        """(level, mechanism, level index) in table order: levels outer, mechanisms inner."""
        return [
            (level, mech, i)
            for i, level in enumerate(self.levels.names)
            for mech in self.mechanisms
        ]


def load_label_dp_config(name_or_path: str | Path) -> LabelDPSettings:
    """Settings from a shipped configuration name or a TOML file.

    Args:
        name_or_path: ``"label-dp-demo"``, ``"label-dp-fashion-mnist"`` or a path.

    Raises:
        FileNotFoundError: neither a shipped name nor an existing file.
        ValueError: invalid settings (the message names the key).

    Example:
        >>> load_label_dp_config("label-dp-demo").data.dataset
        'fashion-mnist'
    """
    return load_config(name_or_path, LabelDPSettings)
