"""The white-box DP-SGD audit: canary gradients in an Opacus loop (the integration) and in the
``dp-sgd`` workflow (``threat_model = "white-box"``): the same result from both, the user's
training untouched, planted bugs refuted, the honest system never, bad input refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpaudit.experiments import run_workflow  # noqa: E402
from dpaudit.experiments.dpsgd import (  # noqa: E402
    THREAT_MODELS,
    AuditBoundSettings,
    DataSettings,
    DPSGDAuditSettings,
    WhiteBoxSettings,
    audit_dpsgd,
)
from dpaudit.integrations.opacus import CanaryAuditor, estimate_noise_multiplier  # noqa: E402
from dpaudit.systems import DPSGD, DPSGDSettings, LabelledData, train_dpsgd  # noqa: E402

# Opacus warns about its insecure RNG and its backward hooks; both harmless here.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# The idealised setting of the issue: q = 0.068, T = 200, a claim of ε = 4 at δ = 1e-5 (σ is
# calibrated by Opacus' RDP accountant: 1.411), on 1,000 examples of generated data.
TRAINING = DPSGDSettings(
    model="mlp", hidden=(), steps=200, batch_size=68, noise_multiplier=None,
    target_epsilon=4.0, accountant="rdp", learning_rate=0.5, momentum=0.0,
)  # fmt: skip


def _pool(n: int = 1000, d: int = 16, seed: int = 0) -> LabelledData:
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, d)).astype(np.float32)
    return LabelledData(X, (X[:, 0] > 0).astype(np.int64), 2)


def _settings(
    m: int, seed: int = 0, points: int = 100, training=TRAINING, source: str = "auditor"
) -> DPSGDAuditSettings:
    return DPSGDAuditSettings(
        seed=seed, threat_model="white-box",
        data=DataSettings(dataset="digits", num_non_canaries=1000, num_holdout=0),
        white_box=WhiteBoxSettings(gradient_canaries=m, noise_source=source), training=training,
        audit=AuditBoundSettings(max_guess_points=points),
    )  # fmt: skip


class NoisyFactorDPSGD(DPSGD):
    """A DP-SGD that trains with ``factor`` × the noise it claims (factor < 1: a planted bug)."""

    factor = 0.5

    def train(self, data, canaries=None, included=None, *, rng, progress=None, instrument=None):
        s = dataclasses.replace(self.training_settings,
                                noise_multiplier=self.noise_multiplier * self.factor)  # fmt: skip
        return train_dpsgd(data, canaries, included, s, rng=rng, nominal_size=self.dataset_size,
                           progress=progress, instrument=instrument)  # fmt: skip


def _opacus_loop(X, y, *, sigma, epochs, batch_size, seed, audit_seed=None, m=2000,
                 source="auditor"):  # fmt: skip
    """Opacus' MNIST-example loop; the two lines marked ``# audit`` are the only additions."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(TensorDataset(torch.tensor(X), torch.tensor(y)),
                        batch_size=batch_size)  # fmt: skip
    privacy_engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = privacy_engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=sigma,
        max_grad_norm=1.0,
    )  # fmt: skip
    auditor = None
    if audit_seed is not None:
        auditor = CanaryAuditor(optimizer, loader, num_canaries=m, noise_source=source,  # audit
                                rng=audit_seed)  # fmt: skip
    criterion = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            loss = criterion(model(data), target)
            loss.backward()
            optimizer.step()
    result = None
    if auditor is not None:
        result = auditor.result(accountant=privacy_engine.accountant, delta=1e-5,  # audit
                                max_points=100)  # fmt: skip
    return model, result


