"""The e-process over DP-SGD steps (white-box canary gradients): half the claimed noise is
caught within the first steps of the run, the honest run never, in the idealised model of
an exact DP-SGD (:func:`dpaudit.attacks.simulate_canary_gradients`)."""

from __future__ import annotations

import numpy as np
import pytest

from doctest_support import module_examples
from dpaudit.attacks import StepClaimTest, simulate_canary_gradients

# The README's white-box setting (q = 68/1,000, σ = 1.4, 200 steps, 2,000 canaries) and
# Fashion-MNIST's (q = 256/60,000, σ = 0.6405 for ε = 4, 10,000 canaries), first steps only.
SETTINGS = [(0.068, 1.4, 2000, 60), (256 / 60000, 0.6405, 10000, 40)]


def _run(q, sigma, m, steps, factor, seed):
    y, inc = simulate_canary_gradients(m, steps, sampling_rate=q, noise_multiplier=sigma * factor,
                                       rng=seed)  # fmt: skip
    test = StepClaimTest(inc, sampling_rate=q, noise_multiplier=sigma)
    for t in range(steps):
        r = test.update(y[:, t])
    return r


@pytest.mark.parametrize(("q", "sigma", "m", "steps"), SETTINGS)
def test_half_the_noise_is_caught_within_the_first_steps(q, sigma, m, steps):
    caught = [_run(q, sigma, m, steps, 0.5, seed).rejected_at_step for seed in range(5)]
    assert all(c is not None and c <= 20 for c in caught), caught


@pytest.mark.slow
@pytest.mark.parametrize(("q", "sigma", "m", "steps"), SETTINGS)
def test_the_honest_run_is_never_rejected_over_20_seeds(q, sigma, m, steps):
    results = [_run(q, sigma, m, steps, 1.0, 100 + seed) for seed in range(20)]
    assert not any(r.rejects_claim for r in results)
    assert all(r.steps == steps and r.pairs_per_step > 0.4 * m for r in results)


def test_bad_input():
    inc = np.array([True, False, True])
    with pytest.raises(ValueError, match="included"):
        StepClaimTest([1, 0, 2], sampling_rate=0.1, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="both included and excluded"):
        StepClaimTest(np.ones(3, bool), sampling_rate=0.1, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        StepClaimTest(inc, sampling_rate=0.1, noise_multiplier=0.0)
    with pytest.raises(ValueError, match="one value per canary"):
        StepClaimTest(inc, sampling_rate=0.1, noise_multiplier=1.0).update(np.zeros(2))


def test_docstring_examples():
    result = module_examples("dpaudit.attacks._whitebox_sequential")
    assert result.attempted > 0 and result.failed == 0
