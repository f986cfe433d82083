"""DP-SGD as a system under audit: Opacus training and its accountant's claim.

DP-SGD (Abadi et al. 2016, arXiv:1607.00133): at every step each training example is
included independently with probability q (Poisson sampling), its gradient is clipped to L2
norm C, the clipped gradients are summed and Gaussian noise of standard deviation σ·C is added
to every coordinate. The steps compose T Poisson-subsampled Gaussian mechanisms of noise
multiplier σ (the mechanism value :class:`dpaudit.mechanisms.SubsampledGaussian`), analysed by
Mironov, Talwar & Zhang 2019 (arXiv:1908.10530) with RDP, or with privacy-loss random
variables (PRV: Gopi, Lee & Wutschitz 2021, arXiv:2106.02848). Add/remove-one neighbouring.

* :func:`train_dpsgd` — a *pure* function: ``(data, canaries, included, settings, *, rng)``
  → :class:`TrainedDPSGD`. No global state: torch's generator is forked and seeded inside
  (:func:`dpaudit.systems._torch_nets.torch_context`), the batches come from a numpy
  generator spawned from ``rng``, and the result carries the weights as numpy arrays (it
  pickles, so the same call can run on Ray workers). Same seed (and thread count) ⇒ same
  model on the CPU. The noisy step is Opacus' (``DPOptimizer``: noise σC on the clipped sum,
  division by the expected batch size); the clipped sum comes from ``settings.clipping``:
  ``"book-keeping"`` (the default: norms and clipped sum from one forward and one backward
  pass, no per-example gradients of dense layers — :mod:`._bookkeeping`, Bu et al. 2023,
  arXiv:2210.00038 — at about the cost of a non-private step), ``"opacus-ghost"`` (Opacus'
  fast gradient clipping: ghost norms of dense layers, a second weighted backward pass) or
  ``"opacus"`` (Opacus' ``GradSampleModule``: every per-example gradient). The three give the
  same update to float32 rounding from the same noise (tests check it); the audits whose
  subject is the algorithm use the default, the ones whose subject is an Opacus
  configuration (the bug catalogue, a user's own loop) run that configuration and never
  come here. The Poisson sampling is done here with a rate fixed *before* the data are seen
  (``batch_size / nominal_size``), because Opacus' data loader derives the rate from the
  realised dataset size, which depends on which canaries were included. The first training
  in a process lets glibc keep freed memory for the next step
  (:func:`._bookkeeping.keep_freed_memory`: no page faults for every full-batch step).
* :class:`DPSGD` — the system (registered as ``"dp-sgd"`` in :data:`SYSTEMS`): the settings,
  the nominal dataset size, the noise multiplier (given, or calibrated to a target (ε, δ) with
  Opacus' ``get_noise_multiplier``), its :attr:`~DPSGD.mechanism` and its claims — Opacus'
  accountant (RDP and PRV) next to :mod:`dpaudit.accounting`'s subsampled Gaussian (which
  uses dp-accounting's RDP accountant) as a cross-check.

torch and opacus are imported lazily (extras ``torch`` and ``opacus``).

Example:
    >>> from dpaudit.systems import DPSGD, DPSGDSettings
    >>> system = DPSGD(DPSGDSettings(noise_multiplier=1.1, batch_size=100, epochs=1),
    ...                dataset_size=60_000)
    >>> system.mechanism
    SubsampledGaussian(sampling_rate=0.0016666666666666668, noise_multiplier=1.1, steps=600)
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import Claim, Curve
from dpaudit._rng import as_seed_sequence
from dpaudit._settings import option
from dpaudit._typing import ArrayLike, FloatArray, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_delta,
    check_in_range,
    check_positive,
    check_positive_int,
    check_progress,
)
from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve, mechanism_rdp
from dpaudit.errors import require
from dpaudit.mechanisms.values import SubsampledGaussian
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems._torch_nets import (
    build_cnn,
    build_mlp,
    build_tanh_cnn,
    resolve_device,
    torch_context,
)
from dpaudit.systems.dpsgd._opacus_accounting import (
    ACCOUNTANTS,
    CLAIM_SOURCES,
    calibrate_noise_multiplier,
    opacus_epsilon,
    opacus_rdp,
)

__all__ = [
    "CLIPPING_METHODS",
    "DPSGD",
    "MODELS",
    "OPTIMIZERS",
    "DPSGDCell",
    "DPSGDSettings",
    "LabelledData",
    "ModelSpec",
    "TrainedDPSGD",
    "train_dpsgd",
]

MODELS: tuple[str, ...] = ("cnn", "mlp", "cnn-tanh")
OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
#: How the clipped per-example gradient sum is computed (the same update to float rounding):
#: book-keeping (ours, one backward pass), Opacus' fast gradient clipping, Opacus' per-sample
#: gradients.
CLIPPING_METHODS: tuple[str, ...] = ("book-keeping", "opacus-ghost", "opacus")
_CHANNELS_LAST_MIN_BATCH = 64  # expected batch from which book-keeping runs CNNs channels last
_DPAUDIT_SOURCE = (
    "dpaudit.accounting.subsampled_gaussian_rdp (dp-accounting RdpAccountant; Mironov, Talwar & "
    "Zhang 2019, arXiv:1908.10530) over DEFAULT_ORDERS, conversion of Balle et al. 2020 "
    "(arXiv:1905.09982, Thm 21)"
)
# torch warns about Opacus' full backward hooks on inputs that need no gradient; harmless.
_HOOK_WARNING = "Full backward hook is firing"


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DPSGDSettings:
    """DP-SGD training: model, sampling, clipping, noise (or a target ε) and optimiser."""

    model: str = option(
        "cnn", help="network: cnn (28×28 / 8×8 images) | mlp (tabular) | cnn-tanh (≥ 14×14)"
    )
    hidden: tuple[int, ...] = option((128,), help="hidden widths of the MLP")
    epochs: float = option(5.0, help="passes over the data: steps = round(epochs / q)")
    steps: int | None = option(None, help="number of steps T (overrides epochs)")
    batch_size: int = option(128, help="expected batch size; q = batch_size / dataset size")
    noise_multiplier: float | None = option(
        None, help="noise multiplier σ (give it or target_epsilon)"
    )
    target_epsilon: float | None = option(
        8.0, help="target ε at delta: σ is calibrated by the accountant (if σ not given)"
    )
    delta: float = option(1e-5, help="δ of the claim (and of the audit)")
    max_grad_norm: float = option(1.0, help="per-example clipping norm C")
    clipping: str = option(
        "book-keeping",
        help="how the clipped sum is computed: book-keeping (one backward pass, ~ the cost "
        "of a plain step) | opacus-ghost (Opacus' fast gradient clipping) | opacus "
        "(Opacus' per-sample gradients); the same update to float rounding",
    )
    learning_rate: float = option(3.0, help="learning rate", flag="--lr")
    optimizer: str = option("sgd", help="sgd | adam")
    momentum: float = option(0.5, help="SGD momentum")
    accountant: str = option(
        "prv", help="the claim's accountant: prv | rdp (Opacus; PRV needs GBs beyond ε ≈ 300)"
    )
    num_threads: int = option(1, help="torch intra-op threads", flag="--train-threads")
    device: str = option("cpu", help="cpu | cuda[:N]")

    def __post_init__(self) -> None:
        check_choice("model", self.model, MODELS)
        for h in self.hidden:
            check_positive_int("hidden", h)
        check_positive("epochs", self.epochs)
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        if self.noise_multiplier is None and self.target_epsilon is None:
            raise ValueError("give noise_multiplier or target_epsilon (both are empty)")
        if self.noise_multiplier is not None:
            check_positive("noise_multiplier", self.noise_multiplier)
        if self.target_epsilon is not None:
            check_positive("target_epsilon", self.target_epsilon)
        check_delta(self.delta, allow_zero=False)
        check_positive("max_grad_norm", self.max_grad_norm)
        check_choice("clipping", self.clipping, CLIPPING_METHODS)
        check_positive("learning_rate", self.learning_rate)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_in_range("momentum", self.momentum, 0.0, 1.0, low_inclusive=True)
        check_choice("accountant", self.accountant, ACCOUNTANTS)
        check_positive_int("num_threads", self.num_threads)
        if not isinstance(self.device, str) or not (
            self.device == "cpu" or self.device.startswith("cuda")
        ):
            raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {self.device!r}")


# ---------------------------------------------------------------------------------------------
# Data and model
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class LabelledData:
    """Labelled examples for DP-SGD: flattened features and integer labels (read-only).

    Attributes:
        X: (n, d) float32 features (images flattened channel first).
        y: (n,) int64 labels in ``0..num_classes-1``.
        num_classes: C ≥ 2.
        image_shape: (height, width) when rows are images (the CNN folds them), else None.
        channels: image channels (``channels · height · width = d``).

    Raises:
        ValueError: non-finite features, labels out of range, shapes that disagree.
    """

    X: np.ndarray
    y: np.ndarray
    num_classes: int
    image_shape: tuple[int, int] | None = None
    channels: int = 1

    def __post_init__(self) -> None:
        X = check_array("X", self.X, ndim=2, allow_empty=True).astype(np.float32)
        y = np.asarray(self.y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        k = check_positive_int("num_classes", self.num_classes)
        if k < 2:
            raise ValueError(f"num_classes must be at least 2, got {k}")
        if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= k):
            raise ValueError(f"y must hold integer labels in [0, {k - 1}]")
        if self.image_shape is not None:
            h, w = (check_positive_int("image_shape", s) for s in self.image_shape)
            c = check_positive_int("channels", self.channels)
            if c * h * w != X.shape[1]:
                raise ValueError(
                    f"channels × image_shape = {c}×{h}×{w} does not match {X.shape[1]} features"
                )
            object.__setattr__(self, "image_shape", (h, w))
        X.setflags(write=False)
        y = y.astype(np.int64)
        y.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def __repr__(self) -> str:
        return (
            f"LabelledData(n={len(self)}, d={self.X.shape[1]}, num_classes={self.num_classes}, "
            f"image_shape={self.image_shape})"
        )

    def subset(self, index: ArrayLike) -> LabelledData:
        """The rows ``index`` (integer indices or a boolean mask)."""
        idx = np.asarray(index)
        return dataclasses.replace(self, X=self.X[idx], y=self.y[idx])

    def concat(self, other: LabelledData) -> LabelledData:
        """These rows followed by ``other``'s (same feature layout and classes)."""
        if other.X.shape[1] != self.X.shape[1] or other.num_classes != self.num_classes:
            raise ValueError("cannot concatenate data of different features or classes")
        return dataclasses.replace(
            self, X=np.concatenate([self.X, other.X]), y=np.concatenate([self.y, other.y])
        )


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """What network to build: ``kind`` (``"cnn"``/``"mlp"``), input layout, classes, widths."""

    kind: str
    num_features: int
    num_classes: int
    image_shape: tuple[int, int] | None = None
    channels: int = 1
    hidden: tuple[int, ...] = (128,)

    @classmethod
    def for_data(cls, data: LabelledData, model: str, hidden: tuple[int, ...]) -> ModelSpec:
        """The spec of ``model`` on ``data`` (a CNN needs image rows)."""
        if model != "mlp" and data.image_shape is None:
            raise ValueError(f"model={model!r} needs image data (image_shape); use model='mlp'")
        return cls(
            model, int(data.X.shape[1]), data.num_classes, data.image_shape, data.channels, hidden
        )

    def build(self) -> Any:
        """A freshly initialised torch module (initialisation uses torch's global generator)."""
        if self.kind == "cnn":
            return build_cnn(self.channels, self.num_classes)
        if self.kind == "cnn-tanh":
            return build_tanh_cnn(self.channels, self.num_classes, self.image_shape)
        return build_mlp(self.num_features, self.num_classes, self.hidden)

    def fold(self, X: Any) -> Any:
        """Reshape a (B, d) tensor to the network's input layout."""
        if self.kind != "mlp":
            h, w = self.image_shape
            return X.reshape(-1, self.channels, h, w)
        return X


