"""Settings of the one-run DP-SGD audit: one tree, from which TOML and CLI are derived.

Sections (``dpaudit audit dp-sgd``; shipped configs ``dp-sgd-*.toml``):

* ``[data]`` — the pool (train and test rows of an offline dataset, concatenated), the r
  non-canary training examples and the non-member holdout of the quantile-regression attack;
* ``[canaries]`` — m, their kind and inclusion probability (½: the one-run games' premise);
* ``[training]`` — :class:`dpaudit.systems.DPSGDSettings` (model, sampling, clipping, σ or a
  target ε, δ, optimiser, accountant);
* ``[attack]`` — the base score and :class:`dpaudit.attacks.QMIASettings`;
* ``[audit]`` — confidence, how the number of guesses is paid for, the grid size;
* ``name``, ``seed`` and ``repetitions`` at the top.

The layout follows Liu, Boglioni, Fu, Hu, Thaker & Wu (*Enhancing One-run Privacy Auditing
with Quantile Regression-Based Membership Inference*, Tables 1–2): n = r + m/2 examples in
training on average, a disjoint holdout of non-members for the regressor.

Example:
    >>> s = DPSGDAuditSettings()
    >>> s.data.num_non_canaries + s.canaries.num_canaries // 2, s.training.delta
    (20000, 1e-05)
"""

from __future__ import annotations

import dataclasses

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_in_range,
    check_nonneg_int,
    check_positive_int,
)
from dpaudit.attacks import CANARY_KINDS, MEMBERSHIP_SCORES, QMIASettings
from dpaudit.bounds import SELECTION_NAMES
from dpaudit.data import DATASET_NAMES
from dpaudit.systems import DPSGDCell, DPSGDSettings

__all__ = [
    "AttackSettings",
    "AuditBoundSettings",
    "CanarySettings",
    "DPSGDAuditSettings",
    "DataSettings",
]


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """The pool of examples and the non-canary / holdout parts drawn from it."""

    dataset: str = option("fashion-mnist", help=f"offline dataset: {' | '.join(DATASET_NAMES)}")
    path: str | None = option(None, help="directory or file of the dataset (default: installed)")
    num_non_canaries: int = option(
        17500, help="r: non-canary training examples", flag="--non-canaries"
    )
    num_holdout: int = option(
        10000, help="non-members for the quantile regressor (0: no QMIA)", flag="--holdout"
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASET_NAMES)
        check_nonneg_int("num_non_canaries", self.num_non_canaries)
        check_nonneg_int("num_holdout", self.num_holdout)


@dataclasses.dataclass(frozen=True)
class CanarySettings:
    """m canaries, each included independently with probability ½."""

    num_canaries: int = option(5000, help="m: number of canaries", flag="--canaries")
    kind: str = option("data", help=f"canary kind: {' | '.join(CANARY_KINDS)}")
    inclusion_probability: float = option(
        0.5, help="probability each canary is trained on (the one-run bounds need 0.5)"
    )

    def __post_init__(self) -> None:
        check_positive_int("num_canaries", self.num_canaries)
        check_choice("kind", self.kind, CANARY_KINDS)
        p = check_in_range("inclusion_probability", self.inclusion_probability, 0.0, 1.0)
        if p != 0.5:
            raise ValueError(
                f"inclusion_probability must be 0.5 for the one-run bounds (Steinke et al. "
                f"2023; Mahloujifar et al. 2024), got {p}"
            )


@dataclasses.dataclass(frozen=True)
class AttackSettings:
    """The black-box scores: a base score and the quantile-regression attack on it."""

    score: str = option("margin", help=f"base score: {' | '.join(MEMBERSHIP_SCORES)}")
    use_qmia: bool = option(True, help="also audit with the QMIA score", flag="--qmia")
    qmia: QMIASettings = option(default_factory=QMIASettings, help="quantile regression")

    def __post_init__(self) -> None:
        check_choice("score", self.score, tuple(MEMBERSHIP_SCORES))


@dataclasses.dataclass(frozen=True)
class AuditBoundSettings:
    """Confidence and how the data-dependent choices are paid for."""

    confidence_level: float = option(0.95, help="confidence 1 − β of every valid bound")
    selection: str = option(
        "split",
        help="number of guesses paid by: split | bonferroni | multi-split",
        flag="--selection",
    )
    split_fraction: float = option(0.5, help="share of canaries that choose (split)")
    max_guess_points: int = option(
        500, help="most grid points of the guess sweep (10, 20, … thinned)"
    )

    def __post_init__(self) -> None:
        check_confidence_level(self.confidence_level)
        check_choice("selection", self.selection, SELECTION_NAMES)
        check_in_range("split_fraction", self.split_fraction, 0.0, 1.0)
        check_positive_int("max_guess_points", self.max_guess_points)


@dataclasses.dataclass(frozen=True)
class DPSGDAuditSettings:
    """One-run black-box audit of DP-SGD (Steinke et al. 2023; Liu et al., QMIA)."""

    name: str = option("dp-sgd", help="run name")
    seed: int = option(0, help="root seed (repetition i uses its child stream i)")
    repetitions: int = option(1, help="independent training runs (mean and spread)")
    data: DataSettings = option(default_factory=DataSettings, help="data")
    canaries: CanarySettings = option(default_factory=CanarySettings, help="canaries")
    training: DPSGDSettings = option(default_factory=DPSGDSettings, help="DP-SGD")
    attack: AttackSettings = option(default_factory=AttackSettings, help="attack")
    audit: AuditBoundSettings = option(default_factory=AuditBoundSettings, help="bounds")

    def __post_init__(self) -> None:
        check_nonneg_int("seed", self.seed)
        check_positive_int("repetitions", self.repetitions)
        if self.attack.use_qmia and self.data.num_holdout < 10:
            raise ValueError(
                f"the QMIA attack needs a holdout of at least 10 non-members, got "
                f"num_holdout={self.data.num_holdout} (or set attack.use_qmia = false)"
            )

    @property
    def nominal_size(self) -> int:
        """n = r + m·p: the expected training-set size, which fixes the sampling rate."""
        m = self.canaries.num_canaries
        return self.data.num_non_canaries + round(m * self.canaries.inclusion_probability)

    @property
    def system_cell(self) -> DPSGDCell:
        """The settings cell of ``"dp-sgd"``: q = batch_size / (r + m·p); σ given or calibrated."""
        return DPSGDCell(self.training, self.nominal_size)
