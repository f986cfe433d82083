"""noisy_argmax_cost: the one place GNMax / Confident GNMax claims are computed (issue 12) —
per-step values equal to the step functions, mechanism_rdp reads it, batch compositions; and
the extreme inputs of issue 13 item 4 (σ = 1e-300 or 1e300, huge counts) give a correct value
or a clear ValueError in every function of the ledger / PATE / smooth-sensitivity layer, never
a ZeroDivisionError, OverflowError or floating-point warning."""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings

import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    NoisyArgmaxCost,
    PrivacyLedger,
    confident_gnmax_cost,
    gnmax_local_sensitivity,
    gnmax_plateau,
    gnmax_rdp_details,
    gnss_rdp,
    gnss_release,
    mechanism_rdp,
    noisy_argmax_cost,
    pate_accounting,
    pate_local_sensitivity,
    smooth_sensitivity_conditions,
    threshold_local_sensitivity,
)
from dpaudit.errors import BudgetExhaustedError
from dpaudit.mechanisms import ConfidentGNMax, GNMax, LNMax

VOTES = np.array([[200, 30, 20], [150, 90, 10], [240, 5, 5], [100, 80, 70]])


def test_gnmax_steps_are_the_step_functions():
    c = noisy_argmax_cost(GNMax(40.0), votes=VOTES, analysis="data-dependent")
    det = gnmax_rdp_details(VOTES, 40.0, DEFAULT_ORDERS)
    assert isinstance(c, NoisyArgmaxCost) and c.answer_rdp.shape == (4, DEFAULT_ORDERS.size)
    np.testing.assert_array_equal(c.answer_rdp, det.rdp)
    np.testing.assert_array_equal(c.answer_fallback, det.fallback)
    assert not c.threshold_rdp.any() and not c.threshold_fallback.any()
    np.testing.assert_array_equal(c.answer_probability, np.ones(4))
    np.testing.assert_array_equal(c.per_use(), det.rdp)
    np.testing.assert_array_equal(c.composed().epsilons, det.rdp.sum(axis=0))
    di = noisy_argmax_cost(GNMax(40.0), [2.0, 8.0])
    assert di.answer_rdp.tolist() == [2 / 1600, 8 / 1600] and di.answer_probability.shape == ()


def test_confident_steps_are_the_step_functions():
    mech = ConfidentGNMax(180, 30, 40)
    c = noisy_argmax_cost(mech, votes=VOTES, analysis="data-dependent", q="exact")
    ref = confident_gnmax_cost(
        VOTES, threshold=180, sigma1=30, sigma2=40, orders=DEFAULT_ORDERS, q="exact"
    )
    np.testing.assert_array_equal(c.threshold_rdp, ref.threshold_rdp)
    np.testing.assert_array_equal(c.answer_rdp, ref.argmax_rdp)
    np.testing.assert_array_equal(c.expected_rdp, ref.expected_rdp)
    np.testing.assert_array_equal(c.answer_probability, ref.answer_probability)
    answered = np.array([True, False, True, False])
    np.testing.assert_array_equal(c.realised(answered).epsilons, ref.realised(answered).epsilons)
    np.testing.assert_array_equal(c.expected().epsilons, ref.expected().epsilons)
    np.testing.assert_array_equal(
        c.fallback(False), ref.threshold_fallback
    )  # an unanswered query's argmax step is not charged
    np.testing.assert_array_equal(c.fallback(True), ref.threshold_fallback | ref.argmax_fallback)
    lam = np.array([2.0, 8.0])
    di = noisy_argmax_cost(mech, lam, votes=VOTES)
    np.testing.assert_array_equal(di.threshold_rdp, np.tile(lam / (2 * 30.0**2), (4, 1)))
    np.testing.assert_array_equal(di.answer_rdp, np.tile(lam / 40.0**2, (4, 1)))
    no_votes = noisy_argmax_cost(mech, lam)  # p unknown: its upper bound 1, expected_rdp bounds
    assert no_votes.answer_probability == 1.0
    np.testing.assert_allclose(no_votes.expected_rdp, no_votes.per_use(True), rtol=0, atol=0)
    with pytest.raises(ValueError, match="answered"):
        c.realised([True, False])


def test_mechanism_rdp_reads_noisy_argmax_cost():
    for mech in (GNMax(25.0), ConfidentGNMax(150, 20, 25)):
        for analysis in ("data-dependent", "data-independent"):
            c = noisy_argmax_cost(mech, votes=VOTES, analysis=analysis)
            for answered in (True, False):
                np.testing.assert_array_equal(
                    mechanism_rdp(mech, votes=VOTES, analysis=analysis, answered=answered),
                    c.per_use(answered),
                )


def test_noisy_argmax_cost_bad_input():
    with pytest.raises(TypeError, match="mechanism"):
        noisy_argmax_cost(LNMax(2.0))
    with pytest.raises(ValueError, match="votes"):
        noisy_argmax_cost(GNMax(1.0), analysis="data-dependent")
    with pytest.raises(ValueError, match="analysis"):
        noisy_argmax_cost(GNMax(1.0), analysis="both")
    with pytest.raises(ValueError, match="q"):
        noisy_argmax_cost(GNMax(1.0), q="approx")
    with pytest.raises(ValueError, match="orders"):
        noisy_argmax_cost(GNMax(1.0), [0.5])


