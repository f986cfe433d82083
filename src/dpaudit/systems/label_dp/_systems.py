"""Label-DP training systems: ALIBI, AGIBI, randomized response and Soft-RR.

Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label Differential Privacy: PATE
and ALIBI" (arXiv:2106.03408). Each system noises every training label *once* with its
mechanism value (:mod:`dpaudit.mechanisms.values`), post-processes the noisy label, and trains
a network on the result (:mod:`dpaudit.systems.label_dp._training`); by post-processing the whole
training run is as private as one release of each label. The claim is computed from the same
mechanism value by :mod:`dpaudit.accounting`:

* :class:`ALIBI` — Laplace noise ``e_y + Lap(b)^C`` and Bayesian post-processing (Eq. 1–3,
  Alg. 3) under the uniform prior or the model's own softmax, recomputed at every step
  (``prior="model"``, the paper's ALIBI). Pure ``ε = 2/b`` (L1 sensitivity 2).
* :class:`AGIBI` — Gaussian noise ``e_y + N(0, σ²)^C`` and the posterior
  ``softmax(o/σ² + log π)`` (App. D.2, Eq. 5; the authors' code divides by σ, which is not the
  posterior). RDP ``α/σ²`` (L2 sensitivity √2; Mironov 2017, arXiv:1702.07476, Prop. 7),
  noised once, converted to (ε, δ) (Balle et al. 2020, arXiv:1905.09982, Thm 20).
* :class:`RandomizedResponseLabels` — C-ary ε-RR on the label, trained on as a hard label
  (Warner 1965; Ghazi et al. 2021, arXiv:2102.06062). Pure ε.
* :class:`SoftRR` — Laplace noise and the uninformed post-processing of App. D.1: the
  Euclidean projection onto the simplex (Duchi et al. 2008, Alg. 4). Pure ``ε = 2/b``.

Every system is registered in :data:`dpaudit.systems.SYSTEMS` (``"alibi"``, ``"agibi"``,
``"rr"``, ``"soft-rr"``) with a factory that takes its settings cell
(:mod:`dpaudit.systems.label_dp._cells`); the label-DP audit is ``dpaudit audit label-dp``
(:mod:`dpaudit.experiments.label_dp.pipeline`).

Example:
    >>> ALIBI(scale=0.25).claim().epsilon
    8.0
    >>> round(AGIBI(sigma=1.0).claim(delta=1e-5).epsilon, 6)
    7.077392
    >>> RandomizedResponseLabels(epsilon=2.0, num_classes=10).claim().epsilon
    2.0
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import Claim, Curve
from dpaudit._rng import block_seeds
from dpaudit._typing import ArrayLike, ProgressLike, RngLike
from dpaudit._validate import check_array, check_choice, check_delta, check_positive
from dpaudit.accounting import DEFAULT_ORDERS, gaussian_label_rdp, mechanism_epsilon
from dpaudit.mechanisms import (
    GaussianLabels,
    LaplaceLabels,
    check_labels,
    label_log_likelihood,
    noise_labels,
    project_to_simplex,
)
from dpaudit.mechanisms import RandomizedResponse as RRMechanism
from dpaudit.systems.label_dp._training import (
    LabelTargets,
    TorchNetwork,
    TrainingSettings,
    train_network,
)

__all__ = [
    "AGIBI",
    "ALIBI",
    "PRIORS",
    "LabelDPFit",
    "LabelNoiseSystem",
    "RandomizedResponseLabels",
    "SoftRR",
    "check_label_data",
]

PRIORS: tuple[str, ...] = ("model", "uniform")
_MALEK = "Malek et al. 2021 (arXiv:2106.03408)"
_PURE_LAPLACE = (
    f"{_MALEK} §5.1: Laplace mechanism on the one-hot label, L1 sensitivity 2 (Dwork et al. "
    "2006), ε = 2/b; training is post-processing of one noising per label"
)
DEFAULT_DELTA = 1e-5


@dataclasses.dataclass(frozen=True, eq=False)
class LabelDPFit:
    """A trained label-DP model and the claim of the run that produced it.

    Attributes:
        system: the system's registered name.
        network: the trained :class:`~dpaudit.systems.label_dp._training.TorchNetwork`.
        claims: claimed upper bounds, primary first.
        detail: system-specific figures (noisy-label agreement, PATE votes and answers …).
    """

    system: str
    network: TorchNetwork
    claims: tuple[Claim, ...]
    detail: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def claim(self) -> Claim:
        """The primary claim."""
        return self.claims[0]


def check_label_data(X: ArrayLike, y: ArrayLike, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and labels of a label-DP training set, checked before any noising or training.

    Raises:
        ValueError: C < 2, labels out of range, row count ≠ label count, empty data.

    Example:
        >>> x, y = check_label_data([[0.0], [1.0]], [1, 0], 2)
        >>> y.tolist()
        [1, 0]
    """
    labels = check_labels("y", y, num_classes)
    x = check_array("X", X, ndim=2)
    if x.shape[0] != labels.size:
        raise ValueError(f"X has {x.shape[0]} rows but y has {labels.size} labels")
    return x, labels


