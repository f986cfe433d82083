"""ML systems under audit (layer 5): DP machine-learning systems as users deploy them.

Every system carries the mechanism value it runs (:mod:`dpaudit.mechanisms.values`) and states
its claim from that value (:mod:`dpaudit.accounting`). The systems are grouped by family:

- :mod:`dpaudit.systems.private_prediction` — teachers vote, a noisy argmax answers (Chadha et
  al. 2024, arXiv:2402.09403, Alg. 1): :class:`PATE`, :class:`CaPC` (a
  :class:`TeacherEnsemble` behind a :class:`PrivatePredictor` with :class:`GNMax` or
  :class:`ConfidentGNMax`), :class:`PrivateKNN`, :class:`PromptPATE`.
- :mod:`dpaudit.systems.label_dp` — label-DP trainers (Malek et al. 2021, arXiv:2106.03408):
  :class:`ALIBI`, AGIBI, randomized response, soft RR and :class:`PATEFM`.
- :mod:`dpaudit.systems.dpsgd` — :class:`DPSGD` (Opacus training, its accountant's claim).
- :mod:`dpaudit.systems.dpsgd_variants` — :data:`DPSGD_VARIANTS`: the correct DP-SGD and
  the implementation bugs that shipped, each run on the real library.
- :mod:`dpaudit.systems.dp_mechanisms` — DP mechanisms under black-box audit: the DP-Sniper
  benchmark suite, a naive floating-point Laplace and library adapters, by name in
  :data:`MECHANISMS` (:class:`MechanismSpec`).
- :mod:`dpaudit.systems.federated` — :class:`DPFedAvg`: user-level DP-FedAvg with canary
  clients, its planted bugs in :data:`FEDAVG_VARIANTS` (Andrew et al. 2024,
  arXiv:2302.03098); :class:`UserDPSGD`: user-level DP-SGD with canary users, its variants in
  :data:`USER_DPSGD_VARIANTS`.
- :mod:`dpaudit.systems.synthetic` — DP synthetic-data generators (MST, AIM of
  smartnoise-synth) run as installed, out of process (:mod:`dpaudit.systems._external`), by
  name in :data:`GENERATORS`.
- :mod:`dpaudit.systems.llm` — :class:`DPFineTuning`: DP fine-tuning of a causal language
  model with Opacus (LoRA or the last blocks, new vocabulary entries), its claim and a planted
  bug (Panda et al. 2025, arXiv:2503.06808).
- Shared: :data:`SYSTEMS`, :class:`System`, :class:`PrivatePredictionSystem` (the registry
  and the protocols every system implements, ``_protocols``) and the torch networks
  (``_torch_nets``).

:data:`SYSTEMS` maps a name to a factory that takes the system's own settings cell and returns
the system (``SYSTEMS.get(name)(cell)``); nothing above this layer branches on a system's name.
The datasets, offline loaders and feature extractors the systems train on are
:mod:`dpaudit.data`, the layer below. Heavy libraries (scikit-learn, joblib, rich, torch) are
imported only when used.

Example:
    >>> from dpaudit.systems import GNMax, PrivatePredictor, TeacherEnsemble
    >>> from dpaudit.data import load_dataset
    >>> ds = load_dataset("digits", seed=0)
    >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=20, rng=0)
    >>> PrivatePredictor(ens, GNMax(sigma=2.0)).predict(ds.X_test[:3], rng=0).tolist()
    [2, 2, 3]
"""

