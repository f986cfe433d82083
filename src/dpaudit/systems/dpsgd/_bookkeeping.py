"""Clipped per-example gradient sums at about the cost of one backward pass (book-keeping).

DP-SGD needs, at every step, ``Σᵢ cᵢ gᵢ`` with ``gᵢ`` the gradient of example i's loss and
``cᵢ = min(1, C / (‖gᵢ‖ + 10⁻⁶))`` (Abadi et al. 2016, arXiv:1607.00133, Alg. 1; the factor
as Opacus' ``DPOptimizer`` computes it). Opacus' default path materialises every ``gᵢ``
(``GradSampleModule``); its fast gradient clipping runs a second, weighted backward pass.
Here one forward pass records each layer's input ``aᵢ`` and one backward pass (to the layer
outputs only, no weight gradients) its output gradient ``δᵢ = ∂ℓᵢ/∂zᵢ``; both the norms and
the clipped sum then follow from ``(aᵢ, δᵢ)`` — the book-keeping of Bu, Wang, Zha & Karypis
2023 (arXiv:2210.00038), with no second backward pass:

* **dense layer** ``z = a Wᵀ + b`` on one vector per example: ``gᵢ = (δᵢ aᵢᵀ, δᵢ)``, so
  ``‖gᵢ‖² = ‖δᵢ‖² (‖aᵢ‖² + 1)`` and ``Σᵢ cᵢ gᵢ = ((c ⊙ δ)ᵀ A, Σᵢ cᵢ δᵢ)`` (Goodfellow 2015,
  arXiv:1510.01799);
* **layer applied at T positions** (a dense layer on a sequence; a convolution, whose input
  is unfolded to ``Uᵢ`` of shape ``(p, T)``, ``p = c_in·k_h·k_w``, Bu, Mao & Xu 2022,
  arXiv:2205.10683): ``Gᵢ = δᵢ Uᵢᵀ`` (``d × p``). Either its ghost norm
  ``‖Gᵢ‖² = ⟨Uᵢᵀ Uᵢ, δᵢᵀ δᵢ⟩`` (T × T Gram matrices; Li, Tramèr, Liang & Hashimoto 2022,
  arXiv:2110.05679) and the sum ``Σᵢ cᵢ δᵢ Uᵢᵀ`` as one product, or ``Gᵢ`` itself (d·p
  numbers per example, cheap for small layers) — per layer, whichever costs less: the ghost
  norm when ``2T² < p·d`` (Bu, Mao & Xu 2022, §4, "mixed ghost clipping"). A convolution's
  ``Gᵢ`` come from one grouped convolution (the batch as groups) instead of an unfolded copy
  of its input (Rochette, Manoel & Tramel 2019, arXiv:1912.06015). The bias gradient is
  ``Σₜ δᵢₜ``. A network run channels last (the trainer's layout for CNNs on large batches)
  takes ``Gᵢ = δᵢᵀ Uᵢ`` as batched products on views, the input unfolded in cache-sized
  pieces into a buffer kept across steps; the first layer's unfolded input is kept while the
  batch repeats (full-batch training).

The process keeps freed memory for the next step (:func:`keep_freed_memory`): without it a
full-batch step spends ~40 % of its CPU time in the kernel faulting in fresh pages.

Only ``nn.Linear`` and ``nn.Conv2d`` (``groups = 1``, zero padding) carry parameters in the
networks this covers; any other parameterised module is refused when the trainer is built.
torch is imported lazily (extra ``torch``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpaudit._validate import check_choice, check_positive
from dpaudit.errors import require

__all__ = ["GHOST_CHOICES", "BookKeeping", "keep_freed_memory"]

#: Per-layer choice for layers applied at several positions: mixed (the cheaper, Bu, Mao &
#: Xu 2022), always the ghost norm, or always the per-example gradient.
GHOST_CHOICES: tuple[str, ...] = ("mixed", "ghost", "per-example")
_OPACUS_EPS = 1e-6  # Opacus' clipping factor C / (‖g‖ + 1e-6)
# Per-example convolution gradients: up to this many input channels as a grouped convolution
# with the output gradients as kernels, above it as a grouped convolution's weight gradient
# (measured on one CPU core: 1 channel at 28×28, 5×5 kernels, 1.8× faster the first way;
# 16 channels 2.5–4× faster the second; both 2.5–6× faster than unfold + bmm).
_GROUPED_MAX_CHANNELS = 4
# Unfolded input multiplied at once by the channels-last path (2 MiB: in cache; the tanh CNN's
# second convolution at 1,000 images per step ~25 % faster than unfolding it whole)
_UNFOLD_FLOATS = 2**19


# glibc's mallopt parameters and the values set by keep_freed_memory
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 1 << 28  # blocks up to 256 MiB from the heap, not from mmap
_TRIM_THRESHOLD = 1 << 29  # the heap keeps up to 512 MiB of freed memory at its top
_HEAP_KEPT: list[bool] = []


def keep_freed_memory() -> bool:
    """Let this process reuse freed memory for the next training step (glibc; once per process).

    A DP-SGD step on a full batch frees tensors of tens of MB (activations, their gradients,
    unfolded inputs) and allocates the same sizes at the next step. glibc serves a block above
    its mmap threshold (dynamic, at most 32 MiB) with a fresh ``mmap`` and unmaps it on
    ``free``, and returns the top of the heap to the kernel above its trim threshold: every
    step then touches new pages, which the kernel faults in and zeroes — measured on the
    worst-case-initialised audit's CNN (1,000 images per step, one core): 55,000 page faults
    and 40 % of the step's CPU time in the kernel. Raising both thresholds
    (``mallopt(M_MMAP_THRESHOLD)``, ``mallopt(M_TRIM_THRESHOLD)``) keeps the freed blocks
    in the heap for reuse: ~50 faults per step. The cost: the process holds up to 512 MiB
    of freed memory instead of returning it. A no-op (False) off glibc.

    Returns:
        whether the thresholds are set (now or by an earlier call).
    """
    if _HEAP_KEPT:
        return _HEAP_KEPT[0]
    import ctypes
    import ctypes.util

    ok = False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        ok = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
            mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl without mallopt)
        ok = False
    _HEAP_KEPT.append(ok)
    return ok


@dataclasses.dataclass
class _Record:
    module: Any
    inputs: Any
    output: Any
    fixed: bool = False  # the input does not depend on the parameters (the network's input)


def _supported(torch: Any, module: Any) -> str | None:
    """Why ``module``'s own parameters cannot be clipped here (None: they can)."""
    nn = torch.nn
    own = [p for p in module.parameters(recurse=False) if p.requires_grad]
    if not own:
        return None
    if type(module) is nn.Linear:
        return None
    if type(module) is nn.Conv2d:
        if module.groups != 1:
            return f"Conv2d with groups={module.groups} (only groups=1)"
        if module.padding_mode != "zeros":
            return f"Conv2d with padding_mode={module.padding_mode!r} (only 'zeros')"
        if isinstance(module.padding, str) and module.padding != "valid":
            return f"Conv2d with padding={module.padding!r} (integers or 'valid')"
        return None
    return f"{type(module).__name__} (only Linear and Conv2d layers carry parameters here)"


