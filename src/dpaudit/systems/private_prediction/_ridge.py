"""A convex teacher whose retraining with an added point is an exact update: the ridge
classifier.

:class:`RidgeTeacher` is scikit-learn's ``RidgeClassifier`` model (one-vs-rest least squares
on ±1 targets, L2 penalty α; Hoerl & Kennard 1970) with the intercept as a constant feature
of value 1 penalised like the weights (as liblinear does), fitted in the dual because a
teacher has fewer rows than features (n = 240 < d = 785 on Fashion-MNIST): with
``Z = [X, 1]`` and ``T`` the ±1 targets, ``W = Zᵀ (Z Zᵀ + α I)⁻¹ T``, the unique minimiser of
``‖Z W − T‖² + α ‖W‖²``.

**Retraining with added rows is exact** (the point of this estimator). With
``M = (ZᵀZ + α I)⁻¹ = (I − Zᵀ G Z)/α``, ``G = (Z Zᵀ + α I)⁻¹``, adding rows ``Z_n`` with targets
``T_n`` gives, by the Woodbury identity (Woodbury 1950; Sherman & Morrison 1950 for one row),

    W′ = W + U (I + Z_n U)⁻¹ (T_n − Z_n W),      U = M Z_nᵀ = (Z_nᵀ − Zᵀ G Z Z_nᵀ)/α,

the minimiser on the enlarged data, computed from the fitted teacher's ``W`` and its Cholesky
factor of ``Z Zᵀ + α I`` in ``O(n·d·r + n²·r)`` instead of ``O(n²·d + n³)`` for a refit. It
equals a cold refit up to rounding (the tests check ≤ 1e-9 relative and identical votes;
``benchmarks/bench_teachers.py`` reports the measured difference), so a retrained teacher is
the teacher the training algorithm gives on S′ — unlike a warm start of an early-stopped
iterative solver, whose result depends on where it starts.

A label the part has never seen becomes a new one-vs-rest column whose targets are −1 on the
old rows (its old weights ``−Zᵀ G 1`` are kept from the fit).

Example:
    >>> from dpaudit.data import load_digits
    >>> ds = load_digits(seed=0)
    >>> t = RidgeTeacher().fit(ds.X_train[:60], ds.y_train[:60])
    >>> t2 = t.with_rows(ds.X_train[:60], ds.X_test[:1], [3])
    >>> cold = RidgeTeacher().fit(np.vstack([ds.X_train[:60], ds.X_test[:1]]),
    ...                           np.r_[ds.y_train[:60], 3])
    >>> bool(np.allclose(t2.coef_, cold.coef_, rtol=0, atol=1e-10))
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg

from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import check_positive

__all__ = ["DEFAULT_RIDGE_ALPHA", "RidgeTeacher"]

#: Penalty α of the ``"ridge"`` estimator. Fixed, not tuned on any audited query: it is
#: scikit-learn's ``RidgeClassifier`` model with α = 10 (plurality of 250 Fashion-MNIST
#: teachers about 80 % accurate; ``docs`` / README).
DEFAULT_RIDGE_ALPHA = 10.0


def _design(X: ArrayLike) -> FloatArray:
    """``[X, 1]`` in float64 (the constant feature carries the intercept)."""
    x = np.asarray(X, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    return np.hstack([x, np.ones((x.shape[0], 1))])


class RidgeTeacher:
    """One-vs-rest ridge classifier with exact retraining on added rows (module notes).

    scikit-learn's estimator API (``fit``, ``predict``, ``decision_function``,
    ``get_params``/``set_params``, ``classes_``, ``coef_``) plus :meth:`with_rows`.

    Args:
        alpha: L2 penalty α > 0 (on the weights and on the intercept feature).
        random_state: accepted for the estimator protocol and ignored: the fit is
            deterministic (a unique minimiser computed by a Cholesky solve).
    """

    #: A retraining from the fitted state equals a cold refit (see :meth:`with_rows`).
    exact_update = True
    #: The fit does not depend on ``random_state``.
    deterministic = True

    def __init__(self, alpha: float = DEFAULT_RIDGE_ALPHA, random_state: Any = None) -> None:
        self.alpha = alpha
        self.random_state = random_state

    # ------------------------------------------------------------------ estimator API

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters (scikit-learn's protocol)."""
        del deep
        return {"alpha": self.alpha, "random_state": self.random_state}

    def set_params(self, **params: Any) -> RidgeTeacher:
        """Set constructor parameters (scikit-learn's protocol)."""
        for key, value in params.items():
            if key not in ("alpha", "random_state"):
                raise ValueError(f"RidgeTeacher has no parameter {key!r}")
            setattr(self, key, value)
        return self

    def fit(self, X: ArrayLike, y: ArrayLike) -> RidgeTeacher:
        """Fit by the dual: ``W = Zᵀ (Z Zᵀ + α I)⁻¹ T``, keeping the Cholesky factor.

        Raises:
            ValueError: α ≤ 0, or X and y of different lengths.
        """
        alpha = check_positive("alpha", self.alpha)
        z = _design(X)
        labels = np.asarray(y, dtype=np.int64)
        if labels.shape != (z.shape[0],):
            raise ValueError(
                f"y must have one label per row of X ({z.shape[0]}), got {labels.shape}"
            )
        self.classes_ = np.unique(labels)
        targets = np.where(labels[:, None] == self.classes_[None, :], 1.0, -1.0)
        gram = z @ z.T
        gram[np.diag_indices_from(gram)] += alpha
        factor = linalg.cho_factor(gram, lower=True, check_finite=False)
        dual = linalg.cho_solve(factor, np.hstack([targets, -np.ones((z.shape[0], 1))]))
        w = z.T @ dual
        self.coef_ = np.ascontiguousarray(w[:, :-1].T)  # (classes, d + 1), sklearn's layout
        self._negative = w[:, -1]  # weights of a column whose targets are all −1
        self._factor = factor
        self._num_rows = int(z.shape[0])
        return self

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Scores ``[X, 1] Wᵀ`` per class of ``classes_``."""
        return _design(X) @ self.coef_.T

    def predict(self, X: ArrayLike) -> IntArray:
        """The class of the largest score (ties: the lowest class)."""
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    # ------------------------------------------------------------------ exact retraining

    @property
    def updatable(self) -> bool:
        """Whether this teacher holds the factor :meth:`with_rows` needs (fitted, not itself
        the result of an update)."""
        return getattr(self, "_factor", None) is not None

    def with_rows(self, X: ArrayLike, X_new: ArrayLike, y_new: ArrayLike) -> RidgeTeacher:
        """The teacher fitted on ``X`` plus rows ``X_new`` labelled ``y_new`` (Woodbury update).

        Args:
            X: the rows this teacher was fitted on, in the same order.
            X_new: the added rows ``(r, d)`` (or one row ``(d,)``).
            y_new: their labels.

        Returns:
            A new fitted :class:`RidgeTeacher` (not itself updatable).

        Raises:
            ValueError: the teacher was not fitted by :meth:`fit`, or ``X`` does not have the
                rows it was fitted on.
        """
        if not self.updatable:
            raise ValueError("with_rows needs a teacher fitted by fit() (it keeps the factor)")
        z = _design(X)
        if z.shape[0] != self._num_rows:
            raise ValueError(f"X must hold the {self._num_rows} rows the teacher was fitted on")
        zn = _design(X_new)
        labels = np.atleast_1d(np.asarray(y_new, dtype=np.int64))
        classes = np.union1d(self.classes_, labels)
        w = self._weights(classes)
        u = self._solve_direction(z, zn)
        targets = np.where(labels[:, None] == classes[None, :], 1.0, -1.0)
        inner = np.eye(zn.shape[0]) + zn @ u
        w = w + u @ np.linalg.solve(inner, targets - zn @ w)
        out = RidgeTeacher(self.alpha, self.random_state)
        out.classes_ = classes
        out.coef_ = np.ascontiguousarray(w.T)
        out._factor = None
        return out

    def updated_scores(
        self, X: ArrayLike, X_new: ArrayLike, y_new: ArrayLike, X_eval: ArrayLike | None = None
    ) -> tuple[IntArray, FloatArray]:
        """Scores after adding *each* row of ``X_new`` on its own (one retraining per row).

        Row b of ``X_new`` is added alone (Sherman–Morrison); the scores are those of the
        retrained teacher on ``X_eval`` (default: on the added row itself, the repeated query
        of an adversarial distinguisher).

        Args:
            X: the rows this teacher was fitted on.
            X_new: ``(B, d)`` alternative points.
            y_new: their labels ``(B,)``.
            X_eval: rows to score, ``(n_eval, d)``, shared by all B retrainings.

        Returns:
            ``(classes, scores)``: the class of each score column (``classes_`` plus the new
            labels) and scores ``(B, n_eval, C′)`` (``(B, 1, C′)`` without ``X_eval``); the
            column of a label that retraining b's teacher never saw (another point's new
            label) is ``−inf`` in retraining b.
        """
        if not self.updatable:
            raise ValueError("updated_scores needs a teacher fitted by fit()")
        z = _design(X)
        zn = _design(X_new)
        labels = np.atleast_1d(np.asarray(y_new, dtype=np.int64))
        classes = np.union1d(self.classes_, labels)
        w = self._weights(classes)
        u = self._solve_direction(z, zn)  # (d + 1, B): M z_b per column
        h = np.einsum("bi,ib->b", zn, u)  # leverage z_bᵀ M z_b
        f = zn @ w  # (B, C′) scores on the points before
        targets = np.where(labels[:, None] == classes[None, :], 1.0, -1.0)
        r = (targets - f) / (1.0 + h)[:, None]  # (B, C′)
        if X_eval is None:
            scores = (f + h[:, None] * r)[:, None, :]
        else:
            ze = _design(X_eval)
            base = ze @ w  # (n_eval, C′)
            lever = ze @ u  # (n_eval, B)
            scores = base[None, :, :] + lever.T[:, :, None] * r[:, None, :]
        unseen = ~np.isin(classes, self.classes_)[None, :] & (targets < 0)
        scores[np.broadcast_to(unseen[:, None, :], scores.shape)] = -np.inf
        return classes, scores

    def _weights(self, classes: np.ndarray) -> FloatArray:
        """``W`` (d + 1, C′) over ``classes``: fitted columns, −1-target columns for new ones."""
        w = np.repeat(self._negative[:, None], classes.size, axis=1)
        w[:, np.searchsorted(classes, self.classes_)] = self.coef_.T
        return w

    def _solve_direction(self, z: np.ndarray, zn: np.ndarray) -> FloatArray:
        """``U = M Z_nᵀ = (Z_nᵀ − Zᵀ G Z Z_nᵀ)/α`` (d + 1, r)."""
        s = linalg.cho_solve(self._factor, z @ zn.T, check_finite=False)
        return (zn.T - z.T @ s) / float(self.alpha)

    def __repr__(self) -> str:
        return f"RidgeTeacher(alpha={self.alpha!r})"
