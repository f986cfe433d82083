"""Noisy aggregators of the prediction phase: GNMax and Confident GNMax.

GNMax is paper 000 Eq. (2) (Alg. 1 lines 13–14): argmax_j (H_j + N(0, σ²)). Confident GNMax is
Papernot et al. 2018, Algorithm 1 (formulas.md §1.5; paper 004 Alg. 2): answer only if
max_j H_j + N(0, σ1²) ≥ T — noise on the *max count only* — and then answer with GNMax at
σ2; an unanswered query returns :data:`ABSTAIN` (it still costs the threshold step's privacy).

Both are small frozen objects with ``answer(votes, *, rng)``. Their noise is drawn by
``draw_noise`` and applied by ``decide`` so that a caller that must process queries one by one
(the budget ledger of :class:`PrivatePredictor`) can draw all noise in one vectorised call and
still get answers identical to ``answer``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_orders, check_positive, check_real, check_votes

__all__ = ["ABSTAIN", "REFUSED", "ConfidentGNMax", "GNMax"]

ABSTAIN = -1
"""Label of a query that Confident GNMax did not answer (privacy was still spent)."""
REFUSED = -2
"""Label of a query refused because the privacy budget is exhausted (no privacy spent)."""


def _votes_2d(votes: ArrayLike) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = check_votes("votes", votes, nonneg=True)
    return arr.reshape(-1, arr.shape[-1]), arr.shape[:-1]


@dataclasses.dataclass(frozen=True)
class GNMax:
    """Gaussian noisy argmax: argmax_j (votes_j + N(0, σ²)) (paper 000 Eq. (2)).

    Attributes:
        sigma: noise standard deviation σ > 0.

    Example:
        >>> GNMax(sigma=1e-9).answer([[3, 7, 0]], rng=0).tolist()
        [1]
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]:
        """The Gaussian noise for ``num_queries`` histograms of ``num_classes`` classes."""
        gen = as_generator(rng)
        return {"histogram": self.sigma * gen.standard_normal((num_queries, num_classes))}

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray:
        """Labels for (n, C) float votes given noise from :meth:`draw_noise`."""
        return np.argmax(votes + noise["histogram"], axis=-1).astype(np.int64)

    def answer(self, votes: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Noisy-argmax labels for one histogram (C,) or a batch (..., C).

        Args:
            votes: vote histogram(s), non-negative, last axis = classes.
            rng: randomness of the noise.

        Returns:
            int64 labels of shape ``votes.shape[:-1]``.

        Raises:
            ValueError: negative or non-finite votes, fewer than 2 classes.
        """
        flat, shape = _votes_2d(votes)
        noise = self.draw_noise(flat.shape[0], flat.shape[1], rng=rng)
        return self.decide(flat, noise).reshape(shape)

    def data_independent_rdp(self, orders: ArrayLike, *, answered: bool = True) -> FloatArray:
        """Per-query data-independent RDP λ/σ² (Papernot et al. 2018 Prop. 8; formulas.md §1.2).

        ``answered`` is accepted for symmetry with :class:`ConfidentGNMax`; GNMax always answers.
        """
        lam = check_orders(orders)
        return lam / self.sigma**2


@dataclasses.dataclass(frozen=True)
class ConfidentGNMax:
    """Confident GNMax (Papernot et al. 2018 Alg. 1; formulas.md §1.5).

    Step 1: answered iff ``max_j votes_j + N(0, σ1²) ≥ threshold`` (noise on the max count
    only). Step 2, if answered: ``argmax_j (votes_j + N(0, σ2²))``. Unanswered → :data:`ABSTAIN`.

    Attributes:
        threshold: T (real; typically a vote count).
        sigma1: threshold-step noise std σ1 > 0.
        sigma2: answer-step noise std σ2 > 0.

    Example:
        >>> agg = ConfidentGNMax(threshold=150, sigma1=1e-9, sigma2=1e-9)
        >>> agg.answer([[200, 50, 0], [100, 90, 60]], rng=0).tolist()
        [0, -1]
    """

    threshold: float
    sigma1: float
    sigma2: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", check_real("threshold", self.threshold))
        object.__setattr__(self, "sigma1", check_positive("sigma1", self.sigma1))
        object.__setattr__(self, "sigma2", check_positive("sigma2", self.sigma2))

    @property
    def sigma(self) -> float:
        """The answer-step noise σ2 (the σ of the GNMax step)."""
        return self.sigma2

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]:
        """Threshold noise (n,) and answer noise (n, C), drawn in that order."""
        gen = as_generator(rng)
        return {
            "threshold": self.sigma1 * gen.standard_normal(num_queries),
            "histogram": self.sigma2 * gen.standard_normal((num_queries, num_classes)),
        }

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray:
        """Labels (or ABSTAIN) for (n, C) float votes given noise from :meth:`draw_noise`."""
        answered = votes.max(axis=-1) + noise["threshold"] >= self.threshold
        labels = np.argmax(votes + noise["histogram"], axis=-1).astype(np.int64)
        return np.where(answered, labels, ABSTAIN)

    def answer(self, votes: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Labels, or :data:`ABSTAIN` (-1) where the threshold step declined.

        Args:
            votes: vote histogram(s), non-negative, last axis = classes.
            rng: randomness of the noise.

        Returns:
            int64 labels of shape ``votes.shape[:-1]``.

        Raises:
            ValueError: negative or non-finite votes, fewer than 2 classes.
        """
        flat, shape = _votes_2d(votes)
        noise = self.draw_noise(flat.shape[0], flat.shape[1], rng=rng)
        return self.decide(flat, noise).reshape(shape)

    def data_independent_rdp(self, orders: ArrayLike, *, answered: bool = True) -> FloatArray:
        """Per-query data-independent RDP (formulas.md §1.5).

        Threshold step (sensitivity 1, noise σ1): λ/(2σ1²), charged on every query; answer
        step (GNMax, Papernot et al. 2018 Prop. 8): λ/σ2², charged when answered.
        """
        lam = check_orders(orders)
        cost = lam / (2.0 * self.sigma1**2)
        return cost + lam / self.sigma2**2 if answered else cost
