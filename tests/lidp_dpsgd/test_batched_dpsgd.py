"""The batched DP-SGD trainer (dpaudit.systems.dpsgd.train_dpsgd_batched) and its LiDP runs.

* equality: run r of a batched call equals the one-run Opacus trainer (same seed) to 1e-6 —
  it does: same initial weights, Poisson batches and noise tensors; only the float32 sums
  are taken in another order (≈ 1e-7 apart);
* a naive oracle (one example at a time with torch.autograd, the same noise tensors) for
  both gradient methods, the CNN included;
* the same law: KS and χ² two-sample tests on LiDP canary statistics from independent seeds;
* a run's statistics do not depend on the executor, the chunking, the workers or a resume.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from tiny_lidp import tiny_pool, tiny_settings  # noqa: E402

from dpaudit import _settings  # noqa: E402
from dpaudit.engine import SerialExecutor  # noqa: E402
from dpaudit.experiments.lidp_dpsgd import (  # noqa: E402
    BatchedDPSGDCanaryRuns,
    DPSGDCanaryRuns,
    RunPlan,
    collect_statistics,
    run_lidp_dpsgd,
)
from dpaudit.systems.dpsgd import (  # noqa: E402
    DPSGDSettings,
    LabelledData,
    train_dpsgd,
    train_dpsgd_batched,
)
from dpaudit.systems.dpsgd._batched import _run_seeds  # noqa: E402

G = np.random.default_rng(0)
DATA = LabelledData(G.normal(size=(40, 6)).astype(np.float32), G.integers(0, 3, 40), 3)
CANARIES = LabelledData(G.normal(size=(4, 6)).astype(np.float32), G.integers(0, 3, 4), 3)
INCLUDED = [np.array([1, 1, 0, 1], bool), np.zeros(4, bool), np.ones(4, bool)]
SEEDS = [5, 6, 7]


def _settings_for(hidden, momentum, batch):
    return DPSGDSettings(model="mlp", hidden=hidden, noise_multiplier=1.0, batch_size=batch,
                         steps=7, momentum=momentum, learning_rate=1.0)  # fmt: skip


# batch 1 of 44: empty Poisson batches happen (the noise-only step)
@pytest.mark.parametrize(("hidden", "momentum", "batch"), [((), 0.0, 44), ((8,), 0.5, 10),
                                                           ((8, 4), 0.0, 1)])  # fmt: skip
@pytest.mark.parametrize("method", ["ghost", "vmap"])
def test_equal_to_the_one_run_opacus_trainer_to_1e6(hidden, momentum, batch, method):
    s = _settings_for(hidden, momentum, batch)
    out = train_dpsgd_batched(DATA, [CANARIES] * 3, INCLUDED, s, rngs=SEEDS, nominal_size=44,
                              method=method)  # fmt: skip
    for r, seed in enumerate(SEEDS):
        one = train_dpsgd(DATA, CANARIES, INCLUDED[r], s, rng=seed, nominal_size=44)
        for name, w in one.state.items():
            np.testing.assert_allclose(out.state[name][r], w, rtol=0, atol=1e-6)
        np.testing.assert_allclose(out.final_loss[r], one.final_loss, rtol=1e-6)
        assert out.run(r).num_members == one.num_members


def _naive(data, settings, seed, nominal):
    """One run, one example at a time (torch.autograd), noise from the same generator."""
    batch_gen, torch_seed = _run_seeds(seed)
    torch.default_generator.manual_seed(torch_seed)
    spec_net = _spec(data, settings).build()
    gen = torch.Generator()
    gen.set_state(torch.default_generator.get_state())
    q = settings.batch_size / nominal
    X, y = torch.from_numpy(np.array(data.X)), torch.from_numpy(np.array(data.y))
    draws = batch_gen.random((settings.steps, len(data))) < q
    params = list(spec_net.parameters())
    C, sigma = settings.max_grad_norm, settings.noise_multiplier
    for t in range(settings.steps):
        total = [torch.zeros_like(p) for p in params]
        for i in np.flatnonzero(draws[t]):
            spec_net.zero_grad()
            x = _spec(data, settings).fold(X[i : i + 1])
            torch.nn.functional.cross_entropy(spec_net(x), y[i : i + 1]).backward()
            norm = torch.sqrt(sum((p.grad * p.grad).sum() for p in params))
            c = min(1.0, C / (float(norm) + 1e-6))
            total = [a + c * p.grad for a, p in zip(total, params, strict=True)]
        div = max(1, round(q * nominal)) if draws[t].any() else max(1, round(q * len(data)))
        with torch.no_grad():
            for p, s_ in zip(params, total, strict=True):
                p -= settings.learning_rate * (s_ + torch.normal(0.0, sigma * C, p.shape,
                                                                 generator=gen)) / div  # fmt: skip
    return {k: v.detach().numpy() for k, v in spec_net.state_dict().items()}


def _spec(data, settings):
    from dpaudit.systems.dpsgd import ModelSpec

    return ModelSpec.for_data(data, settings.model, settings.hidden)


_METHODS = {"mlp": ["ghost", "vmap", "book-keeping"], "cnn": ["vmap", "book-keeping"],
            "cnn-tanh": ["book-keeping"]}  # fmt: skip


@pytest.mark.parametrize(("model", "side"), [("mlp", 4), ("cnn", 4), ("cnn-tanh", 14)])
def test_equal_to_a_naive_loop_with_the_same_noise(model, side):
    g = np.random.default_rng(1)
    data = LabelledData(g.random((12, side * side)), g.integers(0, 2, 12), 2,
                        image_shape=(side, side))  # fmt: skip
    s = DPSGDSettings(model=model, hidden=(5,), noise_multiplier=0.7, batch_size=6, steps=3,
                      momentum=0.0, learning_rate=0.5)  # fmt: skip
    for method in _METHODS[model]:
        with torch.random.fork_rng(devices=[]):
            out = train_dpsgd_batched(data, [None, None], [None, None], s, rngs=[3, 4],
                                      nominal_size=12, method=method)  # fmt: skip
            for r, seed in enumerate([3, 4]):
                ref = _naive(data, s, seed, 12)
                for name, w in ref.items():
                    np.testing.assert_allclose(out.state[name][r], w, rtol=0, atol=1e-6)


def _sparse_images(n, side, seed):
    """Images that are zero but for one bright 2×2 patch: most max-pooling windows of the
    first convolution hold four equal values (its bias), the ties torch breaks by taking
    the first entry."""
    g = np.random.default_rng(seed)
    X = np.zeros((n, side, side), np.float32)
    for i in range(n):
        a, b = g.integers(0, side - 1, 2)
        X[i, a : a + 2, b : b + 2] = g.random((2, 2)) + 0.5
    return LabelledData(X.reshape(n, -1), g.integers(0, 3, n), 3, image_shape=(side, side))


def test_book_keeping_breaks_max_pool_ties_as_torch():
    """ReLU then max pooling runs as pooling then ReLU (module notes of _batched_conv): on
    images with tied windows the weights still equal the naive autograd loop's."""
    data = _sparse_images(10, 8, 0)
    s = DPSGDSettings(model="cnn", noise_multiplier=0.5, batch_size=5, steps=4, momentum=0.0,
                      learning_rate=0.5)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        out = train_dpsgd_batched(data, [None, None], [None, None], s, rngs=[1, 2],
                                  nominal_size=10, method="book-keeping")  # fmt: skip
        for r, seed in enumerate([1, 2]):
            _, torch_seed = _run_seeds(seed)
            torch.manual_seed(torch_seed)
            assert (_spec(data, s).build()[0].bias > 0).any()  # positive ties exist
            ref = _naive(data, s, seed, 10)
            for name, w in ref.items():
                np.testing.assert_allclose(out.state[name][r], w, rtol=0, atol=1e-6)


