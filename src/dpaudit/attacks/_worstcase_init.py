"""Worst-case initial parameters and a crafted target for black-box audits of DP-SGD.

Annamalai & De Cristofaro 2024 (*Nearly Tight Black-Box Auditing of Differentially Private
Machine Learning*, NeurIPS 2024, arXiv:2405.14106) observe that DP-SGD's privacy analysis
holds for *any* initial parameters θ₀ fixed before training, so an auditor who only sees the
final model may still choose them. Their worst case: θ₀ pre-trained (without privacy) on
public data from the same distribution, which makes the gradients of the ordinary training
records small (their Fig. 2: the more pre-training, the smaller the records' mean gradient
norm and the larger the audit's ε), so that the target's own clipped gradient dominates every
update. The target is crafted too: a blank (all-zero) input with a label the model does not
expect, and the attack's score is the target's negative cross-entropy loss on the final model.

* :func:`pretrain_initial_state` — θ₀: a network of the audited architecture trained with
  plain mini-batch SGD on a public split disjoint from the audited data (or, with
  ``epochs=0``, a fixed random initialisation: the paper's "average-case" θ₀).
* :func:`craft_blank_target` — the blank target and its label (by default the class least
  likely under θ₀).
* :func:`per_example_gradient_norms` — the records' gradient norms at θ₀ (the paper's
  diagnostic of how good θ₀ is).
* :func:`target_loss_score` — the black-box score ``−CE(f_θ(x_T), y_T)``.

torch is imported lazily (extra ``torch``).

Example:
    >>> target = blank_target((1, 28, 28), label=9)
    >>> target.X.shape, int(target.y[0]), float(target.X.max())
    ((1, 784), 9, 0.0)
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import check_array, check_nonneg_int, check_positive, check_positive_int
from dpaudit.attacks._mia_scores import membership_score
from dpaudit.systems import LabelledData
from dpaudit.systems._torch_nets import torch_context
from dpaudit.systems.dpsgd import ModelSpec

_MAX_FEATURES = 10**7  # a blank input larger than this is a mistake, not an image

__all__ = [
    "InitialParameters",
    "blank_target",
    "craft_blank_target",
    "per_example_gradient_norms",
    "pretrain_initial_state",
    "target_loss_score",
]


@dataclasses.dataclass(frozen=True, eq=False)
class InitialParameters(ResultMixin):
    """θ₀ chosen by the auditor (numpy arrays: it pickles to engine workers).

    Attributes:
        spec: the architecture.
        state: parameter name → array (``load_state_dict`` keys of ``spec.build()``).
        epochs: pre-training epochs (0: a fixed random initialisation).
        num_public: public records pre-trained on.
        public_accuracy: θ₀'s accuracy on the public records (None without pre-training).
        seconds: wall time of the pre-training.
    """

    spec: ModelSpec
    state: dict[str, np.ndarray]
    epochs: int
    num_public: int
    public_accuracy: float | None
    seconds: float


def _torch_seed(rng: RngLike) -> tuple[int, np.random.Generator]:
    root = as_seed_sequence(rng)
    torch_seq, batch_seq = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key).spawn(2)
    return int(torch_seq.generate_state(1, dtype=np.uint64)[0] % (2**63)), np.random.default_rng(
        batch_seq
    )


def pretrain_initial_state(
    public: LabelledData,
    model: str,
    *,
    epochs: int = 5,
    learning_rate: float = 0.05,
    batch_size: int = 64,
    momentum: float = 0.9,
    hidden: tuple[int, ...] = (128,),
    rng: RngLike,
    num_threads: int = 1,
) -> InitialParameters:
    """Worst-case θ₀ by non-private pre-training on public data (Annamalai & De Cristofaro
    2024, arXiv:2405.14106, §4: pre-training on a disjoint half of the dataset).

    Plain mini-batch SGD with momentum on the cross-entropy, ``epochs`` passes over
    ``public`` in seeded random order; ``epochs=0`` returns the seeded random initialisation
    of ``spec.build()`` (their fixed "average-case" θ₀).

    Args:
        public: the public records (never audited, never trained on with DP).
        model: a :data:`dpaudit.systems.MODELS` name (the audited architecture).
        epochs: pre-training epochs, ≥ 0.
        learning_rate, batch_size, momentum: the SGD pre-training.
        hidden: hidden widths (``model="mlp"``).
        rng: seed of the initialisation and the batch order (keyword-only).
        num_threads: torch intra-op threads.

    Returns:
        :class:`InitialParameters`.

    Raises:
        TypeError, ValueError: bad data or hyper-parameters, a model that does not fit the
            data, no public records with ``epochs > 0``.
    """
    if not isinstance(public, LabelledData):
        raise TypeError(f"public must be LabelledData, got {type(public).__name__}")
    n_epochs = check_nonneg_int("epochs", epochs)
    lr = check_positive("learning_rate", learning_rate)
    bs = check_positive_int("batch_size", batch_size)
    if n_epochs > 0 and len(public) == 0:
        raise ValueError("pre-training needs public records (got none) or epochs=0")
    spec = ModelSpec.for_data(public, model, tuple(hidden))
    seed, gen = _torch_seed(rng)
    t0 = time.perf_counter()
    with torch_context(seed, num_threads=num_threads) as torch:
        net = spec.build()
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=float(momentum))
        X = torch.from_numpy(np.array(public.X))
        y = torch.from_numpy(np.array(public.y))
        lossf = torch.nn.CrossEntropyLoss()
        for _ in range(n_epochs):
            order = torch.from_numpy(gen.permutation(len(public)))
            for start in range(0, len(public), bs):
                idx = order[start : start + bs]
                opt.zero_grad(set_to_none=True)
                lossf(net(spec.fold(X[idx])), y[idx]).backward()
                opt.step()
        accuracy = None
        if n_epochs > 0:
            with torch.no_grad():
                accuracy = float((net(spec.fold(X)).argmax(1) == y).double().mean())
        state = {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}
    return InitialParameters(spec, state, n_epochs, len(public), accuracy, time.perf_counter() - t0)


def _logits(init: InitialParameters, X: np.ndarray) -> np.ndarray:
    with torch_context(0) as torch:
        net = init.spec.build()
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in init.state.items()})
        with torch.no_grad():
            return net.eval()(init.spec.fold(torch.from_numpy(X))).double().numpy()


def blank_target(
    image_shape: tuple[int, ...], *, label: int, num_classes: int = 10
) -> LabelledData:
    """The blank (all-zero) target input with ``label``, as one row of
    :class:`~dpaudit.systems.LabelledData` (``image_shape`` is ``(channels, height, width)``,
    or ``(features,)`` for tabular data).

    Raises:
        TypeError: ``image_shape`` not a tuple of sizes.
        ValueError: a label outside ``[0, num_classes)``, fewer than 2 classes, a bad or
            oversized shape.
    """
    if not isinstance(image_shape, (tuple, list)) or not 1 <= len(image_shape) <= 3:
        raise TypeError(f"image_shape must be a tuple of 1 to 3 sizes, got {image_shape!r}")
    dims = [check_positive_int("image_shape", s) for s in image_shape]
    if int(np.prod(dims, dtype=object)) > _MAX_FEATURES:
        raise ValueError(f"image_shape {tuple(dims)} has over {_MAX_FEATURES} features")
    k = check_positive_int("num_classes", num_classes)
    if k < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    y = check_nonneg_int("label", label)
    if y >= k:
        raise ValueError(f"label must be in [0, num_classes - 1] = [0, {k - 1}], got {label}")
    image = tuple(dims[1:]) if len(dims) == 3 else None
    channels = dims[0] if len(dims) == 3 else 1
    return LabelledData(np.zeros((1, int(np.prod(dims)))), np.array([y]), k, image, channels)


def craft_blank_target(init: InitialParameters, *, label: int | None = None) -> LabelledData:
    """The crafted target of Annamalai & De Cristofaro 2024 (arXiv:2405.14106, §4): a blank
    input whose label is ``label`` or, by default, the class θ₀ finds least likely on it (the
    largest loss, hence a gradient at the clipping norm that θ₀'s training records do not
    cancel).

    Raises:
        ValueError: a label outside the classes.
    """
    spec = init.spec
    shape = (spec.channels, *spec.image_shape) if spec.image_shape else (spec.num_features,)
    if label is None:
        logits = _logits(init, np.zeros((1, spec.num_features), dtype=np.float32))
        label = int(np.argmin(logits[0]))
    return blank_target(shape, label=label, num_classes=spec.num_classes)


def per_example_gradient_norms(init: InitialParameters, data: LabelledData) -> FloatArray:
    """‖∇_θ CE(f_θ₀(xᵢ), yᵢ)‖₂ for every record at θ₀ (``torch.func.vmap`` of ``grad``): the
    diagnostic of Annamalai & De Cristofaro 2024 (arXiv:2405.14106, Fig. 2).

    Raises:
        TypeError: data not :class:`~dpaudit.systems.LabelledData`.
    """
    if not isinstance(data, LabelledData):
        raise TypeError(f"data must be LabelledData, got {type(data).__name__}")
    with torch_context(0) as torch:
        from torch.func import functional_call, grad, vmap

        net = init.spec.build()
        params = {k: torch.from_numpy(np.array(v)) for k, v in init.state.items()}

        def loss(p, x, t):
            out = functional_call(net, p, (init.spec.fold(x.unsqueeze(0)),))
            return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

        per = vmap(grad(loss), in_dims=(None, 0, 0))
        norms = []
        for start in range(0, len(data), 500):
            X = torch.from_numpy(np.array(data.X[start : start + 500]))
            y = torch.from_numpy(np.array(data.y[start : start + 500]))
            g = per(params, X, y)
            norms.append(torch.sqrt(sum((v.flatten(1) ** 2).sum(1) for v in g.values())).numpy())
    return np.concatenate(norms).astype(np.float64) if norms else np.zeros(0)


def target_loss_score(logits: ArrayLike, target: LabelledData) -> float:
    """The black-box score of one final model: ``−CE(f_θ(x_T), y_T)`` from its logits on the
    target (larger: the target was trained on; Annamalai & De Cristofaro 2024).

    Raises:
        ValueError: logits not of shape (1, C).
    """
    z = check_array("logits", logits, ndim=2)
    if z.shape != (1, target.num_classes):
        raise ValueError(f"logits must have shape (1, {target.num_classes}), got {z.shape}")
    return float(membership_score(z, target.y, "neg-loss")[0])
