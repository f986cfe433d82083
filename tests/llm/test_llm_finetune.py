"""DP fine-tuning of a causal LM (dpaudit.systems.llm): the claim against Opacus' accountant,
the calibration, the tiny GPT, new vocabulary entries, and every input refused before
training."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from tiny_llm import TEXTS, tiny_lm

from dpaudit.systems import SYSTEMS
from dpaudit.systems.llm import (
    DPFineTuning,
    FineTuningCell,
    calibrate_noise_multiplier,
    check_causal_lm,
    encode_texts,
    fine_tuning_claim,
    new_token_lm,
    sequence_losses,
    tiny_gpt,
    with_new_tokens,
)

_lm = tiny_lm


def _cell(**kw) -> FineTuningCell:
    base = dict(steps=3, batch_size=4, dataset_size=40, noise_multiplier=1.0,
                learning_rate=0.01)  # fmt: skip
    return FineTuningCell(**{**base, **kw})


# ------------------------------------------------------------------------------------ claim


@pytest.mark.parametrize(
    ("q", "sigma", "steps"), [(0.01, 1.0, 1000), (0.1, 2.0, 40), (0.5, 5.0, 3)]
)
def test_claim_matches_opacus_rdp_accountant(q, sigma, steps):
    """Reference: Opacus' own RDP accountant (its orders and conversion), within 3 %."""
    from opacus.accountants import RDPAccountant

    acct = RDPAccountant()
    acct.history = [(sigma, q, steps)]
    eps, curve = fine_tuning_claim(q, sigma, steps, 1e-5)
    np.testing.assert_allclose(eps, acct.get_epsilon(1e-5), rtol=0.03)
    assert curve.orders.size == curve.epsilons.size > 10


def test_calibration_is_the_smallest_sigma_meeting_the_target():
    s = calibrate_noise_multiplier(2.0, 1e-5, 0.1, 40)
    assert fine_tuning_claim(0.1, s, 40, 1e-5)[0] <= 2.0
    assert fine_tuning_claim(0.1, s / 1.001, 40, 1e-5)[0] > 2.0


def test_system_claims():
    ft = SYSTEMS.get("dp-fine-tuning")(_cell(noise_multiplier=None, target_epsilon=3.0))
    assert isinstance(ft, DPFineTuning)
    np.testing.assert_allclose(ft.claim().epsilon, 3.0, rtol=2e-3)
    assert ft.mechanism.noise_multiplier == ft.noise_multiplier
    bug = DPFineTuning(_cell(variant="noise-tenth"))
    assert bug.claim().epsilon == DPFineTuning(_cell()).claim().epsilon  # the claim is at σ
    assert DPFineTuning(_cell(private=False)).claim().epsilon == np.inf


@pytest.mark.parametrize(
    ("field", "value", "err"),
    [
        ("steps", 0, ValueError),
        ("batch_size", 50, ValueError),
        ("optimizer", "lion", ValueError),
        ("clip_norm", -1.0, ValueError),
        ("noise_multiplier", 0.0, ValueError),
        ("trainable", "all", ValueError),
        ("variant", "nope", ValueError),
        ("private", "yes", TypeError),
        ("lora_targets", (), ValueError),
    ],
)
def test_cell_refuses_bad_fields(field, value, err):
    with pytest.raises(err, match=field if field != "variant" else "variant"):
        _cell(**{field: value})


def test_system_refuses_another_settings_type():
    with pytest.raises(TypeError, match="settings"):
        DPFineTuning({"steps": 3})


# ---------------------------------------------------------------------------- models, vocab


def test_tiny_gpt_is_seeded_and_refuses_bad_sizes():
    a = tiny_gpt(TEXTS, vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                 pretrain_steps=2, rng=3)  # fmt: skip
    b = tiny_gpt(TEXTS, vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                 pretrain_steps=2, rng=3)  # fmt: skip
    ids, n = encode_texts(a, TEXTS[:4], 12)
    np.testing.assert_array_equal(ids, encode_texts(b, TEXTS[:4], 12)[0])
    ma, mb = new_token_lm(a, rng=0), new_token_lm(b, rng=0)
    np.testing.assert_allclose(sequence_losses(ma, ids, n), sequence_losses(mb, ids, n))
    with pytest.raises(ValueError, match="texts"):
        tiny_gpt(["one"], rng=0)
    with pytest.raises(ValueError, match="hidden"):
        tiny_gpt(TEXTS, hidden=10, heads=4, rng=0)
    with pytest.raises(ValueError, match="vocab_size"):
        tiny_gpt(TEXTS, vocab_size=100, rng=0)


def test_sequence_losses_match_transformers_loss():
    """Reference: the model's own shifted cross-entropy (``labels=``) per sequence."""
    import torch

    lm = _lm()
    ids, n = encode_texts(lm, TEXTS[:3], 12)
    model = new_token_lm(lm, rng=0)
    ours = sequence_losses(model, ids, n)
    for i in range(3):
        x = torch.from_numpy(ids[i : i + 1, : n[i]])
        with torch.no_grad():
            ref = float(lm.model(input_ids=x, labels=x).loss)
        np.testing.assert_allclose(ours[i], ref, rtol=1e-5)