class BookKeeping:
    """Per-example clipping of a network's gradients from one forward and one backward pass.

    Args:
        net: a torch module whose trainable parameters all belong to ``nn.Linear`` or
            ``nn.Conv2d`` layers (each called once per forward pass).
        max_grad_norm: C.
        ghost: for layers applied at several positions: ``"mixed"`` (the cheaper of the ghost
            norm and the per-example gradient, layer by layer), ``"ghost"`` or
            ``"per-example"`` (the same numbers up to float rounding).

    Raises:
        ValueError: a parameterised module of another kind (named), C ≤ 0, bad ``ghost``.
        MissingDependencyError: torch is not installed.
    """

    def __init__(self, net: Any, max_grad_norm: float, *, ghost: str = "mixed") -> None:
        torch = require("torch", "torch")
        self._clip = float(check_positive("max_grad_norm", max_grad_norm))
        self._ghost = check_choice("ghost", ghost, GHOST_CHOICES)
        self._layers = []
        for name, module in net.named_modules():
            why = _supported(torch, module)
            if why is not None:
                raise ValueError(
                    f"book-keeping clipping cannot handle layer {name!r}: {why}; "
                    "use clipping='opacus'"
                )
            if any(p.requires_grad for p in module.parameters(recurse=False)):
                self._layers.append(module)
        self._net = net
        self._buffers: dict = {}  # unfolded inputs, reused from step to step
        self._tape: list[_Record] | None = None
        self._handles = [m.register_forward_hook(self._record) for m in self._layers]

    def _record(self, module: Any, inputs: Any, output: Any) -> None:
        if self._tape is not None:
            a = inputs[0]
            self._tape.append(_Record(module, a.detach(), output, not a.requires_grad))

    def remove(self) -> None:
        """Remove the forward hooks from the network."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def clipped_sum(self, x: Any, y: Any) -> tuple[dict, Any, Any]:
        """Clipped per-example gradient sum of the cross-entropy loss on ``(x, y)``.

        Args:
            x: (B, …) inputs in the network's layout; y: (B,) integer labels.

        Returns:
            (parameter → ``Σᵢ cᵢ gᵢ`` (its shape), (B,) per-example losses, (B,)
            per-example gradient norms ``‖gᵢ‖``).

        Raises:
            ValueError: a layer called more than once in the forward pass (tied weights).
        """
        import torch

        self._tape = []
        try:
            logits = self._net(x)
        finally:
            tape, self._tape = self._tape, None
        seen = [id(r.module) for r in tape]
        if len(set(seen)) != len(seen):
            raise ValueError("a layer ran twice in one forward pass (tied weights): unsupported")
        losses = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        deltas = torch.autograd.grad(losses.sum(), [r.output for r in tape])
        with torch.no_grad():
            terms = [
                self._layer(r.module, r.inputs, d.detach(), r.fixed)
                for r, d in zip(tape, deltas, strict=True)
            ]
            sq = sum(t[0] for t in terms)
            norms = torch.sqrt(sq)
            factor = (self._clip / (norms + _OPACUS_EPS)).clamp(max=1.0)
            sums: dict = {}
            for t in terms:
                sums.update(t[1](factor))
        return sums, losses.detach(), norms

    # ------------------------------------------------------------------ one layer each

    def _layer(self, module: Any, a: Any, delta: Any, fixed: bool = False):
        """(B,) squared norm of the layer's per-example gradient, and a function of the
        clipping factors giving its clipped sums (``fixed``: ``a`` is the network's input)."""
        import torch

        B = a.shape[0]
        if type(module) is torch.nn.Linear:
            if a.dim() == 2:
                return _dense(module, a, delta)
            a = a.reshape(B, -1, a.shape[-1]).transpose(1, 2)
            delta = delta.reshape(B, -1, delta.shape[-1]).transpose(1, 2)
            return self._positions(module, lambda: a, delta)
        pad = (0, 0) if module.padding == "valid" else module.padding
        T = delta.shape[2] * delta.shape[3]
        p = a.shape[1] * module.kernel_size[0] * module.kernel_size[1]
        d = delta.shape[1]
        if not self._use_ghost(T, p, d):
            if _channels_last(torch, delta):
                return _conv_channels_last(module, a, delta, pad, self._buffers, fixed)
            if a.shape[1] <= _GROUPED_MAX_CHANNELS:
                G = _conv_per_example(a, delta, module, pad)
            else:
                G = _conv_weight_per_example(a, delta, module, pad)
            return _per_example(module, G, delta.reshape(B, d, T))

        def unfold():
            return torch.nn.functional.unfold(
                a, module.kernel_size, dilation=module.dilation, padding=pad,
                stride=module.stride,
            )  # fmt: skip

        return self._positions(module, unfold, delta.reshape(B, d, T))

    def _use_ghost(self, T: int, p: int, d: int) -> bool:
        return self._ghost == "ghost" or (self._ghost == "mixed" and p * d > 2 * T * T)

    def _positions(self, module: Any, unfold: Any, delta: Any):
        """A layer at T positions: ``unfold()`` gives U (B, p, T), the inputs seen by each
        output position; delta (B, d, T)."""
        import torch

        U = unfold()
        B, p, T = U.shape
        d = delta.shape[1]
        if not self._use_ghost(T, p, d):
            return _per_example(module, torch.bmm(delta, U.transpose(1, 2)), delta)
        weight, bias = module.weight, module.bias
        use_bias = bias is not None and bias.requires_grad
        b_i = delta.sum(2) if use_bias else None
        sq = torch.zeros(B, dtype=delta.dtype, device=delta.device)
        if weight.requires_grad:
            gram_a = torch.bmm(U.transpose(1, 2), U)
            gram_d = torch.bmm(delta.transpose(1, 2), delta)
            sq = sq + (gram_a * gram_d).sum((1, 2))
        if use_bias:
            sq = sq + b_i.pow(2).sum(1)

        def finish(factor: Any) -> dict:
            out = {}
            if weight.requires_grad:
                w = torch.einsum("bdt,bpt->dp", delta * factor[:, None, None], U)
                out[weight] = w.reshape(weight.shape)
            if use_bias:
                out[bias] = factor @ b_i
            return out

        return sq, finish


def _channels_last(torch: Any, t: Any) -> bool:
    """Whether ``t`` (B, C, H, W) is laid out channels last (and not also channel first)."""
    return t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()


def _conv_channels_last(module: Any, a: Any, delta: Any, pad: Any, buffers: dict, fixed: bool):
    """A Conv2d run channels last (the trainer's layout for CNNs: torch's fastest convolution
    and pooling kernels on the CPU): per-example weight gradients ``Gᵢ = δᵢᵀ Uᵢ`` as batched
    products of the output gradients, a view ``(B, T, d)``, and the unfolded input ``Uᵢ``
    ``(T, k_h·k_w·c_in)`` (Bu, Mao & Xu 2022, arXiv:2205.10683), taken from the input by
    strided copies into a buffer kept across steps, ``_UNFOLD_FLOATS`` at a time so that each
    piece is still in cache when multiplied; no transposed copies. A layer on the network's
    input (``fixed``) unfolds it whole and keeps it, with a copy of that input, while the
    next steps bring the same batch (full-batch training: unfolded once). The clipped sum is
    put back in torch's ``(d, c_in, k_h, k_w)`` order."""
    import torch

    from dpaudit.systems.dpsgd._batched_conv import _unfold

    B, d = delta.shape[:2]
    dt = delta.permute(0, 2, 3, 1).reshape(B, -1, d)  # (B, T, d), a view
    ap = a.permute(0, 2, 3, 1)
    seen = buffers.get(("input", module)) if fixed else None
    if seen is not None and seen[0].shape == a.shape and torch.equal(seen[0], a):
        G = torch.bmm(dt.transpose(1, 2), seen[1])
    elif fixed:
        U = _unfold(torch, ap, module, buffers, ("whole", module), padding=pad)
        buffers[("input", module)] = (a.clone(), U)
        G = torch.bmm(dt.transpose(1, 2), U)
    else:
        G = torch.empty((B, d, module.weight[0].numel()), dtype=dt.dtype, device=dt.device)
        step = max(1, _UNFOLD_FLOATS // (dt.shape[1] * G.shape[2]))
        for i in range(0, B, step):
            U = _unfold(torch, ap[i : i + step], module, buffers, module, padding=pad)
            torch.bmm(dt[i : i + step].transpose(1, 2), U, out=G[i : i + step])
    weight, bias = module.weight, module.bias
    use_bias = bias is not None and bias.requires_grad
    sq = torch.zeros(B, dtype=G.dtype, device=G.device)
    if weight.requires_grad:
        sq = sq + torch.linalg.vector_norm(G.reshape(B, -1), dim=1).square()
    b_i = dt.sum(1) if use_bias else None
    if use_bias:
        sq = sq + b_i.square().sum(1)
    c, kh, kw = weight.shape[1:]

    def finish(factor: Any) -> dict:
        out = {}
        if weight.requires_grad:
            w = (factor @ G.reshape(B, -1)).reshape(d, kh, kw, c)
            out[weight] = w.permute(0, 3, 1, 2)
        if use_bias:
            out[bias] = factor @ b_i
        return out

    return sq, finish


def _conv_per_example(a: Any, delta: Any, module: Any, pad: tuple[int, int]) -> Any:
    """(B, d, p) per-example weight gradients of a Conv2d as one grouped convolution: the
    batch becomes the groups, each example's output gradient the kernel (input
    ``(c_in, B, H, W)``, kernel ``(B·d, 1, H', W')``; the layer's stride becomes the
    dilation and its dilation the stride; Rochette, Manoel & Tramel 2019, arXiv:1912.06015).
    No unfolded copy of the input: faster than ``unfold`` for few input channels."""
    import torch

    B, c = a.shape[:2]
    d = delta.shape[1]
    kh, kw = module.kernel_size
    if pad != (0, 0):
        a = torch.nn.functional.pad(a, (pad[1], pad[1], pad[0], pad[0]))
    out = torch.nn.functional.conv2d(
        a.transpose(0, 1), delta.reshape(B * d, 1, *delta.shape[2:]), groups=B,
        stride=module.dilation, dilation=module.stride,
    )  # fmt: skip
    out = out[:, :, :kh, :kw].reshape(c, B, d, kh * kw)
    return out.permute(1, 2, 0, 3).reshape(B, d, c * kh * kw)


def _conv_weight_per_example(a: Any, delta: Any, module: Any, pad: tuple[int, int]) -> Any:
    """(B, d, p) per-example weight gradients of a Conv2d as the weight gradient of one
    grouped convolution: the batch folded into the channels (input ``(1, B·c_in, H, W)``,
    output gradient ``(1, B·d, H', W')``, ``groups = B``), whose weight gradient
    ``(B·d, c_in, k_h, k_w)`` holds each example's (Rochette, Manoel & Tramel 2019,
    arXiv:1912.06015). One call of torch's convolution backward: no unfolded copy."""
    import torch

    B, c = a.shape[:2]
    d = delta.shape[1]
    kh, kw = module.kernel_size
    weight = a.new_empty((B * d, c, kh, kw))
    _, G, _ = torch.ops.aten.convolution_backward(
        delta.reshape(1, B * d, *delta.shape[2:]), a.reshape(1, B * c, *a.shape[2:]), weight,
        None, module.stride, pad, module.dilation, False, (0, 0), B, (False, True, False),
    )  # fmt: skip
    return G.reshape(B, d, c * kh * kw)


def _per_example(module: Any, G: Any, delta: Any):
    """A layer whose per-example weight gradients G (B, d, p) are at hand; delta (B, d, T)."""
    import torch

    weight, bias = module.weight, module.bias
    use_bias = bias is not None and bias.requires_grad
    B = G.shape[0]
    sq = torch.zeros(B, dtype=G.dtype, device=G.device)
    if weight.requires_grad:
        sq = sq + torch.linalg.vector_norm(G.reshape(B, -1), dim=1).pow(2)
    b_i = delta.sum(2) if use_bias else None
    if use_bias:
        sq = sq + b_i.pow(2).sum(1)

    def finish(factor: Any) -> dict:
        out = {}
        if weight.requires_grad:
            out[weight] = (factor @ G.reshape(B, -1)).reshape(weight.shape)
        if use_bias:
            out[bias] = factor @ b_i
        return out

    return sq, finish


def _dense(module: Any, a: Any, delta: Any):
    """A dense layer on one vector per example: a (B, p), delta (B, d)."""
    import torch

    weight, bias = module.weight, module.bias
    use_bias = bias is not None and bias.requires_grad
    d_sq = delta.pow(2).sum(1)
    # ‖aᵢ‖² without a (B, p) temporary: the input is the widest tensor of an MLP step
    sq = d_sq * torch.linalg.vector_norm(a, dim=1).square() if weight.requires_grad else 0.0
    if use_bias:
        sq = sq + d_sq

    def finish(factor: Any) -> dict:
        cd = delta * factor[:, None]
        out = {}
        if weight.requires_grad:
            out[weight] = cd.t() @ a
        if use_bias:
            out[bias] = cd.sum(0)
        return out

    return sq, finish