@dataclasses.dataclass(frozen=True, eq=False)
class TrainedDPSGD:
    """A model trained by :func:`train_dpsgd` (weights as numpy arrays: it pickles).

    Attributes:
        spec: the architecture.
        state: parameter name → numpy array (the trained weights).
        noise_multiplier: σ used in training.
        sampling_rate: q.
        steps: T.
        max_grad_norm: C.
        num_members: examples in the training set (data + included canaries).
        seconds: wall time of the training loop.
        examples_per_second: examples processed (summed batch sizes) per second.
        final_loss: mean training loss of the last 10 steps (NaN if they were empty).
    """

    spec: ModelSpec
    state: dict[str, np.ndarray]
    noise_multiplier: float
    sampling_rate: float
    steps: int
    max_grad_norm: float
    num_members: int
    seconds: float
    examples_per_second: float
    final_loss: float

    def module(self) -> Any:
        """The trained network as a torch module in eval mode (CPU)."""
        torch = require("torch", "torch")
        net = self.spec.build()
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in self.state.items()})
        return net.eval()

    def logits(self, X: ArrayLike, *, batch_size: int = 4096, num_threads: int = 1) -> FloatArray:
        """Logits (n, C) of rows ``X`` (black-box access to the final model), float64."""
        x = check_array("X", X, ndim=2, allow_empty=True).astype(np.float32)
        if x.shape[1] != self.spec.num_features:
            raise ValueError(f"X must have {self.spec.num_features} columns, got {x.shape[1]}")
        bs = check_positive_int("batch_size", batch_size)
        with torch_context(0, num_threads=num_threads) as torch:
            net = self.module()
            out = []
            with torch.no_grad():
                for start in range(0, x.shape[0], bs):
                    xb = self.spec.fold(torch.from_numpy(x[start : start + bs]))
                    out.append(net(xb).double().numpy())
        if not out:
            return np.zeros((0, self.spec.num_classes))
        return np.concatenate(out)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def _members(
    data: LabelledData, canaries: LabelledData | None, included: ArrayLike | None
) -> LabelledData:
    """The training set: ``data`` and the included canaries (validated before training)."""
    if not isinstance(data, LabelledData):
        raise TypeError(f"data must be LabelledData, got {type(data).__name__}")
    if canaries is None:
        if included is not None:
            raise ValueError("included was given without canaries")
        return data
    if not isinstance(canaries, LabelledData):
        raise TypeError(f"canaries must be LabelledData, got {type(canaries).__name__}")
    if included is None:
        raise ValueError("included (one boolean per canary) is required with canaries")
    mask = np.asarray(included)
    if mask.shape != (len(canaries),):
        raise ValueError(
            f"included must have one entry per canary ({len(canaries)}), got shape {mask.shape}"
        )
    if mask.dtype != bool:
        if not np.all((mask == 0) | (mask == 1)):
            raise ValueError("included must be boolean (or 0/1)")
        mask = mask.astype(bool)
    return data.concat(canaries.subset(mask))


