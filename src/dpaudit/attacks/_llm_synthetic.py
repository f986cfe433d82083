"""What is released after DP fine-tuning of a language model: the model, or synthetic text.

**Threat models** (:data:`LLM_THREAT_MODELS`; what the one-run game's adversary reads the
canaries' scores from):

* ``model`` — the fine-tuned model itself (the canary scores of :mod:`dpaudit.attacks._llm`
  read from it, the pre-trained model as the reference);
* ``synthetic-text`` — only synthetic text sampled from the fine-tuned model is released. The
  auditor fine-tunes an **auxiliary model** on that text and reads the same canary scores
  from it: the synthetic-data audit of Mitchell, Andrew, Ganesh, McMahan & Kairouz 2026
  ("Advancing the State-of-the-Art in Empirical Privacy Auditing", arXiv:2606.10481).

**Sampling** (:func:`sample_synthetic_text`): ``count`` sequences of ``length`` tokens, each
BOS followed by ancestral sampling at temperature τ from the fine-tuned model over its
**whole** vocabulary — the new vocabulary entries of new-token canaries included, special
tokens included (no sequence is stopped early; a sampled end-of-text token is one more
token). Unconditional: every sequence starts from BOS alone, as every fine-tuning text and
canary does, so nothing about the canaries is given to the sampler (prompts drawn from the
training texts would be a function of the private data). The torch generator is seeded from
``rng``; one seed gives the same text for the same batch size and device.

**Key-value cache** (:func:`_decoder`): a model built by the system
(:func:`~dpaudit.systems.llm.new_token_lm`: ``embed``, a Hugging Face body ``base.base_model``
and ``head``) is sampled with the body's key-value cache (its ``cache`` argument, called
``past_key_values`` in older transformers, with ``use_cache=True``: the attention keys and
values of the earlier positions are kept; Pope et al. 2022, "Efficiently Scaling Transformer
Inference", arXiv:2211.05102, §2): each step feeds only the newest token, so a sequence of L
tokens costs L − 1 one-token passes instead of L(L−1)/2 recomputed positions. The logits are
those of the full forward to float rounding (tested), so the samples follow the same
distribution. Any other module ``(ids, mask) -> logits``, or a body that returns no cache,
is sampled by recomputing the whole prefix each step (``cache=False`` asks for that path).

**The auxiliary model** (:func:`train_auxiliary_model`): a fresh copy of the pre-trained
model — the base weights, the new entries' rows initialised as the system initialises them
(:func:`dpaudit.systems.llm.new_token_lm`: input rows at the base rows' mean plus small noise,
output rows at the head's mean row with a logit bias of −8), never the fine-tuned values —
fine-tuned **non-privately** on the synthetic text: the system's own training loop with
``private = False`` (the same trainable parameters, Poisson batches of expected size B, no
clipping, no noise).

**Validity** (post-processing; Dwork & Roth 2014, "The Algorithmic Foundations of
Differential Privacy", Prop. 2.1): the synthetic text is a randomised function of the DP
model alone and the auxiliary model a randomised function of the synthetic text alone (its
seeds independent of the canaries' inclusions), so for any fixed rest of the data the map
from the canaries to the auxiliary model is as DP as the fine-tuning. The one-run games of
Steinke, Nasr & Jagielski 2023 (arXiv:2305.08846) and Mahloujifar, Melis & Chaudhuri 2024
(arXiv:2410.22235) need only that and the independent inclusions, so their bound from the
auxiliary model's scores is a valid lower bound for the release of the synthetic text,
tested against the DP model's claim (releasing less cannot cost more ε).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence
from dpaudit._typing import RngLike
from dpaudit._validate import check_choice, check_positive, check_positive_int
from dpaudit.errors import require
from dpaudit.systems.llm import (
    OPTIMIZERS,
    CausalLM,
    DPFineTuning,
    FineTunedLM,
    FineTuningCell,
    model_device,
)

__all__ = [
    "LLM_THREAT_MODELS",
    "AuditedLM",
    "LLMThreatModel",
    "SyntheticTextOptions",
    "SyntheticTextRun",
    "sample_synthetic_text",
    "synthetic_text_release",
    "train_auxiliary_model",
]

#: The most synthetic sequences one audit samples.
MAX_SYNTHETIC_SAMPLES = 1_000_000
_SOURCE = "Mitchell, Andrew, Ganesh, McMahan & Kairouz 2026, arXiv:2606.10481"


@dataclasses.dataclass(frozen=True)
class SyntheticTextOptions:
    """How the synthetic text is sampled and the auxiliary model trained.

    Attributes:
        samples: N synthetic sequences.
        length: tokens per sequence (BOS included; ≥ 2).
        temperature: τ > 0 of the ancestral sampling (1: the model's own distribution).
        steps: the auxiliary model's training steps.
        batch_size: its expected batch size B (Poisson, q = B / N; B ≤ N).
        learning_rate: its learning rate.
        optimizer: ``"adam"`` or ``"sgd"``.
        sample_batch: sequences sampled together.

    Raises:
        ValueError: any of them out of range (the message names it).

    Example:
        >>> SyntheticTextOptions(samples=100, batch_size=20).batch_size
        20
    """

    samples: int = 500
    length: int = 16
    temperature: float = 1.0
    steps: int = 100
    batch_size: int = 50
    learning_rate: float = 0.01
    optimizer: str = "adam"
    sample_batch: int = 64

    def __post_init__(self) -> None:
        n = check_positive_int("samples", self.samples, maximum=MAX_SYNTHETIC_SAMPLES)
        if check_positive_int("length", self.length) < 2:
            raise ValueError(f"length must be at least 2 tokens (BOS and one), got {self.length}")
        check_positive("temperature", self.temperature)
        check_positive_int("steps", self.steps)
        if check_positive_int("batch_size", self.batch_size) > n:
            raise ValueError(f"batch_size={self.batch_size} exceeds samples={n} (q = B/N ≤ 1)")
        check_positive("learning_rate", self.learning_rate)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_positive_int("sample_batch", self.sample_batch)


@dataclasses.dataclass(frozen=True)
class SyntheticTextRun(ResultMixin):
    """What the synthetic-text release did (descriptive).

    Attributes:
        samples: N synthetic sequences; ``length`` tokens each (BOS included).
        length: tokens per sequence.
        temperature: τ.
        new_token_rate: fraction of the sampled tokens that are new vocabulary entries.
        auxiliary_trainable_parameters: parameters the auxiliary model trained.
        sampling_seconds: wall seconds of the sampling; ``auxiliary_seconds``: of the
            auxiliary model's training.
        auxiliary_seconds: the auxiliary training's wall seconds.
    """

    samples: int
    length: int
    temperature: float
    new_token_rate: float
    auxiliary_trainable_parameters: int
    sampling_seconds: float
    auxiliary_seconds: float


@dataclasses.dataclass(frozen=True, eq=False)
class AuditedLM:
    """The model the canary scores are read from under one threat model.

    Attributes:
        threat_model: the :data:`LLM_THREAT_MODELS` name.
        model: a module ``(ids, mask) -> logits`` (the fine-tuned or the auxiliary model).
        reference: the same module before its fine-tuning (the loss ratio's reference).
        synthetic: the synthetic text ``(ids (N, L), lengths (N,))`` (None: ``model``).
        run: what the release did (None: ``model``).
    """

    threat_model: str
    model: Any
    reference: Any
    synthetic: tuple[np.ndarray, np.ndarray] | None = None
    run: SyntheticTextRun | None = None


@dataclasses.dataclass(frozen=True)
class LLMThreatModel:
    """One release after DP fine-tuning.

    Attributes:
        name: registry name.
        title: one line.
        source: where the audit comes from.
        observe: ``observe(run, cell, options, rng) -> AuditedLM`` — ``run`` the DP run's
            :class:`~dpaudit.systems.llm.FineTunedLM`, ``cell`` its
            :class:`~dpaudit.systems.llm.FineTuningCell`, ``options`` the
            :class:`SyntheticTextOptions`.
        label: appended to an audit entry's adversary (empty for the model itself).
    """

    name: str
    title: str
    source: str
    observe: Callable[..., AuditedLM]
    label: str = ""


def _observe_model(run: FineTunedLM, cell: Any, options: Any, rng: RngLike) -> AuditedLM:
    return AuditedLM("model", run.model, run.reference)


def sample_synthetic_text(
    model: Any,
    lm: CausalLM,
    count: int,
    *,
    length: int = 16,
    temperature: float = 1.0,
    batch_size: int = 64,
    rng: RngLike = None,
    cache: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` sequences sampled from ``model`` after BOS (module docstring; Mitchell et al.
    2026, arXiv:2606.10481): ancestral sampling at ``temperature`` over all
    ``lm.vocab_size`` ids, the new vocabulary entries included.

    Args:
        model: a module ``(ids, mask) -> logits`` over ``lm.vocab_size`` ids (a fine-tuning
            run's model), on any device.
        lm: the :class:`~dpaudit.systems.llm.CausalLM` it was fine-tuned as (BOS, the
            vocabulary, the context).
        count: N ≥ 1 sequences.
        length: tokens per sequence, BOS included, in [2, context].
        temperature: τ > 0.
        batch_size: sequences sampled together.
        rng: seed (keyword-only).
        cache: use the model's key-value cache where it has one (module docstring; the
            same distribution, the logits equal to float rounding); False recomputes every
            prefix.

    Returns:
        ``(ids (N, length), lengths (N,))``, as :func:`~dpaudit.systems.llm.encode_texts`.

    Raises:
        TypeError: ``lm`` is not a CausalLM; ``cache`` not a bool.
        ValueError: an argument out of range (named), or logits over a different vocabulary.
    """
    if not isinstance(lm, CausalLM):
        raise TypeError(f"lm must be a CausalLM, got {type(lm).__name__}")
    n = check_positive_int("count", count, maximum=MAX_SYNTHETIC_SAMPLES)
    L = check_positive_int("length", length)
    if L < 2 or lm.context < L:
        raise ValueError(f"length must be in [2, {lm.context}] (the context), got {length}")
    tau = check_positive("temperature", temperature)
    b = check_positive_int("batch_size", batch_size)
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be a bool, got {cache!r}")
    torch = require("torch", "torch")
    device = model_device(model)
    seed = int(as_seed_sequence(rng).generate_state(1, dtype=np.uint64)[0] % 2**63)
    gen = torch.Generator(device=device).manual_seed(seed)
    step = _decoder(model) if cache else None
    out = []
    with torch.no_grad():
        for start in range(0, n, b):
            x = torch.full((min(b, n - start), 1), lm.bos_id, dtype=torch.long, device=device)
            past = None
            for _ in range(L - 1):
                if step is None:
                    logits = model(x, torch.ones_like(x))[:, -1]
                else:
                    logits, past = step(x, past)
                if logits.shape[-1] != lm.vocab_size:
                    raise ValueError(f"model predicts {logits.shape[-1]} ids, lm has "
                                     f"{lm.vocab_size} (new entries included)")  # fmt: skip
                probs = torch.softmax(logits.double() / tau, dim=-1)
                x = torch.cat([x, torch.multinomial(probs, 1, generator=gen)], dim=1)
            out.append(x.cpu().numpy())
    return np.concatenate(out).astype(np.int64), np.full(n, L, dtype=np.int64)


def _decoder(model: Any) -> Callable[[Any, Any], tuple[Any, Any]] | None:
    """``step(x, past) -> (last logits, cache)`` of a :func:`~dpaudit.systems.llm.new_token_lm`
    module through its body's key-value cache (module docstring; Pope et al. 2022,
    arXiv:2211.05102): the newest token of the prefix ``x`` (b, t) fed with the cache
    ``past`` of the earlier ones, or the whole prefix when there is none (the first step, or
    a body that returns no cache). None for a module without ``embed``, ``head`` and a
    Hugging Face body that takes ``inputs_embeds``, ``use_cache`` and ``cache`` (or
    ``past_key_values``)."""
    import inspect

    embed, head = getattr(model, "embed", None), getattr(model, "head", None)
    body = getattr(getattr(model, "base", None), "base_model", None)
    if not (callable(embed) and callable(head) and callable(body)):
        return None
    params = inspect.signature(body.forward).parameters
    # the cache argument is ``cache`` in recent transformers, ``past_key_values`` in older ones
    name = next((k for k in ("cache", "past_key_values") if k in params), None)
    if name is None or not {"inputs_embeds", "use_cache"} <= params.keys():
        return None

    def step(x: Any, past: Any) -> tuple[Any, Any]:
        feed = x if past is None else x[:, -1:]
        out = body(inputs_embeds=embed(feed), use_cache=True, **{name: past})
        kept = getattr(out, "cache", None)
        kept = getattr(out, "past_key_values", None) if kept is None else kept
        return head(out.last_hidden_state[:, -1]), kept

    return step


def train_auxiliary_model(
    lm: CausalLM,
    synthetic: tuple[np.ndarray, np.ndarray],
    cell: FineTuningCell,
    *,
    rng: RngLike = None,
) -> FineTunedLM:
    """The auxiliary model of Mitchell et al. 2026 (arXiv:2606.10481): a fresh copy of the
    pre-trained ``lm`` (its new entries initialised as the system does, not the fine-tuned
    values) fine-tuned non-privately on ``synthetic``.

    Args:
        lm: the pre-trained model with the run's new vocabulary entries (a run's ``.lm``).
        synthetic: ``(ids (N, L), lengths (N,))`` (:func:`sample_synthetic_text`).
        cell: the training settings (trainable parameters, steps, B, optimizer, learning
            rate, device); used with ``private = False``, the correct variant and
            ``dataset_size = N``.
        rng: seeds the new rows, the adapters and the batches (keyword-only).

    Returns:
        The run (:class:`~dpaudit.systems.llm.FineTunedLM`): ``model`` the auxiliary model,
        ``reference`` its starting point.

    Raises:
        TypeError, ValueError: as :meth:`dpaudit.systems.DPFineTuning.check_inputs`, and a
            batch larger than N, before any training.
    """
    if not isinstance(cell, FineTuningCell):
        raise TypeError(f"cell must be a FineTuningCell, got {type(cell).__name__}")
    ids = np.asarray(synthetic[0]) if isinstance(synthetic, tuple) else None
    if ids is None or ids.ndim != 2:
        raise ValueError("synthetic must be (ids (N, L), lengths (N,))")
    aux = dataclasses.replace(cell, private=False, variant="correct", noise_multiplier=None,
                              dataset_size=max(ids.shape[0], 1))  # fmt: skip
    return DPFineTuning(aux).train(lm, synthetic, None, None, rng=rng)


def synthetic_text_release(
    run: FineTunedLM,
    cell: FineTuningCell,
    options: SyntheticTextOptions,
    rng: RngLike = None,
) -> AuditedLM:
    """The ``synthetic-text`` threat model (Mitchell et al. 2026, arXiv:2606.10481): N
    sequences sampled from the DP run's model, an auxiliary model fine-tuned on them from
    the pre-trained model, returned with its reference for the canary scores.

    Args:
        run: the DP fine-tuning run.
        cell: its cell (the auxiliary model trains the same parameters on the same device).
        options: :class:`SyntheticTextOptions`.
        rng: seeds the sampling and the auxiliary training (independent of the canaries).

    Raises:
        TypeError: ``options`` is not SyntheticTextOptions.
        ValueError: the sequences longer than the model's context.
    """
    if not isinstance(options, SyntheticTextOptions):
        raise TypeError(f"options must be SyntheticTextOptions, got {type(options).__name__}")
    o = options
    s_sample, s_aux = as_seed_sequence(rng).spawn(2)
    t0 = time.perf_counter()
    synthetic = sample_synthetic_text(run.model, run.lm, o.samples, length=o.length,
                                      temperature=o.temperature, batch_size=o.sample_batch,
                                      rng=s_sample)  # fmt: skip
    t1 = time.perf_counter()
    aux_cell = dataclasses.replace(cell, steps=o.steps, batch_size=o.batch_size,
                                   learning_rate=o.learning_rate, optimizer=o.optimizer,
                                   dataset_size=o.samples)  # fmt: skip
    aux = train_auxiliary_model(run.lm, synthetic, aux_cell, rng=s_aux)
    rate = float(np.mean(synthetic[0][:, 1:] >= run.lm.base_vocab))
    summary = SyntheticTextRun(
        o.samples, o.length, o.temperature, rate, aux.trainable_parameters, t1 - t0,
        aux.seconds["training"],
    )  # fmt: skip
    return AuditedLM("synthetic-text", aux.model, aux.reference, synthetic, summary)


LLM_THREAT_MODELS: Registry[LLMThreatModel] = Registry("LLM release threat model")
LLM_THREAT_MODELS.register("model", LLMThreatModel(
    "model", "the fine-tuned model is released (scores read from it)",
    "Panda et al. 2025, arXiv:2503.06808", _observe_model))  # fmt: skip
LLM_THREAT_MODELS.register("synthetic-text", LLMThreatModel(
    "synthetic-text", "only synthetic text sampled from it is released (scores read from an "
    "auxiliary model fine-tuned on that text)", _SOURCE, synthetic_text_release,
    ", synthetic text -> auxiliary model"))  # fmt: skip
