"""The teachers' votes without scikit-learn's per-call overhead (a serving fast path).

Answering one query asks every teacher for its label; through ``teacher.predict`` each call
re-validates its input and the ensemble limits the BLAS thread pool around the loop, which
on a small machine costs far more than the arithmetic (tens of milliseconds for 30 teachers,
most of a request's latency). For the teachers whose prediction is a closed form — scikit-
learn's ``LogisticRegression`` (``classes_[argmax(X @ coef_.T + intercept_)]``, the binary case
``classes_[scores > 0]``, exactly as scikit-learn computes it) and dpaudit's constant teachers
— :func:`fast_votes` computes the same labels directly. It is used only when *every* teacher
is of such a kind and only after it reproduced the ensemble's own votes on probe rows; any
other ensemble (trees, CNNs, ridge, teacher subsets …) keeps ``interface.votes``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._typing import IntArray

__all__ = ["fast_votes"]


def _linear(teacher: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    cls = type(teacher)
    if cls.__name__ != "LogisticRegression" or not cls.__module__.startswith("sklearn."):
        return None
    coef = getattr(teacher, "coef_", None)
    intercept = getattr(teacher, "intercept_", None)
    classes = getattr(teacher, "classes_", None)
    if coef is None or intercept is None or classes is None:
        return None
    coef_t = np.asarray(coef, dtype=np.float64).T
    b = np.asarray(intercept, dtype=np.float64)
    labels = np.asarray(classes).astype(np.int64)
    if coef_t.shape[1] == 1:  # binary: sklearn's decision_function is 1-d, scores > 0

        def binary(X: np.ndarray) -> np.ndarray:
            scores = (X @ coef_t + b).reshape(-1)
            return labels[(scores > 0).astype(int)]

        return binary

    def multi(X: np.ndarray) -> np.ndarray:
        return labels[(X @ coef_t + b).argmax(axis=1)]

    return multi


def _constant(teacher: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    if type(teacher).__name__ != "_ConstantTeacher" or not hasattr(teacher, "label"):
        return None
    label = int(teacher.label)
    return lambda X: np.full(X.shape[0], label, dtype=np.int64)


class _FastVotes:
    """Vote histograms from closed-form teacher predictions."""

    def __init__(self, predictors: list[Callable[[np.ndarray], np.ndarray]], num_classes: int):
        self._predictors = predictors
        self._num_classes = int(num_classes)

    def votes(self, X: np.ndarray) -> IntArray:
        Xc = np.ascontiguousarray(X, dtype=np.float64)
        n = Xc.shape[0]
        preds = np.empty((n, len(self._predictors)), dtype=np.int64)
        for i, predict in enumerate(self._predictors):
            preds[:, i] = predict(Xc)
        c = self._num_classes
        if preds.size and (preds.min() < 0 or preds.max() >= c):
            raise ValueError(f"a teacher predicted a label outside 0..{c - 1}")
        flat = preds + c * np.arange(n, dtype=np.int64)[:, None]
        return np.bincount(flat.ravel(), minlength=n * c).reshape(n, c).astype(np.int64)


def fast_votes(interface: Any, probe: np.ndarray | None = None) -> Any:
    """A fast ``votes(X)`` for ``interface`` (module notes), or None where it does not apply.

    Args:
        interface: a private-prediction interface (``ensemble.teachers``, ``votes``).
        probe: rows to check it on (default: up to 256 of the ensemble's training rows); the
            fast path is returned only if it gives exactly the interface's votes there.

    Returns:
        An object with ``votes(X) -> (n, C) int64``, or None.
    """
    ens = getattr(interface, "ensemble", None)
    teachers = getattr(ens, "teachers", None)
    k = getattr(interface, "teachers_per_query", None)
    if teachers is None or (k is not None and k != ens.num_teachers):
        return None
    predictors = []
    for t in teachers:
        p = _linear(t) or _constant(t)
        if p is None:
            return None
        predictors.append(p)
    fast = _FastVotes(predictors, ens.num_classes)
    if probe is None:
        try:
            probe = ens.training_rows(np.arange(min(256, ens.num_points)))[0]
        except (AttributeError, TypeError, ValueError):
            return None
    probe = np.asarray(probe, dtype=np.float64)
    try:
        same = np.array_equal(fast.votes(probe), interface.votes(probe))
    except (ValueError, TypeError, IndexError):
        return None
    return fast if same else None
