"""Training networks on noisy labels with PyTorch (the ``torch`` extra, imported lazily).

The trainers behind the label-DP systems (Malek, Mironov, Prasad, Shilov & Tramèr 2021,
"Antipodes of Label Differential Privacy", arXiv:2106.03408):

* :func:`train_network` — supervised training with the soft-label cross-entropy
  ``−Σ_c t_c log softmax(z)_c`` towards :class:`LabelTargets`: fixed soft labels (one-hot
  labels, randomized response, a simplex projection, a posterior under the uniform prior) or
  ALIBI's *iterative* Bayesian targets ``softmax(ℓ(o) + log π_model)``, recomputed at every
  step with the current model's softmax output as the prior (Alg. 3; the model output is
  detached, so the prior is not differentiated). Since ``log softmax(z) = z − logsumexp(z)``
  the posterior is ``softmax(ℓ + z)``.
* :func:`train_semi_supervised` — a FixMatch-style objective (Sohn et al. 2020,
  arXiv:2001.07685): the soft cross-entropy on weakly augmented labelled examples plus
  ``λ_u`` times the cross-entropy of the strongly augmented unlabelled examples towards the
  model's own prediction on their weak augmentation, kept only where that prediction is
  confident (``max p ≥ τ``). With ``ConsistencySettings(enabled=False)`` it is plain
  supervised training on the labelled examples. The teachers and the student of PATE-FM use it.

Both are seeded and deterministic on the CPU (:func:`dpaudit.systems._torch_nets.torch_context`),
run on the CPU by default and on CUDA when asked (``device="cuda"``), and report progress
through a :class:`~dpaudit._typing.Progress` callback. Networks come from
:mod:`dpaudit.systems._torch_nets` (:func:`build_cnn`, :func:`build_mlp`).

Example:
    >>> import numpy as np  # doctest: +SKIP
    >>> X = np.random.default_rng(0).random((64, 64), dtype=np.float32)  # doctest: +SKIP
    >>> t = LabelTargets.hard(np.arange(64) % 2, 2)  # doctest: +SKIP
    >>> net = train_network(X, t, image_shape=(8, 8), rng=0)  # doctest: +SKIP
    >>> net.predict_proba(X[:2]).shape  # doctest: +SKIP
    (2, 2)
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._rng import int_seed
from dpaudit._settings import option
from dpaudit._typing import ArrayLike, FloatArray, IntArray, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_in_range,
    check_positive,
    check_positive_int,
    check_progress,
    check_real,
)
from dpaudit.errors import require
from dpaudit.mechanisms import check_labels, label_posterior
from dpaudit.systems._torch_nets import build_cnn, build_mlp, resolve_device, torch_context
from dpaudit.systems.label_dp._augment import strong_augment, weak_augment

__all__ = [
    "MODELS",
    "OPTIMIZERS",
    "ConsistencySettings",
    "LabelTargets",
    "TorchNetwork",
    "TrainingSettings",
    "train_network",
    "train_semi_supervised",
]

MODELS: tuple[str, ...] = ("mlp", "cnn")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be true or false, got {value!r}")


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """How a network is trained (shared by every label-DP system of a run)."""

    model: str = option("mlp", help="network: mlp (any features) or cnn (images)")
    hidden: tuple[int, ...] = option((512, 512), help="MLP hidden widths, comma-separated")
    epochs: int = option(30, help="passes over the training set (noisy-label training)")
    batch_size: int = option(128, help="minibatch size")
    optimizer: str = option("adam", help="adam or sgd")
    learning_rate: float = option(1e-3, help="learning rate")
    momentum: float = option(0.9, help="SGD momentum (sgd only)")
    weight_decay: float = option(0.0, help="L2 weight decay")
    device: str = option("cpu", help="torch device: cpu, or cuda[:N] when asked for")
    num_threads: int = option(1, help="torch intra-op threads (1: deterministic, shared host)")

    def __post_init__(self) -> None:
        check_choice("model", self.model, MODELS)
        if not isinstance(self.hidden, tuple) or not self.hidden:
            raise ValueError(f"hidden must be a non-empty list of widths, got {self.hidden!r}")
        for h in self.hidden:
            check_positive_int("hidden", h)
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        object.__setattr__(
            self, "learning_rate", check_positive("learning_rate", self.learning_rate)
        )
        m = check_real("momentum", self.momentum)
        if not 0.0 <= m < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {m}")
        wd = check_real("weight_decay", self.weight_decay)
        if wd < 0:
            raise ValueError(f"weight_decay must be non-negative, got {wd}")
        if not isinstance(self.device, str) or not (
            self.device == "cpu" or self.device.startswith("cuda")
        ):
            raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {self.device!r}")
        check_positive_int("num_threads", self.num_threads)


@dataclasses.dataclass(frozen=True)
class ConsistencySettings:
    """The FixMatch-style consistency objective of semi-supervised training (switchable)."""

    enabled: bool = option(
        True, help="use the unlabelled pool (FixMatch-style consistency)", flag="--consistency"
    )
    confidence: float = option(
        0.95, help="pseudo-label confidence threshold tau", flag="--consistency-confidence"
    )
    weight: float = option(
        1.0, help="weight lambda_u of the unlabelled loss", flag="--consistency-weight"
    )
    unlabeled_ratio: int = option(
        3, help="unlabelled examples per labelled one in a batch (mu)", flag="--unlabeled-ratio"
    )
    flip: bool = option(
        True, help="horizontal flips in the augmentations (not for digits)", flag="--flip"
    )

    def __post_init__(self) -> None:
        _check_bool("enabled", self.enabled)
        _check_bool("flip", self.flip)
        check_in_range("confidence", self.confidence, 0.0, 1.0, high_inclusive=True)
        w = check_real("weight", self.weight)
        if w < 0:
            raise ValueError(f"weight must be non-negative, got {w}")
        check_positive_int("unlabeled_ratio", self.unlabeled_ratio)


@dataclasses.dataclass(frozen=True, eq=False)
class LabelTargets:
    """What a network is trained towards, one row per training example.

    Attributes:
        soft: ``(n, C)`` fixed soft labels (rows on the simplex), or None.
        log_likelihood: ``(n, C)`` per-class label log-likelihoods ℓ(o), combined at every
            step with the model's own softmax as the prior (ALIBI's iterative Bayesian
            inference), or None. Exactly one of the two is set.
    """

    soft: FloatArray | None = None
    log_likelihood: FloatArray | None = None

    def __post_init__(self) -> None:
        if (self.soft is None) == (self.log_likelihood is None):
            raise ValueError("LabelTargets needs exactly one of soft and log_likelihood")
        if self.soft is not None:
            s = check_array("soft", self.soft, ndim=2, nonneg=True)
            if s.shape[1] < 2 or not np.allclose(s.sum(axis=1), 1.0, atol=1e-6):
                raise ValueError("soft targets must be (n, C >= 2) rows summing to 1")
            object.__setattr__(self, "soft", s)
        else:
            ll = check_array("log_likelihood", self.log_likelihood, ndim=2)
            if ll.shape[1] < 2:
                raise ValueError(f"log_likelihood must have C >= 2 columns, got {ll.shape}")
            object.__setattr__(self, "log_likelihood", ll)

    @classmethod
    def hard(cls, labels: ArrayLike, num_classes: int) -> LabelTargets:
        """One-hot targets of integer labels."""
        y = check_labels("labels", labels, num_classes)
        soft = np.zeros((y.size, int(num_classes)))
        soft[np.arange(y.size), y] = 1.0
        return cls(soft=soft)

    @classmethod
    def bayesian(cls, log_likelihood: ArrayLike, prior: str) -> LabelTargets:
        """Posterior targets: fixed under the ``"uniform"`` prior, iterative under ``"model"``."""
        check_choice("prior", prior, ("uniform", "model"))
        if prior == "uniform":
            return cls(soft=label_posterior(log_likelihood))
        return cls(log_likelihood=np.asarray(log_likelihood, dtype=np.float64))

    @property
    def num_examples(self) -> int:
        """n."""
        rows = self.soft if self.soft is not None else self.log_likelihood
        return int(rows.shape[0])

    @property
    def num_classes(self) -> int:
        """C."""
        rows = self.soft if self.soft is not None else self.log_likelihood
        return int(rows.shape[1])

    @property
    def uses_model_prior(self) -> bool:
        """Whether the targets are recomputed from the model at every step."""
        return self.log_likelihood is not None


class TorchNetwork:
    """A trained network and how to feed it: probabilities, labels and accuracy.

    Attributes:
        net: the ``torch.nn.Module`` (evaluation mode).
        image_shape: ``(H, W)`` of the flattened input rows, or None for tabular features.
        num_classes: C.
        device: the torch device it lives on.
        train_seconds: wall time of training.
        examples_per_second: training throughput (labelled examples processed per second).
    """

    def __init__(
        self,
        net: Any,
        *,
        image_shape: tuple[int, int] | None,
        num_classes: int,
        device: str,
        train_seconds: float = 0.0,
        examples_per_second: float = 0.0,
    ) -> None:
        self.net = net
        self.image_shape = image_shape
        self.num_classes = num_classes
        self.device = device
        self.train_seconds = train_seconds
        self.examples_per_second = examples_per_second

    def predict_proba(self, X: ArrayLike, *, batch_size: int = 4096) -> FloatArray:
        """Softmax probabilities ``(n, C)`` (float64) for rows of features."""
        torch = require("torch", "torch")
        x = _as_input(X, self.image_shape)
        out = []
        self.net.eval()
        with torch.no_grad():
            for start in range(0, x.shape[0], batch_size):
                chunk = torch.from_numpy(x[start : start + batch_size]).to(self.device)
                out.append(torch.softmax(self.net(chunk), dim=1).double().cpu().numpy())
        if not out:
            return np.zeros((0, self.num_classes))
        return np.concatenate(out, axis=0)

    def predict(self, X: ArrayLike) -> IntArray:
        """Most probable class per row."""
        return np.argmax(self.predict_proba(X), axis=1).astype(np.int64)

    def accuracy(self, X: ArrayLike, y: ArrayLike) -> float:
        """Share of rows whose most probable class is ``y``."""
        labels = np.asarray(y)
        return float(np.mean(self.predict(X) == labels)) if labels.size else math.nan


# --------------------------------------------------------------------------- building blocks


def _as_input(X: ArrayLike, image_shape: tuple[int, int] | None) -> np.ndarray:
    """float32 rows as ``(n, 1, H, W)`` images, or ``(n, d)`` features."""
    x = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    if not x.flags.writeable:  # torch refuses read-only buffers (datasets are read-only)
        x = x.copy()
    if x.ndim != 2:
        raise ValueError(f"X must be a 2-d array of rows, got shape {x.shape}")
    if image_shape is None:
        return x
    h, w = image_shape
    if x.shape[1] != h * w:
        raise ValueError(f"rows of {x.shape[1]} values do not fold into images {h}×{w}")
    return x.reshape(-1, 1, h, w)


def _check_image_shape(image_shape: object) -> tuple[int, int] | None:
    if image_shape is None:
        return None
    if not isinstance(image_shape, (tuple, list)) or len(image_shape) != 2:
        raise ValueError(f"image_shape must be (height, width), got {image_shape!r}")
    return (
        check_positive_int("height", image_shape[0]),
        check_positive_int("width", image_shape[1]),
    )


def _build(training: TrainingSettings, num_features: int, image_shape, num_classes: int):
    torch = require("torch", "torch")
    if training.model == "cnn":
        if image_shape is None:
            raise ValueError("model='cnn' needs image data (image_shape); use model='mlp'")
        return build_cnn(1, num_classes)
    mlp = build_mlp(num_features, num_classes, training.hidden)
    return torch.nn.Sequential(torch.nn.Flatten(), mlp)


def _optimizer(torch: Any, net: Any, training: TrainingSettings) -> Any:
    if training.optimizer == "sgd":
        return torch.optim.SGD(
            net.parameters(),
            lr=training.learning_rate,
            momentum=training.momentum,
            weight_decay=training.weight_decay,
        )
    return torch.optim.Adam(
        net.parameters(), lr=training.learning_rate, weight_decay=training.weight_decay
    )


def _soft_cross_entropy(torch: Any, logits: Any, targets: Any) -> Any:
    """``mean_i −Σ_c t_ic log softmax(z_i)_c``."""
    return -(targets * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()


def _check_common(X: ArrayLike, targets: LabelTargets, image_shape: object) -> tuple:
    if not isinstance(targets, LabelTargets):
        raise TypeError(f"targets must be LabelTargets, got {type(targets).__name__}")
    shape = _check_image_shape(image_shape)
    x = _as_input(X, shape)
    if x.shape[0] != targets.num_examples:
        raise ValueError(f"X has {x.shape[0]} rows but the targets have {targets.num_examples}")
    if x.shape[0] == 0:
        raise ValueError("X must not be empty")
    return x, shape


# --------------------------------------------------------------------------- supervised


def _target_fn(torch: Any, targets: LabelTargets, device: str):
    """``f(idx, logits) -> (B, C)`` targets of a minibatch."""
    if targets.uses_model_prior:
        ll = torch.from_numpy(targets.log_likelihood.astype(np.float32)).to(device)
        return lambda idx, logits: torch.softmax(ll[idx] + logits.detach(), dim=1)
    soft = torch.from_numpy(targets.soft.astype(np.float32)).to(device)
    return lambda idx, logits: soft[idx]


def train_network(
    X: ArrayLike,
    targets: LabelTargets,
    *,
    image_shape: tuple[int, int] | None = None,
    training: TrainingSettings | None = None,
    rng: RngLike = None,
    progress: ProgressLike = None,
    description: str = "training",
) -> TorchNetwork:
    """Train a fresh network on ``X`` towards ``targets`` for ``training.epochs`` epochs.

    Args:
        X: ``(n, d)`` rows (flattened images when ``image_shape`` is given).
        targets: :class:`LabelTargets` with n rows.
        image_shape: ``(H, W)`` of image rows (needed by the CNN), or None.
        training: :class:`TrainingSettings` (default settings if None).
        rng: seed of the initialisation and the minibatch order.
        progress: progress callback over epochs.
        description: the progress label.

    Returns:
        :class:`TorchNetwork`.

    Raises:
        ValueError: shapes that disagree, a CNN without images, an unavailable device.
        MissingDependencyError: torch is not installed.
    """
    training = TrainingSettings() if training is None else training
    x, shape = _check_common(X, targets, image_shape)
    device = resolve_device(training.device)
    report = check_progress(progress)
    seed = int_seed(rng) % 2**63
    with torch_context(seed, num_threads=training.num_threads) as torch:
        net = _build(training, x.shape[1] if shape is None else x[0].size, shape,
                     targets.num_classes).to(device)  # fmt: skip
        opt = _optimizer(torch, net, training)
        data = torch.from_numpy(x).to(device)
        target_of = _target_fn(torch, targets, device)
        gen = torch.Generator().manual_seed(seed)
        n, b, epochs = x.shape[0], training.batch_size, training.epochs
        net.train()
        report(0, epochs, description)
        start = time.perf_counter()
        for epoch in range(epochs):
            perm = torch.randperm(n, generator=gen).to(device)
            for i in range(0, n, b):
                idx = perm[i : i + b]
                logits = net(data[idx])
                loss = _soft_cross_entropy(torch, logits, target_of(idx, logits))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            report(epoch + 1, epochs, description)
        seconds = time.perf_counter() - start
        net.eval()
    return TorchNetwork(
        net, image_shape=shape, num_classes=targets.num_classes, device=device,
        train_seconds=seconds, examples_per_second=n * epochs / max(seconds, 1e-12),
    )  # fmt: skip


# --------------------------------------------------------------------------- semi-supervised


@dataclasses.dataclass
class _SemiBatch:
    """Per-step state of the semi-supervised loop (tensors on the device)."""

    labelled: Any
    soft: Any
    pool: Any
    gen: Any
    consistency: ConsistencySettings
    batch_size: int
    perm: Any = None
    cursor: int = 0

    @property
    def shifts(self) -> tuple[int, int, int]:
        """Weak shift, strong shift and Cutout side, scaled from 2, 2 and 8 px at 28×28."""
        side = min(self.labelled.shape[-2:])
        return max(1, round(side / 14)), max(1, round(side / 14)), round(8 * side / 28)

    def next_labelled(self, torch: Any) -> Any:
        n = self.labelled.shape[0]
        if self.perm is None or self.cursor >= n:
            self.perm, self.cursor = torch.randperm(n, generator=self.gen), 0
        idx = self.perm[self.cursor : self.cursor + self.batch_size]
        self.cursor += self.batch_size
        return idx.to(self.labelled.device)


def _semi_step(torch: Any, net: Any, state: _SemiBatch) -> Any:
    """The FixMatch-style loss of one step (Sohn et al. 2020, arXiv:2001.07685, Eq. 1–4)."""
    cons = state.consistency
    idx = state.next_labelled(torch)
    xl = state.labelled[idx]
    if cons.enabled:
        xl = weak_augment(xl, state.gen, max_shift=state.shifts[0], flip=cons.flip)
    loss = _soft_cross_entropy(torch, net(xl), state.soft[idx])
    if not cons.enabled or cons.weight == 0.0:
        return loss
    m = state.batch_size * cons.unlabeled_ratio
    pick = torch.randint(0, state.pool.shape[0], (m,), generator=state.gen).to(state.pool.device)
    xu = state.pool[pick]
    with torch.no_grad():
        probs = torch.softmax(
            net(weak_augment(xu, state.gen, max_shift=state.shifts[0], flip=cons.flip)), dim=1
        )
        confidence, pseudo = probs.max(dim=1)
        mask = (confidence >= cons.confidence).float()
    strong = net(
        strong_augment(
            xu, state.gen, max_shift=state.shifts[1], flip=cons.flip, cutout=state.shifts[2]
        )
    )
    per_example = torch.nn.functional.cross_entropy(strong, pseudo, reduction="none")
    return loss + cons.weight * (per_example * mask).mean()


def train_semi_supervised(
    X: ArrayLike,
    targets: LabelTargets,
    unlabeled: ArrayLike,
    *,
    steps: int,
    image_shape: tuple[int, int] | None,
    training: TrainingSettings | None = None,
    consistency: ConsistencySettings | None = None,
    rng: RngLike = None,
    progress: ProgressLike = None,
    description: str = "semi-supervised training",
) -> TorchNetwork:
    """Train a fresh network on few labelled rows plus an unlabelled pool (FixMatch-style).

    Each step draws ``batch_size`` labelled rows (epochs over the labelled set) and, with
    consistency on, ``unlabeled_ratio·batch_size`` unlabelled rows (uniformly, with
    replacement); see the module notes for the loss.

    Args:
        X: ``(n_l, d)`` labelled rows.
        targets: :class:`LabelTargets` of the labelled rows (fixed soft labels).
        unlabeled: ``(n_u, d)`` unlabelled rows.
        steps: optimisation steps ≥ 1.
        image_shape: ``(H, W)``; required when consistency is on (image augmentations).
        training: :class:`TrainingSettings` (its ``epochs`` is not used).
        consistency: :class:`ConsistencySettings` (default: on).
        rng: seed.
        progress: progress callback over steps.
        description: the progress label.

    Returns:
        :class:`TorchNetwork`.

    Raises:
        ValueError: bad shapes, steps < 1, consistency on without images, targets that use the
            model prior.
    """
    training = TrainingSettings() if training is None else training
    consistency = ConsistencySettings() if consistency is None else consistency
    x, shape = _check_common(X, targets, image_shape)
    steps = check_positive_int("steps", steps)
    if targets.uses_model_prior:
        raise ValueError("semi-supervised training needs fixed soft targets")
    if consistency.enabled and shape is None:
        raise ValueError("the consistency objective needs image data (image_shape)")
    pool = _as_input(unlabeled, shape) if consistency.enabled else x[:1]
    if pool.shape[0] == 0:
        raise ValueError("unlabeled must not be empty when consistency is on")
    device = resolve_device(training.device)
    report = check_progress(progress)
    seed = int_seed(rng) % 2**63
    every = max(1, steps // 20)
    with torch_context(seed, num_threads=training.num_threads) as torch:
        net = _build(training, x[0].size, shape, targets.num_classes).to(device)
        opt = _optimizer(torch, net, training)
        state = _SemiBatch(
            labelled=torch.from_numpy(x).to(device),
            soft=torch.from_numpy(targets.soft.astype(np.float32)).to(device),
            pool=torch.from_numpy(pool).to(device),
            gen=torch.Generator().manual_seed(seed),
            consistency=consistency,
            batch_size=min(training.batch_size, x.shape[0]),
        )
        net.train()
        report(0, steps, description)
        start = time.perf_counter()
        for step in range(steps):
            loss = _semi_step(torch, net, state)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if (step + 1) % every == 0 or step + 1 == steps:
                report(step + 1, steps, description)
        seconds = time.perf_counter() - start
        net.eval()
    return TorchNetwork(
        net, image_shape=shape, num_classes=targets.num_classes, device=device,
        train_seconds=seconds,
        examples_per_second=steps * state.batch_size / max(seconds, 1e-12),
    )  # fmt: skip