from dpaudit.mechanisms.values import ABSTAIN, REFUSED, ConfidentGNMax, GNMax
from dpaudit.systems._protocols import (
    SYSTEMS,
    Instantiations,
    PrivatePredictionSystem,
    System,
    SystemFactory,
)
from dpaudit.systems.dp_mechanisms import (  # registers the DP-Sniper suite in MECHANISMS
    MECHANISMS,
    MechanismSpec,
)
from dpaudit.systems.dpsgd import (
    DPSGD,
    DPSGDCell,
    DPSGDSettings,
    LabelledData,
    TrainedDPSGD,
    train_dpsgd,
)
from dpaudit.systems.dpsgd_variants import DPSGD_VARIANTS, DPSGDVariant
from dpaudit.systems.federated import (  # registers dp-fedavg, user-dp-sgd
    FEDAVG_VARIANTS,
    USER_DPSGD_VARIANTS,
    DPFedAvg,
    FedAvgCell,
    FederatedData,
    UserDPSGD,
    UserDPSGDCell,
)
from dpaudit.systems.label_dp import (  # registers alibi, agibi, rr, soft-rr, pate-fm
    AGIBI,
    ALIBI,
    PATEFM,
    AGIBICell,
    ALIBICell,
    PATEFMCell,
    RandomizedResponseLabels,
    RRCell,
    SoftRR,
    SoftRRCell,
)
from dpaudit.systems.llm import (  # registers dp-fine-tuning
    FINE_TUNING_VARIANTS,
    CausalLM,
    DPFineTuning,
    FineTuningCell,
)
from dpaudit.systems.private_prediction import (  # registers pate, capc, private-knn, prompt-pate
    DEFAULT_ESTIMATOR,
    ESTIMATOR_NAMES,
    PARTITIONS,
    PATE,
    Aggregator,
    CaPC,
    Classifier,
    Ledger,
    PairedVotes,
    PrivateKNN,
    PrivateKNNOptions,
    PrivatePredictionCell,
    PrivatePredictor,
    PromptPATE,
    PromptPATEOptions,
    TeacherEnsemble,
    TeacherEnsembleSystem,
    TorchCNNClassifier,
    TrainingInstantiations,
    fit_teacher,
    make_estimator,
    make_ledger,
    make_partition,
    retrain_with_points,
    train_instantiations,
)
from dpaudit.systems.synthetic import (  # registers the smartnoise generators
    GENERATORS,
    GeneratorCell,
    SyntheticGenerator,
    TabularDomain,
)

__all__ = [
    "ABSTAIN",
    "AGIBI",
    "ALIBI",
    "DEFAULT_ESTIMATOR",
    "DPSGD",
    "DPSGD_VARIANTS",
    "ESTIMATOR_NAMES",
    "FEDAVG_VARIANTS",
    "FINE_TUNING_VARIANTS",
    "GENERATORS",
    "MECHANISMS",
    "PARTITIONS",
    "PATE",
    "PATEFM",
    "REFUSED",
    "SYSTEMS",
    "USER_DPSGD_VARIANTS",
    "AGIBICell",
    "ALIBICell",
    "Aggregator",
    "CaPC",
    "CausalLM",
    "Classifier",
    "ConfidentGNMax",
    "DPFedAvg",
    "DPFineTuning",
    "DPSGDCell",
    "DPSGDSettings",
    "DPSGDVariant",
    "FedAvgCell",
    "FederatedData",
    "FineTuningCell",
    "GNMax",
    "GeneratorCell",
    "Instantiations",
    "LabelledData",
    "Ledger",
    "MechanismSpec",
    "PATEFMCell",
    "PairedVotes",
    "PrivateKNN",
    "PrivateKNNOptions",
    "PrivatePredictionCell",
    "PrivatePredictionSystem",
    "PrivatePredictor",
    "PromptPATE",
    "PromptPATEOptions",
    "RRCell",
    "RandomizedResponseLabels",
    "SoftRR",
    "SoftRRCell",
    "SyntheticGenerator",
    "System",
    "SystemFactory",
    "TabularDomain",
    "TeacherEnsemble",
    "TeacherEnsembleSystem",
    "TorchCNNClassifier",
    "TrainedDPSGD",
    "TrainingInstantiations",
    "UserDPSGD",
    "UserDPSGDCell",
    "fit_teacher",
    "make_estimator",
    "make_ledger",
    "make_partition",
    "retrain_with_points",
    "train_dpsgd",
    "train_instantiations",
]
