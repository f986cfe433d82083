"""Label-DP maths: posteriors, projection, RR, noising and the systems' claims (no torch).

Reference values: Malek et al. 2021 (arXiv:2106.03408) Eq. 3 and 5, App. D.1; the closed forms
are recomputed here by brute force (explicit densities, a bisection projection).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.accounting import randomized_response
from dpaudit.mechanisms import (
    ConfidentGNMax,
    GaussianLabels,
    LaplaceLabels,
    RandomizedResponse,
    check_labels,
    gaussian_label_posterior,
    label_posterior,
    laplace_label_posterior,
    noise_labels,
    project_to_simplex,
)
from dpaudit.systems.label_dp import (
    AGIBI,
    ALIBI,
    PATEFM,
    RandomizedResponseLabels,
    SoftRR,
)

O = [0.9, 0.3, -0.2]
PRIOR = [0.2, 0.5, 0.3]


def test_laplace_posterior_reference_values():
    np.testing.assert_allclose(
        laplace_label_posterior(O, 0.5), [0.89442104, 0.08114005, 0.02443891], atol=1e-8
    )
    np.testing.assert_allclose(
        laplace_label_posterior(O, 0.5, PRIOR), [0.7887801, 0.17889129, 0.03232861], atol=1e-7
    )


def test_gaussian_posterior_reference_values_and_not_the_reference_code_bug():
    np.testing.assert_allclose(
        gaussian_label_posterior(O, 0.7), [0.71436431, 0.20995711, 0.07567858], atol=1e-8
    )
    np.testing.assert_allclose(
        gaussian_label_posterior(O, 0.7, PRIOR), [0.52807328, 0.3880119, 0.08391482], atol=1e-7
    )
    buggy = label_posterior(np.asarray(O) / 0.7)  # the authors' code: o/σ instead of o/σ²
    assert np.max(np.abs(buggy - gaussian_label_posterior(O, 0.7))) > 0.05


def _brute_posterior(o, prior, density):
    """Bayes' rule with explicit per-class densities of o given y = c."""
    o = np.asarray(o, dtype=float)
    c = o.size
    like = np.array([np.prod(density(o - np.eye(c)[k])) for k in range(c)])
    post = like * np.asarray(prior)
    return post / post.sum()


@pytest.mark.parametrize("seed", range(5))
def test_posteriors_equal_bayes_rule_with_explicit_densities(seed):
    rng = np.random.default_rng(seed)
    c = 6
    o = np.eye(c)[rng.integers(c)] + rng.normal(0, 0.6, c)
    prior = rng.dirichlet(np.ones(c))
    b, s = 0.4 + rng.random(), 0.3 + rng.random()
    lap = _brute_posterior(o, prior, lambda x: stats.laplace.pdf(x, scale=b))
    gau = _brute_posterior(o, prior, lambda x: stats.norm.pdf(x, scale=s))
    np.testing.assert_allclose(laplace_label_posterior(o, b, prior), lap, rtol=1e-10)
    np.testing.assert_allclose(gaussian_label_posterior(o, s, prior), gau, rtol=1e-10)
    np.testing.assert_allclose(laplace_label_posterior(o, b), _brute_posterior(
        o, np.ones(c), lambda x: stats.laplace.pdf(x, scale=b)), rtol=1e-10)  # fmt: skip


def test_posterior_batches_and_prior_validation():
    rows = np.array([O, [0.1, 1.2, 0.0]])
    batch = laplace_label_posterior(rows, 0.5, PRIOR)
    np.testing.assert_allclose(batch[0], laplace_label_posterior(O, 0.5, PRIOR))
    np.testing.assert_allclose(batch.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        label_posterior([0.0, 0.0], [-0.1, 1.1])
    with pytest.raises(ValueError, match="positive total"):
        label_posterior([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="classes"):
        label_posterior([0.0, 0.0], [0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="scale must be a positive"):
        laplace_label_posterior(O, 0.0)
    with pytest.raises(ValueError, match="sigma must be a positive"):
        gaussian_label_posterior(O, -1.0)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.9, 0.3, -0.2, 0.5], [2 / 3, 0.2 / 3, 0.0, 0.8 / 3]),
        ([1.7, -0.4, 0.1], [1.0, 0.0, 0.0]),
        ([0.4, 0.3, 0.1], [0.4666667, 0.3666667, 0.1666667]),
    ],
)
def test_projection_reference_values(values, expected):
    np.testing.assert_allclose(project_to_simplex(values), expected, atol=1e-7)


