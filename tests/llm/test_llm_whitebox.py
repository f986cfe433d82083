"""White-box canary gradients in a Hugging Face / Opacus fine-tuning loop: the Opacus
integration's CanaryAuditor, with the same two added lines, on a LoRA fine-tuning of the tiny
GPT (transformers + peft + Opacus' make_private with Poisson sampling)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

from dpaudit.integrations.opacus import CanaryAuditor  # noqa: E402
from dpaudit.systems.llm import encode_texts, tiny_gpt  # noqa: E402

# Opacus warns that secure RNG is off and torch about hooks on inputs without gradients.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TEXTS = [
    "a quiet film about a loud family",
    "the plot wanders but the actors hold it together",
    "funny, sharp and far too short",
    "a dull remake of a dull original",
] * 16


def _hf_opacus_loop(noise_multiplier: float, *, steps: int = 16):
    from opacus import PrivacyEngine

    lm = tiny_gpt(TEXTS, vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                  pretrain_steps=2, rng=0)  # fmt: skip
    ids, lengths = encode_texts(lm, TEXTS, 12)
    mask = (np.arange(12)[None, :] < lengths[:, None]).astype(np.int64)
    model = lm.model.train()
    for p in model.parameters():
        p.requires_grad_(False)
    torch.manual_seed(0)
    cfg = peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])
    model = peft.inject_adapter_in_model(cfg, model)
    data = torch.utils.data.TensorDataset(torch.from_numpy(ids), torch.from_numpy(mask))
    loader = torch.utils.data.DataLoader(data, batch_size=16,
                                         generator=torch.Generator().manual_seed(0))  # fmt: skip
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=noise_multiplier, max_grad_norm=1.0, poisson_sampling=True,
        noise_generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    auditor = CanaryAuditor(optimizer, loader, num_canaries=200, rng=0)  # added line 1
    done = 0
    while done < steps:
        for x, m in loader:
            optimizer.zero_grad()
            labels = torch.where(m.bool(), x, -100)
            model(input_ids=x, attention_mask=m, labels=labels).loss.backward()
            optimizer.step()
            done += 1
            if done == steps:
                break
    return auditor.result(accountant=engine.accountant, delta=1e-5), loader  # added line 2


def test_canary_gradients_in_an_hf_opacus_lora_loop():
    result, loader = _hf_opacus_loop(1.0)
    run = result.detail
    assert run.steps == 16 and run.sampling_rate == pytest.approx(loader.sample_rate)
    assert run.noise_multipliers_used == (1.0, 1.0)
    claim = result.entries[0].claim.epsilon
    assert 0 < claim < np.inf
    assert all(not e.gap.refutes_claim for e in result.entries)
