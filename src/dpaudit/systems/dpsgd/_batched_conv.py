"""Clipped per-example gradient sums of R stacked CNNs from one forward and one backward pass.

The batched trainer (:mod:`._batched`) holds R runs' weights stacked ``(R, …)`` and every
run's padded training set ``(R, N, …)``. For a ``nn.Sequential`` network whose parameters all
sit in ``Conv2d`` and ``Linear`` layers, between weightless per-example layers (``ReLU``,
``Tanh``, ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``, ``Flatten``; the CNNs of
:mod:`dpaudit.systems._torch_nets`), this module runs all R·N examples as one batch, channels
last: the weightless layers are torch's own modules on the whole batch (their channels-last
kernels), a parameterised layer is applied run by run (a convolution: torch's, on the run's
N examples, the first one all runs at once as one grouped convolution, ``groups = R``; a dense
layer: one batched product). One backward pass to the parameterised
layers' outputs gives every output gradient ``δᵢ``; each example's gradient norm and the
clipped sum then follow from the layers' inputs and ``δᵢ`` — the book-keeping of Bu, Wang, Zha
& Karypis 2023 (arXiv:2210.00038), no per-example autograd and no second backward pass:

* **convolution**: on the unfolded input ``Uᵢ`` of shape ``(T, k_h·k_w·c_in)`` (T output
  positions, im2col) the per-example weight gradient is ``Gᵢ = Uᵢᵀ δᵢ``, one batched product
  over the R·N examples; it is kept rather than the ghost norm ``⟨UᵢUᵢᵀ, δᵢδᵢᵀ⟩`` because
  ``p·d ≤ 2T²`` for every convolution of these CNNs (Bu, Mao & Xu 2022, arXiv:2205.10683,
  "mixed ghost clipping": ``3·3·16 · 32 = 4,608 ≤ 2·7⁴ = 4,802`` at 7×7, far below at larger
  T); the bias gradient is ``Σₜ δᵢₜ``. The first layer's unfolded input does not change
  between steps: it is computed once, transposed, with a row of ones for the bias, and
  ``Uᵢᵀ δᵢ`` gives the layer's weight and bias gradients in one batched product;
* **dense layer** ``z = a Wᵀ + b`` on one vector per example: ``‖gᵢ‖² = ‖δᵢ‖²(‖aᵢ‖² + 1)`` and
  ``Σᵢ cᵢ gᵢ = ((c ⊙ δ)ᵀ A, Σᵢ cᵢ δᵢ)`` (Goodfellow 2015, arXiv:1510.01799).

Then ``cᵢ = min(1, C / (‖gᵢ‖ + 10⁻⁶))`` times the inclusion weight (Abadi et al. 2016,
arXiv:1607.00133, Alg. 1; the factor as Opacus computes it), and each clipped sum is one
``(1 × N)·(N × ·)`` product per run. On the CPU the batched products go through numpy's
``matmul`` on the tensors' memory (:func:`_bmm`: its BLAS is faster than torch's on these
small matrices). The same numbers as torch's per-example autograd up to the order of float32
sums (≈ 10⁻⁷ relative). The runs go through in slices of at most
``_CONV_FLOATS`` floats of per-step tensors; a slice's size depends only on R, N and the
model, so a run's arithmetic does not depend on the other runs.

torch is imported lazily by the caller (extra ``torch``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import numpy as np

from dpaudit.systems._blas import one_blas_thread

__all__ = ["ConvProgram", "conv_clipped_sum", "softmax_loss_and_delta"]

_OPACUS_EPS = 1e-6  # Opacus' clipping factor C / (‖g‖ + 1e-6)
# Floats of per-step tensors held by one slice of runs (256 MiB): 11 runs of the benchmark's
# CNN (N = 144, 14×14; ConvProgram.floats) per slice, measured faster on one core than 64 MiB
# once freed memory was kept for the next step (keep_freed_memory; 89 against 104 CPU-ms per
# run, when fresh memory pages every step made small slices the fastest); 512 MiB (all 16
# runs of a benchmark group in one slice) was not measurably faster (78–84 against 84–89).
_CONV_FLOATS = 2**26
_WEIGHTLESS = ("ReLU", "Tanh", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Flatten")


@dataclasses.dataclass(frozen=True)
class ConvProgram:
    """A ``nn.Sequential`` network checked and ordered for :func:`conv_clipped_sum`.

    A ``ReLU`` followed by a ``MaxPool2d`` runs as the pooling then the ReLU: the same output
    (ReLU is nondecreasing, so it commutes with a maximum) on a quarter of the entries, and the
    same gradient (a window whose maximum is positive sends it to the same first maximal entry
    either way; one whose maximum is ≤ 0 sends none either way, ReLU's derivative at ≤ 0
    being 0 in torch).

    Attributes:
        layers: (name, module) in the order they run; the name is the parameter prefix
            (``"0"`` for ``"0.weight"``).
        shape: the shape of one input: (channels, height, width) of an image, (d,) of a
            feature vector.
        floats: floats held per example by one step (activations, unfolded inputs,
            per-example weight gradients): what sizes a slice of runs.
    """

    layers: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    floats: int

    @classmethod
    def of(cls, torch: Any, net: Any, shape: tuple[int, ...]) -> ConvProgram:
        """The program of ``net`` on inputs of shape ``shape`` ((c, h, w) or (d,)).

        Raises:
            ValueError: not a ``nn.Sequential``, or a layer it cannot run (named).
        """
        nn = torch.nn
        if type(net) is not nn.Sequential:
            raise ValueError(f"method='book-keeping' needs an nn.Sequential network, got "
                             f"{type(net).__name__}")  # fmt: skip
        layers = list(net.named_children())
        weightless = tuple(getattr(nn, k) for k in _WEIGHTLESS)
        for name, m in layers:
            kind = type(m)
            if kind is nn.Conv2d:
                if m.groups != 1 or m.padding_mode != "zeros" or isinstance(m.padding, str):
                    raise ValueError(f"layer {name!r}: method='book-keeping' needs Conv2d with "
                                     f"groups=1 and integer zero padding, got {m}")  # fmt: skip
            elif kind is nn.Flatten and (m.start_dim, m.end_dim) != (1, -1):
                raise ValueError(f"layer {name!r}: method='book-keeping' needs Flatten() over "
                                 f"all but the batch axis, got {m}")  # fmt: skip
            elif kind is not nn.Linear and kind not in weightless:
                raise ValueError(
                    f"layer {name!r}: {kind.__name__} is not supported by method='book-keeping' "
                    f"(Conv2d, Linear, {', '.join(_WEIGHTLESS)}); use method='vmap'"
                )
        for i in range(len(layers) - 1):
            if type(layers[i][1]) is nn.ReLU and type(layers[i + 1][1]) is nn.MaxPool2d:
                layers[i], layers[i + 1] = layers[i + 1], layers[i]
        floats = 0
        with torch.no_grad():
            device = next(iter(net.parameters()), torch.zeros(())).device
            a = torch.zeros((1, *shape), device=device)
            for _, m in layers:
                if type(m) is nn.Conv2d:
                    u = torch.nn.functional.unfold(a, m.kernel_size, dilation=m.dilation,
                                                   padding=m.padding, stride=m.stride)  # fmt: skip
                    floats += u.numel() + m.weight.numel()
                a = m(a)
                floats += 3 * a.numel()
        return cls(tuple(layers), tuple(int(v) for v in shape), int(floats))


def _unfold(
    torch: Any, a: Any, conv: Any, buffers: dict | None = None, key: Any = "", padding=None
) -> Any:
    """(B, H, W, C) input (any strides; a channels-last tensor's permuted view is contiguous)
    → (B, T, k_h·k_w·C): each output position's receptive field, ordered (k_h, k_w, c)
    (im2col). ``padding``: the zero padding (default ``conv.padding``). With ``buffers``,
    written into ``buffers[key]`` (a flat tensor grown as needed), kept for the next step (a
    fresh tensor of this size each step costs more in new memory pages than the copy)."""
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel_size, conv.stride, conv.dilation
    ph, pw = conv.padding if padding is None else padding
    if ph or pw:
        a = torch.nn.functional.pad(a, (0, 0, pw, pw, ph, ph))
    B, H, W, C = a.shape
    ho, wo = (H - dh * (kh - 1) - 1) // sh + 1, (W - dw * (kw - 1) - 1) // sw + 1
    s0, s1, s2, s3 = a.stride()
    windows = a.as_strided((B, ho, wo, kh, kw, C), (s0, sh * s1, sw * s2, dh * s1, dw * s2, s3))
    size = windows.numel()
    flat = None if buffers is None else buffers.get(key)
    if flat is None or flat.numel() < size or flat.dtype != a.dtype or flat.device != a.device:
        flat = torch.empty(size, dtype=a.dtype, device=a.device)
        if buffers is not None:
            buffers[key] = flat
    out = flat[:size].view(windows.shape)
    out.copy_(windows)  # one strided copy: ~2× faster than stacking k_h·k_w slices
    return out.view(B, ho * wo, kh * kw * C)


def numpy_blas_one_thread() -> contextlib.AbstractContextManager[Any]:
    """A context in which numpy's BLAS (the per-example products of :func:`_bmm`) uses one
    thread, torch's own thread pool untouched (:func:`dpaudit.systems._blas.one_blas_thread`
    on the BLAS libraries only)."""
    return one_blas_thread("blas")


def _bmm(torch: Any, a: Any, b: Any, out: Any = None) -> Any:
    """``torch.bmm(a, b, out=out)``; on the CPU through numpy's ``matmul`` on the same memory
    (no copy; its BLAS, OpenBLAS in numpy's wheels): for the per-example gradient products of
    these CNNs — thousands of matrices of a few thousand entries — 1.3–1.8× less CPU time on
    one core than torch's batched product (measured on the benchmark's shapes, 1,584 examples:
    ``(32 × 49)·(49 × 144)`` 14 against 19 ms, ``(10 × 196)·(196 × 16)`` 3.5 against 6.3 ms).
    The same float32 products, summed in another order."""
    if a.device.type != "cpu" or a.requires_grad or b.requires_grad:
        return torch.bmm(a, b) if out is None else torch.bmm(a, b, out=out)
    if out is None:
        out = a.new_empty((a.shape[0], a.shape[1], b.shape[2]))
    np.matmul(a.numpy(), b.numpy(), out=out.numpy())
    return out


def softmax_loss_and_delta(torch: Any, logits: Any, y: Any, cache: dict) -> tuple[Any, Any]:
    """Per-example cross-entropy of ``logits`` (…, classes) at labels ``y`` and its gradient in
    the logits, ``softmax − onehot(y)`` (the one-hot matrix is kept in ``cache``). The softmax
    is taken by hand: torch's (log_)softmax over a last axis of ~10 classes is ~20× slower on
    the CPU. Shared by the dense (ghost) and convolutional (book-keeping) batched paths."""
    shifted = logits - logits.amax(-1, keepdim=True)
    e = torch.exp(shifted)
    total = e.sum(-1, keepdim=True)
    losses = (torch.log(total) - shifted.gather(-1, y.unsqueeze(-1))).squeeze(-1)
    if "onehot" not in cache:
        cache["onehot"] = torch.nn.functional.one_hot(y, e.shape[-1]).to(e.dtype)
    return losses, e / total - cache["onehot"]


def conv_clipped_sum(
    torch: Any,
    program: ConvProgram,
    params: dict,
    X: Any,
    y: Any,
    weight: Any,
    clip: float,
    *,
    cache: dict | None = None,
) -> tuple[dict, Any]:
    """Clipped per-example gradient sums of R stacked networks (module notes).

    Args:
        program: the network (:meth:`ConvProgram.of`).
        params: name → (R, …) stacked parameters (torch's names and layouts).
        X: (R, N, d) inputs (images flattened channel first); y: (R, N) labels;
        weight: (R, N) 0/1 inclusion.
        clip: C.
        cache: a dict kept across the steps of one training (inputs channels last, the first
            layer's unfolded input).

    Returns:
        (name → (R, …) clipped sums, (R, N) per-example cross-entropy losses).
    """
    cache = {} if cache is None else cache
    R, N = y.shape
    step = max(1, _CONV_FLOATS // max(1, N * program.floats))
    if step >= R:
        return _slice(torch, program, params, X, y, weight, clip, cache)
    parts = []
    for a in range(0, R, step):
        sub = cache.setdefault(("slice", a), {})
        part = {k: v[a : a + step] for k, v in params.items()}
        w = weight[a : a + step]
        parts.append(_slice(torch, program, part, X[a : a + step], y[a : a + step], w, clip, sub))
    sums = {k: torch.cat([p[0][k] for p in parts]) for k in params}
    return sums, torch.cat([p[1] for p in parts])


def _slice(torch, program: ConvProgram, params: dict, X, y, weight, clip, cache):
    R, N = y.shape
    B = R * N
    if "input" not in cache:
        if len(program.shape) == 3:
            c, h, w = program.shape
            x = X.reshape(B, c, h, w).permute(0, 2, 3, 1).contiguous()  # (B, H, W, C) in memory
            cache["input"] = x.permute(0, 3, 1, 2)  # (B, C, H, W), channels last
        else:
            cache["input"] = X.reshape(B, -1)
    a = cache["input"]
    tape = []
    for i, (name, m) in enumerate(program.layers):
        rec, z = _forward(torch, m, name, i, params, a, cache, R, N)
        tape.append((m, name, a, z, rec))
        a = z
    losses, delta = softmax_loss_and_delta(torch, a.reshape(R, N, -1), y, cache)
    delta = delta.reshape(B, -1)
    terms = []
    for i in range(len(tape) - 1, -1, -1):
        m, name, inp, out, rec = tape[i]
        delta, term = _backward(torch, m, name, i, params, inp, out, rec, delta, cache, R, N)
        if term is not None:
            terms.append(term)
    sq = sum(t[0] for t in terms)
    factor = (clip / (torch.sqrt(sq) + _OPACUS_EPS)).clamp(max=1.0) * weight
    sums: dict = {}
    for t in terms:
        sums.update(t[1](factor))
    return sums, losses


def _forward(torch, m, name: str, i: int, params: dict, a, cache: dict, R: int, N: int):
    """One layer on the (B, …) batch: (what its backward needs, output)."""
    nn, F = torch.nn, torch.nn.functional
    B = R * N
    kind = type(m)
    b = params.get(name + ".bias")
    if kind is nn.Conv2d:
        W = params[name + ".weight"]
        if i == 0:
            return None, _first_conv(torch, m, W, b, a, cache, R, N)
        outs = [
            F.conv2d(x, W[r], None if b is None else b[r], m.stride, m.padding, m.dilation)
            for r, x in enumerate(a.split(N))
        ]
        return None, torch.cat(outs).contiguous(memory_format=torch.channels_last)
    if kind is nn.Linear:
        W = params[name + ".weight"]
        x = a.reshape(R, N, -1)
        Wt = W.transpose(1, 2)
        z = torch.bmm(x, Wt) if b is None else torch.baddbmm(b.unsqueeze(1), x, Wt)
        return None, z.reshape(B, -1)
    if kind is nn.ReLU:
        return None, torch.relu(a)
    if kind is nn.Tanh:
        return None, torch.tanh(a)
    if kind is nn.MaxPool2d:
        z, idx = F.max_pool2d_with_indices(a, m.kernel_size, m.stride, m.padding, m.dilation,
                                           m.ceil_mode)  # fmt: skip
        return idx, z
    if kind is nn.AvgPool2d:
        return None, m(a)
    if kind is nn.AdaptiveAvgPool2d:
        return None, m(a)
    return None, a.reshape(B, -1)  # Flatten: torch's (c, h, w) order


def _first_conv(torch, conv, W, b, a, cache: dict, R: int, N: int):
    """The first convolution of all R runs as one grouped convolution (``groups = R``) of the
    fixed input laid out ``(N, R·c_in, H, W)`` channels last (built once, cached), its output
    copied into the batch's ``(R·N, H', W', c_out)`` order (a kept buffer): 1.5–2× faster on one
    core than one product with the unfolded input, whose ``k_h·k_w·c_in`` (9 for one
    channel) is too short a product for the matrix kernels."""
    B, c = a.shape[0], a.shape[1]
    if "grouped" not in cache:
        x = a.reshape(R, N, *a.shape[1:]).transpose(0, 1).reshape(N, R * c, *a.shape[2:])
        cache["grouped"] = x.contiguous(memory_format=torch.channels_last)
    cout = W.shape[1]
    z = torch.nn.functional.conv2d(
        cache["grouped"], W.reshape(R * cout, *W.shape[2:]), None if b is None else b.reshape(-1),
        conv.stride, conv.padding, conv.dilation, R,
    )  # fmt: skip
    ho, wo = z.shape[2], z.shape[3]
    buffers = cache.setdefault("buffers", {})
    out = buffers.get("first")
    if out is None or out.shape != (R, N, ho, wo, cout) or out.dtype != z.dtype:
        out = buffers["first"] = torch.empty((R, N, ho, wo, cout), dtype=z.dtype, device=z.device)
    out.copy_(z.permute(0, 2, 3, 1).reshape(N, ho, wo, R, cout).permute(3, 0, 1, 2, 4))
    return out.view(B, ho, wo, cout).permute(0, 3, 1, 2)


def _backward(torch, m, name, i, params, inp, out, rec, delta, cache, R, N):
    """(gradient at the layer's input (None for the first layer), its norm term or None)."""
    nn, aten = torch.nn, torch.ops.aten
    kind = type(m)
    first = i == 0
    if kind is nn.Conv2d:
        term = _conv_term(torch, params, name, m, inp, delta, cache if first else None,
                          cache.setdefault("buffers", {}), R, N)  # fmt: skip
        if first:
            return None, term
        W = params[name + ".weight"]
        grads = [
            aten.convolution_backward(d, x, W[r], None, m.stride, m.padding, m.dilation, False,
                                      (0, 0), 1, (True, False, False))[0]
            for r, (d, x) in enumerate(zip(delta.split(N), inp.split(N), strict=True))
        ]  # fmt: skip
        return torch.cat(grads).contiguous(memory_format=torch.channels_last), term
    if kind is nn.Linear:
        term = _linear_term(torch, params, name, inp, delta, R, N)
        if first:
            return None, term
        W = params[name + ".weight"]
        d = _bmm(torch, delta.reshape(R, N, -1), W).reshape(inp.shape)
        return d, term
    if first:
        return None, None
    if kind is nn.ReLU:
        return aten.threshold_backward(delta, out, 0), None
    if kind is nn.Tanh:
        return aten.tanh_backward(delta, out), None
    if kind is nn.MaxPool2d:
        d = delta.contiguous(memory_format=torch.channels_last)
        return aten.max_pool2d_with_indices_backward(
            d, inp, _pair(m.kernel_size), _pair(m.stride or m.kernel_size), _pair(m.padding),
            _pair(m.dilation), m.ceil_mode, rec,
        ), None  # fmt: skip
    if kind is nn.AvgPool2d:
        d = delta.contiguous(memory_format=torch.channels_last)
        return aten.avg_pool2d_backward(
            d, inp, _pair(m.kernel_size), _pair(m.stride or m.kernel_size), _pair(m.padding),
            m.ceil_mode, m.count_include_pad, m.divisor_override,
        ), None  # fmt: skip
    if kind is nn.AdaptiveAvgPool2d:
        d = delta.contiguous(memory_format=torch.channels_last)
        return aten._adaptive_avg_pool2d_backward(d, inp), None
    d = delta.reshape(inp.shape)  # Flatten
    if d.dim() == 4:
        d = d.contiguous(memory_format=torch.channels_last)
    return d, None


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _conv_term(torch, params, name: str, conv, inp, delta, cache, buffers, R: int, N: int):
    """Squared per-example gradient norms of a convolution and a function of the clipping
    factors giving its clipped sums, from the per-example gradients (module notes).

    The first layer (``cache`` given): its input is fixed, so its unfolded input is kept
    transposed, ``Uᵢᵀ`` ``(k_h·k_w·c_in, T)`` with a row of ones under it when the layer has a
    bias, and ``Uᵢᵀ δᵢ`` is the weight and bias gradients in one batched product whose long
    axis is T (for 9 unfolded columns ~3× faster than ``δᵢᵀ Uᵢ`` and a separate bias sum). A
    later layer: its input unfolded into a kept buffer, ``Gᵢ = δᵢᵀ Uᵢ``
    (``(B, c_out, k_h·k_w·c_in)``) as one batched product into a kept buffer (δ read
    transposed in place), bias gradients ``Σₜ δᵢₜ``."""
    B, cout = delta.shape[0], delta.shape[1]
    d = delta.permute(0, 2, 3, 1).reshape(B, -1, cout)  # (B, T, c_out)
    bias = params.get(name + ".bias")
    w = params[name + ".weight"]
    cin, kh, kw = w.shape[2], w.shape[3], w.shape[4]
    if cache is not None:
        if "unfolded_t" not in cache:
            U = _unfold(torch, inp.permute(0, 2, 3, 1), conv).transpose(1, 2)
            ones = [torch.ones_like(U[:, :1])] if bias is not None else []
            cache["unfolded_t"] = torch.cat([U, *ones], 1)  # (B, K [+ 1], T)
        G = _bmm(torch, cache["unfolded_t"], d).reshape(R, N, -1)  # (·, K [+ 1], c_out)
        sq = torch.linalg.vector_norm(G, dim=-1).square()

        def finish_first(factor):
            g = _bmm(torch, factor.unsqueeze(1), G).reshape(R, -1, cout)
            weight = g[:, : kh * kw * cin].reshape(R, kh, kw, cin, cout)
            out = {name + ".weight": weight.permute(0, 4, 3, 1, 2).contiguous()}
            if bias is not None:
                out[name + ".bias"] = g[:, -1].contiguous()
            return out

        return sq, finish_first
    U = _unfold(torch, inp.permute(0, 2, 3, 1), conv, buffers, name)
    G = buffers.get(("grad", name))
    if G is None or G.shape != (B, cout, U.shape[2]) or G.dtype != U.dtype:
        G = buffers[("grad", name)] = U.new_empty((B, cout, U.shape[2]))
    _bmm(torch, d.transpose(1, 2), U, out=G)  # (B, c_out, k_h·k_w·c_in)
    G = G.reshape(R, N, -1)
    sq = torch.linalg.vector_norm(G, dim=-1).square()
    b_i = d.sum(1).reshape(R, N, cout) if bias is not None else None
    if bias is not None:
        sq = sq + b_i.square().sum(-1)

    def finish(factor):
        f = factor.unsqueeze(1)
        g = _bmm(torch, f, G).reshape(R, cout, kh, kw, cin)
        out = {name + ".weight": g.permute(0, 1, 4, 2, 3).contiguous()}
        if bias is not None:
            out[name + ".bias"] = torch.bmm(f, b_i).squeeze(1)
        return out

    return sq.reshape(R, N), finish


def _linear_term(torch, params, name: str, a, delta, R: int, N: int):
    """A dense layer on one vector per example: ``‖δᵢ‖²(‖aᵢ‖² + 1)`` (Goodfellow 2015)."""
    a = a.reshape(R, N, -1)
    delta = delta.reshape(R, N, -1)
    d_sq = delta.square().sum(-1)
    sq = d_sq * torch.linalg.vector_norm(a, dim=-1).square()
    bias = params.get(name + ".bias")
    if bias is not None:
        sq = sq + d_sq

    def finish(factor):
        cd = delta * factor.unsqueeze(-1)
        out = {name + ".weight": _bmm(torch, cd.transpose(1, 2), a)}
        if bias is not None:
            out[name + ".bias"] = cd.sum(1)
        return out

    return sq, finish
