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
import math
from collections.abc import Callable
from typing import Any

from dpaudit._registry import Registry
from dpaudit._results import AuditResult
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_in_range,
    check_nonneg_int,
    check_positive_int,
)
from dpaudit.attacks import CANARY_KINDS, MEMBERSHIP_SCORES, QMIASettings
from dpaudit.bounds import GDP_INTERVALS, SELECTION_NAMES
from dpaudit.data import DATASET_NAMES
from dpaudit.engine import EXECUTORS
from dpaudit.systems import DPSGDCell, DPSGDSettings

__all__ = [
    "AUDIT_MODES",
    "THREAT_MODELS",
    "AttackSettings",
    "AuditBoundSettings",
    "CanarySettings",
    "DPSGDAuditSettings",
    "DataSettings",
    "ThreatModel",
    "WhiteBoxSettings",
    "WorstCaseInitSettings",
]

#: How the many-run threat models spend their runs (``audit.mode``).
AUDIT_MODES: tuple[str, ...] = ("fixed", "sequential")


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
    mode: str = option(
        "fixed",
        help="many-run threat models: fixed (every run, then Clopper-Pearson) | sequential "
        "(pilot runs fix the threshold, the rest stream through an anytime-valid test of the "
        "claim and stop at its rejection)",
        flag="--mode",
    )

    def __post_init__(self) -> None:
        check_confidence_level(self.confidence_level)
        check_choice("selection", self.selection, SELECTION_NAMES)
        check_in_range("split_fraction", self.split_fraction, 0.0, 1.0)
        check_positive_int("max_guess_points", self.max_guess_points)
        check_choice("mode", self.mode, AUDIT_MODES)


@dataclasses.dataclass(frozen=True)
class ThreatModel:
    """One threat model of the DP-SGD audit.

    Attributes:
        name: registry name (``settings.threat_model``).
        sees: what the auditor observes.
        may_change: what the auditor may insert or choose.
        source: where the threat model and its attack come from.
        nominal_size: settings → the dataset size n that fixes q = batch_size / n.
        check_settings: settings → None, raising ValueError for settings it cannot run.
        check_data: (settings, pool) → None, raising ValueError before any training.
        audit: (settings, system, pool, claims, *, progress, checkpoint) → AuditResult.
        sequential: whether it has a sequential mode (``audit.mode = "sequential"``): its
            runs can stream through an anytime-valid test of the claim.
    """

    name: str
    sees: str
    may_change: str
    source: str
    nominal_size: Callable[[DPSGDAuditSettings], int]
    check_settings: Callable[[DPSGDAuditSettings], None]
    check_data: Callable[[DPSGDAuditSettings, Any], None]
    audit: Callable[..., AuditResult]
    sequential: bool = False


#: The DP-SGD audit's threat models, by name.
THREAT_MODELS: Registry[ThreatModel] = Registry("threat model")


@dataclasses.dataclass(frozen=True)
class WhiteBoxSettings:
    """The white-box threat models' canary gradients (Dirac, at the clipping norm): m in one
    run (``white-box``), or ``canaries_per_run`` in each of ``runs`` runs (``all-iterates``)."""

    gradient_canaries: int = option(
        10000, help="m: Dirac canary gradients in free coordinates", flag="--gradient-canaries"
    )
    noise_source: str = option(
        "optimizer",
        help="the canaries' noise: optimizer (the noise it added, read at m model coordinates;"
        " m ≤ their number) | auditor (drawn at the configured σ)",
    )
    runs: int = option(200, help="independent training runs (all-iterates threat model)")
    canaries_per_run: int = option(
        1, help="canary gradients per run (all-iterates; 1: independent trials)"
    )
    executor: str = option(
        "serial", help="engine executor of the all-iterates runs: serial | processes | …",
        flag="--runs-executor",
    )  # fmt: skip
    workers: int = option(1, help="engine workers of the all-iterates runs", flag="--runs-workers")

    def __post_init__(self) -> None:
        check_positive_int("gradient_canaries", self.gradient_canaries)
        check_choice("noise_source", self.noise_source, ("optimizer", "auditor"))
        if check_positive_int("runs", self.runs) < 2:
            raise ValueError(f"runs must be at least 2, got {self.runs}")
        check_positive_int("canaries_per_run", self.canaries_per_run)
        check_choice("executor", self.executor, tuple(EXECUTORS.names()))
        check_positive_int("workers", self.workers)