def test_an_opacus_loop_plus_two_lines_gives_the_workflows_result():
    """Same q (100/1000), σ, T (3 epochs × 10 batches), m and seed: the same bounds."""
    pool = _pool()
    _, user = _opacus_loop(pool.X, pool.y, sigma=1.0, epochs=3, batch_size=100, seed=3,
                           audit_seed=7)  # fmt: skip
    training = dataclasses.replace(TRAINING, steps=30, batch_size=100, noise_multiplier=1.0,
                                   target_epsilon=None)  # fmt: skip
    ours = audit_dpsgd(_settings(2000, seed=7, training=training), data=pool)
    assert user.workflow == ours.workflow == "dp-sgd"
    assert [e.adversary for e in user.entries] == [e.adversary for e in ours.entries]
    for a, b in zip(user.entries, ours.entries, strict=True):
        assert a.lower_bound.epsilon == b.lower_bound.epsilon, a.adversary
    assert user.detail.steps == ours.detail.runs[0].steps == 30
    # the accountant's claim and the system's agree (both Opacus RDP for q, σ, T)
    assert user.entries[0].claim.epsilon == pytest.approx(ours.entries[0].claim.epsilon, 1e-6)


@pytest.mark.parametrize("source", ["auditor", "optimizer"])
def test_the_auditor_leaves_the_users_training_unchanged(source):
    pool = _pool(400)
    plain, _ = _opacus_loop(pool.X, pool.y, sigma=1.0, epochs=2, batch_size=50, seed=1)
    audited, res = _opacus_loop(pool.X, pool.y, sigma=1.0, epochs=2, batch_size=50, seed=1,
                                audit_seed=0, m=30, source=source)  # fmt: skip
    for p, q in zip(plain.parameters(), audited.parameters(), strict=True):
        assert torch.equal(p, q)
    assert res.detail.steps == 16 and res.detail.noise_multipliers_used == (1.0, 1.0)


def _halve_added_noise(optimizer):
    """A bug inside ``add_noise``: half the noise is added, ``noise_multiplier`` unchanged."""
    original = optimizer.add_noise

    def add_noise():
        original()
        for p in optimizer.params:
            summed = p.summed_grad.view_as(p)
            p.grad = summed + 0.5 * (p.grad - summed)

    optimizer.add_noise = add_noise


class HalfNoiseInsideDPSGD(DPSGD):
    """The optimizer's configured σ is right, but ``add_noise`` adds half the noise."""

    def train(self, data, canaries=None, included=None, *, rng, progress=None, instrument=None):
        def bugged(optimizer, q):
            _halve_added_noise(optimizer)
            instrument(optimizer, q)

        return train_dpsgd(data, canaries, included, self.training_settings, rng=rng,
                           nominal_size=self.dataset_size, progress=progress,
                           instrument=bugged)  # fmt: skip


def test_a_bug_inside_add_noise_is_seen_only_in_the_optimizers_own_noise():
    """With noise_source="optimizer" the canaries carry the noise actually added (read at m
    model coordinates of a 9,730-parameter MLP): refuted; the auditor's own noise at the
    configured σ cannot see this bug."""
    training = dataclasses.replace(TRAINING, hidden=(512,))
    system = HalfNoiseInsideDPSGD(training, 1000)
    seen = audit_dpsgd(_settings(9000, training=training, source="optimizer", points=200),
                       data=_pool(), system=system)  # fmt: skip
    blind = audit_dpsgd(_settings(9000, training=training, source="auditor", points=200),
                        data=_pool(), system=system)  # fmt: skip
    assert seen.entry("dp-sgd", "llr:or-fdp").gap.refutes_claim
    assert not any(e.gap.refutes_claim for e in blind.entries if e.lower_bound.epsilon_is_valid)
    lo, hi = seen.detail.runs[0].noise_multipliers
    sigma = 0.5 * seen.detail.mechanism.noise_multiplier
    assert 0.9 * sigma < lo <= hi < 1.1 * sigma


def test_half_the_noise_is_refuted_in_one_run_and_the_sigma_estimate_sees_it():
    """0.5× the claimed noise (true ε ≈ 16 at a claim of 4): one run, m = 20,000 canaries."""
    s = _settings(20000, points=200)
    res = audit_dpsgd(s, data=_pool(), system=NoisyFactorDPSGD(TRAINING, 1000))
    claim = res.entries[0].claim.epsilon
    assert claim == pytest.approx(4.0, abs=0.01)
    best = res.entry("dp-sgd", "llr:max")
    assert best.gap.refutes_claim and best.lower_bound.epsilon > 4.2
    lo, hi = res.detail.runs[0].noise_multipliers
    sigma = 0.5 * res.detail.mechanism.noise_multiplier
    assert 0.95 * sigma < lo <= hi < 1.05 * sigma  # the LLR used the noise actually added
    assert not res.entry("dp-sgd", "llr:gaussian-pair").lower_bound.epsilon_is_valid
    test = res.detail.runs[0].claim_test  # caught during the run, not only at its end
    assert test.noise_multiplier == pytest.approx(2 * sigma)
    assert test.rejects_claim and test.rejected_at_step < test.steps / 4
    assert f"rejected at step {test.rejected_at_step}" in res.note


