"""The LiDP-over-runs code path of the DP-SGD audit, on a mechanism with known ε.

:func:`dpaudit.experiments.lidp_dpsgd.runs.audit_canary_runs` — run plan, engine tasks, τ tuned on
separate runs, CP/W1/W2/W4 bounds — is the DP-SGD audit's code path with the training run
replaced by the Gaussian sum query (ε known exactly; Dong, Roth & Su 2022, arXiv:1905.02383,
Cor. 2.13). Its bound must exceed the true ε in at most β of ≥ 200 seeded repetitions, for
every interval method, τ tuning included; and, sharper, the ε of the chosen test itself,
``log((TPR(τ) − δ)/FPR(τ))`` from the exact statistic distributions.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from doctest_support import module_examples, run_examples, section_examples
from dpaudit.conversions import gdp_epsilon
from dpaudit.experiments.lidp_dpsgd.runs import (
    GaussianSumQueryRuns,
    LiDPAuditSettings,
    RunPlan,
    audit_canary_runs,
    check_methods,
)

SIGMA, DIM, K, DELTA, BETA = 1.0, 10**6, 4, 1e-5, 0.05


@pytest.fixture(scope="module")
def coverage_run():
    s = LiDPAuditSettings(num_runs=40, num_tuning_runs=20, repetitions=200, run_grid=(40,),
                          confidence_level=1 - BETA, num_thresholds=12)  # fmt: skip
    return audit_canary_runs(GaussianSumQueryRuns(SIGMA, DIM), (K,), s, delta=DELTA, rng=2024)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["clopper-pearson", "wilson1", "wilson2", "wilson4"])
def test_bound_covers_the_true_epsilon_with_tau_tuning(coverage_run, method):
    a = coverage_run.audit(K)
    eps = a.epsilons(method)
    assert eps.shape == (200,) and a.thresholds[method].shape == (200,)
    true = gdp_epsilon(1.0 / SIGMA, DELTA)
    assert np.sum(eps > true) <= BETA * eps.size
    # sharper: the ε of the test actually run. ⟨y, c⟩ ~ N(1, s²) for an included canary and
    # N(0, s²) for a fresh one, s² = σ² + (k − 1)/d (exact up to O(1/d)).
    s = np.sqrt(SIGMA**2 + (K - 1) / DIM)
    tau = a.thresholds[method]
    tpr, fpr = stats.norm.sf((tau - 1.0) / s), stats.norm.sf(tau / s)
    eps_tau = np.log(np.maximum(tpr - DELTA, 1e-300) / fpr)
    assert np.sum(eps > eps_tau) <= BETA * eps.size
    tpr_lo = np.array([b.tpr_interval.low for b in a.bounds[method]])
    fpr_hi = np.array([b.fpr_interval.high for b in a.bounds[method]])
    assert np.sum(tpr_lo > tpr) <= BETA / 2 * eps.size + 3 * np.sqrt(eps.size * BETA / 2)
    assert np.sum(fpr_hi < fpr) <= BETA / 2 * eps.size + 3 * np.sqrt(eps.size * BETA / 2)
    assert np.mean(eps) > 0  # the bounds are not vacuous


def test_plan_is_contiguous_and_complete():
    plan = RunPlan((1, 4), 2, 5, 3)
    blocks = plan.blocks()
    assert len(blocks) == 2 * 2 * 2 * 2 and blocks[0] == (1, 0, "tuning", "alternative", 0, 3)
    assert blocks[-1] == (4, 1, "audit", "null", 59, 64) and plan.num_tasks == 64
    ks, alt = plan.task_table()
    assert ks.tolist() == [1] * 32 + [4] * 32 and alt[:6].tolist() == [True] * 3 + [False] * 3


def test_same_seed_same_result_whatever_the_executor():
    s = LiDPAuditSettings(num_runs=6, num_tuning_runs=4, run_grid=(3, 6))
    runs = GaussianSumQueryRuns(0.7, 50)
    a = audit_canary_runs(runs, (1, 4), s, delta=DELTA, rng=5)
    b = audit_canary_runs(runs, (1, 4), s, delta=DELTA, rng=5, executor="processes", workers=2)
    for x, y in zip(a.audits, b.audits, strict=True):
        np.testing.assert_array_equal(x.alternative, y.alternative)
        np.testing.assert_array_equal(x.curve_by_repetition, y.curve_by_repetition)
        for m in x.methods:
            np.testing.assert_array_equal(x.epsilons(m), y.epsilons(m))
            np.testing.assert_array_equal(x.thresholds[m], y.thresholds[m])
    c = audit_canary_runs(runs, (1, 4), s, delta=DELTA, rng=6)
    assert not np.array_equal(a.audits[1].alternative, c.audits[1].alternative)


def test_bad_input():
    runs = GaussianSumQueryRuns(1.0, 10)
    s = LiDPAuditSettings(num_runs=4)
    with pytest.raises(ValueError, match="needs at least 4 canaries per run, got k=2"):
        audit_canary_runs(runs, (2,), s, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="num_canaries"):
        audit_canary_runs(runs, (0,), s, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="distinct"):
        audit_canary_runs(runs, (4, 4), s, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="delta"):
        audit_canary_runs(runs, (4,), s, delta=1.5, rng=0)
    with pytest.raises(TypeError, match="CanaryRuns"):
        audit_canary_runs(lambda *a: 0, (4,), s, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="'wilson2' needs at least 2"):
        check_methods(("wilson2",), (1,))
    for bad, match in [({"num_runs": 1}, "num_runs must be at least 2"),
                       ({"methods": ()}, "at least one interval"),
                       ({"curve_method": "cp"}, "curve_method"),
                       ({"run_grid": (0, 4)}, "run_grid"),
                       ({"target_epsilon": -1.0}, "target_epsilon"),
                       ({"variance": "x"}, "variance"),
                       ({"num_thresholds": 0}, "num_thresholds")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            LiDPAuditSettings(**bad)


def test_module_examples():
    assert module_examples("dpaudit.experiments.lidp_dpsgd.runs").failed == 0


def test_readme_section_examples():
    test = section_examples("57-lidp-dp-sgd.md")
    assert test.examples
    assert run_examples(test) == 0