def test_new_tokens_take_the_next_ids_and_start_unlikely():
    lm = _lm()
    lm2 = with_new_tokens(lm, 5)
    assert lm2.vocab_size == lm.base_vocab + 5 and lm.new_tokens == 0
    assert lm2.encode("<|canary_2|>") == [lm.base_vocab + 2]
    assert len(lm.tokenizer) == lm.base_vocab  # the original tokenizer is untouched
    model = new_token_lm(lm2, rng=0)
    import torch

    x = torch.tensor([[lm.bos_id, 5, 6]])
    with torch.no_grad():
        p = torch.softmax(model(x, torch.ones_like(x))[0, -1], -1)
    assert float(p[lm.base_vocab :].sum()) < 0.01


def test_a_tokenizer_without_room_for_new_tokens_is_refused():
    lm = _lm()

    class NoAdd:
        def __len__(self):
            return lm.base_vocab

    with pytest.raises(TypeError, match="no room for new tokens"):
        with_new_tokens(dataclasses.replace(lm, tokenizer=NoAdd()), 3)
    bigger = with_new_tokens(lm, 2)  # the tokenizer knows 2 ids the model cannot embed
    with pytest.raises(ValueError, match="no room for new tokens"):
        with_new_tokens(dataclasses.replace(bigger, new_tokens=0), 3)
    with pytest.raises(ValueError, match="count"):
        with_new_tokens(lm, 0)


def test_a_model_without_a_causal_lm_head_is_refused_before_training():
    lm = _lm()
    body = lm.model.base_model  # LlamaModel: no LM head
    with pytest.raises(TypeError, match="no causal LM head"):
        check_causal_lm(body)
    ex = encode_texts(lm, TEXTS[:8], 12)
    with pytest.raises(TypeError, match="no causal LM head"):
        DPFineTuning(_cell()).train(dataclasses.replace(lm, model=body), ex, rng=0)
    with pytest.raises(TypeError, match="CausalLM"):
        DPFineTuning(_cell()).train(lm.model, ex, rng=0)


def test_canaries_longer_than_the_context_are_refused_before_training():
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:8], 12)
    long_ids = np.full((2, 20), 5, dtype=np.int64)
    with pytest.raises(ValueError, match="longer than the model's context"):
        DPFineTuning(_cell()).train(lm, ex, (long_ids, np.array([20, 20])), rng=0)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        DPFineTuning(_cell()).train(lm, ex, (long_ids[:, :8] + 10**4, np.array([8, 8])), rng=0)
    with pytest.raises(ValueError, match="included"):
        DPFineTuning(_cell()).train(lm, ex, (long_ids[:, :8], np.array([8, 8])), [1], rng=0)
    with pytest.raises(ValueError, match="dataset_size"):
        DPFineTuning(_cell(dataset_size=8)).train(lm, ex, (long_ids[:, :8], [8, 8]), rng=0)


# ---------------------------------------------------------------------------------- training


def test_training_is_seeded_and_leaves_the_pretrained_model_alone():
    lm = with_new_tokens(_lm(), 4)
    ex = encode_texts(lm, TEXTS[:30], 12)
    can = (np.array([[lm.bos_id, 7, 8, lm.base_vocab + i] for i in range(4)]), np.full(4, 4))
    before = [p.detach().clone() for p in lm.model.parameters()]
    ft = DPFineTuning(_cell(steps=4, batch_size=6))
    a = ft.train(lm, ex, can, [1, 0, 1, 0], rng=5)
    b = ft.train(lm, ex, can, [1, 0, 1, 0], rng=5)
    la = sequence_losses(a.model, *can)
    np.testing.assert_allclose(la, sequence_losses(b.model, *can))
    assert not np.allclose(la, sequence_losses(a.reference, *can))
    for p, q in zip(before, lm.model.parameters(), strict=True):
        assert bool((p == q).all())
    assert a.sampled[[1, 3]].sum() == 0 and a.noise_multiplier_used == 1.0
    assert a.trainable_parameters > 0


def test_empty_poisson_batches_are_noise_only_steps():
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:30], 12)
    ft = DPFineTuning(_cell(steps=5, batch_size=1, dataset_size=1000))
    run = ft.train(lm, ex, rng=0)
    n = sequence_losses(run.model, *ex)
    assert np.all(np.isfinite(n))
    assert not np.allclose(n, sequence_losses(run.reference, *ex))  # the noise moved it


def test_last_blocks_and_non_private_training():
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:30], 12)
    run = DPFineTuning(_cell(trainable="last-blocks", last_blocks=1)).train(lm, ex, rng=0)
    assert run.trainable_parameters > 0
    with pytest.raises(ValueError, match="last_blocks"):
        DPFineTuning(_cell(trainable="last-blocks", last_blocks=5)).train(lm, ex, rng=0)
    with pytest.raises(ValueError, match="lora_targets"):
        DPFineTuning(_cell(lora_targets=("nope",))).train(lm, ex, rng=0)
    plain = DPFineTuning(_cell(private=False, steps=10, batch_size=10, learning_rate=0.05))
    run = plain.train(lm, ex, rng=0)
    assert run.noise_multiplier is None
    assert sequence_losses(run.model, *ex).mean() < sequence_losses(run.reference, *ex).mean()
