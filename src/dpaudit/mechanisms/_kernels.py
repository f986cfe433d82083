"""Per-block sampling kernels ``f(size, seed) -> counts`` for :func:`dpaudit.engine.run_blocks`.

A kernel draws the counts of ``size`` experiments from the generator seeded by ``seed`` only,
so the engine can run it in any process, in any order, and resume it from a checkpoint. The
kernels are frozen dataclasses (picklable for the parallel executors; identified in
checkpoints by :func:`dpaudit.engine.fingerprint` of their fields):

* :class:`MultinomialBlock` — experiments whose single output has a *known* distribution
  ``p``: counts ``~ Multinomial(size, p)``, exact in distribution and O(C) per block whatever
  its size. For the noisy argmax this is the exact shortcut with ``p = Q(H)`` for a fixed
  histogram, or ``p = E_H[Q(H)]`` for the parametric histogram models of Chadha et al. 2024
  (arXiv:2402.09403, §5.1–5.2): each experiment draws a fresh histogram, so its output is one
  draw from the mixture ``E_H[Q(H)]``.
* :class:`NoisyArgmaxBlock` — the direct simulation: a fresh histogram per experiment from a
  ``histogram_sampler(gen, size)`` plus Gaussian noise, then the argmax; the noise and the
  argmax run in numpy (default) or on a torch device (CPU or CUDA).

The fixed-histogram kernel of :func:`dpaudit.mechanisms.sample_argmax_counts`,
:class:`dpaudit.mechanisms.ArgmaxBlock`, lives with its thinning sampler in
:mod:`dpaudit.mechanisms.noisy_argmax`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from dpaudit._rng import child_seed
from dpaudit._typing import ArrayLike, IntArray
from dpaudit._validate import check_array, check_choice, check_positive, check_positive_int
from dpaudit.errors import require

__all__ = [
    "BACKENDS",
    "MultinomialBlock",
    "NoisyArgmaxBlock",
    "check_backend",
    "numpy_generator",
    "torch_generator",
]

#: Backends of the noisy-argmax kernels (torch: CPU or CUDA, the ``torch`` extra).
BACKENDS: tuple[str, ...] = ("numpy", "torch")


def numpy_generator(seed: np.random.SeedSequence) -> np.random.Generator:
    """The block's numpy generator: PCG64 seeded by ``seed``."""
    return np.random.Generator(np.random.PCG64(seed))


def torch_generator(seed: np.random.SeedSequence, child: int, device: str | None):
    """A ``torch.Generator`` on ``device`` seeded from the child ``child`` of ``seed``.

    The child is ``SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, child))``; its
    first 64-bit word modulo 2^63 is the torch seed.

    Returns:
        ``(torch, device, generator)``.
    """
    torch = require("torch", "torch")
    dev = torch.device(device) if device is not None else torch.device("cpu")
    gen = torch.Generator(device=dev)
    state = child_seed(seed, child).generate_state(1, dtype=np.uint64)[0]
    gen.manual_seed(int(state % (2**63)))
    return torch, dev, gen


def check_backend(backend: str, device: object) -> None:
    """``backend`` is one of :data:`BACKENDS`; ``device`` (a string) only with torch."""
    check_choice("backend", backend, BACKENDS)
    if device is not None:
        if backend != "torch":
            raise ValueError(f"device is for backend='torch' only, got device={device!r}")
        if not isinstance(device, str):
            raise TypeError(f"device must be a torch device string, got {device!r}")


