"""Black-box membership scores of a trained classifier, oriented so members score higher.

From the logits z(x) of the final model (black-box access, Nasr et al. 2023,
arXiv:2302.07956):

* ``"margin"`` — the multiclass hinge / logit margin ``z_y − max_{y′≠y} z_{y′}`` (Bertran
  et al. 2023, arXiv:2307.03694; Carlini et al. 2022, arXiv:2112.03570, whose "logit scaling"
  makes scores near Gaussian). For two classes it equals ``(2y − 1)·log(p/(1 − p))``, the
  binary score of Bertran et al.
* ``"logit-sum"`` — the true logit minus the sum of the others,
  ``z_y − Σ_{y′≠y} z_{y′}``: the score of Liu, Boglioni, Fu, Hu, Thaker & Wu (*Enhancing
  One-run Privacy Auditing with Quantile Regression-Based Membership Inference*, §4).
* ``"neg-loss"`` — minus the cross-entropy loss ``z_y − log Σ_{y′} e^{z_{y′}}`` (the loss
  score of Steinke, Nasr & Jagielski 2023, arXiv:2305.08846).

Example:
    >>> logit_margin([[2.0, 0.5, 1.2]], [0]).tolist(), logit_margin([[2.0, 0.5, 1.2]], [1]).tolist()
    ([0.8], [-1.5])
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_array, check_choice

__all__ = [
    "MEMBERSHIP_SCORES",
    "binary_logit_score",
    "logit_margin",
    "logit_minus_others",
    "membership_score",
    "negative_loss",
]


def _check(logits: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    z = check_array("logits", logits, ndim=2, allow_empty=True)
    if z.shape[1] < 2:
        raise ValueError(f"logits must have at least 2 classes, got shape {z.shape}")
    y = check_array("labels", labels, allow_empty=True)
    if y.shape != (z.shape[0],):
        raise ValueError(
            f"labels must have shape ({z.shape[0]},), one per row of logits (shape {z.shape}), "
            f"got {y.shape}"
        )
    bad = (y != np.round(y)) | (y < 0) | (y >= z.shape[1])
    if np.any(bad):
        raise ValueError(f"labels must be integers in [0, {z.shape[1] - 1}], got {y[bad][0]:g}")
    return z, y.astype(np.int64)


def logit_margin(logits: ArrayLike, labels: ArrayLike) -> FloatArray:
    """``z_y − max_{y′≠y} z_{y′}`` per row (Bertran et al. 2023, arXiv:2307.03694).

    Raises:
        ValueError: shapes that disagree, labels out of range, non-finite logits.
    """
    z, y = _check(logits, labels)
    rows = np.arange(z.shape[0])
    true = z[rows, y]
    others = z.copy()
    others[rows, y] = -np.inf
    return true - others.max(axis=1)


def logit_minus_others(logits: ArrayLike, labels: ArrayLike) -> FloatArray:
    """``z_y − Σ_{y′≠y} z_{y′}`` per row (Liu et al., §4: "the difference in logit of the true
    class label and the sum of the remaining logits").

    Raises:
        ValueError: as :func:`logit_margin`.
    """
    z, y = _check(logits, labels)
    true = z[np.arange(z.shape[0]), y]
    return 2.0 * true - z.sum(axis=1)


def negative_loss(logits: ArrayLike, labels: ArrayLike) -> FloatArray:
    """Minus the cross-entropy: ``z_y − logsumexp(z)`` per row.

    Raises:
        ValueError: as :func:`logit_margin`.
    """
    z, y = _check(logits, labels)
    return z[np.arange(z.shape[0]), y] - special.logsumexp(z, axis=1)


def binary_logit_score(probabilities: ArrayLike, labels: ArrayLike) -> FloatArray:
    """``(2y − 1)·log(p/(1 − p))`` for a binary model's P(y = 1) (Bertran et al. 2023).

    Example:
        >>> np.round(binary_logit_score([0.8, 0.8], [1, 0]), 6).tolist()
        [1.386294, -1.386294]

    Raises:
        ValueError: probabilities outside (0, 1), labels not 0/1, shapes that disagree.
    """
    p = check_array("probabilities", probabilities, ndim=1, allow_empty=True)
    y = check_array("labels", labels, allow_empty=True)
    if y.shape != p.shape:
        raise ValueError(f"labels must have the shape of probabilities {p.shape}, got {y.shape}")
    outside = (p <= 0) | (p >= 1)
    if np.any(outside):
        raise ValueError(f"probabilities must lie in (0, 1), got {p[outside][0]:g}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError(f"labels must be 0 or 1, got {y[(y != 0) & (y != 1)][0]:g}")
    return (2.0 * y - 1.0) * special.logit(p)


#: Score name → function ``(logits, labels) -> scores`` (members score higher).
MEMBERSHIP_SCORES = {
    "margin": logit_margin,
    "logit-sum": logit_minus_others,
    "neg-loss": negative_loss,
}


def membership_score(logits: ArrayLike, labels: ArrayLike, score: str = "margin") -> FloatArray:
    """The named score of :data:`MEMBERSHIP_SCORES` per row.

    Raises:
        ValueError: an unknown score name, or bad logits/labels.

    Example:
        >>> np.round(membership_score([[2.0, 0.5, 1.2]], [0], "logit-sum"), 6).tolist()
        [0.3]
    """
    name = check_choice("score", score, tuple(MEMBERSHIP_SCORES))
    return MEMBERSHIP_SCORES[name](logits, labels)
