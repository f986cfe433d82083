"""Many small DP-SGD models trained at once: R independent runs in one vectorised pass.

DP-SGD (Abadi et al. 2016, arXiv:1607.00133, Alg. 1): at every step each member of a run's
training set is included independently with probability q (Poisson sampling), its gradient
is clipped to L2 norm C, the clipped gradients are summed, Gaussian noise N(0, σ²C²) is added
to every coordinate and the sum is divided by the expected batch size; then an SGD step.
:func:`train_dpsgd_batched` runs R such trainings side by side on stacked parameters
``(R, …)``; run r is the same random process as
:func:`dpaudit.systems.train_dpsgd` (``train_dpsgd(data, canaries[r], included[r], settings,
rng=rngs[r], nominal_size=…)``), drawn from the same seeds:

* **seeds** — each run's seed is split exactly as the one-run trainer splits it (a numpy
  generator for the Poisson batches, a torch seed for initialisation and noise), so the
  initial weights, every Poisson batch and every noise tensor are those of the one-run
  trainer (Opacus draws its noise from torch's global generator right after building the
  model; here each run has its own ``torch.Generator`` advanced the same way);
* **variable batch sizes** — the runs' training sets are padded to a common width and every
  step carries a ``(R, width)`` inclusion mask (Poisson draws, zero on padding): a masked
  example contributes exactly zero to the clipped sum and to the loss;
* **per-example gradients** — ``method="ghost"`` (MLPs): the per-example gradient of a dense
  layer is the outer product ``δᵢ aᵢᵀ`` of the output gradient and the input, so its norm is
  ``‖δᵢ‖·‖aᵢ‖`` and the clipped sum is ``(c ⊙ δ)ᵀ A`` — nothing of size
  ``examples × parameters`` is materialised (Goodfellow 2015, arXiv:1510.01799; Li et al.
  2022, arXiv:2110.05679, "ghost clipping"). ``method="book-keeping"`` (the CNNs, and any
  ``nn.Sequential`` of convolution, dense, activation and pooling layers;
  :mod:`._batched_conv`): all R·N examples as one channels-last batch, one forward and one
  backward pass to the layers' outputs, per-example convolution gradients ``δᵢᵀUᵢ`` from the
  unfolded inputs and the dense layers' norms as above (Bu, Wang, Zha & Karypis 2023,
  arXiv:2210.00038; Bu, Mao & Xu 2022, arXiv:2205.10683). ``method="vmap"`` (any module):
  ``torch.func.vmap(grad(loss))`` over examples, and again over runs, of
  ``torch.func.functional_call`` on the stacked parameters. Clipping factor
  ``min(1, C / (‖g‖ + 10⁻⁶))``, as Opacus computes it.

The arithmetic is float32 like the one-run trainer's, but sums are taken in another order
(one matrix product instead of Opacus' per-sample tensors), so the weights agree with
:func:`~dpaudit.systems.train_dpsgd` to float32 rounding (≈ 10⁻⁶ relative), not bit for bit;
the tests check both against the one-run trainer and a naive one-example-at-a-time loop
with the same noise tensors. A run's result does not depend on the other runs of the call
as long as ``width`` is fixed. On CUDA (``settings.device``) the weights are initialised on
the CPU and the noise comes from the device's generator seeded like ``torch.manual_seed``
(the one-run trainer's streams on that device).

torch is imported lazily (extra ``torch``); Opacus is not needed.

Example:
    >>> g = np.random.default_rng(0)
    >>> data = LabelledData(g.normal(size=(40, 5)), g.integers(0, 2, 40), 2)
    >>> s = DPSGDSettings(model="mlp", hidden=(), noise_multiplier=1.0, batch_size=20,
    ...                   steps=5, momentum=0.0)
    >>> out = train_dpsgd_batched(data, [None] * 3, [None] * 3, s, rngs=[0, 1, 2],
    ...                           nominal_size=40)
    >>> out.num_runs, out.state["0.weight"].shape, out.run(1).steps
    (3, (3, 2, 5), 5)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit._rng import as_seed_sequence
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import check_array, check_choice, check_positive_int
from dpaudit.errors import require
from dpaudit.systems._torch_nets import resolve_device, torch_context
from dpaudit.systems.dpsgd._batched_conv import (
    ConvProgram,
    conv_clipped_sum,
    numpy_blas_one_thread,
    softmax_loss_and_delta,
)
from dpaudit.systems.dpsgd._bookkeeping import keep_freed_memory
from dpaudit.systems.dpsgd._dpsgd import DPSGDSettings, LabelledData, ModelSpec, TrainedDPSGD

__all__ = ["BATCHED_METHODS", "BatchedDPSGD", "train_dpsgd_batched"]

#: Per-example gradient methods: ghost (dense layers, MLPs), book-keeping (CNNs: convolution
#: and dense layers, one forward and one backward pass), vmap (any module), auto.
BATCHED_METHODS: tuple[str, ...] = ("auto", "ghost", "book-keeping", "vmap")
_OPACUS_EPS = 1e-6  # Opacus' clipping factor C / (‖g‖ + 1e-6)
_VMAP_FLOATS = 2**25  # per-example gradient entries held at once by method="vmap" (128 MiB)


@dataclasses.dataclass(frozen=True, eq=False)
class BatchedDPSGD:
    """R models trained by :func:`train_dpsgd_batched` (weights stacked, numpy: it pickles).

    Attributes:
        spec: the architecture (shared).
        state: parameter name → (R, …) float32 array.
        noise_multiplier, sampling_rate, steps, max_grad_norm: σ, q, T, C.
        num_members: (R,) training-set sizes.
        seconds: wall time of the training loop (all runs).
        final_loss: (R,) mean training loss of the last 10 non-empty steps (NaN if none).
    """

    spec: ModelSpec
    state: dict[str, np.ndarray]
    noise_multiplier: float
    sampling_rate: float
    steps: int
    max_grad_norm: float
    num_members: np.ndarray
    seconds: float
    final_loss: np.ndarray

    @property
    def num_runs(self) -> int:
        """R."""
        return int(self.num_members.shape[0])

    def run(self, r: int) -> TrainedDPSGD:
        """Run r as a one-run :class:`~dpaudit.systems.TrainedDPSGD` (its weights only)."""
        n = int(self.num_members[r])
        per = self.seconds / max(self.num_runs, 1)
        return TrainedDPSGD(
            self.spec, {k: v[r].copy() for k, v in self.state.items()}, self.noise_multiplier,
            self.sampling_rate, self.steps, self.max_grad_norm, n, per, math.nan,
            float(self.final_loss[r]),
        )  # fmt: skip

    def logits(self, X: Sequence[ArrayLike], *, num_threads: int = 1) -> list[FloatArray]:
        """Logits (n_r, C) of rows ``X[r]`` under model r (float32 forward, float64 out)."""
        if len(X) != self.num_runs:
            raise ValueError(f"X must hold one array per run ({self.num_runs}), got {len(X)}")
        xs = [check_array("X", x, ndim=2, allow_empty=True).astype(np.float32) for x in X]
        with torch_context(0, num_threads=num_threads) as torch:
            params = {k: torch.from_numpy(np.array(v)) for k, v in self.state.items()}
            xb, _ = _pad(torch, xs, max((len(x) for x in xs), default=0))
            net = self.spec.build()
            with torch.no_grad():
                out = _forward_all(torch, net, self.spec, params, xb)
        return [out[r, : len(x)].double().numpy() for r, x in enumerate(xs)]


# ------------------------------------------------------------------------------ helpers


def _pad(torch: Any, xs: Sequence[np.ndarray], width: int, fill: float = 0.0):
    """``(R, width, …)`` tensor of the arrays padded with ``fill``, and the (R, width) mask."""
    first = xs[0]
    out = np.full((len(xs), width, *first.shape[1:]), fill, dtype=first.dtype)
    mask = np.zeros((len(xs), width), dtype=bool)
    for r, x in enumerate(xs):
        out[r, : len(x)] = x
        mask[r, : len(x)] = True
    return torch.from_numpy(out), torch.from_numpy(mask)


def _forward_all(torch: Any, net: Any, spec: ModelSpec, params: dict, X: Any) -> Any:
    """Logits (R, N, C) of each run's rows under its parameters (``functional_call``)."""
    from torch.func import functional_call, vmap

    def one(p, x):
        return functional_call(net, p, (spec.fold(x),))

    return vmap(one)(params, X)