# -- issue 13 item 4 ----------------------------------------------------------------------------
_SIGMAS = [1e-300, 1e-155, 1e-150, 1e-20, 1e20, 1e150, 1e300]
_HISTOGRAMS = [[1e300, 0.0, 0.0], [1e18, 3.0, 1.0], [5.0, 3.0, 1.0], [7.0]]


def _outcome(fn, *args, **kwargs) -> str:
    """'ok' or 'ValueError'; anything else (ZeroDivision, Overflow, a warning) fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fn(*args, **kwargs)
        except (ValueError, BudgetExhaustedError):
            return "ValueError"
    return "ok"


def _ledger_round(mech, votes, analysis):
    led = PrivacyLedger(mech, delta=1e-5, epsilon_budget=1.0, analysis=analysis)
    led.query_cost(votes)
    led.can_afford(votes)
    with contextlib.suppress(BudgetExhaustedError):
        led.charge(votes)
    PrivacyLedger.from_json(led.to_json())
    assert math.isfinite(led.epsilon()) and led.num_fallback >= 0


def test_extreme_sigma_and_counts_never_crash():
    seen = set()
    analyses = ["data-dependent", "data-independent"]
    for s in _SIGMAS:
        mechs = (GNMax(s), ConfidentGNMax(2.0, s, s), ConfidentGNMax(2.0, 1.0, s))
        for votes, mech, analysis in itertools.product(_HISTOGRAMS, mechs, analyses):
            seen.add(_outcome(_ledger_round, mech, votes, analysis))
            seen.add(_outcome(mechanism_rdp, mech, votes=[votes], analysis=analysis))
            if len(votes) > 1:
                seen.add(_outcome(pate_accounting, [votes, votes], mech, delta=1e-5))
        for lam in (1.5, 20.0, 1000.0):
            seen.add(_outcome(gnmax_plateau, s, lam, 3))
            seen.add(_outcome(gnmax_local_sensitivity, [1e300, 0, 0], 20, s, lam))
            seen.add(_outcome(threshold_local_sensitivity, [5, 3], 20, 4, s, lam))
            seen.add(_outcome(smooth_sensitivity_conditions, s, 3, lam, num_points=50))
            kw = dict(num_teachers=10, sigma=s, order=lam, threshold=3, sigma1=s)
            seen.add(_outcome(pate_local_sensitivity, [[5, 3, 1]], **kw))
        seen.add(_outcome(gnss_rdp, 0.01, s, 10.0))
        seen.add(_outcome(gnss_release, 0.5, [s, 0.0], 10, 1e-5, rng=0))
    assert seen == {"ok", "ValueError"}


def test_extreme_values_are_the_correct_limits():
    # σ → 0 with a clear winner: the output is constant, q̃ = 0, data-dependent RDP 0
    np.testing.assert_array_equal(
        mechanism_rdp(GNMax(1e-300), [2.0], votes=[[5, 3, 1]], analysis="data-dependent"), [[0.0]]
    )
    # ... while the data-independent λ/σ² overflows to +inf
    assert mechanism_rdp(GNMax(1e-300), [2.0]).tolist() == [math.inf]
    # σ = 1e300: λ/σ² = 2e-600 is 0 in float64 (no OverflowError from σ**2)
    assert mechanism_rdp(GNMax(1e300), [2.0]).tolist() == [0.0]
    # counts of 1e300 at σ = 1e-20: q̃ underflows to exactly 0 (gap/σ overflows): cost 0
    np.testing.assert_array_equal(
        mechanism_rdp(GNMax(1e-20), [2.0], votes=[[1e300, 0, 0]], analysis="data-dependent"),
        [[0.0]],
    )
    with pytest.raises(ValueError, match=r"sigma_s=1e-300 is too small"):
        gnss_rdp(0.01, 1e-300, 10.0)


# ------------------------------------------------------------------ issue 28


@pytest.mark.parametrize("votes", [None, [[30.0, 10.0, 5.0]]])
@pytest.mark.parametrize("analysis", ["data-independent", "data-dependent"])
def test_issue28_mechanism_rdp_of_a_non_mechanism_names_the_argument(votes, analysis):
    if votes is None and analysis == "data-dependent":
        votes = [[30.0, 10.0, 5.0]]
    with pytest.raises(TypeError, match=r"mechanism must be a mechanism value .*got None"):
        mechanism_rdp(None, [2.0], votes=votes, analysis=analysis)


@pytest.mark.parametrize(
    "mechanism", [GNMax(40.0), ConfidentGNMax(150.0, 50.0, 40.0)], ids=["gnmax", "confident"]
)
def test_issue28_pate_accounting_without_a_finite_epsilon_has_no_nan(mechanism):
    """An order next to 1 gives the closed form's large finite ε (issue 45: it used to be
    ε = order = ∞), passed on as is; the fallback share stays finite, nothing is NaN."""
    res = pate_accounting([[200, 30, 20]] * 3, mechanism, delta=1e-5, orders=[1 + 1e-12])
    for row in res.rows:
        assert np.isfinite(row.epsilon) and row.epsilon > 1e12
        assert row.order == 1 + 1e-12
        assert 0.0 <= row.fallback_fraction <= 1.0
