"""DP fine-tuning's clipping paths and device: Opacus' per-sample gradients (the default) and
its ghost clipping give the same clipped, noised update as a naive reference (one backward
pass per example, clipped by hand, the same noise draw), and the ``device`` setting."""

from __future__ import annotations

import copy
import dataclasses
import functools
import warnings

import numpy as np
import pytest
from tiny_llm import TEXTS, tiny_lm

from dpaudit.systems.llm import (
    CLIPPING,
    DPFineTuning,
    FineTuningCell,
    encode_texts,
    new_token_lm,
    resolve_fine_tuning_device,
    sequence_losses,
    with_new_tokens,
)

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")
pytest.importorskip("dp_accounting")

SIGMA, SEED, B = 0.05, 3, 4


@functools.lru_cache(maxsize=1)
def _lm():
    return with_new_tokens(tiny_lm(), 4)


def _batch():
    """Six sequences of different lengths (padding inside the batch), two with new tokens."""
    lm = _lm()
    ids, n = encode_texts(lm, TEXTS[:6], 12)
    n = np.array([12, 5, 9, 3, 12, 7])
    ids[0, 5] = lm.base_vocab + 1
    ids[2, 3] = lm.base_vocab + 2
    return torch.from_numpy(ids), torch.from_numpy(n)


def _cell(**kw) -> FineTuningCell:
    base = dict(steps=1, batch_size=B, dataset_size=40, noise_multiplier=SIGMA,
                optimizer="sgd", learning_rate=1.0)  # fmt: skip
    return FineTuningCell(**{**base, **kw})


def _trainable(cell: FineTuningCell):
    """The system and a trainable copy of the model (the same adapters for every call)."""
    ft = DPFineTuning(cell)
    model = new_token_lm(_lm(), rng=0)
    torch.manual_seed(0)
    ft.make_trainable(model)
    model.train()
    return ft, model


def _opacus_update(cell: FineTuningCell, x, n) -> list:
    """``p.grad`` after one DP step (clipped sum + noise, divided by B) through Opacus."""
    ft, model = _trainable(cell)
    module, opt, params = ft.prepare(model, generator=torch.Generator().manual_seed(SEED))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook", category=UserWarning)
        ft.step(module, opt, params, x, n)
    return [p.grad.detach().clone() for p in params]


def _naive_update(cell: FineTuningCell, x, n) -> list:
    """Reference: each example's gradient by its own backward pass, scaled by
    min(1, C / (‖g‖ + 1e-6)) (Opacus' clipping factor), summed, plus N(0, (σC)²) drawn from the
    same generator in the parameters' order, divided by B (Abadi et al. 2016, Alg. 1)."""
    from dpaudit.systems.llm._finetune import _per_example_loss

    _, model = _trainable(cell)
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for i in range(x.shape[0]):
        grads = torch.autograd.grad(_per_example_loss(model, x[i : i + 1], n[i : i + 1]).sum(),
                                    params)  # fmt: skip
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
        factor = min(1.0, cell.clip_norm / (float(norm) + 1e-6))
        for t, g in zip(total, grads, strict=True):
            t += factor * g
    gen = torch.Generator().manual_seed(SEED)
    std = SIGMA * cell.clip_norm
    return [(t + torch.normal(0.0, std, size=t.shape, generator=gen)) / B for t in total]