@dataclasses.dataclass(frozen=True)
class LabelNoiseSystem(abc.ABC):
    """Base of the systems that noise each label once and train on the post-processed labels.

    Subclasses define ``name``, ``mechanism``, :meth:`claim` and :meth:`targets`.

    Attributes:
        training: how the network is trained.
    """

    name: ClassVar[str] = "label-noise"

    @property
    @abc.abstractmethod
    def mechanism(self) -> Any:
        """The mechanism value whose claim the system states."""

    def noise_mechanism(self) -> Any:
        """The mechanism value that actually noises the labels (the claimed one)."""
        return self.mechanism

    @abc.abstractmethod
    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The claimed label-DP guarantee of one training run."""

    def release(self, labels: ArrayLike, num_classes: int, *, rng: RngLike = None) -> np.ndarray:
        """Each label through :meth:`noise_mechanism`, once."""
        return noise_labels(self.noise_mechanism(), labels, num_classes, rng=rng)

    @abc.abstractmethod
    def targets(self, released: np.ndarray, num_classes: int) -> LabelTargets:
        """The training targets post-processed from the released labels."""

    def check_data(self, X: ArrayLike, y: ArrayLike, num_classes: int, *, images: bool = True):
        """Rows and labels checked before training (``images``: whether the data are images)."""
        return check_label_data(X, y, num_classes)

    @property
    def training_settings(self) -> TrainingSettings:
        """How the network is trained."""
        return getattr(self, "training", TrainingSettings())

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        num_classes: int,
        image_shape: tuple[int, int] | None = None,
        rng: RngLike = None,
        progress: ProgressLike = None,
    ) -> LabelDPFit:
        """Noise every label once, post-process, train a network.

        Args:
            X: ``(n, d)`` training rows.
            y: ``(n,)`` training labels (canaries included) in ``0..C−1``.
            num_classes: C ≥ 2.
            image_shape: ``(H, W)`` of image rows, or None.
            rng: seed; the noise and the training use independent child streams.
            progress: progress callback over epochs.

        Returns:
            :class:`LabelDPFit`.

        Raises:
            ValueError: labels out of range, C < 2, shapes that disagree (before any noising).
        """
        x, labels = check_label_data(X, y, num_classes)
        noise_seed, train_seed = block_seeds(rng, 2)
        released = self.release(labels, num_classes, rng=noise_seed)
        targets = self.targets(released, num_classes)
        net = train_network(
            x, targets, image_shape=image_shape, training=self.training_settings,
            rng=train_seed, progress=progress, description=f"{self.name}: training",
        )  # fmt: skip
        kept = _label_agreement(released, labels)
        return LabelDPFit(self.name, net, (self.claim(),), {"released_label_agreement": kept})


def _label_agreement(released: np.ndarray, labels: np.ndarray) -> float:
    """Share of released labels whose most likely class is the training label."""
    top = released if released.ndim == 1 else np.argmax(released, axis=1)
    return float(np.mean(top == labels))


def _laplace_claim(scale: float) -> Claim:
    eps = mechanism_epsilon(LaplaceLabels(scale))
    return Claim("pure ε (Laplace labels)", _PURE_LAPLACE, epsilon=eps, delta=0.0)


def _check_prior(prior: object) -> None:
    check_choice("prior", prior, PRIORS)


@dataclasses.dataclass(frozen=True)
class ALIBI(LabelNoiseSystem):
    """Additive Laplace with Iterative Bayesian Inference (Malek et al. 2021 Alg. 3).

    Attributes:
        scale: Laplace scale b > 0 (ε = 2/b).
        prior: ``"model"`` (the model's softmax, updated at every step) or ``"uniform"``.
        training: how the network is trained.
    """

    scale: float
    prior: str = "model"
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    name: ClassVar[str] = "alibi"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        _check_prior(self.prior)

    @classmethod
    def from_epsilon(cls, epsilon: float, **kwargs: Any) -> ALIBI:
        """The ALIBI of claimed ε: ``b = 2/ε``."""
        return cls(scale=2.0 / check_positive("epsilon", epsilon), **kwargs)

    @property
    def mechanism(self) -> LaplaceLabels:
        """:class:`~dpaudit.mechanisms.LaplaceLabels` of scale b."""
        return LaplaceLabels(self.scale)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """Pure ``ε = 2/b`` (δ = 0)."""
        return _laplace_claim(self.scale)

    def targets(self, released: np.ndarray, num_classes: int) -> LabelTargets:
        """Posterior ``softmax((|o| − |o − 1|)/b + log π)`` (Eq. 3), π per :attr:`prior`."""
        ll = label_log_likelihood(self.noise_mechanism(), released)
        return LabelTargets.bayesian(ll, self.prior)


@dataclasses.dataclass(frozen=True)
class AGIBI(LabelNoiseSystem):
    """ALIBI with Gaussian noise (Malek et al. 2021 App. D.2): posterior ``softmax(o/σ² + log π)``.

    Attributes:
        sigma: noise standard deviation σ > 0.
        prior: ``"model"`` or ``"uniform"``.
        delta: δ of the claimed (ε, δ).
        training: how the network is trained.
    """

    sigma: float
    prior: str = "model"
    delta: float = DEFAULT_DELTA
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    name: ClassVar[str] = "agibi"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        _check_prior(self.prior)
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))

    @property
    def mechanism(self) -> GaussianLabels:
        """:class:`~dpaudit.mechanisms.GaussianLabels` of standard deviation σ."""
        return GaussianLabels(self.sigma)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """RDP ``α/σ²`` of one noising, converted to (ε, δ) (Balle et al. 2020 Thm 20)."""
        d = self.delta if delta is None else check_delta(delta, allow_zero=False)
        curve = gaussian_label_rdp(self.sigma, DEFAULT_ORDERS if orders is None else orders)
        conv = curve.to_dp(d)
        return Claim(
            "RDP → (ε, δ) (Gaussian labels)",
            f"{_MALEK} App. D.2; Gaussian mechanism, L2 sensitivity √2 (Mironov 2017, "
            "arXiv:1702.07476, Prop. 7), noised once; Balle et al. 2020 (arXiv:1905.09982) "
            "Thm 20",
            epsilon=float(conv.epsilon),
            delta=d,
            rdp=Curve(curve.orders, curve.epsilons),
            conversion="balle2020",
        )

    def targets(self, released: np.ndarray, num_classes: int) -> LabelTargets:
        """Posterior ``softmax(o/σ² + log π)`` (Eq. 5)."""
        ll = label_log_likelihood(self.noise_mechanism(), released)
        return LabelTargets.bayesian(ll, self.prior)


@dataclasses.dataclass(frozen=True)
class RandomizedResponseLabels(LabelNoiseSystem):
    """C-ary ε-randomized response on each label; trained on the released hard labels.

    Attributes:
        epsilon: ε > 0.
        num_classes: C ≥ 2.
        training: how the network is trained.
    """

    epsilon: float
    num_classes: int
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    name: ClassVar[str] = "rr"

    def __post_init__(self) -> None:
        mech = RRMechanism(self.epsilon, self.num_classes)  # validates ε > 0, C ≥ 2
        object.__setattr__(self, "epsilon", mech.epsilon)
        object.__setattr__(self, "num_classes", mech.num_classes)

    @property
    def mechanism(self) -> RRMechanism:
        """:class:`~dpaudit.mechanisms.RandomizedResponse`."""
        return RRMechanism(self.epsilon, self.num_classes)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """Pure ε."""
        return Claim(
            "pure ε (randomized response)",
            "Warner 1965; C-ary randomized response (Ghazi et al. 2021, arXiv:2102.06062)",
            epsilon=mechanism_epsilon(self.mechanism),
            delta=0.0,
        )

    def targets(self, released: np.ndarray, num_classes: int) -> LabelTargets:
        """One-hot released labels."""
        return LabelTargets.hard(released, num_classes)


@dataclasses.dataclass(frozen=True)
class SoftRR(LabelNoiseSystem):
    """Laplace Soft-RR with uninformed post-processing: projection onto the simplex.

    Malek et al. 2021 App. D.1 (Alg. 4, after Duchi et al. 2008).

    Attributes:
        scale: Laplace scale b > 0 (ε = 2/b).
        training: how the network is trained.
    """

    scale: float
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    name: ClassVar[str] = "soft-rr"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def mechanism(self) -> LaplaceLabels:
        """:class:`~dpaudit.mechanisms.LaplaceLabels` of scale b."""
        return LaplaceLabels(self.scale)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """Pure ``ε = 2/b``."""
        return _laplace_claim(self.scale)

    def targets(self, released: np.ndarray, num_classes: int) -> LabelTargets:
        """The projection of each noisy label onto the probability simplex."""
        soft = project_to_simplex(released)
        return LabelTargets(soft=soft / soft.sum(axis=1, keepdims=True))