def _steps_and_rate(settings: DPSGDSettings, nominal_size: int) -> tuple[int, float]:
    n = check_positive_int("nominal_size", nominal_size)
    q = settings.batch_size / n
    if q > 1:
        raise ValueError(f"batch_size={settings.batch_size} exceeds the dataset size {n}")
    steps = settings.steps if settings.steps is not None else max(1, round(settings.epochs / q))
    return int(steps), float(q)


def _optimizer(torch: Any, params: Any, settings: DPSGDSettings) -> Any:
    if settings.optimizer == "adam":
        return torch.optim.Adam(params, lr=settings.learning_rate)
    return torch.optim.SGD(params, lr=settings.learning_rate, momentum=settings.momentum)


def _privatised_step(torch: Any, opt: Any, sums: dict | None) -> None:
    """The noisy step on a clipped sum (``None``: an empty batch, a zero sum): the sum goes
    through the optimizer's own ``add_noise`` (``p.grad = Σ + N(0, σ²C²)``, seen by any
    attached auditor), is divided by the expected batch size, and the step is taken — what
    ``DPOptimizer.step`` does after its own clipping. An empty Poisson batch still releases
    noise."""
    for p in opt.params:
        p.summed_grad = torch.zeros_like(p) if sums is None else sums[p]
    opt.add_noise()
    for p in opt.params:
        p.grad /= opt.expected_batch_size
    opt.original_optimizer.step()
    opt.zero_grad(set_to_none=True)


