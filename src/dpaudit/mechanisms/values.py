"""Mechanisms as values (layer 2): frozen descriptions of each DP mechanism.

In the spirit of dp_accounting's ``DpEvent``: a value says *which* mechanism runs with
*which* parameters, validated once. Systems carry their value and use it to answer
(:meth:`GNMax.answer`); :mod:`dpaudit.accounting` computes the claim from the value
(:func:`dpaudit.accounting.mechanism_rdp`); attacks read it. So the mechanism that answers and
the mechanism that is analysed are the same object, and each claim is computed in one place.

Values:

* :class:`GNMax` — Gaussian noisy argmax ``argmax_j (H_j + N(0, σ²))`` (Papernot et al. 2018,
  "Scalable Private Learning with PATE", arXiv:1802.08908, §4.1).
* :class:`ConfidentGNMax` — answer only if ``max_j H_j + N(0, σ1²) ≥ T``, then GNMax at σ2
  (Papernot et al. 2018, Alg. 1; noise on the maximum count only).
* :class:`LNMax` — Laplace noisy argmax ``argmax_j (H_j + Lap(b))`` (Papernot et al. 2017,
  arXiv:1610.05755).
* :class:`SubsampledGaussian` — Poisson subsampling with rate γ, then a Gaussian mechanism of
  noise multiplier σ (Mironov, Talwar, Zhang 2019, arXiv:1908.10530), repeated ``steps`` times
  (DP-SGD, Private-kNN).
* Label mechanisms (Malek et al. 2021, "Antipodes of Label Differential Privacy",
  arXiv:2106.03408): :class:`LaplaceLabels` (ALIBI: Laplace noise of scale b on one-hot
  labels), :class:`GaussianLabels` (its Gaussian variant), :class:`RandomizedResponse`
  (C-ary randomized response with parameter ε).

Example:
    >>> GNMax(sigma=1e-9).answer([[3, 7, 0]], rng=0).tolist()
    [1]
    >>> ConfidentGNMax(threshold=150, sigma1=1e-9, sigma2=1e-9).answer(
    ...     [[200, 50, 0], [100, 90, 60]], rng=0).tolist()
    [0, -1]
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, IntArray, RngLike
from dpaudit._validate import check_positive, check_positive_int, check_real, check_votes

__all__ = [
    "ABSTAIN",
    "REFUSED",
    "ConfidentGNMax",
    "GNMax",
    "GaussianLabels",
    "LNMax",
    "LaplaceLabels",
    "Mechanism",
    "NoisyArgmax",
    "RandomizedResponse",
    "SubsampledGaussian",
]

ABSTAIN = -1
"""Label of a query that Confident GNMax did not answer (privacy was still spent)."""
REFUSED = -2
"""Label of a query refused because the privacy budget is exhausted (no privacy spent)."""


@runtime_checkable
class Mechanism(Protocol):
    """A mechanism value: a frozen, validated description with a ``name``."""

    @property
    def name(self) -> str:
        """Short name of the mechanism (``"gnmax"``, ``"confident-gnmax"``, …)."""
        ...


@runtime_checkable
class NoisyArgmax(Mechanism, Protocol):
    """A noisy aggregator of vote histograms (GNMax, Confident GNMax, LNMax).

    Noise is drawn by :meth:`draw_noise` and applied by :meth:`decide`, so a caller that must
    process queries one at a time (a budget ledger) can draw all the noise in one vectorised
    call and still get answers identical to :meth:`answer`.
    """

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]: ...

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray: ...

    def answer(self, votes: ArrayLike, *, rng: RngLike = None) -> IntArray: ...


def _votes_2d(votes: ArrayLike) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = check_votes("votes", votes, nonneg=True)
    return arr.reshape(-1, arr.shape[-1]), arr.shape[:-1]


class _AnswerMixin:
    """``answer`` from ``draw_noise`` + ``decide``."""

    def answer(self, votes: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Noisy labels for one histogram ``(C,)`` or a batch ``(..., C)``.

        Args:
            votes: vote histogram(s), non-negative, last axis = classes.
            rng: randomness of the noise.

        Returns:
            int64 labels of shape ``votes.shape[:-1]`` (:data:`ABSTAIN` where declined).

        Raises:
            ValueError: negative or non-finite votes, fewer than 2 classes.
        """
        flat, shape = _votes_2d(votes)
        noise = self.draw_noise(flat.shape[0], flat.shape[1], rng=rng)  # type: ignore[attr-defined]
        return self.decide(flat, noise).reshape(shape)  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class GNMax(_AnswerMixin):
    """Gaussian noisy argmax: ``argmax_j (votes_j + N(0, σ²))``.

    Papernot et al. 2018 (arXiv:1802.08908) §4.1; the aggregator of PATE, CaPC, Private-kNN
    and PromptPATE.

    Attributes:
        sigma: noise standard deviation σ > 0 (vote units).
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))

    @property
    def name(self) -> str:
        """``"gnmax"``."""
        return "gnmax"

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]:
        """The Gaussian noise for ``num_queries`` histograms of ``num_classes`` classes."""
        gen = as_generator(rng)
        return {"histogram": self.sigma * gen.standard_normal((num_queries, num_classes))}

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray:
        """Labels for ``(n, C)`` votes given noise from :meth:`draw_noise`."""
        return np.argmax(votes + noise["histogram"], axis=-1).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class ConfidentGNMax(_AnswerMixin):
    """Confident GNMax (Papernot et al. 2018, arXiv:1802.08908, Alg. 1).

    Step 1: answered iff ``max_j votes_j + N(0, σ1²) ≥ threshold`` (noise on the maximum count
    only, as the analysis assumes). Step 2, if answered: ``argmax_j (votes_j + N(0, σ2²))``.
    Unanswered → :data:`ABSTAIN`.

    Attributes:
        threshold: T ≥ 0 (real; typically a vote count).
        sigma1: threshold-step noise σ1 > 0.
        sigma2: answer-step noise σ2 > 0.
    """

    threshold: float
    sigma1: float
    sigma2: float

    def __post_init__(self) -> None:
        threshold = check_real("threshold", self.threshold)
        if threshold < 0:  # a vote count: a negative one answers every query
            raise ValueError(f"threshold must be non-negative, got {threshold}")
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "sigma1", check_positive("sigma1", self.sigma1))
        object.__setattr__(self, "sigma2", check_positive("sigma2", self.sigma2))

    @property
    def name(self) -> str:
        """``"confident-gnmax"``."""
        return "confident-gnmax"

    @property
    def sigma(self) -> float:
        """The answer-step noise σ2 (the σ of the GNMax step)."""
        return self.sigma2

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]:
        """Threshold noise ``(n,)`` and answer noise ``(n, C)``, drawn in that order."""
        gen = as_generator(rng)
        return {
            "threshold": self.sigma1 * gen.standard_normal(num_queries),
            "histogram": self.sigma2 * gen.standard_normal((num_queries, num_classes)),
        }

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray:
        """Labels (or :data:`ABSTAIN`) for ``(n, C)`` votes given noise from :meth:`draw_noise`."""
        answered = votes.max(axis=-1) + noise["threshold"] >= self.threshold
        labels = np.argmax(votes + noise["histogram"], axis=-1).astype(np.int64)
        return np.where(answered, labels, ABSTAIN)


@dataclasses.dataclass(frozen=True)
class LNMax(_AnswerMixin):
    """Laplace noisy argmax ``argmax_j (votes_j + Lap(b))`` (Papernot et al. 2017,
    arXiv:1610.05755, §3).

    Attributes:
        scale: Laplace scale b > 0 (pure ε = 2/b per query for the replace relation).
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def name(self) -> str:
        """``"lnmax"``."""
        return "lnmax"

    def draw_noise(
        self, num_queries: int, num_classes: int, *, rng: RngLike = None
    ) -> dict[str, Any]:
        """The Laplace noise for ``num_queries`` histograms of ``num_classes`` classes."""
        gen = as_generator(rng)
        return {"histogram": gen.laplace(0.0, self.scale, size=(num_queries, num_classes))}

    def decide(self, votes: np.ndarray, noise: dict[str, Any]) -> IntArray:
        """Labels for ``(n, C)`` votes given noise from :meth:`draw_noise`."""
        return np.argmax(votes + noise["histogram"], axis=-1).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class SubsampledGaussian:
    """Poisson subsampling at rate γ, then the Gaussian mechanism, ``steps`` times.

    The mechanism of DP-SGD (Abadi et al. 2016, arXiv:1607.00133) and of Private-kNN (Zhu et
    al. 2020), analysed by Mironov, Talwar, Zhang 2019 (arXiv:1908.10530).

    Attributes:
        sampling_rate: γ ∈ (0, 1].
        noise_multiplier: σ / sensitivity > 0.
        steps: number of compositions ≥ 1.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int = 1

    def __post_init__(self) -> None:
        g = check_positive("sampling_rate", self.sampling_rate)
        if g > 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {g}")
        object.__setattr__(self, "sampling_rate", g)
        object.__setattr__(
            self, "noise_multiplier", check_positive("noise_multiplier", self.noise_multiplier)
        )
        object.__setattr__(self, "steps", check_positive_int("steps", self.steps))

    @property
    def name(self) -> str:
        """``"subsampled-gaussian"``."""
        return "subsampled-gaussian"


@dataclasses.dataclass(frozen=True)
class LaplaceLabels:
    """ALIBI's label mechanism: one-hot label + Lap(b) noise per class (Malek et al. 2021,
    arXiv:2106.03408, §4): ε = 2/b label-DP (changing a label moves two coordinates by 1).

    Attributes:
        scale: Laplace scale b > 0.
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def name(self) -> str:
        """``"laplace-labels"``."""
        return "laplace-labels"


@dataclasses.dataclass(frozen=True)
class GaussianLabels:
    """One-hot label + N(0, σ²) noise per class (the Gaussian variant of ALIBI, Malek et al.
    2021, arXiv:2106.03408, App. A): L2 sensitivity √2.

    Attributes:
        sigma: noise standard deviation σ > 0.
    """

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))

    @property
    def name(self) -> str:
        """``"gaussian-labels"``."""
        return "gaussian-labels"


@dataclasses.dataclass(frozen=True)
class RandomizedResponse:
    """C-ary randomized response with parameter ε: keep the label with probability
    ``e^ε/(e^ε + C − 1)``, else a uniformly random other label (Warner 1965; label DP as in
    Ghazi et al. 2021, arXiv:2102.06062).

    Attributes:
        epsilon: ε > 0.
        num_classes: C ≥ 2.
    """

    epsilon: float
    num_classes: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        c = check_positive_int("num_classes", self.num_classes)
        if c < 2:
            raise ValueError(f"num_classes must be at least 2, got {c}")
        object.__setattr__(self, "num_classes", c)

    @property
    def name(self) -> str:
        """``"randomized-response"``."""
        return "randomized-response"