def _bisection_projection(v, total=1.0):
    """Slow reference: θ with Σ max(v − θ, 0) = total by bisection."""
    lo, hi = v.min() - total, v.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(v - mid, 0).sum() > total:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - (lo + hi) / 2, 0)


def test_projection_matches_bisection_rowwise():
    rng = np.random.default_rng(1)
    rows = rng.normal(0, 2, size=(50, 7))
    out = project_to_simplex(rows)
    for r, p in zip(rows, out, strict=True):
        np.testing.assert_allclose(p, _bisection_projection(r), atol=1e-9)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(out >= 0)


def test_projection_is_reexported_from_attacks():
    from dpaudit.attacks import project_to_simplex as old

    assert old is project_to_simplex


def test_rr_probabilities_and_sampling():
    rr = randomized_response(2.0, 10)
    assert rr.keep_probability == pytest.approx(0.4508530604, abs=1e-10)
    assert rr.other_probability == pytest.approx(0.0610163266, abs=1e-10)
    out = noise_labels(RandomizedResponse(2.0, 10), np.full(200_000, 3), 10, rng=0)
    freq = np.bincount(out, minlength=10) / out.size
    assert freq[3] == pytest.approx(rr.keep_probability, abs=4e-3)
    np.testing.assert_allclose(np.delete(freq, 3), rr.other_probability, atol=3e-3)


def test_soft_noise_moments_and_seeding():
    y = np.arange(20_000) % 4
    lap = noise_labels(LaplaceLabels(0.5), y, 4, rng=1)
    gau = noise_labels(GaussianLabels(0.7), y, 4, rng=1)
    onehot = np.eye(4)[y]
    assert np.var(lap - onehot) == pytest.approx(2 * 0.5**2, rel=0.03)  # Var Lap(b) = 2b²
    assert np.std(gau - onehot) == pytest.approx(0.7, rel=0.02)
    np.testing.assert_array_equal(lap, noise_labels(LaplaceLabels(0.5), y, 4, rng=1))


def test_noising_rejects_bad_labels_and_classes():
    with pytest.raises(ValueError, match=r"class labels in \[0, 2\]"):
        noise_labels(LaplaceLabels(1.0), [0, 3], 3, rng=0)
    with pytest.raises(ValueError, match="at least 2"):
        noise_labels(LaplaceLabels(1.0), [0, 0], 1, rng=0)
    with pytest.raises(ValueError, match="differs"):
        noise_labels(RandomizedResponse(1.0, 4), [0, 1], 3, rng=0)
    with pytest.raises(ValueError, match="integer class labels"):
        check_labels("y", [0.5], 3)
    with pytest.raises(TypeError, match="not a label mechanism"):
        noise_labels(ConfidentGNMax(1, 1, 1), [0], 3, rng=0)


def test_claims_closed_forms():
    assert ALIBI(0.25).claim().epsilon == 8.0
    assert ALIBI.from_epsilon(2.0).scale == 1.0
    assert SoftRR(0.5).claim().epsilon == 4.0
    assert RandomizedResponseLabels(2.0, 10).claim().epsilon == 2.0
    for sigma, eps in ((1.0, 7.077391578), (2.0, 3.188991563), (0.5, 16.512875947)):
        c = AGIBI(sigma).claim()
        assert c.epsilon == pytest.approx(eps, abs=1e-8)
        assert c.delta == 1e-5
    for c in (ALIBI(1.0).claim(), RandomizedResponseLabels(1.0, 3).claim()):
        assert c.delta == 0.0