class HonestDPSGD(NoisyFactorDPSGD):
    """The honest system, its claims computed once (the accountants take seconds)."""

    factor = 1.0

    def claims(self, orders=None, *, delta=None):
        if "_claims" not in self.__dict__:
            object.__setattr__(self, "_claims", super().claims(orders, delta=delta))
        return self._claims


@pytest.mark.slow
def test_the_honest_system_is_never_refuted_over_20_seeds():
    top, system = [], HonestDPSGD(TRAINING, 1000)
    for seed in range(20):
        res = audit_dpsgd(_settings(5000, seed=seed, points=50), data=_pool(seed=seed),
                          system=system)  # fmt: skip
        valid = [e for e in res.entries if e.lower_bound.epsilon_is_valid]
        assert not any(e.gap.refutes_claim for e in valid), seed
        assert not res.detail.runs[0].claim_test.rejects_claim, seed
        top.append(max(e.lower_bound.epsilon for e in valid))
    assert 0.5 < np.mean(top) < 3.0  # signal, well under the claim of 4


def test_the_workflow_runs_from_the_registry_and_names_its_threat_models():
    assert {"black-box", "white-box"} <= set(THREAT_MODELS.names())
    for name in THREAT_MODELS.names():
        tm = THREAT_MODELS.get(name)
        assert tm.sees and tm.may_change and tm.source
    training = dataclasses.replace(TRAINING, steps=20)
    res = run_workflow("dp-sgd", _settings(500, training=training), data=_pool())
    assert res.detail.runs[0].steps == 20 and len(res.entries) == 7


def test_sigma_estimate_is_label_free_and_close():
    g = np.random.default_rng(1)
    y = (g.random(50000) < 0.05) + 1.3 * g.standard_normal(50000)
    assert estimate_noise_multiplier(y, 0.1) == pytest.approx(1.3, rel=0.02)


def test_bad_input_is_refused_before_training():
    pool = _pool(200)
    model = torch.nn.Linear(16, 2)
    plain = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="DPOptimizer"):
        CanaryAuditor(plain, sample_rate=0.1)
    pe = PrivacyEngine()
    loader = DataLoader(TensorDataset(torch.tensor(pool.X), torch.tensor(pool.y)),
                        batch_size=20)  # fmt: skip
    _, opt, shuffled = pe.make_private(module=model, optimizer=plain, data_loader=loader,
                                       noise_multiplier=1.0, max_grad_norm=1.0,
                                       poisson_sampling=False)  # fmt: skip
    with pytest.raises(ValueError, match="Poisson"):
        CanaryAuditor(opt, shuffled)
    with pytest.raises(ValueError, match=r"canary_norm=2\.0 must equal the clipping norm"):
        CanaryAuditor(opt, sample_rate=0.1, canary_norm=2.0)
    with pytest.raises(ValueError, match="num_canaries"):
        CanaryAuditor(opt, sample_rate=0.1, num_canaries=10**8)
    with pytest.raises(ValueError, match="noise_multiplier"):
        CanaryAuditor(opt, sample_rate=0.1, noise_multiplier="claimed")
    with pytest.raises(ValueError, match="num_canaries=1000 exceeds the 34 model coordinates"):
        CanaryAuditor(opt, sample_rate=0.1, num_canaries=1000)
    auditor = CanaryAuditor(opt, sample_rate=0.1, num_canaries=20)
    with pytest.raises(ValueError, match="already has a CanaryAuditor"):
        CanaryAuditor(opt, sample_rate=0.1, num_canaries=20)
    with pytest.raises(ValueError, match="no privatised step"):
        auditor.result()
    with pytest.raises(ValueError, match="unknown threat model 'grey-box'"):
        _settings(10).__class__(threat_model="grey-box")
    with pytest.raises(ValueError, match="batch_size=68 exceeds num_non_canaries=50"):
        s = dataclasses.replace(
            _settings(10), data=DataSettings("digits", num_non_canaries=50, num_holdout=0)
        )
        audit_dpsgd(s, data=pool)