def _run_seeds(rng: RngLike) -> tuple[np.random.Generator, int]:
    """The one-run trainer's split of a run seed: (batch generator, torch seed)."""
    root = as_seed_sequence(rng)
    torch_seq, batch_seq = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key).spawn(2)
    torch_seed = int(torch_seq.generate_state(1, dtype=np.uint64)[0] % (2**63))
    return np.random.default_rng(batch_seq), torch_seed


def _init_run(torch: Any, net: Any, torch_seed: int, device: str) -> tuple[dict, Any]:
    """Run r's initial weights (drawn on the CPU) and its noise generator, as the one-run
    trainer draws them: ``net``'s layers re-initialised in construction order (what building
    the network does) from ``torch_seed``; noise on the CPU from the global generator after
    that, on CUDA from the device's generator seeded by ``torch.manual_seed``."""
    torch.default_generator.manual_seed(torch_seed)  # torch.manual_seed on the CPU, ~10× faster
    for module in net.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    gen = torch.Generator(device=device)
    if device == "cpu":
        gen.set_state(torch.default_generator.get_state())
    else:  # pragma: no cover - needs a CUDA device
        gen.manual_seed(torch_seed)
    return {k: v.detach().clone().to(device) for k, v in net.named_parameters()}, gen


def _members(data: LabelledData, canaries: LabelledData | None, included: Any):
    """Run r's training set as (X, y) arrays: D, then the included canaries."""
    if canaries is None:
        if included is not None:
            raise ValueError("included was given without canaries")
        return data.X, data.y
    mask = np.asarray(included)
    if mask.shape != (len(canaries),):
        raise ValueError(f"included must have one entry per canary ({len(canaries)})")
    if canaries.X.shape[1] != data.X.shape[1] or canaries.num_classes != data.num_classes:
        raise ValueError("canaries must have the data's features and classes")
    mask = mask.astype(bool)
    return np.concatenate([data.X, canaries.X[mask]]), np.concatenate([data.y, canaries.y[mask]])


