"""Audit DP fine-tuning of language models (``dpaudit audit llm-fine-tuning``).

* :mod:`.settings` — :class:`LLMFineTuningSettings` (model, data, DP fine-tuning, canaries,
  bounds).
* :mod:`.pipeline` — :func:`audit_llm_fine_tuning`: one fine-tuning run with the canaries
  of every kind (or one run per kind), each kind its own one-run game; per (kind, score) a
  valid one-run bound beside the accountant's claim, TPR at low FPR, AUC and greedy
  extraction of the secrets (Panda et al. 2025, arXiv:2503.06808); per threat model the
  fine-tuned model or, for synthetic text sampled from it, an auxiliary model fine-tuned on
  that text (Mitchell et al. 2026, arXiv:2606.10481).
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.llm_fine_tuning.pipeline import (
    WORKFLOW,
    LLMDetail,
    LLMReleaseDetail,
    LLMRunSummary,
    audit_llm_fine_tuning,
    load_model,
    load_texts,
)
from dpaudit.experiments.llm_fine_tuning.settings import (
    CORPORA,
    MODELS,
    LLMAuditSettings,
    LLMCanarySettings,
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMModelSettings,
    LLMSyntheticSettings,
    LLMTrainingSettings,
)

__all__ = [
    "CORPORA",
    "MODELS",
    "WORKFLOW",
    "LLMAuditSettings",
    "LLMCanarySettings",
    "LLMDataSettings",
    "LLMDetail",
    "LLMFineTuningSettings",
    "LLMModelSettings",
    "LLMReleaseDetail",
    "LLMRunSummary",
    "LLMSyntheticSettings",
    "LLMTrainingSettings",
    "audit_llm_fine_tuning",
    "load_model",
    "load_texts",
]

WORKFLOWS.register(
    "llm-fine-tuning",
    Workflow(
        name="llm-fine-tuning",
        settings=LLMFineTuningSettings,
        run=audit_llm_fine_tuning,
        summary="DP fine-tuning of a causal language model (Opacus, LoRA) with random-, rare-, "
        "new-token and model-generated canaries: every kind in one run, valid one-run bounds "
        "(Steinke et al., f-DP) per score beside the accountant's claim, TPR at low FPR, AUC "
        "and greedy extraction; the release of synthetic text audited through an auxiliary "
        "model (Mitchell et al. 2026).",
        report="dpaudit.report:generic_report",
        source="Panda, Tang, Nasr, Choquette-Choo & Mittal 2025, arXiv:2503.06808",
    ),
)