@pytest.mark.slow
def test_coverage_of_the_white_box_bounds_with_the_estimated_sigma():
    """The auditor's statistic (per-step likelihood ratio at the σ estimated from each step's
    observations, inclusions ignored) on a mechanism whose ε is exact: q = 1, T = 4, σ = 1 —
    the Gaussian mechanism composed 4 times, 2-GDP, ε = gdp_epsilon(2, 1e-5). Every valid
    bound exceeds it in at most β = 5 % of 200 seeded repetitions."""
    from dpaudit.attacks import per_step_llr, simulate_canary_gradients
    from dpaudit.bounds import one_run_bounds
    from dpaudit.conversions import gdp_epsilon

    truth = gdp_epsilon(2.0, 1e-5)
    exceed = {"or": 0, "or-fdp": 0, "max": 0}
    for seed in range(200):
        y, inc = simulate_canary_gradients(1000, 4, sampling_rate=1.0, noise_multiplier=1.0,
                                           rng=seed)  # fmt: skip
        sig = [estimate_noise_multiplier(y[:, t], 1.0) for t in range(4)]
        llr = sum(per_step_llr(y[:, t], sampling_rate=1.0, noise_multiplier=s)
                  for t, s in enumerate(sig))  # fmt: skip
        b = one_run_bounds(llr, inc, delta=1e-5, max_points=20, rng=seed)
        for name, v in (("or", b.steinke.epsilon), ("or-fdp", b.fdp.epsilon),
                        ("max", b.max_valid)):  # fmt: skip
            exceed[name] += v > truth
    assert all(n <= 10 for n in exceed.values()), exceed


def test_all_iterates_runs_are_engine_tasks_that_resume(tmp_path):
    """Nasr et al.'s multi-run audit: one canary gradient per run, runs journalled; the
    resumed audit recomputes nothing and gives the same bounds; CP valid, GDP labelled."""
    training = dataclasses.replace(TRAINING, steps=30, noise_multiplier=1.0, target_epsilon=None)
    wb = WhiteBoxSettings(runs=12, noise_source="auditor")
    s = dataclasses.replace(
        _settings(1, training=training), threat_model="all-iterates", white_box=wb
    )
    first = audit_dpsgd(s, data=_pool(), checkpoint=tmp_path)
    again = audit_dpsgd(s, data=_pool(), checkpoint=tmp_path)
    names = [e.adversary for e in first.entries]
    assert names == ["llr:clopper-pearson", "llr:gdp", "llr:or", "llr:or-fdp", "llr:max"]
    assert [e.lower_bound.epsilon for e in first.entries] == [
        e.lower_bound.epsilon for e in again.entries
    ]
    assert first.detail.num_in + first.detail.num_out == 12
    assert "Gaussian trade-off" in first.note
    assert (tmp_path / "all-iterates.tasks").exists()


def test_all_iterates_runs_on_worker_processes_give_the_same_bounds():
    """``white_box.executor``/``workers``: the runs spread over processes, bounds unchanged."""
    training = dataclasses.replace(TRAINING, steps=30, noise_multiplier=1.0, target_epsilon=None)
    results = []
    for executor, workers in (("serial", 1), ("processes", 2)):
        wb = WhiteBoxSettings(runs=12, noise_source="auditor", executor=executor, workers=workers)
        s = dataclasses.replace(
            _settings(1, training=training), threat_model="all-iterates", white_box=wb
        )
        results.append(audit_dpsgd(s, data=_pool()))
    serial, spread = ([e.lower_bound.epsilon for e in r.entries] for r in results)
    assert serial == spread


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"executor": "threads?"}, "executor"), ({"workers": 0}, "workers"),
])  # fmt: skip
def test_all_iterates_executor_settings_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WhiteBoxSettings(**kwargs)