@dataclasses.dataclass
class _Loop:
    """The tensors and Opacus objects of one training run; ``step(x, y)`` takes one noisy
    step on a non-empty batch and returns its mean loss (a tensor)."""

    net: Any
    optimizer: Any
    X: Any
    y: Any
    spec: ModelSpec
    step: Callable[[Any, Any], Any]


def _opacus_step(torch: Any, module: Any, opt: Any, criterion: Any) -> Callable:
    def step(x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=True)
        loss = criterion(module(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def _bookkeeping_step(torch: Any, bk: Any, opt: Any, layout: Any) -> Callable:
    def step(x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=True)
        sums, losses, _ = bk.clipped_sum(x.contiguous(memory_format=layout), y)
        _privatised_step(torch, opt, sums)
        return losses.mean()

    return step


def _setup(torch, members: LabelledData, spec: ModelSpec, s: DPSGDSettings, batch: float, init):
    from opacus import GradSampleModule
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    from dpaudit.systems.dpsgd._bookkeeping import BookKeeping, keep_freed_memory

    keep_freed_memory()
    device = resolve_device(s.device)
    net = spec.build()
    if init is not None:  # the auditor's initial parameters (Annamalai & De Cristofaro 2024)
        net.load_state_dict({k: torch.as_tensor(np.array(v)) for k, v in init.items()})
    net = net.to(device)
    dp = {
        "noise_multiplier": float(s.noise_multiplier),
        "max_grad_norm": s.max_grad_norm,
        "expected_batch_size": max(1, round(batch)),
        "loss_reduction": "mean",
    }
    criterion = torch.nn.CrossEntropyLoss()
    if s.clipping == "book-keeping":
        # CNNs channels last at full-batch sizes: torch's fastest convolution and pooling on
        # the CPU (the audited tanh CNN's step at 1,000 images: max pooling 6x faster, the
        # step 1.4x). Small batches (gain <= 10 %) keep the default layout. (Opacus'
        # per-sample path cannot take it: its per-example convolution gradients are wrong.)
        layout = torch.contiguous_format
        conv = any(isinstance(m, torch.nn.Conv2d) for m in net.modules())
        if conv and batch >= _CHANNELS_LAST_MIN_BATCH:
            layout = torch.channels_last
            net = net.to(memory_format=layout)
        bk = BookKeeping(net, s.max_grad_norm)
        opt = DPOptimizer(_optimizer(torch, net.parameters(), s), **dp)
        step = _bookkeeping_step(torch, bk, opt, layout)
    elif s.clipping == "opacus-ghost":
        module = GradSampleModuleFastGradientClipping(
            net, loss_reduction="mean", max_grad_norm=s.max_grad_norm, use_ghost_clipping=True
        )
        opt = DPOptimizerFastGradientClipping(_optimizer(torch, module.parameters(), s), **dp)
        loss = DPLossFastGradientClipping(module, opt, criterion, loss_reduction="mean")
        step = _opacus_step(torch, module, opt, loss)
    else:
        module = GradSampleModule(net, loss_reduction="mean")
        opt = DPOptimizer(_optimizer(torch, module.parameters(), s), **dp)
        step = _opacus_step(torch, module, opt, criterion)
    X = torch.from_numpy(np.array(members.X)).to(device)
    y = torch.from_numpy(np.array(members.y)).to(device)
    return _Loop(net, opt, X, y, spec, step)


def _run_steps(torch, loop: _Loop, s: DPSGDSettings, steps: int, q: float, gen, report) -> tuple:
    """T steps of DP-SGD with Poisson batches; returns (examples processed, last losses)."""
    n = int(loop.y.shape[0])
    processed, losses = 0, []
    for t in range(steps):
        idx = np.flatnonzero(gen.random(n) < q)
        if idx.size == 0:
            _privatised_step(torch, loop.optimizer, None)
        else:
            ix = torch.from_numpy(idx).to(loop.y.device)
            loss = loop.step(loop.spec.fold(loop.X[ix]), loop.y[ix])
            processed += int(idx.size)
            if t >= steps - 10:
                losses.append(float(loss))
        report(t + 1, steps, "DP-SGD steps")
    return processed, losses


def train_dpsgd(
    data: LabelledData,
    canaries: LabelledData | None,
    included: ArrayLike | None,
    settings: DPSGDSettings,
    *,
    rng: RngLike,
    nominal_size: int | None = None,
    progress: ProgressLike = None,
    instrument: Callable[[Any, float], Any] | None = None,
    initial_state: dict[str, np.ndarray] | None = None,
) -> TrainedDPSGD:
    """Train one model with DP-SGD on ``data`` plus the included canaries (a pure function).

    Each of the T steps includes every member independently with probability
    ``q = batch_size / nominal_size`` (Poisson sampling), clips per-example gradients to
    ``max_grad_norm`` and adds Gaussian noise of standard deviation ``σ·C`` to their sum
    (Opacus' ``DPOptimizer``; Abadi et al. 2016, arXiv:1607.00133, Alg. 1), the clipped sum
    computed as ``settings.clipping`` says (module notes). An empty batch still takes a
    noise-only step. ``settings.noise_multiplier`` must be set (a
    :class:`DPSGD` system resolves a target ε into it).

    Args:
        data: the non-canary training examples (always included).
        canaries: the canaries, or None.
        included: (m,) booleans: which canaries are trained on (required with canaries).
        settings: the training settings (``noise_multiplier`` given).
        rng: seed of the run (keyword-only): initialisation, batches and noise.
        nominal_size: the dataset size that fixes q, chosen before the inclusions are drawn
            (default ``len(data) + len(canaries)/2``, the expected size when each canary is
            included with probability ½).
        progress: a progress callback over steps, ``True`` for a bar, or None.
        instrument: called once with ``(optimizer, q)`` — Opacus' ``DPOptimizer`` and the
            sampling rate — before the first step (e.g. to attach
            :class:`dpaudit.integrations.opacus.CanaryAuditor`).
        initial_state: parameter name → array: the initial parameters (default: a fresh
            network seeded from ``rng``); DP-SGD's analysis holds for any fixed choice.

    Returns:
        :class:`TrainedDPSGD`.

    Raises:
        TypeError, ValueError: bad data, a mask of the wrong length or type, no noise
            multiplier, q > 1 — all before any training.
        MissingDependencyError: torch or opacus is not installed.

    Example:
        >>> g = np.random.default_rng(0)
        >>> data = LabelledData(g.normal(size=(200, 5)), g.integers(0, 2, 200), 2)
        >>> s = DPSGDSettings(model="mlp", noise_multiplier=1.0, batch_size=50, steps=20)
        >>> trained = train_dpsgd(data, None, None, s, rng=0)
        >>> trained.steps, trained.logits(data.X[:3]).shape
        (20, (3, 2))
    """
    if not isinstance(settings, DPSGDSettings):
        raise TypeError(f"settings must be DPSGDSettings, got {type(settings).__name__}")
    if settings.noise_multiplier is None:
        raise ValueError("settings.noise_multiplier must be set (DPSGD resolves target_epsilon)")
    members = _members(data, canaries, included)
    if len(members) == 0:
        raise ValueError("the training set is empty")
    if nominal_size is None:
        nominal_size = len(data) + (0 if canaries is None else math.ceil(len(canaries) / 2))
    steps, q = _steps_and_rate(settings, nominal_size)
    spec = ModelSpec.for_data(members, settings.model, settings.hidden)
    report = check_progress(progress)
    require("torch", "torch")
    require("opacus", "opacus")
    root = as_seed_sequence(rng)
    torch_seq, batch_seq = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key).spawn(2)
    gen = np.random.default_rng(batch_seq)
    torch_seed = int(torch_seq.generate_state(1, dtype=np.uint64)[0] % (2**63))
    with torch_context(torch_seed, num_threads=settings.num_threads) as torch:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_HOOK_WARNING, category=UserWarning)
            loop = _setup(torch, members, spec, settings, q * nominal_size, initial_state)
            if instrument is not None:
                instrument(loop.optimizer, q)
            start = time.perf_counter()
            processed, losses = _run_steps(torch, loop, settings, steps, q, gen, report)
            seconds = time.perf_counter() - start
        weights = loop.net.state_dict()
        state = {k: v.detach().cpu().numpy().copy() for k, v in weights.items()}
    return TrainedDPSGD(
        spec=spec,
        state=state,
        noise_multiplier=float(settings.noise_multiplier),
        sampling_rate=q,
        steps=steps,
        max_grad_norm=settings.max_grad_norm,
        num_members=len(members),
        seconds=seconds,
        examples_per_second=processed / seconds if seconds > 0 else math.inf,
        final_loss=float(np.mean(losses)) if losses else math.nan,
    )


