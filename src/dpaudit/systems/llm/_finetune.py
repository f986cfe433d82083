"""DP fine-tuning of a causal language model with Opacus: the system under audit and its claim.

**Training** (DP-SGD, Abadi et al. 2016, arXiv:1607.00133, Alg. 1; for language models Li,
Tramèr, Liang & Hashimoto 2022, arXiv:2110.05679, and Yu et al. 2022, arXiv:2110.06500 for
LoRA): every sequence (a fine-tuning text or a canary) is one example, the privacy unit. Each
of the T steps takes every example independently with probability q (Poisson sampling), the
example's loss is its mean next-token cross-entropy, its gradient is clipped to L2 norm C,
the clipped gradients are summed, noised with N(0, σ²C²) per coordinate and divided by the
public expected batch size B = qN (N: the public number of example slots, fine-tuning texts
plus canary slots). An empty Poisson batch is a noise-only step. How the clipped sum is
computed (``clipping``; the same update to float rounding, the same noise draw):

* ``"per-sample"`` (the default) — Opacus' per-sample gradients (``GradSampleModule``)
  clipped and summed by ``DPOptimizer``;
* ``"ghost"`` — Opacus' fast gradient clipping with ghost clipping
  (``GradSampleModuleFastGradientClipping``, ``DPOptimizerFastGradientClipping``,
  ``DPLossFastGradientClipping``; what ``PrivacyEngine.make_private(...,
  grad_sample_mode="ghost")`` builds): a first backward pass computes each example's gradient
  norm without materialising the per-sample gradients (for linear and embedding layers, from
  the layer's activations and output gradients; Li, Tramèr, Liang & Hashimoto 2022,
  arXiv:2110.05679, §4, after Goodfellow 2015, arXiv:1510.01799; other layer types fall back
  to per-sample gradients), a second backward pass of the loss reweighted by min(1, C/‖g_i‖)
  gives the clipped sum (Bu, Mao & Xu 2022, arXiv:2205.10683).

Per-sample is the default because it is the faster of the two for LoRA: a rank-r adapter's
per-sample gradient is only r·d numbers, while ghost clipping pays a second backward pass
through the whole model and, per adapter, T×T Gram matrices of a length-T sequence (cheaper
than materialising only when 2T² < d_in·d_out: the layerwise rule of Bu, Mao & Xu 2022,
arXiv:2205.10683, §4).
Measured (``benchmarks/bench_llm.py``, SmolLM2-135M, LoRA r = 8, B = 8, L = 64, one thread):
DP step / plain step 1.07 per-sample against 1.69 ghost.

The trainable parameters are

* ``"lora"`` — LoRA adapters (Hu et al. 2021, arXiv:2106.09685) injected by ``peft`` into the
  named linear layers, the base weights frozen;
* ``"last-blocks"`` — the linear layers of the last ``last_blocks`` transformer blocks;

and, when the model has new vocabulary entries (:func:`~dpaudit.systems.llm.with_new_tokens`),
their input and output embeddings (:func:`new_token_lm`; Panda et al. 2025, arXiv:2503.06808).
With ``private = False`` the same batches train without clipping or noise (the non-DP
comparison; its claim is ε = ∞).

**The claim** (:meth:`DPFineTuning.claim`): T compositions of the Poisson-subsampled Gaussian
at (q, σ), RDP (Mironov, Talwar & Zhang 2019, arXiv:1908.10530) via dp-accounting, converted
to (ε, δ) by Balle et al. 2020 (arXiv:1905.09982, Thm 21), add/remove-one example. σ is given,
or calibrated (bisection on the same accountant) to the ``target_epsilon`` at ``delta``.

**A canary repeated r times** (:meth:`DPFineTuning.group_claim`): r copies of one sequence
are r examples, each Poisson-sampled on its own (as duplicates in a real dataset are); adding
or removing all r is a group of r, and the one-run game whose unit is the canary is tested
against the claim for that group. Per step the copies sampled, m ~ Binomial(r, q), shift the
noisy sum by at most m·C (identical copies have identical clipped gradients, so m·C is
attained): the mixture-of-Gaussians mechanism N(0, σ²C²) against Σ_m P(m) N(mC, σ²C²)
(Choquette-Choo, Ganesh, Steinke & Thakurta 2023, arXiv:2310.15526, Cor. 4.7 for the vector
case), T compositions by dp-accounting's privacy loss distributions (pessimistic
discretisation 10⁻², connect-the-dots: Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
arXiv:2207.04380), add or remove. r = 1 is the subsampled Gaussian itself; the group claim is
far below the generic group-privacy bound (rε, r·e^{(r−1)ε}·δ) of the example-level claim.

**Planted bug** (:data:`FINE_TUNING_VARIANTS`): ``noise-tenth`` — the optimizer adds 0.1σC
noise while the claim is the accountant's at σ (a noise multiplier divided by 10 on the way
to the optimizer).

**Device** (``device``): ``"cpu"`` (the default), ``"cuda"`` / ``"cuda:N"`` (refused when torch
sees no CUDA device) or ``"auto"`` (CUDA when available, else the CPU). The model trains on
it; the noise comes from a generator on it, so a seed gives different (equally distributed)
noise on a GPU than on the CPU.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import warnings
from typing import Any

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import Claim
from dpaudit._rng import as_seed_sequence, seed_entropy
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_mask,
    check_positive,
    check_positive_int,
)
from dpaudit.errors import require
from dpaudit.mechanisms.values import SubsampledGaussian
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems._torch_nets import manual_seed
from dpaudit.systems.llm._accounting import (
    _GROUP_SOURCE,
    _SOURCE,
    calibrate_noise_multiplier,
    fine_tuning_claim,
    group_epsilon,
)
from dpaudit.systems.llm._models import CausalLM, check_causal_lm

__all__ = [
    "CLIPPING",
    "FINE_TUNING_VARIANTS",
    "NEW_TOKEN_LOGIT_BIAS",
    "OPTIMIZERS",
    "TRAINABLE",
    "DPFineTuning",
    "FineTunedLM",
    "FineTuningCell",
    "FineTuningVariant",
    "check_device",
    "model_device",
    "new_token_lm",
    "resolve_fine_tuning_device",
    "sequence_losses",
]

TRAINABLE: tuple[str, ...] = ("lora", "last-blocks")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
#: How per-example gradients are clipped: materialised per-sample gradients (the default,
#: the faster for LoRA) or Opacus' ghost clipping.
CLIPPING: tuple[str, ...] = ("per-sample", "ghost")
#: The initial logit bias of a new vocabulary entry (its row starts at the head's mean row).
NEW_TOKEN_LOGIT_BIAS = -8.0
# torch warns about Opacus' full backward hooks on inputs that need no gradient; harmless.
_HOOK_WARNING = "Full backward hook is firing"


@dataclasses.dataclass(frozen=True)
class FineTuningVariant:
    """One implementation: the correct DP fine-tuning or a planted bug.

    Attributes:
        name: registry name.
        title: one line.
        bug: what deviates from the analysed algorithm (None for the correct one).
        noise_scale: the optimizer's noise multiplier is this times the claimed σ.
    """

    name: str
    title: str
    bug: str | None
    noise_scale: float = 1.0


FINE_TUNING_VARIANTS: Registry[FineTuningVariant] = Registry("DP fine-tuning variant")
FINE_TUNING_VARIANTS.register(
    "correct",
    FineTuningVariant(
        "correct", "DP-SGD fine-tuning: Poisson sampling, per-example clipping, noise σC", None
    ),
)
FINE_TUNING_VARIANTS.register("noise-tenth", FineTuningVariant(
    "noise-tenth", "the optimizer adds a tenth of the claimed noise",
    "the noise multiplier reaches the optimizer divided by 10 (0.1σC noise; the claim is at σ)",
    noise_scale=0.1))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FineTuningCell:
    """The settings cell of DP fine-tuning (``SYSTEMS.get("dp-fine-tuning")(cell)``).

    Attributes:
        steps: T.
        batch_size: B, the expected batch size (the denominator of the noisy mean).
        dataset_size: N, the public number of example slots (texts plus canary slots);
            q = B / N.
        learning_rate: of the optimizer.
        optimizer: ``"adam"`` or ``"sgd"``.
        clip_norm: C.
        noise_multiplier: σ (None: calibrated to ``target_epsilon``).
        target_epsilon: the ε at ``delta`` σ is calibrated to when not given.
        delta: δ of the calibration.
        private: DP-SGD (True) or the same training without clipping and noise.
        trainable: ``"lora"`` or ``"last-blocks"`` (:data:`TRAINABLE`).
        lora_rank, lora_alpha: LoRA's r and α.
        lora_targets: names of the linear layers that get adapters.
        last_blocks: blocks trained under ``"last-blocks"``.
        variant: a :data:`FINE_TUNING_VARIANTS` name.
        clipping: ``"per-sample"`` (the default) or ``"ghost"`` (Opacus' fast gradient
            clipping) (:data:`CLIPPING`; module docstring).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` (module docstring).
    """

    steps: int = 100
    batch_size: int = 8
    dataset_size: int = 1000
    learning_rate: float = 1e-3
    optimizer: str = "adam"
    clip_norm: float = 1.0
    noise_multiplier: float | None = None
    target_epsilon: float = 4.0
    delta: float = 1e-5
    private: bool = True
    trainable: str = "lora"
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    last_blocks: int = 2
    variant: str = "correct"
    clipping: str = "per-sample"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_positive_int("steps", self.steps)
        b = check_positive_int("batch_size", self.batch_size)
        n = check_positive_int("dataset_size", self.dataset_size)
        if b > n:
            raise ValueError(f"batch_size={b} exceeds dataset_size={n} (q = B/N must be ≤ 1)")
        check_positive("learning_rate", self.learning_rate)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_positive("clip_norm", self.clip_norm)
        if self.noise_multiplier is not None:
            check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("target_epsilon", self.target_epsilon)
        check_delta(self.delta, allow_zero=False)
        if not isinstance(self.private, bool):
            raise TypeError(f"private must be a bool, got {self.private!r}")
        check_choice("trainable", self.trainable, TRAINABLE)
        check_positive_int("lora_rank", self.lora_rank)
        check_positive("lora_alpha", self.lora_alpha)
        if not self.lora_targets or not all(isinstance(t, str) and t for t in self.lora_targets):
            raise ValueError(f"lora_targets must be non-empty layer names, got {self.lora_targets}")
        check_positive_int("last_blocks", self.last_blocks)
        FINE_TUNING_VARIANTS.get(self.variant)
        check_choice("clipping", self.clipping, CLIPPING)
        check_device(self.device)

    @property
    def sampling_rate(self) -> float:
        """q = B / N."""
        return self.batch_size / self.dataset_size


def check_device(device: str) -> str:
    """``device`` if it names one (``"cpu"``, ``"auto"``, ``"cuda"``, ``"cuda:N"``).

    Raises:
        ValueError: anything else.
    """
    d = device
    ok = isinstance(d, str) and (
        d in ("cpu", "auto", "cuda") or (d.startswith("cuda:") and d[5:].isdigit())
    )
    if not ok:
        raise ValueError(f"device must be 'cpu', 'auto', 'cuda' or 'cuda:N', got {device!r}")
    return d


def resolve_fine_tuning_device(device: str) -> str:
    """The torch device ``device`` trains on: ``"auto"`` is CUDA when torch sees a CUDA device,
    else the CPU; the rest as :func:`dpaudit.systems._torch_nets.resolve_device`.

    Raises:
        ValueError: not a device name; CUDA asked for without a CUDA device.
    """
    from dpaudit.systems._torch_nets import resolve_device

    if check_device(device) == "cpu":
        return "cpu"
    torch = require("torch", "torch")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return resolve_device(device)


def _new_token_module() -> type:
    torch = require("torch", "torch")
    nn = torch.nn

    class _NewTokenLM(nn.Module):
        """A causal LM with ``n`` new vocabulary entries of trainable input and output
        embeddings (Panda et al. 2025, arXiv:2503.06808): ids ≥ ``base_vocab`` are embedded
        by ``new_in`` and predicted by ``new_out``; the base model's own embeddings and head
        are used for the rest. New input rows start at the mean of the base rows plus
        N(0, (0.02·s)²) (s: the base rows' standard deviation); output rows at the mean of
        the head's rows with a logit bias of :data:`NEW_TOKEN_LOGIT_BIAS`, so that unseen
        entries start with almost no probability and fine-tuning on ordinary text barely
        moves them: data-independent, seeded."""

        def __init__(self, base: Any, new_tokens: int, generator: Any) -> None:
            super().__init__()
            self.base = base
            emb = base.get_input_embeddings()
            head = base.get_output_embeddings()
            self.base_vocab = int(emb.num_embeddings)
            self.new_tokens = int(new_tokens)
            d = emb.embedding_dim
            self.new_in = nn.Embedding(max(new_tokens, 1), d)
            self.new_out = nn.Linear(d, max(new_tokens, 1), bias=True)
            with torch.no_grad():
                w = emb.weight
                noise = torch.randn(self.new_in.weight.shape, generator=generator)
                self.new_in.weight.copy_(w.mean(0) + 0.02 * float(w.std()) * noise)
                self.new_out.weight.copy_(head.weight.mean(0).expand_as(self.new_out.weight))
                self.new_out.bias.fill_(NEW_TOKEN_LOGIT_BIAS)
            for p in (self.new_in.weight, self.new_out.weight, self.new_out.bias):
                p.requires_grad_(new_tokens > 0)

        def forward(self, input_ids: Any, attention_mask: Any = None) -> Any:
            out = self.base.base_model(inputs_embeds=self.embed(input_ids),
                                       attention_mask=attention_mask)  # fmt: skip
            return self.head(out.last_hidden_state)

        def embed(self, input_ids: Any) -> Any:
            """The input embeddings of ``input_ids`` (new entries from ``new_in``)."""
            emb = self.base.get_input_embeddings()
            if not self.new_tokens:
                return emb(input_ids)
            is_new = input_ids >= self.base_vocab
            e = emb(torch.where(is_new, 0, input_ids))
            e_new = self.new_in(torch.where(is_new, input_ids - self.base_vocab, 0))
            return torch.where(is_new.unsqueeze(-1), e_new, e)

        def head(self, h: Any) -> Any:
            """The logits over all ids of the body's hidden states ``h`` (the base head's,
            then ``new_out``'s for the new entries)."""
            logits = self.base.get_output_embeddings()(h)
            if self.new_tokens:
                logits = torch.cat([logits, self.new_out(h)], dim=-1)
            return logits

    return _NewTokenLM


def new_token_lm(lm: CausalLM, *, rng: RngLike = None) -> Any:
    """A copy of ``lm.model`` as a module ``(ids, mask) -> logits`` over ``lm.vocab_size``
    ids, with ``lm.new_tokens`` new entries of their own input and output embeddings
    (initialised from ``rng``); every parameter of the base model is frozen."""
    torch = require("torch", "torch")
    seq = as_seed_sequence(rng)
    g = torch.Generator().manual_seed(int(seq.generate_state(1, dtype=np.uint64)[0] % 2**63))
    base = copy.deepcopy(lm.model)
    for p in base.parameters():
        p.requires_grad_(False)
    model = _new_token_module()(base, lm.new_tokens, g)
    model.eval()
    return model


def sequence_losses(model: Any, ids: Any, lengths: Any, *, batch_size: int = 64) -> np.ndarray:
    """Mean next-token cross-entropy (nats) of each sequence under ``model`` (a module
    ``(ids, mask) -> logits``), over its positions 1 … length − 1; no gradient."""
    torch = require("torch", "torch")
    device = model_device(model)
    x_all = torch.as_tensor(np.asarray(ids), dtype=torch.long)
    n_all = torch.as_tensor(np.asarray(lengths), dtype=torch.long)
    out = []
    with torch.no_grad():
        for s in range(0, x_all.shape[0], batch_size):
            x, n = x_all[s : s + batch_size].to(device), n_all[s : s + batch_size].to(device)
            out.append(_per_example_loss(model, x, n).cpu().numpy())
    return np.concatenate(out).astype(np.float64) if out else np.zeros(0)


def model_device(model: Any) -> Any:
    """The device of ``model``'s first parameter (the CPU for a model without any)."""
    torch = require("torch", "torch")
    p = next(iter(model.parameters()), None)
    return torch.device("cpu") if p is None else p.device


def _per_example_loss(model: Any, x: Any, n: Any) -> Any:
    import torch

    mask = torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]
    logits = model(x, mask.long())
    nll = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none"
    ).view(x.shape[0], -1)
    m = mask[:, 1:].to(nll.dtype)
    return (nll * m).sum(1) / m.sum(1)


@dataclasses.dataclass(frozen=True, eq=False)
class FineTunedLM:
    """What one fine-tuning run leaves.

    Attributes:
        model: the fine-tuned module ``(ids, mask) -> logits`` (eval mode).
        reference: the same module before fine-tuning (the pre-trained model with the new
            entries at their initial values): the reference of the loss-ratio score.
        lm: the :class:`CausalLM` trained (tokenizer, vocabulary).
        sampled: ``(k,)`` steps each canary was sampled in (0 for a canary left out).
        trainable_parameters: count of trained parameters.
        noise_multiplier: σ of the claim; ``noise_multiplier_used``: what the optimizer used.
        seed: the run's seed entropy, where it had one.
        seconds: ``"training"`` wall seconds, ``"per_step"`` their mean per step.
        device: the torch device ``model`` and ``reference`` are on.
    """

    model: Any
    reference: Any
    lm: CausalLM
    sampled: np.ndarray
    trainable_parameters: int
    noise_multiplier: float | None
    noise_multiplier_used: float | None
    seed: int | None
    seconds: dict[str, float]
    device: str = "cpu"


class DPFineTuning:
    """DP fine-tuning of a causal LM (module docstring), registered as ``"dp-fine-tuning"``.

    Example:
        >>> ft = DPFineTuning(FineTuningCell(steps=100, batch_size=10, dataset_size=1000,
        ...                                  target_epsilon=4.0))
        >>> round(ft.noise_multiplier, 2), round(ft.claim(delta=1e-5).epsilon, 2)
        (0.64, 4.0)
    """

    name = "dp-fine-tuning"

    def __init__(self, cell: FineTuningCell) -> None:
        if not isinstance(cell, FineTuningCell):
            raise TypeError(f"settings must be a FineTuningCell, got {type(cell).__name__}")
        cell.__post_init__()
        self.cell = cell
        self.variant = FINE_TUNING_VARIANTS.get(cell.variant)
        c = cell
        if not c.private:
            self.noise_multiplier: float | None = None
        elif c.noise_multiplier is not None:
            self.noise_multiplier = float(c.noise_multiplier)
        else:
            self.noise_multiplier = calibrate_noise_multiplier(
                c.target_epsilon, c.delta, c.sampling_rate, c.steps
            )

    @property
    def mechanism(self) -> SubsampledGaussian | None:
        """The mechanism the claim analyses (None for non-private training)."""
        if self.noise_multiplier is None:
            return None
        return SubsampledGaussian(self.cell.sampling_rate, self.noise_multiplier, self.cell.steps)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The example-level (ε, δ) the system reports (ε = ∞ for non-private training).

        Raises:
            ValueError: δ outside (0, 1).
        """
        d = check_delta(self.cell.delta if delta is None else delta, allow_zero=False)
        if self.noise_multiplier is None:
            return Claim("none (non-private fine-tuning)", "no noise, no clipping", math.inf, d)
        c = self.cell
        eps, curve = fine_tuning_claim(c.sampling_rate, self.noise_multiplier, c.steps, d)
        return Claim("accountant (RDP), example-level, add/remove", _SOURCE, eps, d, rdp=curve,
                     conversion="balle2020")  # fmt: skip

    def group_claim(self, repetitions: int, *, delta: float | None = None) -> Claim:
        """The claim for a group of ``repetitions`` copies of one example, each sampled on its
        own (module docstring): what a one-run game whose unit is a canary inserted
        ``repetitions`` times is tested against (ε = ∞ for non-private training).

        Raises:
            ValueError: ``repetitions`` < 1; δ outside (0, 1).
        """
        r = check_positive_int("repetitions", repetitions)
        d = check_delta(self.cell.delta if delta is None else delta, allow_zero=False)
        label = f"accountant (PLD), group of {r} copies, add/remove"
        if self.noise_multiplier is None:
            return Claim(label, "no noise, no clipping", math.inf, d)
        c = self.cell
        eps = group_epsilon(c.sampling_rate, self.noise_multiplier, c.steps, r, d)
        return Claim(label, _GROUP_SOURCE, eps, d, conversion="pld")

    # ------------------------------------------------------------------------------ training

    def check_inputs(
        self, lm: Any, examples: Any, canaries: Any, included: ArrayLike | None
    ) -> tuple[CausalLM, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], Any]:
        """The checked inputs: ``(lm, (ids, lengths), (canary ids, lengths), included)``.

        Raises:
            TypeError: ``lm`` not a :class:`CausalLM` or its model without a causal LM head.
            ValueError: the cell's ``device`` is CUDA and torch sees no CUDA device;
                sequences not ``(n, L)`` ids with lengths in [2, L]; sequences (or
                canaries) longer than the model's context; ids outside the vocabulary; an
                inclusion flag per canary missing; more examples than ``dataset_size`` slots.
        """
        if not isinstance(lm, CausalLM):
            raise TypeError(f"lm must be a CausalLM, got {type(lm).__name__}")
        check_causal_lm(lm.model, "lm.model")
        resolve_fine_tuning_device(self.cell.device)
        ex = _check_sequences("examples", examples, lm)
        if canaries is None:
            can = (np.zeros((0, ex[0].shape[1]), np.int64), np.zeros(0, np.int64))
        else:
            can = _check_sequences("canaries", canaries, lm)
        k = can[0].shape[0]
        inc = np.ones(k, dtype=bool) if included is None else check_mask("included", included)
        if inc.shape != (k,):
            raise ValueError(f"included must have one flag per canary ({k}), got {inc.shape}")
        slots = ex[0].shape[0] + k
        if slots > self.cell.dataset_size:
            raise ValueError(
                f"dataset_size={self.cell.dataset_size} is fewer than the {ex[0].shape[0]} "
                f"examples plus {k} canary slots"
            )
        return lm, ex, can, inc

    def train(
        self,
        lm: CausalLM,
        examples: tuple[ArrayLike, ArrayLike],
        canaries: tuple[ArrayLike, ArrayLike] | None = None,
        included: ArrayLike | None = None,
        *,
        rng: RngLike = None,
    ) -> FineTunedLM:
        """Fine-tune ``lm`` on ``examples`` plus the canaries flagged in ``included``.

        Args:
            lm: the pre-trained model (with any new vocabulary entries).
            examples: ``(ids (n, L), lengths (n,))`` (:func:`~dpaudit.systems.llm.encode_texts`).
            canaries: ``(ids (k, L'), lengths (k,))``; each flagged one is one more example.
            included: ``(k,)`` flags (default: all).
            rng: seeds the new entries' initialisation, the adapters, the Poisson batches
                and the noise (keyword-only).

        Raises:
            TypeError, ValueError: as :meth:`check_inputs`, before any training.
        """
        lm, ex, can, inc = self.check_inputs(lm, examples, canaries, included)
        torch = require("torch", "torch")
        device = resolve_fine_tuning_device(self.cell.device)
        seq = as_seed_sequence(rng)
        s_init, s_batch, s_noise, s_adapters = seq.spawn(4)
        c = self.cell
        start = time.perf_counter()
        reference = new_token_lm(lm, rng=s_init)
        model = copy.deepcopy(reference)
        with torch.random.fork_rng(devices=[]):  # peft draws the adapters from torch's RNG
            manual_seed(torch, int(s_adapters.generate_state(1, np.uint64)[0] % 2**63))
            self.make_trainable(model)
        reference.to(device)
        model.to(device)
        ids, lengths = _stack(ex, can, inc)
        gen = torch.Generator(device=device)
        gen.manual_seed(int(s_noise.generate_state(1, np.uint64)[0] % 2**63))
        module, optimizer, params = self.prepare(model, generator=gen)
        n_params = int(sum(p.numel() for p in params))
        sigma_used = getattr(optimizer, "noise_multiplier", None)
        sampled = np.zeros(ids.shape[0], dtype=np.int64)
        g = np.random.default_rng(s_batch)
        x_all, n_all = torch.from_numpy(ids).to(device), torch.from_numpy(lengths).to(device)
        model.train()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_HOOK_WARNING, category=UserWarning)
            for _ in range(c.steps):
                rows = np.flatnonzero(g.random(ids.shape[0]) < c.sampling_rate)
                sampled[rows] += 1
                at = torch.from_numpy(rows).to(device)
                # right padding, causal attention: the columns after the batch's longest
                # sequence are padding only, so dropping them leaves every loss unchanged
                width = int(lengths[rows].max()) if rows.size else 2
                self.step(module, optimizer, params, x_all[at, :width], n_all[at])
        if c.private:
            module.cleanup()
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        seconds = time.perf_counter() - start
        canary_sampled = np.zeros(inc.size, dtype=np.int64)
        canary_sampled[inc] = sampled[ex[0].shape[0] :]
        return FineTunedLM(model, reference, lm, canary_sampled, n_params,
                           self.noise_multiplier, sigma_used, seed_entropy(seq),
                           {"training": seconds, "per_step": seconds / c.steps},
                           str(device))  # fmt: skip

    def prepare(self, model: Any, *, generator: Any = None) -> tuple[Any, Any, list]:
        """``(module, optimizer, trained parameters)`` of one run on ``model`` (made trainable
        by :meth:`make_trainable`, on its device): when private, Opacus' fast-gradient-clipping
        module and optimizer (``clipping = "ghost"``) or ``GradSampleModule`` and
        ``DPOptimizer`` (``"per-sample"``), the noise from ``generator`` (on the model's
        device); else the model and the plain optimizer."""
        torch = require("torch", "torch")
        c = self.cell
        params = [p for p in model.parameters() if p.requires_grad]
        opt_cls = torch.optim.Adam if c.optimizer == "adam" else torch.optim.SGD
        optimizer = opt_cls(params, lr=c.learning_rate)
        if not c.private:
            return model, optimizer, params
        require("opacus", "opacus")
        from opacus import GradSampleModule
        from opacus.grad_sample import GradSampleModuleFastGradientClipping
        from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping

        sigma = float(self.noise_multiplier) * self.variant.noise_scale
        if c.clipping == "ghost":
            module = GradSampleModuleFastGradientClipping(
                model, batch_first=True, loss_reduction="mean", max_grad_norm=c.clip_norm,
                use_ghost_clipping=True,
            )  # fmt: skip
            opt_cls = DPOptimizerFastGradientClipping
        else:
            module = GradSampleModule(model, batch_first=True, loss_reduction="sum")
            opt_cls = DPOptimizer
        optimizer = opt_cls(optimizer, noise_multiplier=sigma, max_grad_norm=c.clip_norm,
                            expected_batch_size=c.batch_size, loss_reduction="mean",
                            generator=generator)  # fmt: skip
        return module, optimizer, params

    def step(self, module: Any, optimizer: Any, params: list, x: Any, n: Any) -> None:
        """One step on the batch ``x`` (``(b, L)`` ids, lengths ``n``): per-example mean
        token losses; privately, each example's gradient clipped to C (ghost clipping's two
        backward passes, or per-sample gradients clipped by the optimizer), summed, noised and
        divided by B; plainly, the losses' sum divided by B. An empty batch is a noise-only
        step (private) or no step."""
        import torch

        optimizer.zero_grad(set_to_none=True)
        c = self.cell
        if x.shape[0] == 0:
            if not c.private:
                return
            for p in params:  # a noise-only step
                if c.clipping == "ghost":
                    p.grad = torch.zeros_like(p)
                else:
                    p.grad_sample = torch.zeros((0, *p.shape), device=p.device)
        elif c.private and c.clipping == "ghost":
            _ghost_loss(module, optimizer, x, n).backward()
        else:
            losses = _per_example_loss(module, x, n)
            (losses.sum() / (1.0 if c.private else c.batch_size)).backward()
        optimizer.step()

    def make_trainable(self, model: Any) -> None:
        """Unfreeze what the cell trains in ``model`` (a :func:`new_token_lm` module): LoRA
        adapters injected by peft (drawn from torch's global RNG: seed it) or the linear
        layers of the last blocks; the new entries' embeddings stay trainable.

        Raises:
            ValueError: LoRA targets that are not layers of the model; more blocks asked
                for than the model has.
        """
        c = self.cell
        base = model.base
        if c.trainable == "lora":
            peft = require("peft", "llm")
            names = {n.rsplit(".", 1)[-1] for n, _ in base.named_modules()}
            missing = [t for t in c.lora_targets if t not in names]
            if missing:
                raise ValueError(f"lora_targets {missing} are not layers of the model")
            cfg = peft.LoraConfig(
                r=c.lora_rank, lora_alpha=c.lora_alpha, target_modules=list(c.lora_targets),
                lora_dropout=0.0,
            )  # fmt: skip
            peft.inject_adapter_in_model(cfg, base)
            for name, p in base.named_parameters():
                p.requires_grad_("lora_" in name)
        else:
            torch = require("torch", "torch")
            blocks = _blocks(base)
            if c.last_blocks > len(blocks):
                raise ValueError(
                    f"last_blocks={c.last_blocks} exceeds the model's {len(blocks)} blocks"
                )
            for block in list(blocks)[-c.last_blocks :]:
                for mod in block.modules():
                    if isinstance(mod, torch.nn.Linear):
                        for p in mod.parameters():
                            p.requires_grad_(True)


def _ghost_loss(module: Any, optimizer: Any, x: Any, n: Any) -> Any:
    """The batch's per-example mean token losses wrapped by Opacus' ``DPLossFastGradientClipping``
    (cross-entropy over the real positions: padding targets are ``ignore_index``); its
    ``backward()`` leaves the clipped sum of the examples' gradients in ``p.grad``."""
    import torch
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    mask = torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]
    logits = module(x, mask.long())[:, :-1]
    targets = x[:, 1:].masked_fill(~mask[:, 1:], -100)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=-100, reduction="mean")
    loss = DPLossFastGradientClipping(module, optimizer, criterion, loss_reduction="mean")
    return loss(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), shape=logits.shape)


def _blocks(base: Any) -> Any:
    body = base.base_model
    for name in ("layers", "h", "blocks"):
        if hasattr(body, name):
            return getattr(body, name)
    raise TypeError(f"cannot find the transformer blocks of {type(body).__name__}")


def _check_sequences(name: str, value: Any, lm: CausalLM) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (ids (n, L), lengths (n,)), got {type(value)}")
    ids = np.asarray(value[0])
    lengths = np.asarray(value[1])
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} ids must be a 2-d integer array, got shape {ids.shape}")
    if lengths.shape != (ids.shape[0],) or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"{name} lengths must be ({ids.shape[0]},) integers")
    if ids.shape[0] and (lengths.min() < 2 or lengths.max() > ids.shape[1]):
        raise ValueError(f"{name} lengths must be in [2, {ids.shape[1]}]")
    if ids.shape[0] and lengths.max() > lm.context:
        raise ValueError(
            f"{name} are longer than the model's context: {int(lengths.max())} tokens > "
            f"{lm.context}"
        )
    if ids.size and (ids.min() < 0 or ids.max() >= lm.vocab_size):
        raise ValueError(
            f"{name} hold ids outside the vocabulary [0, {lm.vocab_size}): "
            f"{int(ids.min())}…{int(ids.max())} (new tokens need with_new_tokens)"
        )
    return ids.astype(np.int64), lengths.astype(np.int64)


def _stack(ex, can, inc) -> tuple[np.ndarray, np.ndarray]:
    L = max(ex[0].shape[1], can[0].shape[1])
    rows = [np.pad(ex[0], ((0, 0), (0, L - ex[0].shape[1])))]
    rows.append(np.pad(can[0][inc], ((0, 0), (0, L - can[0].shape[1]))))
    return np.concatenate(rows), np.concatenate([ex[1], can[1][inc]])


SYSTEMS.register(
    "dp-fine-tuning", SystemFactory(FineTuningCell, DPFineTuning), tags=("llm-fine-tuning",)
)
