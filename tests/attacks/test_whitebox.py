"""White-box canary-gradient scores: the subsampled-Gaussian log-likelihood ratio against an
independent density computation, the simulated observation model, and the score comparison."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks import canary_gradient_scores, simulate_canary_gradients
from dpaudit.bounds import one_run_bounds


def _llr_reference(y, q, sigma):
    """log[(1 − q) φ((y − 1)/σ) … ]: the mixture density over the null density, by scipy."""
    mix = np.logaddexp(
        np.log1p(-q) + stats.norm.logpdf(y, 0.0, sigma),
        np.log(q) + stats.norm.logpdf(y, 1.0, sigma),
    )
    return (mix - stats.norm.logpdf(y, 0.0, sigma)).sum(axis=1)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 0.6), (0.3, 1.5), (0.9, 0.2)])
def test_llr_matches_the_density_ratio(q, sigma):
    y = np.random.default_rng(1).normal(0.3, 2.0, size=(5, 40))
    got = canary_gradient_scores(y, statistic="llr", sampling_rate=q, noise_multiplier=sigma)
    np.testing.assert_allclose(got, _llr_reference(y, q, sigma), rtol=1e-12, atol=1e-9)


def test_llr_without_subsampling_is_the_gaussian_ratio_and_inner_is_the_sum():
    y = np.array([[0.2, -1.0, 3.0], [0.0, 0.5, 1.0]])
    got = canary_gradient_scores(y, statistic="llr", sampling_rate=1.0, noise_multiplier=0.5)
    np.testing.assert_allclose(got, ((y - 0.5) / 0.25).sum(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(canary_gradient_scores(y, statistic="inner"), y.sum(axis=1))
    # huge observations do not overflow
    big = canary_gradient_scores(
        np.full((1, 2), 1e6), statistic="llr", sampling_rate=0.01, noise_multiplier=0.1
    )
    assert np.isfinite(big).all()


def test_simulation_follows_the_model():
    y, inc = simulate_canary_gradients(4000, 50, sampling_rate=0.2, noise_multiplier=1e-9, rng=3)
    again, inc2 = simulate_canary_gradients(4000, 50, sampling_rate=0.2, noise_multiplier=1e-9,
                                            rng=3)  # fmt: skip
    np.testing.assert_array_equal(y, again)
    np.testing.assert_array_equal(inc, inc2)
    sampled = np.rint(y).astype(int)
    assert set(np.unique(sampled)) <= {0, 1} and not sampled[~inc].any()
    hits = int(sampled[inc].sum())
    trials = int(inc.sum()) * 50
    assert stats.binomtest(hits, trials, 0.2).pvalue > 1e-3
    assert stats.binomtest(int(inc.sum()), 4000, 0.5).pvalue > 1e-3


def test_llr_keeps_the_signal_the_inner_product_loses():
    """Small q, many steps: the per-step log-likelihood ratio gives a far larger valid bound."""
    q, steps, sigma = 0.005, 1000, 0.65  # the regime of DP-SGD: rare sampling, many steps
    y, inc = simulate_canary_gradients(4000, steps, sampling_rate=q, noise_multiplier=sigma, rng=0)
    llr = canary_gradient_scores(y, statistic="llr", sampling_rate=q, noise_multiplier=sigma)
    inner = canary_gradient_scores(y, statistic="inner")
    a = one_run_bounds(llr, inc, delta=1e-5, rng=0).max_valid
    b = one_run_bounds(inner, inc, delta=1e-5, rng=0).max_valid
    assert a > 3 * b and a > 0.6, (a, b)  # measured: 0.82 against 0.19


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"statistic": "mean"}, ValueError, "statistic"),
        ({"statistic": "llr"}, ValueError, "sampling_rate and noise_multiplier"),
        ({"sampling_rate": 0.0, "noise_multiplier": 1.0}, ValueError, "sampling_rate"),
        ({"sampling_rate": 1.5, "noise_multiplier": 1.0}, ValueError, "sampling_rate"),
        ({"sampling_rate": 0.1, "noise_multiplier": -1.0}, ValueError, "noise_multiplier"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        canary_gradient_scores(np.zeros((3, 4)), **kwargs)


def test_bad_shapes_and_oversized_simulations_are_refused():
    with pytest.raises(ValueError, match="observations"):
        canary_gradient_scores(np.zeros(4), statistic="inner")
    with pytest.raises(ValueError, match="num_canaries"):
        simulate_canary_gradients(0, 3, sampling_rate=0.1, noise_multiplier=1.0, rng=0)
    with pytest.raises(ValueError, match="cap"):
        simulate_canary_gradients(10**6, 10**6, sampling_rate=0.1, noise_multiplier=1.0, rng=0)


def test_docstring_examples():
    from doctest_support import module_examples

    assert module_examples("dpaudit.attacks._whitebox").failed == 0


def test_the_dpsgd_setting_of_the_module_notes():
    """q = 256/60000, 1,171 steps, ε = 4 at δ = 1e-5 (RDP accountant), m = 10⁴, seed 0."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event, rdp

    q, steps, sigma = 256 / 60000, 1171, 0.6405037813353474
    acc = rdp.RdpAccountant()
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))
    acc.compose(dp_event.SelfComposedDpEvent(event, steps))
    assert acc.get_epsilon(1e-5) == pytest.approx(4.0, abs=1e-6)
    assert dp_accounting is not None
    y, inc = simulate_canary_gradients(10_000, steps, sampling_rate=q, noise_multiplier=sigma,
                                       rng=0)  # fmt: skip
    llr = canary_gradient_scores(y, statistic="llr", sampling_rate=q, noise_multiplier=sigma)
    inner = canary_gradient_scores(y, statistic="inner")
    assert round(one_run_bounds(inner, inc, delta=1e-5, rng=0).fdp.epsilon, 3) == 0.274
    assert round(one_run_bounds(llr, inc, delta=1e-5, rng=0).fdp.epsilon, 3) == 0.951


@pytest.mark.parametrize(("momentum", "dampening"), [(0.0, 0.0), (0.9, 0.0), (0.5, 0.3)])
def test_gradients_from_iterates_inverts_torch_sgd(momentum, dampening):
    """The gradients fed to torch's SGD are recovered from its iterates alone."""
    torch = pytest.importorskip("torch")
    from dpaudit.attacks import gradients_from_iterates

    g = np.random.default_rng(0)
    grads = g.normal(size=(20, 5))
    p = torch.nn.Parameter(torch.zeros(5, dtype=torch.float64))
    opt = torch.optim.SGD([p], lr=0.3, momentum=momentum, dampening=dampening)
    iterates = [p.detach().numpy().copy()]
    for row in grads:
        p.grad = torch.from_numpy(row.copy())
        opt.step()
        iterates.append(p.detach().numpy().copy())
    got = gradients_from_iterates(np.array(iterates), learning_rate=0.3, momentum=momentum,
                                  dampening=dampening)  # fmt: skip
    np.testing.assert_allclose(got, grads, rtol=0, atol=1e-9)


def test_gradients_from_iterates_refuses_what_it_cannot_invert():
    from dpaudit.attacks import gradients_from_iterates

    theta = np.zeros((3, 2))
    with pytest.raises(ValueError, match="optimizer='adam' cannot be inverted"):
        gradients_from_iterates(theta, learning_rate=0.1, optimizer="adam")
    with pytest.raises(ValueError, match="nesterov"):
        gradients_from_iterates(theta, learning_rate=0.1, momentum=0.9, nesterov=True)
    with pytest.raises(ValueError, match="at least 2 rows"):
        gradients_from_iterates(theta[:1], learning_rate=0.1)