def _steps_and_rate(settings: DPSGDSettings, nominal_size: int) -> tuple[int, float]:
    """T and q = batch_size / nominal size (the one-run trainer's rule)."""
    n = check_positive_int("nominal_size", nominal_size)
    q = settings.batch_size / n
    if q > 1:
        raise ValueError(f"batch_size={settings.batch_size} exceeds the dataset size {n}")
    steps = settings.steps if settings.steps is not None else max(1, round(settings.epochs / q))
    return int(steps), float(q)


# --------------------------------------------------------------------- clipped gradients


def _dense_layers(params: dict) -> list[tuple[str, str]]:
    """(weight, bias) names of an MLP's dense layers, in order."""
    names = [k for k in params if k.endswith(".weight")]
    return [(w, w[: -len("weight")] + "bias") for w in names]


def ghost_clipped_sum(
    torch: Any, params: dict, X: Any, y: Any, weight: Any, clip: float, *, cache: dict | None = None
):
    """Clipped per-example gradient sums of an MLP, without per-example gradients.

    For a dense layer ``z = a Wᵀ + b`` the per-example gradient of example i is
    ``(δᵢ aᵢᵀ, δᵢ)`` with ``δᵢ = ∂ℓᵢ/∂zᵢ``, so ``‖gᵢ‖² = Σ_layers ‖δᵢ‖²(‖aᵢ‖² + 1)``
    (Goodfellow 2015, arXiv:1510.01799) and ``Σᵢ cᵢ gᵢ = ((c ⊙ δ)ᵀ A, Σᵢ cᵢ δᵢ)`` with the
    clipping factor ``cᵢ = min(1, C / (‖gᵢ‖ + 10⁻⁶))`` times the inclusion weight (Abadi et
    al. 2016, arXiv:1607.00133, Alg. 1; Li et al. 2022, arXiv:2110.05679).

    Args:
        params: name → (R, …) stacked weights of ``Linear`` layers with ReLU between.
        X: (R, N, d) inputs; y: (R, N) labels; weight: (R, N) 0/1 inclusion.
        clip: C.
        cache: a dict kept across the steps of one training (``‖xᵢ‖²`` and the one-hot
            labels do not change).

    Returns:
        (name → (R, …) clipped sums, (R, N) per-example cross-entropy losses).
    """
    cache = {} if cache is None else cache
    layers = _dense_layers(params)
    acts, pre = [X], []
    a = X
    for i, (w, b) in enumerate(layers):
        z = torch.baddbmm(params[b].unsqueeze(1), a, params[w].transpose(1, 2))
        pre.append(z)
        a = torch.relu(z) if i < len(layers) - 1 else z
        if i < len(layers) - 1:
            acts.append(a)
    losses, delta = softmax_loss_and_delta(torch, a, y, cache)
    if "input_sq" not in cache:
        cache["input_sq"] = (X * X).sum(-1)
    deltas = [delta]
    for i in range(len(layers) - 1, 0, -1):
        delta = torch.bmm(delta, params[layers[i][0]]) * (pre[i - 1] > 0)
        deltas.insert(0, delta)
    a_sq = [cache["input_sq"]] + [(a_ * a_).sum(-1) for a_ in acts[1:]]
    sq = sum((d * d).sum(-1) * (s_ + 1.0) for d, s_ in zip(deltas, a_sq, strict=True))
    factor = (clip / (torch.sqrt(sq) + _OPACUS_EPS)).clamp(max=1.0) * weight
    out = {}
    for (w, b), d, a_ in zip(layers, deltas, acts, strict=True):
        cd = d * factor.unsqueeze(-1)
        out[w] = torch.bmm(cd.transpose(1, 2), a_)
        out[b] = cd.sum(1)
    return out, losses


