"""DP fine-tuning of causal language models as a system under audit.

* :mod:`._models` — :class:`CausalLM` (a tokenizer and a ``transformers`` causal LM),
  :func:`tiny_gpt` (trained from scratch, for the tests), :func:`load_smollm2`
  (SmolLM2-135M-Instruct from the shipped GGUF), :func:`with_new_tokens` (new vocabulary
  entries, Panda et al. 2025, arXiv:2503.06808) and :func:`encode_texts`.
* :mod:`._finetune` — :class:`DPFineTuning` (registered as ``"dp-fine-tuning"`` in
  :data:`dpaudit.systems.SYSTEMS`): Opacus DP-SGD on LoRA adapters or the last blocks, Poisson
  sampling, the accountant's example-level claim, and the planted bug of
  :data:`FINE_TUNING_VARIANTS`; Opacus' per-sample or ghost clipping (:data:`CLIPPING`,
  per-sample by default: the faster for LoRA); a ``device``.
* :mod:`._accounting` — the claims: :func:`fine_tuning_claim` (example-level),
  :func:`group_epsilon` (a canary repeated r times) and :func:`calibrate_noise_multiplier`.

torch, transformers, peft and opacus are imported only when a model is built or trained.
"""

from dpaudit.systems.llm._accounting import (
    calibrate_noise_multiplier,
    fine_tuning_claim,
    group_epsilon,
)
from dpaudit.systems.llm._finetune import (
    CLIPPING,
    FINE_TUNING_VARIANTS,
    OPTIMIZERS,
    TRAINABLE,
    DPFineTuning,
    FineTunedLM,
    FineTuningCell,
    FineTuningVariant,
    check_device,
    model_device,
    new_token_lm,
    resolve_fine_tuning_device,
    sequence_losses,
)
from dpaudit.systems.llm._models import (
    MAX_NEW_TOKENS,
    NEW_TOKEN_FORMAT,
    SMOLLM2_FILE,
    CausalLM,
    check_causal_lm,
    encode_texts,
    load_smollm2,
    smollm2_path,
    tiny_gpt,
    with_new_tokens,
)

__all__ = [
    "CLIPPING",
    "FINE_TUNING_VARIANTS",
    "MAX_NEW_TOKENS",
    "NEW_TOKEN_FORMAT",
    "OPTIMIZERS",
    "SMOLLM2_FILE",
    "TRAINABLE",
    "CausalLM",
    "DPFineTuning",
    "FineTunedLM",
    "FineTuningCell",
    "FineTuningVariant",
    "calibrate_noise_multiplier",
    "check_causal_lm",
    "check_device",
    "encode_texts",
    "fine_tuning_claim",
    "group_epsilon",
    "load_smollm2",
    "model_device",
    "new_token_lm",
    "resolve_fine_tuning_device",
    "sequence_losses",
    "smollm2_path",
    "tiny_gpt",
    "with_new_tokens",
]