def test_cnn_book_keeping_equals_the_one_run_trainer_and_slices_do_not_matter(monkeypatch):
    """Run r of the CNN (canaries, momentum, empty batches) equals train_dpsgd with the same
    seed; one run per slice gives the same weights as all runs in one slice."""
    from dpaudit.systems.dpsgd import _batched_conv

    data = _sparse_images(16, 8, 1)
    canaries = _sparse_images(3, 8, 2)
    included = [np.array([1, 0, 1], bool), np.zeros(3, bool), np.ones(3, bool)]
    s = DPSGDSettings(model="cnn", noise_multiplier=1.0, batch_size=2, steps=6, momentum=0.5,
                      learning_rate=0.5)  # fmt: skip
    out = train_dpsgd_batched(data, [canaries] * 3, included, s, rngs=SEEDS, nominal_size=18)
    for r, seed in enumerate(SEEDS):
        one = train_dpsgd(data, canaries, included[r], s, rng=seed, nominal_size=18)
        for name, w in one.state.items():  # float32 sums in another order: a few ulps apart
            np.testing.assert_allclose(out.state[name][r], w, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(out.final_loss[r], one.final_loss, rtol=1e-5)
    monkeypatch.setattr(_batched_conv, "_CONV_FLOATS", 1)
    sliced = train_dpsgd_batched(data, [canaries] * 3, included, s, rngs=SEEDS,
                                 nominal_size=18)  # fmt: skip
    for name, w in out.state.items():
        np.testing.assert_allclose(sliced.state[name], w, rtol=0, atol=1e-6)


def test_book_keeping_refuses_layers_it_cannot_run():
    from dpaudit.systems.dpsgd._batched_conv import ConvProgram

    nn = torch.nn
    with pytest.raises(ValueError, match="layer '1': BatchNorm2d is not supported"):
        ConvProgram.of(torch, nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)), (1, 8, 8))
    with pytest.raises(ValueError, match="layer '0': method='book-keeping' needs Conv2d with "
                                         "groups=1"):  # fmt: skip
        ConvProgram.of(torch, nn.Sequential(nn.Conv2d(2, 2, 3, groups=2)), (2, 8, 8))
    with pytest.raises(ValueError, match=r"layer '1': method='book-keeping' needs Flatten\(\)"):
        ConvProgram.of(torch, nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(2)), (1, 8, 8))
    with pytest.raises(ValueError, match=r"needs an nn\.Sequential network, got Linear"):
        ConvProgram.of(torch, nn.Linear(3, 2), (3,))


