"""Label-DP systems under audit (Malek et al. 2021, "Antipodes of Label Differential Privacy:
PATE and ALIBI", arXiv:2106.03408): the public names in one place.

* Noisy-label trainers (:mod:`dpaudit.systems.label_dp._systems`): :class:`ALIBI` (Laplace +
  iterative Bayesian inference), :class:`AGIBI` (Gaussian, posterior with σ²),
  :class:`RandomizedResponseLabels` (C-ary RR), :class:`SoftRR` (Laplace + simplex projection).
* :class:`PATEFM` (:mod:`dpaudit.systems.label_dp._pate_fm`): semi-supervised teachers,
  Confident GNMax, semi-supervised student; claims from the data-dependent analysis with the
  GNSS release.
* The trainer (:mod:`dpaudit.systems.label_dp._training`): :class:`TrainingSettings`,
  :class:`ConsistencySettings`, :class:`LabelTargets`, :func:`train_network`,
  :func:`train_semi_supervised`, :class:`TorchNetwork`.

* The settings cells (:mod:`dpaudit.systems.label_dp._cells`): :class:`ALIBICell`,
  :class:`AGIBICell`, :class:`RRCell`, :class:`SoftRRCell`, :class:`PATEFMCell` — what the
  :data:`dpaudit.systems.SYSTEMS` factories take.

Importing this module registers ``"alibi"``, ``"agibi"``, ``"rr"``, ``"soft-rr"`` and
``"pate-fm"`` in :data:`dpaudit.systems.SYSTEMS`. torch is imported only when training.

Example:
    >>> from dpaudit.systems import SYSTEMS
    >>> SYSTEMS.get("alibi")(ALIBICell(epsilon=4.0)).claim().epsilon
    4.0
"""

from dpaudit.systems.label_dp._cells import AGIBICell, ALIBICell, PATEFMCell, RRCell, SoftRRCell
from dpaudit.systems.label_dp._pate_fm import PATEFM, PATETeachers, StudentQueries
from dpaudit.systems.label_dp._systems import (
    AGIBI,
    ALIBI,
    PRIORS,
    LabelDPFit,
    LabelNoiseSystem,
    RandomizedResponseLabels,
    SoftRR,
    check_label_data,
)
from dpaudit.systems.label_dp._training import (
    MODELS,
    OPTIMIZERS,
    ConsistencySettings,
    LabelTargets,
    TorchNetwork,
    TrainingSettings,
    train_network,
    train_semi_supervised,
)

__all__ = [
    "AGIBI",
    "ALIBI",
    "MODELS",
    "OPTIMIZERS",
    "PATEFM",
    "PRIORS",
    "AGIBICell",
    "ALIBICell",
    "ConsistencySettings",
    "LabelDPFit",
    "LabelNoiseSystem",
    "LabelTargets",
    "PATEFMCell",
    "PATETeachers",
    "RRCell",
    "RandomizedResponseLabels",
    "SoftRR",
    "SoftRRCell",
    "StudentQueries",
    "TorchNetwork",
    "TrainingSettings",
    "check_label_data",
    "train_network",
    "train_semi_supervised",
]
