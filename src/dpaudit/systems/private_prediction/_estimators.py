"""Teacher estimators of the private-prediction framework (Chadha et al. 2024, "Auditing
Private Prediction", arXiv:2402.09403, Alg. 1 training phase): the built-in estimator names,
building and fitting one teacher, and the input checks shared with
:class:`dpaudit.systems.TeacherEnsemble`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._typing import ArrayLike, IntArray
from dpaudit._validate import check_choice, check_nonneg_int, check_positive_int
from dpaudit.errors import require
from dpaudit.systems._blas import one_blas_thread as _one_blas_thread

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_NAMES",
    "Classifier",
    "EstimatorSpec",
    "estimator_is_deterministic",
    "fit_teacher",
    "make_estimator",
    "updatable",
]

ESTIMATOR_NAMES: tuple[str, ...] = ("logistic", "ridge", "extra-trees", "random-forest", "cnn")
# Named estimators whose fit does not depend on the seed (L-BFGS logistic regression ignores
# random_state; the ridge teacher is a Cholesky solve): fixed parts give identical teachers.
_DETERMINISTIC = frozenset({"logistic", "ridge"})
DEFAULT_ESTIMATOR = "logistic"
# L-BFGS iterations of the default teacher. On Fashion-MNIST teachers of 240 points (250
# teachers) 50 iterations give the accuracy of a converged fit (0.758 vs 0.759 on 1,000 test
# images, 10 teachers) at 1/3.7 of its time, and a teacher still memorises a mislabelled
# added point (20/20 flips), so early stopping is deliberate: sklearn's ConvergenceWarning is
# silenced for this default estimator only.
_LOGISTIC_MAX_ITER = 50


@runtime_checkable
class Classifier(Protocol):
    """What a teacher must offer: scikit-learn's ``fit(X, y)`` and ``predict(X)``."""

    def fit(self, X: Any, y: Any) -> Any: ...

    def predict(self, X: Any) -> Any: ...


EstimatorSpec = str | Classifier | Callable[[int], Classifier] | None


# --------------------------------------------------------------------------- estimators


class _ConstantTeacher:
    """A teacher whose part holds one class only: it always predicts that class."""

    def __init__(self, label: int) -> None:
        self.label = int(label)
        self.classes_ = np.array([self.label])

    def fit(self, X: Any, y: Any) -> _ConstantTeacher:
        return self

    def predict(self, X: Any) -> IntArray:
        return np.full(len(X), self.label, dtype=np.int64)


def make_estimator(spec: EstimatorSpec = None, *, seed: int = 0) -> Classifier:
    """Build one unfitted teacher from an estimator spec.

    Args:
        spec: ``None`` (the default, ``"logistic"``); a name in :data:`ESTIMATOR_NAMES`:
            ``"logistic"`` (``LogisticRegression(max_iter=50)``, L-BFGS), ``"ridge"``
            (:class:`~dpaudit.systems.private_prediction._ridge.RidgeTeacher`: a convex teacher
            whose retraining with an added point is an exact update), ``"extra-trees"``
            (``ExtraTreesClassifier(30)``), ``"random-forest"`` (``RandomForestClassifier(100)``,
            the Adult teachers of Wang et al. 2022, arXiv:2209.10732, §2), ``"cnn"``
            (:class:`TorchCNNClassifier`, needs the ``torch`` extra); an estimator
            *instance* with ``fit``/``predict`` (cloned with ``sklearn.base.clone`` when it
            has ``get_params``); or a callable ``factory(seed)``
            returning a fresh estimator.
        seed: the teacher's seed, set as ``random_state`` where the estimator has one.

    Returns:
        A fresh, unfitted estimator.

    Raises:
        ValueError: unknown estimator name.
        TypeError: ``spec`` is a class (pass an instance) or has no ``fit``/``predict``.

    Example:
        >>> make_estimator("extra-trees", seed=3).random_state
        3
    """
    if spec is None:
        spec = DEFAULT_ESTIMATOR
    if isinstance(spec, str):
        check_choice("estimator", spec, ESTIMATOR_NAMES)
        if spec == "cnn":
            from dpaudit.systems.private_prediction._torch_cnn import TorchCNNClassifier

            return TorchCNNClassifier(random_state=seed)
        require("sklearn", "ml")
        if spec == "logistic":
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(max_iter=_LOGISTIC_MAX_ITER, random_state=seed)
        if spec == "ridge":
            from dpaudit.systems.private_prediction._ridge import RidgeTeacher

            return RidgeTeacher(random_state=seed)
        if spec == "extra-trees":
            from sklearn.ensemble import ExtraTreesClassifier

            return ExtraTreesClassifier(n_estimators=30, n_jobs=1, random_state=seed)
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=seed)
    if isinstance(spec, type):
        raise TypeError(
            f"estimator must be an estimator instance, a name or a factory(seed), got the class "
            f"{spec.__name__}; pass an instance such as {spec.__name__}()"
        )
    if hasattr(spec, "fit") and hasattr(spec, "predict"):
        if hasattr(spec, "get_params"):
            base = require("sklearn.base", "ml")
            est = base.clone(spec)
            if "random_state" in est.get_params(deep=False):
                est.set_params(random_state=seed)
            return est
        import copy

        return copy.deepcopy(spec)
    if callable(spec):
        est = spec(seed)
        if not (hasattr(est, "fit") and hasattr(est, "predict")):
            raise TypeError(
                "estimator factory must return an object with fit and predict, got "
                f"{type(est).__name__}"
            )
        return est
    raise TypeError(
        "estimator must be None, a name in "
        f"{ESTIMATOR_NAMES}, an estimator instance or a factory(seed), got {type(spec).__name__}"
    )