def test_logits_and_validation():
    s = _settings_for((), 0.0, 20)
    out = train_dpsgd_batched(DATA, [None, None], [None, None], s, rngs=[0, 1], nominal_size=40)
    logits = out.logits([DATA.X[:3], DATA.X[:5]])
    assert [x.shape for x in logits] == [(3, 3), (5, 3)]
    np.testing.assert_allclose(logits[1], out.run(1).logits(DATA.X[:5]), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="one array per run"):
        out.logits([DATA.X])
    with pytest.raises(ValueError, match="one entry per run"):
        train_dpsgd_batched(DATA, [None], [None, None], s, rngs=[0, 1], nominal_size=40)
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        train_dpsgd_batched(DATA, [None], [None], dataclasses.replace(s, optimizer="adam"),
                            rngs=[0], nominal_size=40)  # fmt: skip
    with pytest.raises(ValueError, match="needs model='mlp'"):
        train_dpsgd_batched(DATA, [None], [None], dataclasses.replace(s, model="cnn"),
                            rngs=[0], nominal_size=40, method="ghost")  # fmt: skip
    with pytest.raises(ValueError, match="width=10 is below"):
        train_dpsgd_batched(DATA, [None], [None], s, rngs=[0], nominal_size=40, width=10)
    with pytest.raises(ValueError, match="noise_multiplier must be set"):
        bad = dataclasses.replace(s, noise_multiplier=None, target_epsilon=1.0)
        train_dpsgd_batched(DATA, [None], [None], bad, rngs=[0], nominal_size=40)
    with pytest.raises(ValueError, match="included was given"):
        train_dpsgd_batched(DATA, [None], [INCLUDED[0]], s, rngs=[0], nominal_size=40)


# ------------------------------------------------------------------------------- LiDP runs


