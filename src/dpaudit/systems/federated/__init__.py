"""Federated learning with user-level DP as a system under audit.

* :mod:`._clients` — :class:`FederatedData` (one labelled array per client), the Dirichlet
  non-IID split :func:`dirichlet_split` and the local update of softmax regression or a
  one-hidden-layer MLP.
* :mod:`._fedavg` — :class:`DPFedAvg` (registered as ``"dp-fedavg"`` in
  :data:`dpaudit.systems.SYSTEMS`), its settings cell :class:`FedAvgCell`, the samplers and
  :data:`FEDAVG_VARIANTS` (the correct implementation and the planted bugs), with canary
  clients (Andrew et al. 2024, arXiv:2302.03098) as an input of training.
* :mod:`._user_dpsgd` — :class:`UserDPSGD` (``"user-dp-sgd"``): user-level DP-SGD (each user's
  summed gradient clipped), its per-example-clipping variants and planted bug in
  :data:`USER_DPSGD_VARIANTS`, with canary users holding many examples; it states both the
  user-level and the example-level guarantee.
* :mod:`._flower` — :class:`FlowerDPFedAvg` (``"flower-dp"``): Flower's central-DP
  fixed- and adaptive-clipping wrappers as installed, run out of process in ``.venvs/flower``
  (``make venv-flower``; the worker loads ``_handler_flower.py``).
"""

from dpaudit.systems.federated._clients import (
    FederatedData,
    dirichlet_split,
    initial_parameters,
    local_update,
    num_parameters,
    predict_logits,
)
from dpaudit.systems.federated._fedavg import (
    FEDAVG_VARIANTS,
    SAMPLERS,
    DPFedAvg,
    FedAvgCell,
    FedAvgRun,
    FedAvgVariant,
    accuracy,
)
from dpaudit.systems.federated._flower import (
    FLOWER,
    FLOWER_WRAPPERS,
    WEIGHTINGS,
    FlowerCell,
    FlowerDPFedAvg,
)
from dpaudit.systems.federated._user_dpsgd import (
    USER_DPSGD_VARIANTS,
    UserDPSGD,
    UserDPSGDCell,
    UserDPSGDVariant,
    softmax_gradients,
)

__all__ = [
    "FEDAVG_VARIANTS",
    "FLOWER",
    "FLOWER_WRAPPERS",
    "SAMPLERS",
    "USER_DPSGD_VARIANTS",
    "WEIGHTINGS",
    "DPFedAvg",
    "FedAvgCell",
    "FedAvgRun",
    "FedAvgVariant",
    "FederatedData",
    "FlowerCell",
    "FlowerDPFedAvg",
    "UserDPSGD",
    "UserDPSGDCell",
    "UserDPSGDVariant",
    "accuracy",
    "dirichlet_split",
    "initial_parameters",
    "local_update",
    "num_parameters",
    "predict_logits",
    "softmax_gradients",
]
