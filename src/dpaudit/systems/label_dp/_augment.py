"""Weak and strong augmentations of small grey-scale images as batched torch tensor ops.

The consistency objective of FixMatch (Sohn et al. 2020, arXiv:2001.07685, §2.3) needs a weak
augmentation (flip and translate) and a strong one (RandAugment + Cutout on CIFAR). On 28×28
grey-scale images on a CPU we use, per example:

* weak: a random translation by up to ``max_shift`` pixels in each direction (zero padding)
  and, if ``flip``, a horizontal flip with probability ½ (Sohn et al. 2020 §2.3);
* strong: the weak augmentation, then a random contrast factor in [0.5, 1.5] around the
  image mean, a random brightness offset in [−0.2, 0.2], additive Gaussian pixel noise
  (σ = 0.05), clipping to [0, 1], and Cutout of a ``cutout × cutout`` square (8 px at 28×28;
  DeVries & Taylor 2017, arXiv:1708.04552) — a small stand-in for RandAugment (Cubuk et al.
  2020, arXiv:1909.13719), whose PIL operations do not apply to these tensors.

All randomness comes from a ``torch.Generator`` on the CPU (moved to the batch's device), so a
seed gives the same augmentations on every device. torch is imported lazily (extra ``torch``).
"""

from __future__ import annotations

from typing import Any

from dpaudit.errors import require

__all__ = ["strong_augment", "weak_augment"]


def _shift_flip(x: Any, gen: Any, max_shift: int, flip: bool) -> Any:
    torch = require("torch", "torch")
    b, c, h, w = x.shape
    p = int(max_shift)
    out = x
    if p > 0:
        padded = torch.nn.functional.pad(x, (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (b,), generator=gen).to(x.device)
        dx = torch.randint(0, 2 * p + 1, (b,), generator=gen).to(x.device)
        rows = dy[:, None] + torch.arange(h, device=x.device)[None, :]
        cols = dx[:, None] + torch.arange(w, device=x.device)[None, :]
        out = padded[
            torch.arange(b, device=x.device)[:, None, None, None],
            torch.arange(c, device=x.device)[None, :, None, None],
            rows[:, None, :, None],
            cols[:, None, None, :],
        ]
    if flip:
        mask = (torch.rand(b, generator=gen) < 0.5).to(x.device)
        out = torch.where(mask[:, None, None, None], out.flip(-1), out)
    return out


def weak_augment(x: Any, gen: Any, *, max_shift: int = 2, flip: bool = True) -> Any:
    """Random translation (and horizontal flip) of a batch ``(B, C, H, W)``.

    Args:
        x: image batch.
        gen: a CPU ``torch.Generator``.
        max_shift: largest translation in pixels.
        flip: whether to flip horizontally with probability ½.

    Returns:
        The augmented batch (same shape, device and dtype).
    """
    return _shift_flip(x, gen, max_shift, flip)


def strong_augment(
    x: Any, gen: Any, *, max_shift: int = 2, flip: bool = True, cutout: int = 8
) -> Any:
    """Translation, flip, contrast, brightness, pixel noise and Cutout of ``(B, C, H, W)``.

    Args:
        x: image batch with pixels in [0, 1].
        gen: a CPU ``torch.Generator``.
        max_shift: largest translation in pixels.
        flip: whether to flip horizontally with probability ½.
        cutout: side of the zeroed square (0: no Cutout).

    Returns:
        The augmented batch (same shape, device and dtype), pixels in [0, 1].
    """
    torch = require("torch", "torch")
    out = _shift_flip(x, gen, max_shift, flip)
    b, _, h, w = out.shape
    dev = out.device

    def uniform(low: float, high: float) -> Any:
        return (low + (high - low) * torch.rand(b, generator=gen)).to(dev)[:, None, None, None]

    mean = out.mean(dim=(1, 2, 3), keepdim=True)
    out = (out - mean) * uniform(0.5, 1.5) + mean + uniform(-0.2, 0.2)
    out = out + 0.05 * torch.randn(out.shape, generator=gen).to(dev)
    out = out.clamp(0.0, 1.0)
    if cutout > 0:
        cy = torch.randint(0, h, (b,), generator=gen).to(dev)[:, None, None, None]
        cx = torch.randint(0, w, (b,), generator=gen).to(dev)[:, None, None, None]
        ys = torch.arange(h, device=dev)[None, None, :, None]
        xs = torch.arange(w, device=dev)[None, None, None, :]
        half = cutout / 2.0
        hole = ((ys - cy).abs() < half) & ((xs - cx).abs() < half)
        out = out.masked_fill(hole, 0.0)
    return out