@dataclasses.dataclass(frozen=True)
class WorstCaseInitSettings:
    """The worst-case-initialised black-box threat model (Annamalai & De Cristofaro 2024,
    arXiv:2405.14106): θ₀ pre-trained on a public split, a blank target, ``runs_in`` models
    trained on D = D⁻ ∪ {target} and ``runs_out`` on D⁻ (``data.num_non_canaries`` records)."""

    runs_in: int = option(100, help="models trained with the target (D)")
    runs_out: int = option(100, help="models trained without it (D⁻)")
    public_size: int = option(
        4000, help="public records θ₀ is pre-trained on (disjoint from D⁻)", flag="--public"
    )
    pretrain_epochs: int = option(10, help="pre-training epochs (0: fixed random θ₀)")
    pretrain_learning_rate: float = option(0.05, help="pre-training SGD learning rate")
    pretrain_batch_size: int = option(64, help="pre-training batch size")
    target_label: int = option(-1, help="the blank target's label (-1: least likely under θ₀)")
    paper_alpha: float = option(
        0.05, help="α of the papers' GDP estimate (1 − 2α Clopper–Pearson rate bounds)"
    )
    paper_interval: str = option(
        "one-sided",
        help="the estimate's rate bounds: one-sided | two-sided (the authors' two code versions)",
    )
    executor: str = option("serial", help="engine executor of the runs: serial | processes | …")
    workers: int = option(1, help="engine workers")

    def __post_init__(self) -> None:
        for name in ("runs_in", "runs_out"):
            if check_positive_int(name, getattr(self, name)) < 2:
                raise ValueError(f"{name} must be at least 2, got {getattr(self, name)}")
        check_nonneg_int("public_size", self.public_size)
        check_nonneg_int("pretrain_epochs", self.pretrain_epochs)
        if self.pretrain_epochs > 0 and self.public_size == 0:
            raise ValueError("pretrain_epochs > 0 needs public_size > 0")
        check_in_range("pretrain_learning_rate", self.pretrain_learning_rate, 0.0, math.inf)
        check_positive_int("pretrain_batch_size", self.pretrain_batch_size)
        if not isinstance(self.target_label, int) or self.target_label < -1:
            raise ValueError(f"target_label must be an int ≥ -1, got {self.target_label!r}")
        check_in_range("paper_alpha", self.paper_alpha, 0.0, 0.5)
        check_choice("paper_interval", self.paper_interval, GDP_INTERVALS)
        check_choice("executor", self.executor, tuple(EXECUTORS.names()))
        check_positive_int("workers", self.workers)


@dataclasses.dataclass(frozen=True)
class DPSGDAuditSettings:
    """One-run audit of DP-SGD: black-box canaries (Steinke et al. 2023; Liu et al., QMIA) or
    white-box canary gradients (Nasr et al. 2023), by ``threat_model``."""

    name: str = option("dp-sgd", help="run name")
    seed: int = option(0, help="root seed (repetition i uses its child stream i)")
    repetitions: int = option(1, help="independent training runs (mean and spread)")
    threat_model: str = option(
        "black-box",
        help="what the auditor sees and changes: black-box | white-box | all-iterates | "
        "worst-case-init",
    )
    data: DataSettings = option(default_factory=DataSettings, help="data")
    canaries: CanarySettings = option(default_factory=CanarySettings, help="canaries")
    white_box: WhiteBoxSettings = option(
        default_factory=WhiteBoxSettings, help="white-box canary gradients"
    )
    worst_case: WorstCaseInitSettings = option(
        default_factory=WorstCaseInitSettings, help="worst-case initial parameters"
    )
    training: DPSGDSettings = option(default_factory=DPSGDSettings, help="DP-SGD")
    attack: AttackSettings = option(default_factory=AttackSettings, help="attack")
    audit: AuditBoundSettings = option(default_factory=AuditBoundSettings, help="bounds")

    def __post_init__(self) -> None:
        check_nonneg_int("seed", self.seed)
        check_positive_int("repetitions", self.repetitions)
        if not isinstance(self.threat_model, str):
            raise TypeError(f"threat_model must be a str, got {type(self.threat_model).__name__}")
        threat_model = THREAT_MODELS.get(self.threat_model)
        if self.audit.mode == "sequential" and not threat_model.sequential:
            with_mode = [n for n in THREAT_MODELS.names() if THREAT_MODELS.get(n).sequential]
            raise ValueError(
                f"audit.mode='sequential' streams independent training runs: the threat models "
                f"with that mode are {with_mode}, not {self.threat_model!r} (the white-box "
                "one-run audit already tests the claim step by step, anytime-valid)"
            )
        threat_model.check_settings(self)

    @property
    def nominal_size(self) -> int:
        """n = r + m·p: the expected training-set size, which fixes the sampling rate."""
        m = self.canaries.num_canaries
        return self.data.num_non_canaries + round(m * self.canaries.inclusion_probability)

    @property
    def system_cell(self) -> DPSGDCell:
        """The settings cell of ``"dp-sgd"``: q = batch_size / (r + m·p); σ given or calibrated."""
        return DPSGDCell(self.training, self.nominal_size)
