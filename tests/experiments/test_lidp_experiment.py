"""Paper 002's Gaussian sum-query LiDP experiment, end to end, and its CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.bounds import lidp_epsilon
from dpaudit.conversions._gdp import gdp_epsilon
from dpaudit.experiments.lidp import lidp_gaussian_statistics, run_lidp_gaussian


def test_statistics_have_the_right_distribution():
    sigma, dim, k, n = 1.5, 40, 6, 3000
    st = lidp_gaussian_statistics(sigma, dim, k, n, rng=0)
    assert st.alternative.shape == (n, k) and st.null.shape == (n, k)
    # ⟨y, c_j⟩ = 1{included} + Σ_{i≠j} ⟨c_i, c_j⟩ + σ⟨Z, c_j⟩; E⟨c_i, c_j⟩² = 1/d
    var_alt = sigma**2 + (k - 1) / dim
    var_null = sigma**2 + (k - 1) / dim
    se = np.sqrt(var_alt / (n * k)) * 4  # loose: columns within a row are correlated
    assert abs(st.alternative.mean() - 1.0) < 4 * se
    assert abs(st.null.mean()) < 4 * se
    assert st.alternative.var() == pytest.approx(var_alt, rel=0.06)
    assert st.null.var() == pytest.approx(var_null, rel=0.06)
    again = lidp_gaussian_statistics(sigma, dim, k, n, rng=0)
    np.testing.assert_array_equal(st.alternative, again.alternative)
    # k = 1: the null run includes no canary
    one = lidp_gaussian_statistics(sigma, dim, 1, 2000, rng=1)
    assert one.null.var() == pytest.approx(sigma**2, rel=0.1)


def test_experiment_end_to_end_is_consistent_and_reproducible():
    res = run_lidp_gaussian(2.0, 100, 16, 600, rng=5)
    assert res.true_epsilon == pytest.approx(gdp_epsilon(0.5, 1e-5))
    assert res.run_grid[-1] == 600 and np.all(np.diff(res.run_grid) > 0)
    assert res.epsilon_baseline.shape == res.run_grid.shape == res.epsilon_lidp.shape
    assert res.target_epsilon == res.epsilon_baseline[-1] == res.baseline.epsilon
    assert res.epsilon_lidp[-1] == res.lidp.epsilon
    assert res.baseline.method == "clopper-pearson" and res.lidp.method == "wilson4"
    assert res.lidp.num_canaries == 16 and res.baseline.num_canaries == 1
    # lower bounds stay below the truth here
    assert np.all(res.epsilon_lidp <= res.true_epsilon)
    assert np.all(res.epsilon_baseline <= res.true_epsilon)
    # runs needed: from that grid point on, the curve stays at/above the target
    for need, curve in (
        (res.runs_needed_baseline, res.epsilon_baseline),
        (res.runs_needed_lidp, res.epsilon_lidp),
    ):
        assert need is not None
        assert np.all(curve[res.run_grid >= need] >= res.target_epsilon)
    assert res.sample_complexity_gain == pytest.approx(
        res.runs_needed_baseline / res.runs_needed_lidp
    )
    # k canaries per run need fewer runs than one canary per run (paper 002's point)
    assert res.sample_complexity_gain > 1
    assert res.lidp.epsilon > res.baseline.epsilon
    again = run_lidp_gaussian(2.0, 100, 16, 600, rng=5)
    np.testing.assert_array_equal(res.epsilon_lidp, again.epsilon_lidp)
    assert json.loads(res.to_json())["selection"] == "split"


def test_threshold_is_tuned_on_separate_runs():
    res = run_lidp_gaussian(1.0, 32, 8, 120, num_tuning_runs=80, method="wilson2", rng=2)
    assert res.num_tuning_runs == 80
    st = lidp_gaussian_statistics(1.0, 32, 8, 120, rng=11)
    # the bound at the tuned threshold is an ordinary LiDP bound on the audited outcomes
    r = lidp_epsilon(
        st.alternative >= res.threshold_lidp,
        st.null >= res.threshold_lidp,
        delta=1e-5,
        method="wilson2",
    )
    assert 0.0 <= r.epsilon <= res.true_epsilon


def test_custom_grid_and_zero_target():
    res = run_lidp_gaussian(50.0, 8, 4, 30, run_grid=[10, 20], rng=0)
    np.testing.assert_array_equal(res.run_grid, [10, 20, 30])
    assert res.target_epsilon == 0.0
    assert res.runs_needed_baseline is None and res.sample_complexity_gain is None


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="sigma"):
        run_lidp_gaussian(0.0, 8, 4, 10)
    with pytest.raises(ValueError, match="dim"):
        run_lidp_gaussian(1.0, 0, 4, 10)
    with pytest.raises(ValueError, match="num_canaries"):
        run_lidp_gaussian(1.0, 8, 3, 10)  # wilson4 needs k ≥ 4
    with pytest.raises(ValueError, match="num_runs"):
        run_lidp_gaussian(1.0, 8, 4, 0)
    with pytest.raises(ValueError, match="method"):
        run_lidp_gaussian(1.0, 8, 4, 10, method="clopper-pearson")
    with pytest.raises(ValueError, match="delta"):
        run_lidp_gaussian(1.0, 8, 4, 10, delta=0.0)
    with pytest.raises(ValueError, match="run_grid"):
        run_lidp_gaussian(1.0, 8, 4, 10, run_grid=[0, 5])
    with pytest.raises(ValueError, match="num_tuning_runs"):
        run_lidp_gaussian(1.0, 8, 4, 10, num_tuning_runs=0)
    with pytest.raises(ValueError, match="num_runs"):
        lidp_gaussian_statistics(1.0, 8, 4, -1)


def test_cli_json_and_table():
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    runner = CliRunner()
    args = [
        "audit",
        "lidp-gaussian",
        "--sigma",
        "1",
        "--dim",
        "16",
        "--canaries",
        "4",
        "--runs",
        "60",
    ]
    res = runner.invoke(build_app(), [*args, "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["num_canaries"] == 4 and data["num_runs"] == 60 and data["seed"] == 3
    direct = run_lidp_gaussian(1.0, 16, 4, 60, rng=3)
    assert data["lidp"]["epsilon"] == pytest.approx(direct.lidp.epsilon)
    res = runner.invoke(build_app(), [*args, "--seed", "3", "--method", "wilson2"])
    assert res.exit_code == 0 and "canaries/run" in res.stdout
    bad = runner.invoke(
        build_app(),
        ["audit", "lidp-gaussian", "--sigma", "-1", "--dim", "4", "--canaries", "4", "--runs", "5"],
    )
    assert bad.exit_code == 2