def _per_example_norms(cell: FineTuningCell, x, n) -> np.ndarray:
    from dpaudit.systems.llm._finetune import _per_example_loss

    _, model = _trainable(cell)
    params = [p for p in model.parameters() if p.requires_grad]
    out = []
    for i in range(x.shape[0]):
        loss = _per_example_loss(model, x[i : i + 1], n[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, params)
        out.append(float(torch.sqrt(sum((g**2).sum() for g in grads))))
    return np.array(out)


@pytest.mark.parametrize("trainable", ["lora", "last-blocks"])
def test_ghost_and_per_sample_updates_equal_the_naive_reference(trainable):
    """Ghost clipping's two backward passes and Opacus' per-sample gradients give the naive
    clipped, noised update (C between the examples' gradient norms, so some are clipped and
    some are not) to float tolerance, on the same batch and the same noise."""
    x, n = _batch()
    norms = _per_example_norms(_cell(trainable=trainable, last_blocks=1), x, n)
    clip = float(np.median(norms))
    assert (norms > clip).any() and (norms < clip).any()
    cell = _cell(trainable=trainable, last_blocks=1, clip_norm=clip)
    ref = _naive_update(cell, x, n)
    got = {m: _opacus_update(dataclasses.replace(cell, clipping=m), x, n) for m in CLIPPING}
    scale = max(float(r.abs().max()) for r in ref)
    for mode, grads in got.items():
        assert len(grads) == len(ref) > 0
        for g, r in zip(grads, ref, strict=True):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5 * scale,
                                       err_msg=mode)  # fmt: skip
    for g, r in zip(got["ghost"], got["per-sample"], strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-6 * scale)


def test_a_noise_only_step_is_the_same_noise_on_both_paths():
    x, n = _batch()
    empty = [_opacus_update(_cell(clipping=m), x[:0], n[:0]) for m in CLIPPING]
    gen = torch.Generator().manual_seed(SEED)
    for g, h in zip(*empty, strict=True):
        np.testing.assert_array_equal(g.numpy(), h.numpy())
        ref = torch.normal(0.0, SIGMA * 1.0, size=g.shape, generator=gen) / B
        np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-6)


def test_per_sample_is_the_default_and_training_runs_alike_on_both():
    assert FineTuningCell().clipping == "per-sample"
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:30], 12)
    runs = {m: DPFineTuning(_cell(steps=3, batch_size=6, clipping=m)).train(lm, ex, rng=1)
            for m in CLIPPING}  # fmt: skip
    la, lb = (sequence_losses(r.model, *ex) for r in runs.values())
    np.testing.assert_allclose(la, lb, rtol=1e-4)  # the same run, two ways of clipping
    with pytest.raises(ValueError, match="clipping"):
        _cell(clipping="fast")


# ------------------------------------------------------------------------------------ device


def test_device_values_are_checked_when_the_cell_is_built():
    for bad in ("gpu", "cuda:x", "", 0):
        with pytest.raises(ValueError, match="device"):
            _cell(device=bad)
    assert _cell().device == "cpu"


def test_cuda_without_a_device_is_a_clear_error_before_training():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:8], 12)
    ft = DPFineTuning(_cell(device="cuda"))
    with pytest.raises(ValueError, match="no CUDA device is available"):
        ft.check_inputs(lm, ex, None, None)
    with pytest.raises(ValueError, match="no CUDA device is available"):
        ft.train(lm, ex, rng=0)
    with pytest.raises(ValueError, match="no CUDA device"):
        resolve_fine_tuning_device("cuda:1")


def test_cpu_and_auto_train_alike_here():
    lm = _lm()
    ex = encode_texts(lm, TEXTS[:30], 12)
    auto = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_fine_tuning_device("auto") == auto
    runs = [DPFineTuning(_cell(steps=2, batch_size=6, device=d)).train(lm, ex, rng=2)
            for d in ("cpu", "auto")]  # fmt: skip
    assert runs[0].device == "cpu" and runs[1].device == auto
    if auto == "cpu":
        np.testing.assert_array_equal(sequence_losses(runs[0].model, *ex),
                                      sequence_losses(runs[1].model, *ex))  # fmt: skip


def test_the_trained_copy_is_independent_of_the_model():
    """Training on a device copies the model: the pre-trained one stays where it was."""
    lm = _lm()
    before = copy.deepcopy([p.detach() for p in lm.model.parameters()])
    DPFineTuning(_cell(device="auto")).train(lm, encode_texts(lm, TEXTS[:8], 12), rng=0)
    for p, q in zip(before, lm.model.parameters(), strict=True):
        assert q.device.type == "cpu" and bool((p == q).all())
