"""The group-privacy workflow: registration, a small end-to-end run, coverage of the group
lower bound, a planted bug (noise halved) and input validation before any training."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks import GROUP_ADVERSARIES
from dpaudit.divergence import worst_case_group_renyi
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.group_privacy import (
    GroupPrivacySettings,
    PairedHistograms,
    audit_group_privacy,
    bound,
    claims,
    exact_curve,
    joint_bound,
    sample_counts,
    stages,
)

SMALL = dict(
    dataset="digits", teachers=10, sigma=4.0, queries=40, proxy_queries=40, pool=40,
    experiments=10**6,
)  # fmt: skip


@pytest.fixture(scope="module")
def small_run():
    s = GroupPrivacySettings(adversaries=("capc-teacher", "knn-group"), group_sizes=(1, 4), **SMALL)
    return WORKFLOWS.get("group-privacy")(s)


def test_registered_and_runs(small_run):
    assert "group-privacy" in WORKFLOWS.names()
    assert small_run.workflow == "group-privacy"
    assert [e.adversary for e in small_run.entries] == [
        "capc-group m=1", "capc-teacher", "knn-group m=1", "knn-group m=4",
    ]  # fmt: skip
    assert [e.system for e in small_run.entries] == ["capc", "capc", "private-knn", "private-knn"]


def test_whole_teacher_leaks_more_than_one_point(small_run):
    one, whole = small_run.entries[:2]
    assert whole.detail.unit == "teacher" and whole.detail.size > 100
    assert whole.detail.changed_queries > one.detail.changed_queries
    # The party is CaPC's unit of privacy: normalised by the identity, and it exceeds the
    # single point's bound by a wide margin at every order.
    np.testing.assert_array_equal(
        whole.detail.normalised["teacher"].epsilons, whole.lower_bound.rdp.epsilons
    )
    assert np.all(whole.lower_bound.rdp.epsilons > one.lower_bound.rdp.epsilons + 0.5)
    row = small_run.detail.rows[1]
    assert row["leaks_more"] is True and row["group"] > 1.0


def test_bounds_below_exact_below_claims(small_run):
    for e in small_run.entries:
        lo, ex = e.lower_bound.rdp.epsilons, e.exact.rdp.epsilons
        assert np.all(lo <= ex + 1e-12), e.adversary
        for c in e.claims:
            _, i, j = np.intersect1d(e.exact.rdp.orders, c.rdp.orders, return_indices=True)
            assert np.all(ex[i] <= c.rdp.epsilons[j] + 1e-12), (e.adversary, c.analysis)
        assert not e.gap.refutes_claim


def test_knn_group_moves_several_votes(small_run):
    four = small_run.entries[3]
    assert four.detail.max_shift >= 2  # repeated points move several votes of one query
    claim = four.claim_of("group (Gaussian m^2 rule)").rdp.epsilons
    single = four.claim_of("single point (data-independent)").rdp.epsilons
    np.testing.assert_allclose(claim, 16 * single)


def _pair():
    h = np.array([[20, 20, 0], [21, 19, 0]])
    h2 = np.array([[18, 22, 0], [19, 21, 0]])  # two votes moved per query: distance 2
    return PairedHistograms(None, h, h2, np.array([0, 1]))


def test_coverage_of_the_group_lower_bound():
    """≥ 200 seeded repetitions: the group lower bound exceeds the known group RDP of the
    pair (exact) in at most β of them, up to a binomial tolerance."""
    s = GroupPrivacySettings(orders=(2.0, 4.0, 8.0), report_order=4.0, experiments=10**4)
    pair = _pair()
    truth = exact_curve(pair, 2.0, s.order_grid())
    # The pair's divergence is at most the worst case at distance 2 of each query.
    worst = [
        worst_case_group_renyi(h, 2.0, s.order_grid(), distance=2).epsilons for h in pair.votes
    ]
    assert np.all(truth <= np.sum(worst, axis=0) + 1e-12)
    reps, fails = 200, 0
    for seed in range(reps):
        c = sample_counts(pair, 2.0, s.experiments, rng=np.random.default_rng(seed))
        lo = bound(c, s, rng=10_000 + seed).curve.epsilons
        fails += bool(np.any(lo > truth))
    beta = 1 - s.confidence_level
    assert fails <= stats.binom.ppf(0.999, reps, beta), fails


def test_coverage_of_the_joint_bound():
    """The joint 2-cut (threshold on the summed log-likelihood ratio) over 200 seeded
    repetitions exceeds the pair's exact group RDP in at most β of them."""
    s = GroupPrivacySettings(orders=(2.0, 4.0, 8.0), report_order=4.0, joint_experiments=4000)
    pair = _pair()
    truth = exact_curve(pair, 2.0, s.order_grid())
    reps, fails, positive = 200, 0, 0
    for seed in range(reps):
        lo, _ = joint_bound(pair, 2.0, s, rng=np.random.SeedSequence(seed), confidence_level=0.95)
        fails += bool(np.any(lo > truth))
        positive += bool(lo[0] > 0)
    assert fails <= stats.binom.ppf(0.999, reps, 0.05), fails
    assert positive > reps // 2  # and it has power: mostly a positive bound


