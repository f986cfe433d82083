"""The worst-case-initialised black-box DP-SGD audit (Annamalai & De Cristofaro 2024,
arXiv:2405.14106; ``threat_model = "worst-case-init"``): the papers' GDP estimate against a
naive re-implementation of their released code, the crafted θ₀ and target, a small audit on
real MNIST images with its valid bound below the claim, resumption from the journal, a
planted bug (less noise than claimed) refuted, and bad input refused before any training."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("torch")
pytest.importorskip("opacus")
pytest.importorskip("mlxtend")

from dpaudit.attacks import (
    blank_target,
    craft_blank_target,
    per_example_gradient_norms,
    pretrain_initial_state,
)
from dpaudit.bounds import gdp_estimate_from_scores
from dpaudit.experiments.dpsgd import (
    THREAT_MODELS,
    AuditBoundSettings,
    DataSettings,
    DPSGDAuditSettings,
    WorstCaseInitSettings,
    audit_dpsgd,
    load_pool,
)
from dpaudit.systems import DPSGD, DPSGDSettings, train_dpsgd

# Opacus warns about its insecure RNG and its backward hooks; both harmless here.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# Full-batch DP-GD (q = 1) on 99 + target MNIST images, a small MLP, a claim of ε = 0.5
# (20 + 20 runs: a valid bound reaches at most ≈ 0.8 with the threshold chosen on half).
TRAINING = DPSGDSettings(
    model="mlp", hidden=(32,), steps=10, batch_size=100, target_epsilon=0.5, delta=1e-5,
    learning_rate=0.5, momentum=0.0, accountant="rdp",
)  # fmt: skip
WORST = WorstCaseInitSettings(runs_in=20, runs_out=20, public_size=500, pretrain_epochs=2)


def _settings(**worst) -> DPSGDAuditSettings:
    return DPSGDAuditSettings(
        threat_model="worst-case-init", seed=3,
        data=DataSettings(dataset="mnist-5k", num_non_canaries=99, num_holdout=0),
        worst_case=dataclasses.replace(WORST, **worst), training=TRAINING,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pool():
    return load_pool("mnist-5k")


class LessNoise(DPSGD):
    """Trains with ``factor`` × the noise it claims (the planted bug)."""

    factor = 0.01

    def train(self, data, canaries=None, included=None, *, rng, initial_state=None, **kw):
        s = dataclasses.replace(self.training_settings,
                                noise_multiplier=self.noise_multiplier * self.factor)  # fmt: skip
        return train_dpsgd(data, None, None, s, rng=rng, nominal_size=self.dataset_size,
                           initial_state=initial_state)  # fmt: skip


class NeverTrained:
    """A system that fails the test if anything trains it or asks for its claims."""

    mechanism = None

    def train(self, *a, **k):
        raise AssertionError("trained despite bad input")

    def claims(self):
        raise AssertionError("claims computed despite bad input")


def _naive_paper_estimate(pos, neg, alpha, delta, alternative="less"):
    """The papers' released procedure, one threshold at a time with scipy's binomtest
    (``alternative="less"``: the version marked as a correction; ``"two-sided"``: the other)."""
    best = 0.0
    for t in np.unique(np.concatenate([pos, neg])):
        fp, fn = int(np.sum(neg >= t)), int(np.sum(pos < t))
        level = 1 - 2 * alpha
        _, fpr_u = stats.binomtest(fp, neg.size, alternative=alternative).proportion_ci(level)
        _, fnr_u = stats.binomtest(fn, pos.size, alternative=alternative).proportion_ci(level)
        best = max(best, stats.norm.ppf(1 - fpr_u) - stats.norm.ppf(fnr_u))
    return best


def test_paper_estimate_matches_the_released_procedure():
    g = np.random.default_rng(7)
    pos, neg = g.normal(1.5, 1.0, 60), g.normal(0.0, 1.0, 80)
    for alpha in (0.05, 0.1):
        est = gdp_estimate_from_scores(pos, neg, delta=1e-5, alpha=alpha)
        np.testing.assert_allclose(est.mu, _naive_paper_estimate(pos, neg, alpha, 1e-5),
                                   rtol=1e-10)  # fmt: skip
    assert est.num_thresholds == 140 and (est.num_positive, est.num_negative) == (60, 80)
    for alpha in (0.05, 0.1):
        one = gdp_estimate_from_scores(pos, neg, delta=1e-5, alpha=alpha)
        two = gdp_estimate_from_scores(pos, neg, delta=1e-5, alpha=alpha, interval="two-sided")
        naive = _naive_paper_estimate(pos, neg, alpha, 1e-5, alternative="two-sided")
        np.testing.assert_allclose(two.mu, naive, rtol=1e-10)
        assert two.interval == "two-sided" and two.mu < one.mu  # the more conservative one
    # μ = 2 is ε = 10.00 at δ = 1e-5 (Dong, Roth & Su 2022, Cor. 2.13): the claim of the
    # paper's full-batch setting (σ = 5, T = 100).
    sep = gdp_estimate_from_scores(np.full(100, 1.0), np.zeros(100), delta=1e-5)
    np.testing.assert_allclose(sep.mu, 2 * stats.norm.ppf(0.1 ** (1 / 100)), rtol=1e-9)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"delta": 0.0}, "delta"), ({"delta": 1e-5, "alpha": 0.5}, "alpha"),
    ({"delta": 1e-5, "interval": "both"}, "interval"),
])  # fmt: skip
def test_paper_estimate_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gdp_estimate_from_scores([1.0], [0.0], **kwargs)
    with pytest.raises(ValueError, match="positive_scores"):
        gdp_estimate_from_scores([], [0.0], delta=1e-5)


def test_pretraining_shrinks_the_records_gradients(pool):
    public, members = pool.subset(np.arange(500)), pool.subset(np.arange(500, 600))
    fresh = pretrain_initial_state(public, "mlp", epochs=0, hidden=(32,), rng=0)
    crafted = pretrain_initial_state(public, "mlp", epochs=3, hidden=(32,), rng=0)
    before = np.median(per_example_gradient_norms(fresh, members))
    after = np.median(per_example_gradient_norms(crafted, members))
    assert crafted.public_accuracy > 0.9 and after < 0.5 * before
    target = craft_blank_target(crafted)
    assert float(np.abs(target.X).max()) == 0.0 and target.num_classes == 10
    assert int(craft_blank_target(crafted, label=9).y[0]) == 9
    with pytest.raises(ValueError, match="label"):
        blank_target((784,), label=10)


def test_threat_model_is_a_registry_entry():
    tm = THREAT_MODELS.get("worst-case-init")
    assert "final model" in tm.sees and "initial parameters" in tm.may_change
    assert tm.nominal_size(_settings()) == 100  # |D| = r + 1 fixes q = batch_size / |D| = 1


def test_small_audit_valid_bound_below_claim_and_resumes(pool, tmp_path):
    s = _settings()
    res = audit_dpsgd(s, data=pool, checkpoint=tmp_path)
    cp, paper = res.entries
    d = res.detail
    assert cp.adversary == "worst-case-init:cp" and cp.lower_bound.epsilon_is_valid
    assert paper.adversary == "worst-case-init:paper-gdp"
    assert not paper.lower_bound.epsilon_is_valid and "NOT a valid" in paper.lower_bound.note
    assert d.mechanism.sampling_rate == 1.0 and d.computed_runs == 40
    claim = cp.claim.epsilon
    assert 0.45 < claim <= 0.5 and cp.lower_bound.epsilon <= claim
    np.testing.assert_allclose(
        [cp.lower_bound.epsilon, paper.lower_bound.epsilon], [0.0, 0.0], atol=1e-12
    )
    again = audit_dpsgd(s, data=pool, checkpoint=tmp_path)
    assert again.detail.computed_runs == 0
    np.testing.assert_array_equal(again.detail.in_scores, d.in_scores)


def test_less_noise_than_claimed_is_refuted(pool):
    s = _settings()
    system = LessNoise(TRAINING, 100)
    res = audit_dpsgd(s, data=pool, system=system)
    cp, paper = res.entries
    assert cp.lower_bound.epsilon > cp.claim.epsilon  # valid at 95 %: the claim is refuted
    assert paper.lower_bound.epsilon > cp.claim.epsilon
    # 9 of 10 held-out runs with the target above the threshold chosen on the other half, none
    # of the 10 without: ε ≥ 0.587 against a claim of 0.497.
    v = res.detail.valid
    assert (v.tp, v.fn, v.fp, v.tn) == (9, 1, 0, 10)
    np.testing.assert_allclose(cp.lower_bound.epsilon, 0.58721, rtol=1e-4)


@pytest.mark.parametrize(("change", "match"), [
    ({"worst_case": {"public_size": 5000}}, "public_size"),
    ({"worst_case": {"target_label": 10}}, "target_label"),
    ({"data": {"dataset": "digits"}, "training": {"model": "cnn-tanh"}}, "14×14"),
    ({"training": {"batch_size": 101}}, "batch_size"),
])  # fmt: skip
def test_bad_input_raises_before_training(change, match):
    s = _settings()
    for section, values in change.items():
        s = dataclasses.replace(s, **{section: dataclasses.replace(getattr(s, section), **values)})
    pool = load_pool(s.data.dataset)
    with pytest.raises(ValueError, match=match):
        audit_dpsgd(s, data=pool, system=NeverTrained())


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="runs_in"):
        WorstCaseInitSettings(runs_in=1)
    with pytest.raises(ValueError, match="public_size"):
        WorstCaseInitSettings(public_size=0, pretrain_epochs=2)
    with pytest.raises(ValueError, match="held-out"):
        dataclasses.replace(_settings(), audit=AuditBoundSettings(selection="bonferroni"))


def test_a_group_of_models_from_the_batched_trainer_equals_one_at_a_time(pool):
    """WorstCaseRun.run_group (the batched trainer, the default on CUDA) gives each model the
    score the one-run trainer gives it from the same seed: same θ₀, batches and noise, float32
    rounding apart; the default stays one model at a time on the CPU and for a subclass."""
    from dpaudit._rng import child_seed
    from dpaudit.experiments.dpsgd.worstcase import WorstCaseRun, batched_group_size

    members = pool.subset(np.arange(40))
    training = DPSGDSettings(model="cnn-tanh", steps=3, batch_size=41, noise_multiplier=0.5,
                             learning_rate=0.5, momentum=0.0, accountant="rdp")  # fmt: skip
    system = DPSGD(training, dataset_size=41)
    init = pretrain_initial_state(pool.subset(np.arange(100, 160)), "cnn-tanh", epochs=1,
                                  learning_rate=0.05, batch_size=20, rng=1)  # fmt: skip
    target = craft_blank_target(init)
    task = WorstCaseRun(system, members, target, init.state, runs_in=2, group_size=4)
    seeds = [child_seed(np.random.SeedSequence(9), i) for i in range(4)]
    one = np.array([task(i, s)[0] for i, s in enumerate(seeds)])
    grouped = np.array([v[0] for v in task.run_group([0, 1, 2, 3], seeds)])
    np.testing.assert_allclose(grouped, one, rtol=1e-5, atol=1e-5)
    assert np.ptp(one) > 1e-4  # the noise moved the models apart
    assert batched_group_size(system) is None  # CPU: one model per task
    cuda = DPSGD(dataclasses.replace(training, device="cuda"), dataset_size=41)
    assert batched_group_size(cuda) == 25
    assert batched_group_size(LessNoise(training, dataset_size=41)) is None