def _runs(group_size=8):
    pool = tiny_pool()
    train = pool.subset(np.arange(32))
    s = DPSGDSettings(model="mlp", hidden=(), noise_multiplier=1.0, batch_size=36, steps=6,
                      learning_rate=2.0, momentum=0.0)  # fmt: skip
    per = DPSGDCanaryRuns(train, None, "signs", "margin", s, 36)
    return per, BatchedDPSGDCanaryRuns(train, None, "signs", "margin", s, 36, group_size)


def test_lidp_statistics_have_the_same_law():
    """Two-sample KS (statistics of alternative and of null runs, pooled over canaries) and
    χ² (counts above fixed quantiles) between the per-run and the batched trainer, from
    independent seeds; and the same seeds give the same statistics to float32 rounding."""
    per, bat = _runs(group_size=40)
    plan = RunPlan((4,), 1, 40, 40)
    a, _ = collect_statistics(per, plan, rng=1)
    b, _ = collect_statistics(bat, plan, rng=2)
    same, _ = collect_statistics(bat, plan, rng=1)
    for key in a.stats:
        x, y = a.stats[key].ravel(), b.stats[key].ravel()
        assert stats.ks_2samp(x, y).pvalue > 0.01, key
        edges = np.quantile(np.concatenate([x, y]), [0.25, 0.5, 0.75])
        table = np.array([np.bincount(np.searchsorted(edges, v), minlength=4) for v in (x, y)])
        assert stats.chi2_contingency(table).pvalue > 0.01, key
        np.testing.assert_allclose(same.stats[key], a.stats[key], rtol=1e-5, atol=1e-5)


class _StopAfter:
    """Serial executor interrupted after ``after`` chunks."""

    name, workers = "stop-after", 1

    def __init__(self, after):
        self.after = after

    def map(self, fn, tasks):
        for i, item in enumerate(SerialExecutor().map(fn, tasks)):
            if i == self.after:
                raise KeyboardInterrupt
            yield item


def test_batched_statistics_do_not_depend_on_chunks_executor_or_resume(tmp_path):
    """Groups of 4 runs straddle the blocks of k; processes × 2 with the cost model's
    chunks; a run interrupted after 3 groups and resumed: bit-identical statistics."""
    _, bat = _runs(group_size=4)
    plan = RunPlan((2, 3), 1, 5, 3)  # 32 runs
    ref = collect_statistics(bat, plan, rng=9, executor=SerialExecutor())[0].stats
    ck = tmp_path / "runs.tasks"
    with pytest.raises(KeyboardInterrupt):
        collect_statistics(bat, plan, rng=9, executor=_StopAfter(3), checkpoint=ck)
    resumed, out = collect_statistics(bat, plan, rng=9, checkpoint=ck)
    assert out.resumed_tasks == 12
    per, _ = _runs(group_size=4)
    with pytest.raises(ValueError, match=r"another run|belongs to"):
        collect_statistics(per, plan, rng=9, checkpoint=ck)  # the other trainer's journal
    got = collect_statistics(bat, plan, rng=9, executor="processes", workers=2)[0].stats
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key])
        np.testing.assert_array_equal(resumed.stats[key], ref[key])


def test_workflow_with_the_batched_trainer():
    s = tiny_settings(training={"trainer": "batched", "group_size": 4})
    res = run_lidp_dpsgd(s, data=tiny_pool())
    per = run_lidp_dpsgd(tiny_settings(), data=tiny_pool())
    a, b = res.detail.audit.audit(4), per.detail.audit.audit(4)
    np.testing.assert_allclose(a.alternative, b.alternative, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a.null, b.null, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="trainer"):
        tiny_settings(training={"trainer": "vectorised"})
    with pytest.raises(ValueError, match="needs optimizer='sgd'"):
        tiny_settings(training={"trainer": "batched", "optimizer": "adam"})
    assert _settings.from_mapping(type(s), _settings.to_mapping(s)).training.group_size == 4


def test_module_examples():
    from doctest_support import module_examples

    assert module_examples("dpaudit.systems.dpsgd._batched").failed == 0