@dataclasses.dataclass(frozen=True, eq=False)
class MultinomialBlock:
    """Counts of ``size`` experiments whose output has a known distribution: Multinomial.

    If every experiment independently outputs class ``c`` with probability ``p_c``, the
    counts of ``size`` experiments are exactly ``Multinomial(size, p)``. For a batch
    ``p`` of shape ``(..., C)`` each row is sampled independently (one generator per block).

    Attributes:
        probabilities: ``(..., C)`` non-negative rows, renormalised to sum to 1 (they must
            already sum to 1 within 1e-9).

    Example:
        >>> blk = MultinomialBlock([[0.9, 0.1], [0.5, 0.5]])
        >>> blk(1000, np.random.SeedSequence(0)).sum(axis=-1).tolist()
        [1000, 1000]
    """

    probabilities: np.ndarray

    def __post_init__(self) -> None:
        p = check_array("probabilities", self.probabilities, ndim_min=1, nonneg=True)
        if p.shape[-1] < 2:
            raise ValueError(f"probabilities must have at least 2 classes, got shape {p.shape}")
        total = p.sum(axis=-1, keepdims=True)
        if np.any(np.abs(total - 1.0) > 1e-9):
            raise ValueError("probabilities must sum to 1 along the last axis (within 1e-9)")
        p = p / total
        p.setflags(write=False)
        object.__setattr__(self, "probabilities", p)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the counts a block returns."""
        return tuple(self.probabilities.shape)

    def __call__(self, size: int, seed: np.random.SeedSequence) -> IntArray:
        return numpy_generator(seed).multinomial(int(size), self.probabilities).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class NoisyArgmaxBlock:
    """Direct simulation: per experiment a fresh histogram, Gaussian noise, the argmax.

    Experiment ``t`` draws ``H_t`` from ``histogram_sampler(gen, ·)`` and outputs
    ``argmax_c (H_t,c + N(0, σ²))`` (the noisy argmax of Papernot et al. 2018,
    arXiv:1802.08908, with the parametric histogram models of Chadha et al. 2024,
    arXiv:2402.09403, §5.1–5.2). Work is done in chunks of ``chunk`` experiments so a block of
    any size needs ``8·chunk·C`` bytes of noise.

    Backends: ``"numpy"`` (default) draws the noise from the block's numpy generator, right
    after each chunk's histograms; ``"torch"`` (the ``torch`` extra; CPU or CUDA with
    ``device="cuda"``) draws the histograms with the same numpy generator, then the noise, the
    argmax and the counting on the torch device with a ``torch.Generator`` seeded from the
    block's seed (child ``1``, :func:`torch_generator`). Both are exact in distribution and
    reproducible per seed; they differ in value, not in law.

    Attributes:
        histogram_sampler: ``f(gen, size) -> (size, C)`` finite histograms, using only
            ``gen`` (picklable for the process executors, e.g. the samplers of
            :mod:`dpaudit.attacks.parametric`).
        sigma: noise standard deviation σ > 0.
        chunk: experiments per chunk inside a block.
        backend: ``"numpy"`` or ``"torch"``.
        device: torch device string (e.g. ``"cuda"``; default CPU); torch backend only.

    Example:
        >>> def fixed(gen, size):
        ...     return np.tile([10.0, 0.0], (size, 1))
        >>> NoisyArgmaxBlock(fixed, 1.0)(1000, np.random.SeedSequence(0)).tolist()
        [1000, 0]
    """

    histogram_sampler: Callable[[np.random.Generator, int], ArrayLike]
    sigma: float
    chunk: int = 2**16
    backend: str = "numpy"
    device: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.histogram_sampler):
            raise TypeError(
                f"histogram_sampler must be callable, got {type(self.histogram_sampler).__name__}"
            )
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "chunk", check_positive_int("chunk", self.chunk))
        check_backend(self.backend, self.device)

    def _histograms(self, gen: np.random.Generator, m: int) -> np.ndarray:
        hists = np.asarray(self.histogram_sampler(gen, m), dtype=np.float64)
        if hists.ndim != 2 or hists.shape[0] != m or hists.shape[1] < 2:
            raise ValueError(
                f"histogram_sampler must return an array of shape ({m}, C) with C >= 2, "
                f"got {hists.shape}"
            )
        if not np.all(np.isfinite(hists)):
            raise ValueError("histogram_sampler returned non-finite votes")
        return hists

    def __call__(self, size: int, seed: np.random.SeedSequence) -> IntArray:
        gen = numpy_generator(seed)
        chunks = [self.chunk] * (size // self.chunk)
        if size % self.chunk or not chunks:
            chunks.append(size % self.chunk)
        torch = torch_generator(seed, 1, self.device) if self.backend == "torch" else None
        total: np.ndarray | None = None
        for m in chunks:
            hists = self._histograms(gen, m)
            if torch is not None:
                counts = _torch_argmax_counts(*torch, hists, self.sigma)
            else:
                noisy = gen.standard_normal(hists.shape)
                noisy *= self.sigma
                noisy += hists
                counts = np.bincount(noisy.argmax(axis=1), minlength=hists.shape[1])
            total = counts if total is None else total + counts
        return np.asarray(total, dtype=np.int64)


def _torch_argmax_counts(torch, device, gen, hists: np.ndarray, sigma: float) -> np.ndarray:
    """Counts of ``argmax(hists + N(0, σ²))`` per class, noise from ``gen`` on ``device``."""
    h = torch.as_tensor(hists, dtype=torch.float64, device=device)
    z = torch.randn(h.shape, generator=gen, dtype=torch.float64, device=device)
    z.mul_(sigma).add_(h)
    counts = torch.bincount(z.argmax(dim=1), minlength=h.shape[1])
    return counts.cpu().numpy().astype(np.int64)
