"""ML systems under audit (layer 5): the private-prediction framework of Chadha et al. 2024 Alg. 1.

- :class:`TeacherEnsemble` — the training phase: partition (random for PATE, fixed parties
  for CaPC), one teacher per part (any scikit-learn-compatible estimator; optional torch
  CNN), vote histograms with an optional random choice of k of m teachers per query, and
  cheap neighbouring ensembles (``with_point`` retrains only the affected teacher).
- :class:`GNMax`, :class:`ConfidentGNMax` — the noisy aggregators.
- :class:`PrivatePredictor` — the private interface: ``votes``, ``predict`` (labels,
  :data:`ABSTAIN`, :data:`REFUSED`), a budget ledger (:func:`make_ledger` builds a
  :class:`dpaudit.accounting.PrivacyLedger` for an aggregator), optional answer caching, and
  the claimed RDP of what it has answered (``claimed_rdp``).
- :class:`PATE`, :class:`CaPC` — the systems (registered in :data:`SYSTEMS`): validated
  before any training (k ≤ m, σ > 0, estimator); ``train``/``retrain`` drive the audit's
  training phases, ``build(X, y)`` returns the deployable :class:`PrivatePredictor`, and the
  claim comes from their mechanism value.
- :data:`SYSTEMS`, :class:`System`, :class:`PrivatePredictionSystem` — the registry and the
  protocols every system implements.
- :mod:`dpaudit.data` — offline dataset loaders (nothing is downloaded).

Heavy libraries (scikit-learn, joblib, rich, torch) are imported only when used.

Example:
    >>> from dpaudit.systems import GNMax, PrivatePredictor, TeacherEnsemble
    >>> from dpaudit.data import load_dataset
    >>> ds = load_dataset("digits", seed=0)
    >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=20, rng=0)
    >>> PrivatePredictor(ens, GNMax(sigma=2.0)).predict(ds.X_test[:3], rng=0).tolist()
    [2, 2, 3]
"""

from dpaudit.mechanisms.values import ABSTAIN, REFUSED, ConfidentGNMax, GNMax
from dpaudit.systems._dpsgd import DPSGD, DPSGDSettings, LabelledData, TrainedDPSGD, train_dpsgd
from dpaudit.systems._ensemble import (
    DEFAULT_ESTIMATOR,
    ESTIMATOR_NAMES,
    Classifier,
    TeacherEnsemble,
    fit_teacher,
    make_estimator,
    make_partition,
)
from dpaudit.systems._predictor import Aggregator, Ledger, PrivatePredictor, make_ledger
from dpaudit.systems._protocols import (
    SYSTEMS,
    Instantiations,
    PrivatePredictionSystem,
    System,
)
from dpaudit.systems._teachers import (
    PARTITIONS,
    PATE,
    CaPC,
    PairedVotes,
    TeacherEnsembleSystem,
    TrainingInstantiations,
    retrain_with_points,
    train_instantiations,
)
from dpaudit.systems._torch_cnn import TorchCNNClassifier
from dpaudit.systems.knn import PrivateKNN, PrivateKNNOptions  # registers "private-knn"
from dpaudit.systems.label_dp import ALIBI, PATEFM  # registers alibi, agibi, rr, soft-rr, pate-fm
from dpaudit.systems.prompt_pate import PromptPATE, PromptPATEOptions  # "prompt-pate"

__all__ = [
    "ABSTAIN",
    "ALIBI",
    "DEFAULT_ESTIMATOR",
    "DPSGD",
    "ESTIMATOR_NAMES",
    "PARTITIONS",
    "PATE",
    "PATEFM",
    "REFUSED",
    "SYSTEMS",
    "Aggregator",
    "CaPC",
    "Classifier",
    "ConfidentGNMax",
    "DPSGDSettings",
    "GNMax",
    "Instantiations",
    "LabelledData",
    "Ledger",
    "PairedVotes",
    "PrivateKNN",
    "PrivateKNNOptions",
    "PrivatePredictionSystem",
    "PrivatePredictor",
    "PromptPATE",
    "PromptPATEOptions",
    "System",
    "TeacherEnsemble",
    "TeacherEnsembleSystem",
    "TorchCNNClassifier",
    "TrainedDPSGD",
    "TrainingInstantiations",
    "fit_teacher",
    "make_estimator",
    "make_ledger",
    "make_partition",
    "retrain_with_points",
    "train_dpsgd",
    "train_instantiations",
]
