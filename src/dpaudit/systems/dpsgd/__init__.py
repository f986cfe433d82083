"""DP-SGD as a system under audit (Abadi et al. 2016, arXiv:1607.00133): Opacus training and
its accountant's claim, registered as ``"dp-sgd"`` in :data:`dpaudit.systems.SYSTEMS`
(``_dpsgd``; Opacus' accountants in ``_opacus_accounting``). torch and opacus are imported
only when training.
"""

from dpaudit.systems.dpsgd._batched import BATCHED_METHODS, BatchedDPSGD, train_dpsgd_batched
from dpaudit.systems.dpsgd._dpsgd import (
    CLIPPING_METHODS,
    DPSGD,
    MODELS,
    OPTIMIZERS,
    DPSGDCell,
    DPSGDSettings,
    LabelledData,
    ModelSpec,
    TrainedDPSGD,
    train_dpsgd,
)
from dpaudit.systems.dpsgd._opacus_accounting import (
    ACCOUNTANTS,
    calibrate_noise_multiplier,
    opacus_epsilon,
    opacus_rdp,
)

__all__ = [
    "ACCOUNTANTS",
    "BATCHED_METHODS",
    "CLIPPING_METHODS",
    "DPSGD",
    "MODELS",
    "OPTIMIZERS",
    "BatchedDPSGD",
    "DPSGDCell",
    "DPSGDSettings",
    "LabelledData",
    "ModelSpec",
    "TrainedDPSGD",
    "calibrate_noise_multiplier",
    "opacus_epsilon",
    "opacus_rdp",
    "train_dpsgd",
    "train_dpsgd_batched",
]