def test_planted_bug_noise_halved_is_refuted():
    s = GroupPrivacySettings(orders=(2.0, 4.0, 8.0), report_order=4.0, experiments=10**5)
    adv = GROUP_ADVERSARIES.get("knn-group")
    claim = claims(adv, 2, sigma=2.0, num_queries=2, orders=s.order_grid(), delta=1e-6)
    primary = claim.claims[0].rdp.epsilons
    lows = {}
    for factor in (1.0, 0.5):
        c = sample_counts(_pair(), 2.0 * factor, s.experiments, rng=np.random.default_rng(7))
        lows[factor] = bound(c, s, rng=8).curve.epsilons
    assert np.all(lows[1.0] < primary)  # correct noise: no refutation
    assert lows[0.5][0] > primary[0] * 1.5  # halved noise: the m² group claim is refuted
    np.testing.assert_allclose(primary, [4.0, 8.0, 16.0])


def test_planted_bug_end_to_end_entry_refutes():
    """The whole workflow on a CaPC party replaced, noise halved: the party-level claim
    (40 queries × α/σ², σ = 40) is refuted at the high orders; with the right noise it is not."""
    runs = {}
    for factor in (1.0, 0.5):
        s = GroupPrivacySettings(
            adversaries=("capc-teacher",), noise_factor=factor,
            **{**SMALL, "sigma": 40.0, "experiments": 10**8},
        )  # fmt: skip
        runs[factor] = audit_group_privacy(s).entries[1]
    assert not runs[1.0].gap.refutes_claim
    bugged = runs[0.5]
    assert bugged.gap.refutes_claim and bugged.gap.rdp_excess > 0.05
    lo, claim = bugged.lower_bound.rdp.epsilons, bugged.claim.rdp.epsilons
    assert lo[-1] > claim[-1]  # α = 64: the bound exceeds the claim 1.6


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"group_sizes": (0, 2)}, "group_sizes must be integers m >= 1, got m=0"),
        ({"group_sizes": "1,-3"}, "group_sizes must be integers m >= 1"),
        ({"adversaries": ("pate-grup",)}, "adversaries"),
        ({"sigma": 0.0}, "sigma"),
        ({"noise_factor": -1.0}, "noise_factor"),
        ({"report_order": 3.0}, "report_order must be one of orders"),
        ({"teachers": 1}, "teachers must be at least 2, got 1"),
    ],
)
def test_bad_settings(overrides, match):
    with pytest.raises((ValueError, TypeError), match=match):
        GroupPrivacySettings(**{**SMALL, **overrides})


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"teachers": 500, "group_sizes": (1, 5)}, r"m=5 is larger than a teacher's data \(2 rows"),
        ({"group_sizes": (1, 41)}, "m=41 poisoned points need at most pool=40 rows"),
        ({"queries": 300, "proxy_queries": 300}, "queries \\+ proxy_queries \\+ pool"),
        ({"knn_k": 10**6}, "knn_k must be at most the"),
    ],
)
def test_bad_sizes_fail_before_training(monkeypatch, overrides, match):
    def no_training(*args, **kwargs):
        raise AssertionError("trained before validating")

    monkeypatch.setattr(stages, "build_target", no_training)
    s = GroupPrivacySettings(**{**SMALL, "adversaries": ("pate-group",), **overrides})
    with pytest.raises(ValueError, match=match):
        audit_group_privacy(s)


def test_wrong_settings_type():
    with pytest.raises(TypeError, match="settings must be GroupPrivacySettings"):
        audit_group_privacy(object())
