"""Small PyTorch networks and determinism helpers shared by every torch-trained system.

The models are CPU-sized and Opacus-compatible (no batch norm, so per-example gradients are
well defined): :func:`build_cnn` for images (8×8 digits, 28×28 (Fashion-)MNIST) and
:func:`build_mlp` for tabular data. :func:`torch_context` fixes the seed, the thread count and
deterministic algorithms for a block of torch work, so the same seed gives the same model on
the CPU whatever ran before. torch is imported lazily (the ``torch`` extra).

Example:
    >>> torch = require("torch", "torch")  # doctest: +SKIP
    >>> net = build_cnn(1, 10)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from dpaudit._validate import check_positive_int
from dpaudit.errors import require

__all__ = [
    "build_cnn",
    "build_mlp",
    "build_tanh_cnn",
    "manual_seed",
    "resolve_device",
    "torch_context",
]


def build_cnn(channels: int, num_classes: int) -> Any:
    """A LeNet-style CNN: two 3×3 conv layers (16, 32 maps), adaptive 4×4 pooling, two dense
    layers (64 units); input ``(B, channels, H, W)`` with H, W ≥ 4.

    Raises:
        ValueError: non-positive sizes.
    """
    torch = require("torch", "torch")
    c = check_positive_int("channels", channels)
    k = check_positive_int("num_classes", num_classes)
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(c, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(32 * 16, 64),
        nn.ReLU(),
        nn.Linear(64, k),
    )


def build_tanh_cnn(channels: int, num_classes: int, image_shape: tuple[int, int]) -> Any:
    """The small tanh CNN of Dörmann, Frisk, Andersen & Pedersen 2021 (arXiv:2110.06255) used
    on MNIST by Annamalai & De Cristofaro 2024 (arXiv:2405.14106): conv 5×5 (16 maps), 2×2 max
    pool, tanh; conv 4×4 (32 maps), 2×2 max pool, tanh; dense 32, tanh; dense ``num_classes``
    (25,386 parameters on 28×28 inputs).

    Raises:
        ValueError: non-positive sizes or images smaller than 14×14.
    """
    torch = require("torch", "torch")
    c = check_positive_int("channels", channels)
    k = check_positive_int("num_classes", num_classes)
    h, w = (check_positive_int("image_shape", s) for s in image_shape)
    fh, fw = ((h - 4) // 2 - 3) // 2, ((w - 4) // 2 - 3) // 2
    if min(fh, fw) < 1:
        raise ValueError(f"the tanh CNN needs images of at least 14×14, got {h}×{w}")
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(c, 16, kernel_size=5),
        nn.MaxPool2d(2),
        nn.Tanh(),
        nn.Conv2d(16, 32, kernel_size=4),
        nn.MaxPool2d(2),
        nn.Tanh(),
        nn.Flatten(),
        nn.Linear(32 * fh * fw, 32),
        nn.Tanh(),
        nn.Linear(32, k),
    )


def build_mlp(in_features: int, num_classes: int, hidden: tuple[int, ...] = (128,)) -> Any:
    """A multilayer perceptron with ReLU activations.

    Raises:
        ValueError: non-positive sizes.
    """
    torch = require("torch", "torch")
    d = check_positive_int("in_features", in_features)
    k = check_positive_int("num_classes", num_classes)
    nn = torch.nn
    layers: list[Any] = []
    width = d
    for h in hidden:
        h = check_positive_int("hidden", h)
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, k))
    return nn.Sequential(*layers)


def resolve_device(device: str | None) -> str:
    """``"cpu"`` by default; ``"cuda"`` (or ``"cuda:N"``) only when asked and available.

    Raises:
        ValueError: an unknown device, or CUDA asked for without a CUDA device.
    """
    torch = require("torch", "torch")
    if device is None or device == "cpu":
        return "cpu"
    if not isinstance(device, str) or not device.startswith("cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    if not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for but no CUDA device is available")
    return device


@contextlib.contextmanager
def torch_context(seed: int, *, num_threads: int = 1) -> Iterator[Any]:
    """Seeded, single-process-deterministic torch work: forks the global RNG, seeds it, pins
    the intra-op thread count and asks for deterministic algorithms; restores all on exit.

    Yields:
        the torch module.
    """
    torch = require("torch", "torch")
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(check_positive_int("num_threads", num_threads))
    _deterministic(torch, True, warn_only=True)
    try:
        with torch.random.fork_rng(devices=[]):
            manual_seed(torch, int(seed))
            yield torch
    finally:
        torch.set_num_threads(old_threads)
        _deterministic(torch, old_det, warn_only=old_warn)


def manual_seed(torch: Any, seed: int) -> None:
    """``torch.manual_seed(seed)``, without its cost where torch has no accelerator to seed.

    ``torch.manual_seed`` seeds the CPU generator and also CUDA, XPU and MTIA; where those are
    not initialised it queues each seeding for later together with a formatted stack trace of
    the caller (``torch.cuda._lazy_call``): about 0.5 ms per call 60 frames deep, 150× the
    seeding itself, and 4 % of the test suite's CPU time. Where neither CUDA nor MPS is
    available (dpaudit runs on ``"cpu"`` or ``"cuda"``), the CPU generator is the only one a
    run can draw from, and seeding it is all ``torch.manual_seed`` does that matters: the
    draws are the same (the tests pin seeded runs).
    """
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def _deterministic(torch: Any, mode: bool, *, warn_only: bool) -> None:
    """``torch.use_deterministic_algorithms(mode, warn_only=...)`` without importing
    ``torch._inductor`` when nothing has imported it yet.

    The public function also sets ``torch._inductor.config.deterministic``, and importing that
    module imports torch's compiler stack: 1.8 CPU-s in every process that trains (each worker
    of a process pool), for a setting only ``torch.compile`` reads — and dpaudit compiles
    nothing. Where the compiler is already loaded (a user's process that uses
    ``torch.compile``) or the internal setter is missing, the public function runs.
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        setter(mode, warn_only=warn_only)