def test_vmap_in_slices_of_runs_is_the_same_training(monkeypatch):
    from dpaudit.systems.dpsgd import _batched

    s = _settings_for((8,), 0.5, 10)
    whole = train_dpsgd_batched(DATA, [CANARIES] * 3, INCLUDED, s, rngs=SEEDS, nominal_size=44,
                                method="vmap")  # fmt: skip
    monkeypatch.setattr(_batched, "_VMAP_FLOATS", 1)  # one run per slice
    sliced = train_dpsgd_batched(DATA, [CANARIES] * 3, INCLUDED, s, rngs=SEEDS, nominal_size=44,
                                 method="vmap")  # fmt: skip
    for name, w in whole.state.items():
        np.testing.assert_allclose(sliced.state[name], w, rtol=0, atol=1e-6)
    np.testing.assert_allclose(sliced.final_loss, whole.final_loss, rtol=1e-6)


@pytest.mark.parametrize("first_bias", [True, False])
def test_book_keeping_clipped_sums_equal_the_one_run_book_keeping_on_other_layers(first_bias):
    """Strides, dilations, rectangular padding, several input channels, average pooling,
    tanh, no bias (first layer with and without: its weight and bias gradients come from one
    product with a row of ones): each run's clipped sum and losses equal the one-run
    book-keeping's (dpaudit.systems.dpsgd._bookkeeping) on its included examples, at the
    first step and at the next with new weights (cached unfolded input, kept buffers)."""
    from dpaudit.systems.dpsgd._batched_conv import ConvProgram, conv_clipped_sum
    from dpaudit.systems.dpsgd._bookkeeping import BookKeeping

    nn = torch.nn
    torch.manual_seed(0)

    def net():
        return nn.Sequential(
            nn.Conv2d(3, 4, 3, stride=2, padding=(1, 2), bias=first_bias), nn.Tanh(),
            nn.Conv2d(4, 5, 3, dilation=2, padding=1, bias=False), nn.ReLU(),
            nn.AvgPool2d(2), nn.Flatten(), nn.Linear(5 * 1 * 2, 3),
        )  # fmt: skip

    X = torch.rand(3, 7, 3 * 9 * 10)
    y = torch.randint(0, 3, (3, 7))
    w = (torch.rand(3, 7) < 0.6).float()
    cache: dict = {}
    for _ in range(2):  # a second step: new weights, the same cache
        nets = [net() for _ in range(3)]
        params = {k: torch.stack([dict(n.named_parameters())[k].detach() for n in nets])
                  for k, _ in nets[0].named_parameters()}  # fmt: skip
        program = ConvProgram.of(torch, nets[0], (3, 9, 10))
        sums, losses = conv_clipped_sum(torch, program, params, X, y, w, 0.3, cache=cache)
        for r, n in enumerate(nets):
            keep = w[r].bool()
            ref, ref_losses, _ = BookKeeping(n, 0.3).clipped_sum(
                X[r][keep].reshape(-1, 3, 9, 10), y[r][keep])  # fmt: skip
            assert set(sums) == {name for name, _ in n.named_parameters()}
            for name, p in n.named_parameters():
                torch.testing.assert_close(sums[name][r], ref[p], rtol=0, atol=1e-6)
            torch.testing.assert_close(losses[r][keep], ref_losses, rtol=0, atol=1e-6)


def test_per_example_products_through_numpy_equal_torch_bmm():
    """_bmm (numpy's matmul on the tensors' memory, on the CPU) equals torch.bmm on transposed
    views and into a kept buffer, to float32 rounding; a tensor needing gradients goes
    through torch."""
    from dpaudit.systems.dpsgd._batched_conv import _bmm

    g = torch.Generator().manual_seed(0)
    a = torch.randn(5, 7, 3, generator=g)  # read transposed: (5, 3, 7)
    b = torch.randn(5, 7, 4, generator=g)
    out = torch.full((5, 3, 4), float("nan"))
    got = _bmm(torch, a.transpose(1, 2), b, out=out)
    assert got is out
    torch.testing.assert_close(out, torch.bmm(a.transpose(1, 2), b), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(_bmm(torch, b.transpose(1, 2), a), torch.bmm(b.transpose(1, 2), a),
                               rtol=1e-6, atol=1e-6)  # fmt: skip
    w = b.clone().requires_grad_(True)
    assert _bmm(torch, a.transpose(1, 2), w).requires_grad
