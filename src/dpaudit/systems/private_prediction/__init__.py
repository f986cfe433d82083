"""Private-prediction systems: teachers vote, a noisy argmax answers (Chadha et al. 2024,
"Auditing Private Prediction", arXiv:2402.09403, Alg. 1).

- The training phase (``_ensemble``, ``_estimators``, ``_ridge``, ``_torch_cnn``,
  ``_retrain``): :class:`TeacherEnsemble` partitions the data (random for PATE, fixed parties
  for CaPC) and fits one teacher per part (any scikit-learn-compatible estimator, a closed-form
  ridge teacher, or a small torch CNN); ``with_point`` retrains only the affected teacher.
- The private interface (``_predictor``): :class:`PrivatePredictor` answers with a noisy
  argmax over the votes, keeps a budget ledger (:func:`make_ledger`) and states the claimed
  RDP of what it has answered.
- The systems, each registered in :data:`dpaudit.systems.SYSTEMS` with the tag
  ``"private-prediction"``: :class:`PATE` and :class:`CaPC` (``_teachers``),
  :class:`PrivateKNN` (:mod:`~dpaudit.systems.private_prediction.knn`, with ``_knn_core``)
  and :class:`PromptPATE` (:mod:`~dpaudit.systems.private_prediction.prompt_pate`: prompts of
  ``_prompts``, an offline language model in ``_llm``, its fast votes in ``_llm_voter``).

Heavy libraries (scikit-learn, joblib, torch, transformers) are imported only when used.
"""

from dpaudit.systems.private_prediction._cell import PrivatePredictionCell
from dpaudit.systems.private_prediction._ensemble import (
    DEFAULT_ESTIMATOR,
    ESTIMATOR_NAMES,
    Classifier,
    TeacherEnsemble,
    fit_teacher,
    make_estimator,
    make_partition,
)
from dpaudit.systems.private_prediction._predictor import (
    Aggregator,
    Ledger,
    PrivatePredictor,
    make_ledger,
)
from dpaudit.systems.private_prediction._teachers import (
    PARTITIONS,
    PATE,
    CaPC,
    PairedVotes,
    TeacherEnsembleSystem,
    TrainingInstantiations,
    retrain_with_points,
    train_instantiations,
)
from dpaudit.systems.private_prediction._torch_cnn import TorchCNNClassifier
from dpaudit.systems.private_prediction.knn import PrivateKNN, PrivateKNNOptions
from dpaudit.systems.private_prediction.prompt_pate import PromptPATE, PromptPATEOptions

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_NAMES",
    "PARTITIONS",
    "PATE",
    "Aggregator",
    "CaPC",
    "Classifier",
    "Ledger",
    "PairedVotes",
    "PrivateKNN",
    "PrivateKNNOptions",
    "PrivatePredictionCell",
    "PrivatePredictor",
    "PromptPATE",
    "PromptPATEOptions",
    "TeacherEnsemble",
    "TeacherEnsembleSystem",
    "TorchCNNClassifier",
    "TrainingInstantiations",
    "fit_teacher",
    "make_estimator",
    "make_ledger",
    "make_partition",
    "retrain_with_points",
    "train_instantiations",
]
