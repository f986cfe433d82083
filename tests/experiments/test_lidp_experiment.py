"""The Gaussian sum-query LiDP experiment (Pillutla et al. 2023, arXiv:2305.18447) and its CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import lidp_epsilon
from dpaudit.conversions._gdp import gdp_epsilon
from dpaudit.experiments.lidp_gaussian.pipeline import run_lidp_gaussian
from dpaudit.experiments.lidp_gaussian.protocol import _runs_needed
from dpaudit.experiments.lidp_gaussian.settings import LiDPGaussianSettings
from dpaudit.experiments.lidp_gaussian.simulation import lidp_gaussian_statistics


def _brute_force(sigma, dim, k, n, seed):
    """The audit simulated literally in ℝ^d (canaries normalised Gaussians)."""
    g = np.random.default_rng(seed)

    def unit(shape):
        x = g.standard_normal(shape)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    inc = unit((n, k, dim))
    y = inc.sum(axis=1) + sigma * g.standard_normal((n, dim))
    y0 = inc[:, : k - 1].sum(axis=1) + sigma * g.standard_normal((n, dim))
    return np.einsum("rkd,rd->rk", inc, y), np.einsum("rkd,rd->rk", unit((n, k, dim)), y0)


def test_statistics_have_the_right_distribution():
    sigma, dim, k, n = 1.5, 40, 6, 3000
    st = lidp_gaussian_statistics(sigma, dim, k, n, rng=0)
    assert st.alternative.shape == (n, k) and st.null.shape == (n, k)
    # ⟨y, c_j⟩ = 1{included} + Σ_{i≠j} ⟨c_i, c_j⟩ + σ⟨Z, c_j⟩; E⟨c_i, c_j⟩² = 1/d
    var = sigma**2 + (k - 1) / dim
    se = np.sqrt(var / (n * k)) * 4  # loose: columns within a row are correlated
    assert abs(st.alternative.mean() - 1.0) < 4 * se
    assert abs(st.null.mean()) < 4 * se
    assert st.alternative.var() == pytest.approx(var, rel=0.06)
    assert st.null.var() == pytest.approx(var, rel=0.06)
    again = lidp_gaussian_statistics(sigma, dim, k, n, rng=0)
    np.testing.assert_array_equal(st.alternative, again.alternative)
    # k = 1: the null run includes no canary
    one = lidp_gaussian_statistics(sigma, dim, 1, 2000, rng=1)
    assert one.null.var() == pytest.approx(sigma**2, rel=0.1)


@pytest.mark.parametrize(("sigma", "dim", "k"), [(0.4, 12, 4), (0.4, 3, 4), (0.8, 1, 2)])
def test_low_dimensional_simulation_matches_the_literal_one(sigma, dim, k):
    # d ≥ k + 1 uses the Bartlett frame, d ≤ k draws in ℝ^d; both must match ℝ^d exactly
    n = 6000
    st = lidp_gaussian_statistics(sigma, dim, k, n, rng=3)
    alt, null = _brute_force(sigma, dim, k, n, seed=4)
    for ours, ref in (
        (st.alternative[:, 0], alt[:, 0]),
        (st.alternative.sum(axis=1), alt.sum(axis=1)),
        (st.alternative.max(axis=1), alt.max(axis=1)),
        (st.null[:, 0], null[:, 0]),
        (st.null.max(axis=1), null.max(axis=1)),
    ):
        assert stats.ks_2samp(ours, ref).pvalue > 1e-3
    # within-row covariance of the alternative statistics is 1/d (shared canary overlap)
    cov = np.cov(st.alternative[:, 0], st.alternative[:, 1])[0, 1]
    assert cov == pytest.approx(1.0 / dim, abs=0.05)


def test_runs_needed_reads_the_curve_in_log_n():
    grid = np.array([10, 100, 1000])
    assert _runs_needed(grid, np.array([0.0, 1.0, 2.0]), 1.5) == pytest.approx(np.sqrt(1e5))
    assert _runs_needed(grid, np.array([0.0, 1.0, 2.0]), 2.0) == pytest.approx(1000)
    assert _runs_needed(grid, np.array([0.0, 1.0, 2.0]), 2.5) is None
    assert _runs_needed(grid, np.array([3.0, 1.0, 3.0]), 2.0) == pytest.approx(np.sqrt(1e5))
    assert _runs_needed(grid, np.array([3.0, 3.0, 3.0]), 2.0) == 10.0


def test_experiment_end_to_end_is_consistent_and_reproducible():
    res = run_lidp_gaussian(2.0, 100, 16, 300, num_repetitions=3, rng=5).detail
    assert res.true_epsilon == pytest.approx(gdp_epsilon(0.5, 1e-5))
    g = res.run_grid
    assert g[-1] == 300 and np.all(np.diff(g) > 0) and g[0] == 10
    assert res.epsilon_baseline_by_repetition.shape == (3, g.size)
    assert res.epsilon_lidp_by_repetition.shape == res.thresholds_lidp.shape == (3, g.size)
    np.testing.assert_allclose(res.epsilon_baseline, res.epsilon_baseline_by_repetition.mean(0))
    np.testing.assert_allclose(res.epsilon_lidp, res.epsilon_lidp_by_repetition.mean(0))
    assert res.target_epsilon == res.epsilon_baseline[-1]
    assert res.epsilon_baseline_by_repetition[0, -1] == res.baseline.epsilon
    assert res.epsilon_lidp_by_repetition[0, -1] == res.lidp.epsilon
    assert res.baseline.method == "clopper-pearson" and res.lidp.method == "wilson4"
    assert res.lidp.num_canaries == 16 and res.baseline.num_canaries == 1
    # lower bounds stay below the truth here
    assert np.all(res.epsilon_lidp_by_repetition <= res.true_epsilon)
    assert np.all(res.epsilon_baseline_by_repetition <= res.true_epsilon)
    # runs needed: from there on the mean curve stays at/above the target
    for need, curve in (
        (res.runs_needed_baseline, res.epsilon_baseline),
        (res.runs_needed_lidp, res.epsilon_lidp),
    ):
        assert need is not None and g[0] <= need <= g[-1]
        assert np.all(curve[g >= need] >= res.target_epsilon - 1e-12)
    assert res.sample_complexity_gain == pytest.approx(
        res.runs_needed_baseline / res.runs_needed_lidp
    )
    lo, hi = res.gain_interval
    assert 0 <= lo <= hi
    again = run_lidp_gaussian(2.0, 100, 16, 300, num_repetitions=3, rng=5).detail
    np.testing.assert_array_equal(res.epsilon_lidp_by_repetition, again.epsilon_lidp_by_repetition)
    assert again.gain_interval == res.gain_interval
    # repetition r does not depend on how many repetitions are run
    two = run_lidp_gaussian(2.0, 100, 16, 300, num_repetitions=2, rng=5).detail
    np.testing.assert_array_equal(
        two.epsilon_lidp_by_repetition, res.epsilon_lidp_by_repetition[:2]
    )
    data = json.loads(res.to_json())
    assert data["selection"] == "split" and data["num_repetitions"] == 3


def test_audit_result_entries_bounds_claims_and_selection():
    res = run_lidp_gaussian(2.0, 100, 16, 300, num_repetitions=3, rng=5)
    r = res.detail
    assert res.workflow == "lidp-gaussian" and res.seed == 5
    assert [e.adversary for e in res.entries] == ["1 canary per run", "16 canaries per run"]
    assert res.settings == LiDPGaussianSettings(2.0, 100, 16, 300, num_repetitions=3)
    assert res.timings["total"] > 0 and "numpy" in res.versions
    for entry, single in zip(res.entries, (r.baseline, r.lidp), strict=True):
        lb = entry.lower_bound
        # the valid bound: repetition 0 with all runs, at the stated level and δ
        assert lb.epsilon == single.epsilon and lb.epsilon_is_valid
        assert lb.confidence_level == 0.95 and lb.delta == 1e-5
        assert entry.exact is entry.claim and entry.claim.epsilon == r.true_epsilon
        assert entry.claim.epsilon == pytest.approx(gdp_epsilon(0.5, 1e-5), rel=1e-12)
        assert entry.gap.epsilon_claim == r.true_epsilon and not entry.gap.refutes_claim
        (sel,) = entry.selections
        assert (sel.choice, sel.strategy) == ("threshold τ", "split")
        assert entry.detail is single
    assert res.entries[0].lower_bound.method.startswith("Clopper–Pearson")
    json.loads(res.to_json())


def test_settings_parse_strictly_and_validate():
    from dpaudit._settings import from_mapping

    s = from_mapping(LiDPGaussianSettings, {"sigma": 2, "num_runs": 300, "run_grid": [10, 100]})
    assert s.sigma == 2.0 and s.run_grid == (10, 100) and s.tuning_runs == 300
    with pytest.raises(ValueError, match="num_runs must be an integer"):
        from_mapping(LiDPGaussianSettings, {"num_runs": "30"})
    with pytest.raises(ValueError, match="sigma must be a number"):
        from_mapping(LiDPGaussianSettings, {"sigma": True})
    with pytest.raises(ValueError, match="unknown setting 'canaries'"):
        from_mapping(LiDPGaussianSettings, {"canaries": 4})
    with pytest.raises(ValueError, match="run_grid"):
        from_mapping(LiDPGaussianSettings, {"num_runs": 50, "run_grid": [10, 100]})


def test_k_canaries_need_several_times_fewer_runs():
    # Paper 002's setting ε ≈ 2 (σ² = 4.62), d = 10⁶, k = 64, n = 1000. With seed 11 the gain
    # is 4.3× (90% bootstrap 3.5–5.5×) over these 12 repetitions, 3.5× (3.0–4.0×) over 30.
    res = run_lidp_gaussian(2.149, 10**6, 64, 1000, num_repetitions=12, rng=11).detail
    assert res.runs_needed_baseline == pytest.approx(1000)
    assert res.sample_complexity_gain > 2.5
    assert res.gain_interval[0] > 1.5
    # and with all runs LiDP is well above the baseline in every repetition's mean
    assert res.epsilon_lidp[-1] > res.epsilon_baseline[-1] + 0.15
    # the variance across repetitions is several times smaller with k canaries
    sd_b = res.epsilon_baseline_by_repetition[:, -1].std()
    sd_l = res.epsilon_lidp_by_repetition[:, -1].std()
    assert sd_l < sd_b / 3


def test_threshold_is_tuned_on_separate_runs():
    res = run_lidp_gaussian(
        1.0, 32, 8, 120, num_repetitions=2, num_tuning_runs=80, method="wilson2", rng=2
    ).detail
    assert res.num_tuning_runs == 80
    st = lidp_gaussian_statistics(1.0, 32, 8, 120, rng=11)
    # the bound at a tuned threshold is an ordinary LiDP bound on the audited outcomes
    r = lidp_epsilon(
        st.alternative >= res.thresholds_lidp[0, -1],
        st.null >= res.thresholds_lidp[0, -1],
        delta=1e-5,
        method="wilson2",
    )
    assert 0.0 <= r.epsilon <= res.true_epsilon


def test_custom_grid_target_and_zero_target():
    res = run_lidp_gaussian(50.0, 8, 4, 30, num_repetitions=2, run_grid=[10, 20], rng=0).detail
    np.testing.assert_array_equal(res.run_grid, [10, 20, 30])
    assert res.target_epsilon == 0.0
    assert res.runs_needed_baseline is None and res.sample_complexity_gain is None
    assert res.gain_interval is None
    fixed = run_lidp_gaussian(
        2.0, 1000, 16, 200, num_repetitions=2, target_epsilon=0.2, rng=1
    ).detail
    assert fixed.target_epsilon == 0.2
    if fixed.runs_needed_lidp is not None:
        assert np.all(fixed.epsilon_lidp[fixed.run_grid >= fixed.runs_needed_lidp] >= 0.2)
    one = run_lidp_gaussian(2.0, 1000, 16, 200, num_repetitions=1, rng=1).detail
    assert one.gain_interval is None


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="sigma"):
        run_lidp_gaussian(0.0, 8, 4, 10)
    with pytest.raises(ValueError, match="dim"):
        run_lidp_gaussian(1.0, 0, 4, 10)
    with pytest.raises(ValueError, match="num_canaries"):
        run_lidp_gaussian(1.0, 8, 3, 10)  # wilson4 needs k ≥ 4
    with pytest.raises(ValueError, match="num_runs"):
        run_lidp_gaussian(1.0, 8, 4, 0)
    with pytest.raises(ValueError, match="num_repetitions"):
        run_lidp_gaussian(1.0, 8, 4, 10, num_repetitions=0)
    with pytest.raises(ValueError, match="target_epsilon"):
        run_lidp_gaussian(1.0, 8, 4, 10, target_epsilon=0.0)
    with pytest.raises(ValueError, match="method"):
        run_lidp_gaussian(1.0, 8, 4, 10, method="clopper-pearson")
    with pytest.raises(ValueError, match="variance"):
        run_lidp_gaussian(1.0, 8, 4, 10, variance="loose")
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
        "--repetitions",
        "2",
    ]
    res = runner.invoke(build_app(), [*args, "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    top = json.loads(res.stdout)
    assert top["workflow"] == "lidp-gaussian" and top["seed"] == 3
    data = top["detail"]
    assert data["num_canaries"] == 4 and data["num_runs"] == 60 and data["seed"] == 3
    assert data["num_repetitions"] == 2
    direct = run_lidp_gaussian(1.0, 16, 4, 60, num_repetitions=2, rng=3).detail
    assert data["lidp"]["epsilon"] == pytest.approx(direct.lidp.epsilon)
    assert data["epsilon_lidp"] == pytest.approx(direct.epsilon_lidp.tolist())
    lidp_entry = next(e for e in top["entries"] if e["adversary"] == "4 canaries per run")
    assert lidp_entry["lower_bound"]["epsilon"] == pytest.approx(direct.lidp.epsilon)
    res = runner.invoke(build_app(), [*args, "--seed", "3", "--method", "wilson2"])
    assert res.exit_code == 0 and "canaries/run" in res.stdout and "repetitions" in res.stdout
    bad = runner.invoke(
        build_app(),
        ["audit", "lidp-gaussian", "--sigma", "-1", "--dim", "4", "--canaries", "4", "--runs", "5"],
    )
    assert bad.exit_code == 2
