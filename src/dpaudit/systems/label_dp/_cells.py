"""The settings cells of the label-DP systems, and their :data:`SYSTEMS` entries.

One cell per system: the parameters of one (accuracy level, mechanism) cell of the label-DP
audit (Malek et al. 2021, arXiv:2106.03408, Tables 1 and 6), in the units the audit states
them. ALIBI and Soft-RR are given their *claimed* ε and noise with the Laplace scale
``b = 2/ε`` (L1 sensitivity 2); PATE-FM is given its Confident-GNMax threshold and noises.
``SYSTEMS.get(name)(cell)`` builds the system; another value raises ``TypeError`` naming
``settings``.

Example:
    >>> from dpaudit.systems import SYSTEMS
    >>> SYSTEMS.get("alibi")(ALIBICell(epsilon=4.0)).scale
    0.5
    >>> SYSTEMS.get("rr")(RRCell(epsilon=2.0, num_classes=10)).claim().epsilon
    2.0
"""

from __future__ import annotations

import dataclasses

from dpaudit._validate import check_positive
from dpaudit.mechanisms import ConfidentGNMax
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.label_dp._pate_fm import PATEFM
from dpaudit.systems.label_dp._systems import (
    AGIBI,
    ALIBI,
    DEFAULT_DELTA,
    RandomizedResponseLabels,
    SoftRR,
)
from dpaudit.systems.label_dp._training import ConsistencySettings, TrainingSettings

__all__ = ["AGIBICell", "ALIBICell", "PATEFMCell", "RRCell", "SoftRRCell"]


@dataclasses.dataclass(frozen=True)
class ALIBICell:
    """ALIBI: its claimed ε (Laplace scale b = 2/ε), the prior, the training."""

    epsilon: float
    prior: str = "model"
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)


@dataclasses.dataclass(frozen=True)
class AGIBICell:
    """AGIBI: the Gaussian σ, the prior, δ of the claim, the training."""

    sigma: float
    prior: str = "model"
    delta: float = DEFAULT_DELTA
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)


@dataclasses.dataclass(frozen=True)
class RRCell:
    """Randomized response: ε and the number of classes C, the training."""

    epsilon: float
    num_classes: int
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)


@dataclasses.dataclass(frozen=True)
class SoftRRCell:
    """Soft-RR: its claimed ε (Laplace scale b = 2/ε), the training."""

    epsilon: float
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)


@dataclasses.dataclass(frozen=True)
class PATEFMCell:
    """PATE-FM: m teachers, Confident GNMax (threshold T, σ1, σ2), the student's budgets, the
    training of teachers and student, δ of the claims and the release's Rényi order."""

    num_teachers: int
    threshold: float
    sigma1: float
    sigma2: float
    queries: int
    answers: int | None = None
    teacher_steps: int = 300
    student_steps: int = 1000
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    consistency: ConsistencySettings = dataclasses.field(default_factory=ConsistencySettings)
    delta: float = DEFAULT_DELTA
    order: float | None = None


def _laplace_scale(epsilon: float) -> float:
    return 2.0 / check_positive("epsilon", epsilon)


def _alibi(cell: ALIBICell) -> ALIBI:
    return ALIBI(scale=_laplace_scale(cell.epsilon), prior=cell.prior, training=cell.training)


def _agibi(cell: AGIBICell) -> AGIBI:
    return AGIBI(sigma=cell.sigma, prior=cell.prior, delta=cell.delta, training=cell.training)


def _rr(cell: RRCell) -> RandomizedResponseLabels:
    return RandomizedResponseLabels(cell.epsilon, cell.num_classes, training=cell.training)


def _soft_rr(cell: SoftRRCell) -> SoftRR:
    return SoftRR(scale=_laplace_scale(cell.epsilon), training=cell.training)


def _pate_fm(cell: PATEFMCell) -> PATEFM:
    return PATEFM(
        num_teachers=cell.num_teachers,
        mechanism=ConfidentGNMax(cell.threshold, cell.sigma1, cell.sigma2),
        queries=cell.queries,
        answers=cell.answers,
        teacher_steps=cell.teacher_steps,
        student_steps=cell.student_steps,
        training=cell.training,
        consistency=cell.consistency,
        delta=cell.delta,
        order=cell.order,
    )


SYSTEMS.register("alibi", SystemFactory(ALIBICell, _alibi), tags=("label-dp",))
SYSTEMS.register("agibi", SystemFactory(AGIBICell, _agibi), tags=("label-dp",))
SYSTEMS.register("rr", SystemFactory(RRCell, _rr), tags=("label-dp",))
SYSTEMS.register("soft-rr", SystemFactory(SoftRRCell, _soft_rr), tags=("label-dp",))
SYSTEMS.register("pate-fm", SystemFactory(PATEFMCell, _pate_fm), tags=("label-dp",))