def test_pate_fm_claim_before_training_is_data_independent():
    m = ConfidentGNMax(10, 4.0, 2.0)
    s = PATEFM(num_teachers=20, mechanism=m, queries=50)
    lam = np.arange(2.0, 200.0)
    # Prop. 8 per step: α/(2σ1²) + α/σ2², 50 queries, all answered (Balle et al. 2020 Thm 20).
    rdp = 50 * lam * (1 / (2 * 4.0**2) + 1 / 2.0**2)
    from dpaudit.conversions import rdp_to_dp

    ref = rdp_to_dp(lam, rdp, 1e-5, conversion="balle2020").epsilon
    assert s.claim(lam).epsilon == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ALIBI(0.0), "scale must be a positive"),
        (lambda: ALIBI(1.0, prior="flat"), "prior must be one of"),
        (lambda: AGIBI(-1.0), "sigma must be a positive"),
        (lambda: AGIBI(1.0, delta=0.0), "delta must be in"),
        (lambda: RandomizedResponseLabels(0.0, 10), "epsilon must be a positive"),
        (lambda: RandomizedResponseLabels(1.0, 1), "num_classes must be at least 2"),
        (lambda: SoftRR(-0.5), "scale must be a positive"),
        (lambda: PATEFM(1, ConfidentGNMax(1, 1, 1), 10), "num_teachers must be at least 2"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 0), "queries must be a positive"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 10, answers=0), "answers must be a posit"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 10, answers=11), "answers must be at most"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 10, teacher_steps=0), "teacher_steps"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 10, student_steps=-1), "student_steps"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 0.0, 1), 10), "sigma1 must be a positive"),
        (lambda: PATEFM(5, ConfidentGNMax(1, 1, 1), 10, order=1.0), "order must be > 1"),
        (
            lambda: PATEFM(2, ConfidentGNMax(1, 1, 1), 2).check_data(
                np.zeros((4, 3)), [0, 1, 0, 1], 2, images=False
            ),
            "consistency.enabled needs image data",
        ),
        (lambda: ALIBI(1.0).check_data(np.zeros((2, 3)), [0, 5], 2), "class labels in"),
    ],
)
def test_systems_reject_bad_parameters(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_systems_reject_bad_data_before_training(monkeypatch):
    import dpaudit.systems.label_dp._systems as mod

    monkeypatch.setattr(mod, "train_network", _no_training)
    X = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"class labels in \[0, 2\]"):
        ALIBI(1.0).fit(X, [0, 1, 2, 3], num_classes=3)
    with pytest.raises(ValueError, match="at least 2"):
        ALIBI(1.0).fit(X, [0, 0, 0, 0], num_classes=1)
    with pytest.raises(ValueError, match="4 rows but y has 3"):
        ALIBI(1.0).fit(X, [0, 1, 2], num_classes=3)
    pate = PATEFM(5, ConfidentGNMax(1, 1, 1), 3)
    with pytest.raises(ValueError, match="num_teachers=5 exceeds the 4"):
        pate.fit(X, [0, 1, 2, 0], num_classes=3)
    with pytest.raises(ValueError, match="queries=6 exceeds the 4"):
        PATEFM(2, ConfidentGNMax(1, 1, 1), 6).fit(X, [0, 1, 2, 0], num_classes=3)


def _no_training(*args, **kwargs):
    raise AssertionError("training started before the input was validated")


def test_registry_factories():
    from dpaudit.systems import SYSTEMS, ALIBICell, PATEFMCell, RRCell, SoftRRCell

    assert SYSTEMS.get("alibi")(ALIBICell(epsilon=4.0)).scale == 0.5
    assert SYSTEMS.get("alibi")(ALIBICell(epsilon=4.0)).claim().epsilon == 4.0
    cell = PATEFMCell(num_teachers=4, threshold=2, sigma1=1, sigma2=1, queries=10)
    pate = SYSTEMS.get("pate-fm")(cell)
    assert pate.mechanism == ConfidentGNMax(2, 1, 1)
    with pytest.raises(TypeError, match="settings must be a RRCell"):
        SYSTEMS.get("rr")(object())
    with pytest.raises(TypeError, match="settings must be a RRCell"):
        SYSTEMS.get("rr")({"epsilon": 1.0, "num_classes": 3})
    with pytest.raises(ValueError, match="epsilon"):
        SYSTEMS.get("soft-rr")(SoftRRCell(epsilon=-1.0))
    assert SYSTEMS.get("rr")(RRCell(epsilon=1.0, num_classes=3)).num_classes == 3
    assert math.isfinite(SYSTEMS.get("soft-rr")(SoftRRCell(epsilon=2.0)).claim().epsilon)