def vmap_clipped_sum(torch: Any, net: Any, spec: ModelSpec, params: dict, X, y, weight, clip):
    """Clipped per-example gradient sums of any module: ``vmap(grad)`` over examples and runs.

    Per-example gradients by ``torch.func`` (``functional_call`` + ``grad``, vmapped over the
    examples and again over the runs), clipped with Opacus' factor
    ``min(1, C / (‖gᵢ‖ + 10⁻⁶))`` times the inclusion weight and summed (Abadi et al. 2016,
    arXiv:1607.00133, Alg. 1). The runs go through in slices of at most ``_VMAP_FLOATS``
    per-example gradient entries (a slice's size depends only on R, N and the model, so a
    run's arithmetic does not depend on the other runs).

    Returns:
        (name → (R, …) clipped sums, (R, N) per-example cross-entropy losses).
    """
    from torch.func import functional_call, grad_and_value, vmap

    def loss(p, x, t):
        out = functional_call(net, p, (spec.fold(x.unsqueeze(0)),))
        return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

    per_ex = vmap(vmap(grad_and_value(loss), in_dims=(None, 0, 0)), in_dims=(0, 0, 0))
    R, N = y.shape
    size = sum(int(np.prod(v.shape[1:])) for v in params.values())
    step = max(1, _VMAP_FLOATS // max(1, N * size))
    sums: dict[str, list] = {k: [] for k in params}
    all_losses = []
    for a in range(0, R, step):
        part = {k: v[a : a + step] for k, v in params.items()}
        grads, losses = per_ex(part, X[a : a + step], y[a : a + step])
        r = losses.shape[0]
        sq = sum(g.reshape(r, N, -1).pow(2).sum(-1) for g in grads.values())
        factor = (clip / (torch.sqrt(sq) + _OPACUS_EPS)).clamp(max=1.0) * weight[a : a + step]
        for k, g in grads.items():
            sums[k].append(torch.einsum("rn,rn...->r...", factor, g))
        all_losses.append(losses)
    return {k: torch.cat(v) for k, v in sums.items()}, torch.cat(all_losses)


# ------------------------------------------------------------------------------ training


@dataclasses.dataclass
class _State:
    params: dict
    gens: list
    masks: list  # per run: (T, n_r) Poisson draws
    sizes: np.ndarray


def _prepare(torch, sizes, spec, seeds, q, steps, device, initial_state=None):
    inits, gens, masks = [], [], []
    net = spec.build()
    for n, rng in zip(sizes, seeds, strict=True):
        batch_gen, torch_seed = _run_seeds(rng)
        p, g = _init_run(torch, net, torch_seed, device)
        if initial_state is not None:  # drawn all the same, as the one-run trainer does
            p = {k: torch.as_tensor(np.array(initial_state[k]), dtype=v.dtype).to(device)
                 for k, v in p.items()}  # fmt: skip
        inits.append(p)
        gens.append(g)
        masks.append(batch_gen.random((steps, int(n))) < q)
    params = {k: torch.stack([p[k] for p in inits]) for k in inits[0]}
    return _State(params, gens, masks, sizes)


def _noise(torch, st: _State, std: float) -> dict:
    """Each run's noise tensors from its own generator, in parameter order (as Opacus)."""
    per_run = [
        {
            k: torch.normal(0.0, std, size=v.shape[1:], generator=g, device=v.device)
            for k, v in st.params.items()
        }
        for g in st.gens
    ]
    return {k: torch.stack([p[k] for p in per_run]) for k in st.params}


def _step_weights(st: _State, t: int, width: int) -> np.ndarray:
    w = np.zeros((len(st.sizes), width), dtype=np.float32)
    for r, m in enumerate(st.masks):
        w[r, : m.shape[1]] = m[t]
    return w


def train_dpsgd_batched(
    data: LabelledData,
    canaries: Sequence[LabelledData | None],
    included: Sequence[ArrayLike | None],
    settings: DPSGDSettings,
    *,
    rngs: Sequence[RngLike],
    nominal_size: int,
    width: int | None = None,
    method: str = "auto",
    initial_state: dict[str, np.ndarray] | None = None,
) -> BatchedDPSGD:
    """Train R DP-SGD models at once: run r on ``data`` plus ``canaries[r][included[r]]``.

    Run r is :func:`dpaudit.systems.train_dpsgd` ``(data, canaries[r], included[r], settings,
    rng=rngs[r], nominal_size=nominal_size)`` — same law, same seeds (module notes): T steps,
    Poisson rate ``q = batch_size / nominal_size``, per-example clipping to C, noise
    ``N(0, σ²C²)``, division by the expected batch size ``round(q·nominal_size)`` (an empty
    batch: a noise-only step divided by ``round(q·n_r)``, as the one-run trainer does), SGD
    with momentum (Abadi et al. 2016, arXiv:1607.00133, Alg. 1).

    Args:
        data: the examples every run trains on.
        canaries: per run, its canaries or None.
        included: per run, which canaries it trains on (None without canaries).
        settings: :class:`~dpaudit.systems.DPSGDSettings` with ``noise_multiplier`` set,
            ``optimizer = "sgd"``.
        rngs: one seed per run (keyword-only).
        nominal_size: the dataset size that fixes q.
        width: padded training-set width (≥ every run's size; default: the largest). Fix it
            to make a run's arithmetic independent of which other runs share the call.
        method: ``"ghost"`` (MLPs), ``"book-keeping"`` (CNNs and MLPs), ``"vmap"`` (any
            model) or ``"auto"`` (ghost for MLPs, book-keeping otherwise).
        initial_state: parameter name → array: every run's initial parameters (default:
            each run's own, drawn from its seed); the noise streams are those of the
            one-run trainer given the same ``initial_state``.

    Returns:
        :class:`BatchedDPSGD`.

    Raises:
        ValueError: mismatched lengths, no σ, Adam, ghost on a CNN, width too small.
    """
    R = len(rngs)
    if R < 1 or len(canaries) != R or len(included) != R:
        raise ValueError(
            f"canaries, included and rngs must have one entry per run, got "
            f"{len(canaries)}, {len(included)}, {R}"
        )
    if settings.noise_multiplier is None:
        raise ValueError("settings.noise_multiplier must be set")
    if settings.optimizer != "sgd":
        raise ValueError(
            f"the batched trainer supports optimizer='sgd', got {settings.optimizer!r}"
        )
    method = check_choice("method", method, BATCHED_METHODS)
    if method == "auto":
        method = "ghost" if settings.model == "mlp" else "book-keeping"
    if method == "ghost" and settings.model != "mlp":
        raise ValueError(f"method='ghost' needs model='mlp', got {settings.model!r}")
    members = [_members(data, c, i) for c, i in zip(canaries, included, strict=True)]
    sizes = np.array([len(m[1]) for m in members], dtype=np.int64)
    wide = int(sizes.max())
    width = wide if width is None else check_positive_int("width", width)
    if width < wide:
        raise ValueError(f"width={width} is below the largest training set ({wide})")
    steps, q = _steps_and_rate(settings, nominal_size)
    spec = ModelSpec.for_data(data, settings.model, settings.hidden)
    require("torch", "torch")
    keep_freed_memory()
    with torch_context(0, num_threads=settings.num_threads) as torch:
        start = time.perf_counter()
        device = resolve_device(settings.device)
        st = _prepare(torch, sizes, spec, rngs, q, steps, device, initial_state)
        X = _pad(torch, [m[0] for m in members], width)[0].to(device)
        y = _pad(torch, [m[1] for m in members], width)[0].to(device)
        net = spec.build().to(device) if method != "ghost" else None
        if method == "book-keeping":
            shape = tuple(spec.fold(torch.zeros(1, spec.num_features)).shape[1:])
            net = ConvProgram.of(torch, net, shape)
        with numpy_blas_one_thread():  # the CNN path's per-example products (numpy's BLAS)
            losses = _loop(torch, st, settings, X, y, q, nominal_size, steps, method, net, spec)
        seconds = time.perf_counter() - start
        state = {k: v.cpu().numpy().copy() for k, v in st.params.items()}
    return BatchedDPSGD(
        spec, state, float(settings.noise_multiplier), q, steps, settings.max_grad_norm,
        st.sizes, seconds, losses,
    )  # fmt: skip


def _loop(torch, st, s, X, y, q, nominal, steps, method, net, spec) -> np.ndarray:
    """T steps on every run (see :func:`train_dpsgd_batched`); returns (R,) final losses:
    the mean batch loss of the last 10 non-empty steps (NaN if none), as the one-run trainer."""
    R, width = y.shape
    std = float(s.noise_multiplier) * s.max_grad_norm
    expected = max(1, round(q * nominal))
    device = y.device
    empty_div = torch.tensor([max(1, round(q * int(n))) for n in st.sizes], dtype=torch.float32,
                             device=device)  # fmt: skip
    buf: dict | None = None
    cache: dict = {}
    losses = []
    for t in range(steps):
        w = torch.from_numpy(_step_weights(st, t, width)).to(device)
        count = w.sum(1)
        if method == "ghost":
            sums, per_ex = ghost_clipped_sum(torch, st.params, X, y, w, s.max_grad_norm,
                                             cache=cache)  # fmt: skip
        elif method == "book-keeping":
            sums, per_ex = conv_clipped_sum(torch, net, st.params, X, y, w, s.max_grad_norm,
                                            cache=cache)  # fmt: skip
        else:
            sums, per_ex = vmap_clipped_sum(torch, net, spec, st.params, X, y, w, s.max_grad_norm)
        noise = _noise(torch, st, std)
        empty = count == 0
        div = torch.where(empty, empty_div, torch.full_like(count, float(expected)))
        grads = {}
        for k, v in sums.items():
            shape = (R,) + (1,) * (v.dim() - 1)
            grads[k] = (v + noise[k]) / div.reshape(shape)
        if s.momentum > 0:
            buf = grads if buf is None else {k: s.momentum * buf[k] + grads[k] for k in grads}
            grads = buf
        st.params = {k: p - s.learning_rate * grads[k] for k, p in st.params.items()}
        if t >= steps - 10:
            mean = ((per_ex.detach() * w).sum(1) / count.clamp(min=1)).cpu().numpy()
            losses.append(np.where(empty.cpu().numpy(), np.nan, mean.astype(np.float64)))
    table = np.array(losses).reshape(-1, R)
    seen = np.isfinite(table).sum(0)
    total = np.where(np.isfinite(table), table, 0.0).sum(0)
    return np.where(seen > 0, total / np.maximum(seen, 1), np.nan)