def estimator_is_deterministic(spec: EstimatorSpec) -> bool:
    """Whether teachers built from ``spec`` do not depend on their seed (the default and
    ``"ridge"``, or an estimator with a true ``deterministic`` attribute): then fixed parts
    give identical teachers in every instantiation, and the training driver fits them once.
    """
    if spec is None or isinstance(spec, str):
        return spec is None or spec in _DETERMINISTIC
    return bool(getattr(spec, "deterministic", False))


def updatable(teacher: Any) -> bool:
    """Whether ``teacher`` retrains on added rows by an exact update (``with_rows``)."""
    return bool(getattr(teacher, "exact_update", False)) and bool(
        getattr(teacher, "updatable", False)
    )


def _fit_teacher(spec: EstimatorSpec, X: np.ndarray, y: np.ndarray, seed: int) -> Any:
    """Train one teacher (in this process or a joblib worker).

    Callers limit BLAS to one thread around it (:func:`_one_blas_thread` here, joblib's
    ``inner_max_num_threads=1`` in workers): parallelism is across teachers, and unmanaged BLAS
    threads on a small fit slow it down by an order of magnitude on a busy 2-core machine
    (benchmarks/bench_teachers.py).
    """
    labels = np.unique(y)
    if labels.size == 1:
        return _ConstantTeacher(int(labels[0]))
    est = make_estimator(spec, seed=seed)
    silence = spec is None or spec == "logistic"
    with warnings.catch_warnings():
        if silence:
            from sklearn.exceptions import ConvergenceWarning

            warnings.filterwarnings("ignore", category=ConvergenceWarning)
        est.fit(X, y)
    return est


def fit_teacher(
    X: ArrayLike,
    y: ArrayLike,
    *,
    estimator: EstimatorSpec = None,
    seed: int = 0,
    num_classes: int | None = None,
) -> Any:
    """Train one teacher exactly as :meth:`TeacherEnsemble.fit` trains each of its teachers.

    For models of a single teacher's behaviour (e.g. P'_q of Chadha et al. 2024 §5.1: a
    teacher trained on a random part that always contains the added point) without building
    an ensemble. A part holding a single class gives a constant teacher.

    Args:
        X: the teacher's rows, shape (r, d).
        y: their integer labels.
        estimator: estimator spec, as in :func:`make_estimator`.
        seed: the teacher's seed.
        num_classes: C, for validating ``y`` (default ``max(y) + 1``).

    Returns:
        The fitted teacher (an object with ``predict``).

    Raises:
        ValueError: bad ``X``/``y`` or estimator name.

    Example:
        >>> from dpaudit.data import load_digits
        >>> ds = load_digits(seed=0)
        >>> t = fit_teacher(ds.X_train[:60], ds.y_train[:60], seed=1)
        >>> t.predict(ds.X_test[:3]).tolist()
        [2, 2, 3]
    """
    Xa = _as_features("X", X)
    ya, _ = _as_labels("y", y, Xa.shape[0], num_classes)
    if isinstance(estimator, str):
        check_choice("estimator", estimator, ESTIMATOR_NAMES)
    seed = check_nonneg_int("seed", seed)
    with _one_blas_thread():
        return _fit_teacher(estimator, Xa, ya, seed)


# --------------------------------------------------------------------------- data plumbing


def _as_features(name: str, value: ArrayLike, *, num_features: int | None = None) -> np.ndarray:
    """A finite 2-d float array; float32 stays float32 (Fashion-MNIST is 188 MB as float32)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (rows × features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if num_features is not None and arr.shape[1] != num_features:
        raise ValueError(
            f"{name} must have {num_features} features (as the training set), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN/inf)")
    return arr


def _as_labels(
    name: str, value: ArrayLike, n: int, num_classes: int | None
) -> tuple[np.ndarray, int]:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a 1-d array of {n} labels, got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer class labels 0..C-1, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise ValueError(f"{name} must hold class labels >= 0, got {arr.min()}")
    if num_classes is None:
        num_classes = max(2, int(arr.max()) + 1)
    else:
        num_classes = check_positive_int("num_classes", num_classes)
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    if arr.max() >= num_classes:
        raise ValueError(f"{name} must hold labels < num_classes={num_classes}, got {arr.max()}")
    return arr, num_classes