# ---------------------------------------------------------------------------------------------
# The system
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_absl():
    """Silence dp-accounting's absl warnings while it computes a curve: where its series at a
    fractional order does not converge it logs and returns ρ = ∞ there (conservative)."""
    logger = logging.getLogger("absl")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


@dataclasses.dataclass(frozen=True)
class DPSGD:
    """DP-SGD as a system under audit: training settings, nominal dataset size, claim.

    The sampling rate is ``q = batch_size / dataset_size`` and the number of steps
    ``T = settings.steps`` or ``round(epochs / q)``; the noise multiplier is the given σ or,
    with ``target_epsilon``, the σ that Opacus' accountant (``settings.accountant``)
    calibrates to (ε, δ) — computed once, before any training.

    Attributes:
        settings: :class:`DPSGDSettings`.
        dataset_size: the nominal training-set size n that fixes q (in the one-run audit
            ``r + m/2``: non-canaries plus the expected number of included canaries).

    Raises:
        ValueError: batch size above the dataset size, bad settings.
    """

    settings: DPSGDSettings
    dataset_size: int
    name: ClassVar[str] = "dp-sgd"

    def __post_init__(self) -> None:
        if not isinstance(self.settings, DPSGDSettings):
            raise TypeError(f"settings must be DPSGDSettings, got {type(self.settings).__name__}")
        n = check_positive_int("dataset_size", self.dataset_size)
        object.__setattr__(self, "dataset_size", n)
        steps, q = _steps_and_rate(self.settings, n)
        s = self.settings
        sigma = s.noise_multiplier
        if sigma is None:
            sigma = calibrate_noise_multiplier(s.target_epsilon, s.delta, q, steps, s.accountant)
        object.__setattr__(self, "_mechanism", SubsampledGaussian(q, sigma, steps))

    @property
    def mechanism(self) -> SubsampledGaussian:
        """``SubsampledGaussian(q, σ, T)``: the mechanism the claim analyses."""
        return self._mechanism  # type: ignore[attr-defined]

    @property
    def noise_multiplier(self) -> float:
        """σ (given or calibrated)."""
        return self.mechanism.noise_multiplier

    @property
    def training_settings(self) -> DPSGDSettings:
        """The settings :func:`train_dpsgd` runs with: σ resolved, no target ε."""
        return dataclasses.replace(
            self.settings, noise_multiplier=self.noise_multiplier, target_epsilon=None
        )

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The primary claim: ε at δ from Opacus' accountant ``settings.accountant``."""
        return self.claims(orders, delta=delta)[0]

    def claims(self, orders: ArrayLike | None = None, *, delta: float | None = None):
        """Every claim, primary first: Opacus' chosen accountant, its other accountant, and
        :mod:`dpaudit.accounting`'s subsampled Gaussian RDP (the cross-check).

        Args:
            orders: Rényi orders of dpaudit's curve (default :data:`DEFAULT_ORDERS`).
            delta: δ (default ``settings.delta``).

        Returns:
            tuple of :class:`~dpaudit._results.Claim`.
        """
        d = self.settings.delta if delta is None else check_delta(delta, allow_zero=False)
        m = self.mechanism
        lam = DEFAULT_ORDERS if orders is None else orders
        with _quiet_absl():
            ours = RDPCurve(np.asarray(lam, dtype=float), mechanism_rdp(m, lam))
        conv = ours.to_dp(d)
        dpaudit_claim = Claim(
            "dpaudit accounting (RDP)", _DPAUDIT_SOURCE, conv.epsilon, d,
            Curve(ours.orders, ours.epsilons), conv.conversion,
        )  # fmt: skip
        opacus_claims = []
        primary = self.settings.accountant
        for acct in (primary, *(a for a in ACCOUNTANTS if a != primary)):
            eps = opacus_epsilon(m.sampling_rate, m.noise_multiplier, m.steps, d, acct)
            curve = None
            if acct == "rdp":
                c = opacus_rdp(m.sampling_rate, m.noise_multiplier, m.steps)
                curve = Curve(c.orders, c.epsilons)
            conversion = "balle2020" if acct == "rdp" else "prv"
            opacus_claims.append(
                Claim(f"opacus ({acct.upper()})", CLAIM_SOURCES[acct], eps, d, curve, conversion)
            )
        return (*opacus_claims, dpaudit_claim)

    def train(
        self,
        data: LabelledData,
        canaries: LabelledData | None = None,
        included: ArrayLike | None = None,
        *,
        rng: RngLike,
        progress: ProgressLike = None,
        instrument: Callable[[Any, float], Any] | None = None,
        initial_state: dict[str, np.ndarray] | None = None,
    ) -> TrainedDPSGD:
        """One training run (:func:`train_dpsgd` with this system's σ and nominal size)."""
        return train_dpsgd(
            data,
            canaries,
            included,
            self.training_settings,
            rng=rng,
            nominal_size=self.dataset_size,
            progress=progress,
            instrument=instrument,
            initial_state=initial_state,
        )


@dataclasses.dataclass(frozen=True)
class DPSGDCell:
    """The settings cell of ``"dp-sgd"`` (what its :data:`SYSTEMS` factory takes).

    Attributes:
        training: :class:`DPSGDSettings` (σ given, or a target ε to calibrate it to).
        dataset_size: the nominal training-set size n that fixes q = batch_size / n.

    Example:
        >>> cell = DPSGDCell(DPSGDSettings(noise_multiplier=1.0, epochs=1), dataset_size=1280)
        >>> SYSTEMS.get("dp-sgd")(cell).mechanism.sampling_rate
        0.1
    """

    training: DPSGDSettings
    dataset_size: int


def _from_cell(cell: DPSGDCell) -> DPSGD:
    if not isinstance(cell.training, DPSGDSettings):
        raise TypeError(f"training must be DPSGDSettings, got {type(cell.training).__name__}")
    return DPSGD(cell.training, cell.dataset_size)


SYSTEMS.register("dp-sgd", SystemFactory(DPSGDCell, _from_cell), tags=("dp-sgd", "lidp-dp-sgd"))
