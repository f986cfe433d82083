"""The mechanism audit's automatic sizing (the default) and sequential mode, and the pins of
each CLI default to the best method the library has."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpaudit.experiments import WORKFLOWS, MechanismAuditSettings, audit_mechanism
from dpaudit.experiments.mechanism.settings import BASE_SIZES


@pytest.mark.parametrize(("name", "most"), [("naive-float-laplace", 100), ("svt5", 1000)])
def test_sequential_mode_rejects_broken_mechanisms_in_few_pairs(name, most):
    """Both refuted within a few hundred streamed pairs after a pilot of 200 outputs per
    input: far below the 240,000 samples per input and pair of a fixed audit."""
    res = audit_mechanism(MechanismAuditSettings(mechanism=name, mode="sequential"))
    e = res.entries[0]
    state = e.detail
    assert state.rejects_claim and state.rejected_at <= most
    assert e.gap.refutes_claim and e.lower_bound.epsilon > e.claim.epsilon
    assert res.timings["samples_per_input"] < 240_000 / 5
    assert {s.strategy for s in e.selections} >= {"predictable", "anytime-valid"}


@pytest.mark.slow
def test_sequential_mode_never_rejects_an_honest_laplace():
    """Laplace at its claim (true ε = 0.1): no rejection over 5 seeds of 20,000 samples per
    input (pilot, exploration and stream), and the confidence sequence stays below the true
    ε."""
    for seed in range(5):
        s = MechanismAuditSettings(mechanism="laplace", mode="sequential", samples=20_000,
                                   seed=seed)  # fmt: skip
        res = audit_mechanism(s)
        e = res.entries[0]
        assert not e.detail.rejects_claim
        assert 19_000 < res.timings["samples_per_input"] <= 20_000
        assert e.lower_bound.epsilon <= 0.1


def test_automatic_sizing_pays_for_its_stages():
    """Two stages and the second look (``screen_samples`` 20,000: stage 0 shows a bound on
    5,000 training samples and locks its pair, so stage 1, the first with 10,000, audits that
    pair and searches every pair again), all paid for by a Bonferroni correction over
    ``max_stages + 1`` looks."""
    s = MechanismAuditSettings(mechanism="laplace", max_stages=2, screen_samples=20_000)
    res = audit_mechanism(s)
    e, stages = res.entries[0], res.timings["stages"]
    assert tuple(stages[0]["sizes"]) == tuple(x // 4 for x in BASE_SIZES)
    assert stages[0]["epsilon"] > 0 and len(stages) == 3
    assert tuple(stages[1]["sizes"]) == tuple(stages[2]["sizes"]) == BASE_SIZES
    assert [st["pairs"] for st in stages] == [4, 1, 4]
    assert math.isclose(e.lower_bound.epsilon, max(st["epsilon"] for st in stages))
    assert e.lower_bound.confidence_level == 0.95
    looks = [r for r in e.selections if r.choice == "sample sizes"]
    assert looks and looks[0].strategy == "bonferroni" and "0.9833" in looks[0].detail
    assert 0.05 < e.lower_bound.epsilon <= 0.1  # true ε = 0.1


def test_automatic_sizing_locks_the_best_pair_and_counts_its_budget_in_samples():
    """Once a stage with ``screen_samples / 2`` training samples shows a bound, the later
    stages audit only the pair of the best stage so far; the budgets are counted in samples,
    so the same seed gives the same stages and bound, and a budget the second stage overruns
    stops after the first."""
    s = MechanismAuditSettings(mechanism="laplace", max_stages=3, screen_pairs=2,
                               screen_samples=10_000)  # fmt: skip
    res = audit_mechanism(s)
    stages = res.timings["stages"]
    assert stages[0]["pairs"] == 4 and stages[0]["epsilon"] > 0
    assert [st["pairs"] for st in stages[1:]] == [1, 1][: len(stages) - 1]
    assert stages[0]["values"] == 4 * (5_000 + 5_000) + 50_000  # width 1, logistic
    assert stages[0]["fit_entries"] > 0
    again = audit_mechanism(s)
    assert again.entries[0].lower_bound.epsilon == res.entries[0].lower_bound.epsilon
    assert [st["sizes"] for st in again.timings["stages"]] == [st["sizes"] for st in stages]
    one = audit_mechanism(dataclasses.replace(s, sample_budget=stages[0]["values"] + 1))
    assert len(one.timings["stages"]) == 1
    assert one.entries[0].lower_bound.epsilon == stages[0]["epsilon"]
    looks = [r for r in one.entries[0].selections if r.choice == "sample sizes"]
    assert "budgets" in looks[0].detail


def test_given_sizes_run_exactly_once():
    s = MechanismAuditSettings(mechanism="laplace", samples=20_000)
    res = audit_mechanism(s)
    assert "stages" not in res.timings
    assert res.entries[0].detail.samples == 20_000
    assert s.sizes() == (BASE_SIZES[0], BASE_SIZES[1], 20_000)


def test_cli_defaults_are_the_best_methods():
    """With no option, ``audit mechanism`` sizes itself (stages, looks paid) and ``audit
    scores`` refines the number of guesses."""
    mech = WORKFLOWS.get("mechanism").default_settings()
    assert mech.mode == "auto" and not mech.sized_by_user
    scores = WORKFLOWS.get("scores").default_settings()
    assert scores.refine is True and scores.selection != "bonferroni"


def test_mode_and_budget_checked():
    with pytest.raises(ValueError, match="mode"):
        MechanismAuditSettings(mode="fast")
    with pytest.raises(ValueError, match="sample_budget"):
        MechanismAuditSettings(sample_budget=0)
    with pytest.raises(ValueError, match="fit_budget"):
        MechanismAuditSettings(fit_budget=-1)
    with pytest.raises(ValueError, match="max_stages"):
        MechanismAuditSettings(max_stages=0)
    with pytest.raises(ValueError, match="samples"):
        MechanismAuditSettings(samples=0)


def _bench(module: str):
    """The benchmark script ``benchmarks/<module>.py``, imported (the tests tie the docs'
    tables to what the benchmarks make of their JSON), and the repository root."""
    import importlib
    import pathlib
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        return importlib.import_module(module), root
    finally:
        sys.path.remove(str(root / "benchmarks"))


def test_docs_power_table_is_the_benchmarks():
    """The mechanism page's power table is exactly what bench_sequential makes of its JSON."""
    import json

    bench, root = _bench("bench_sequential")
    results = json.loads((root / "benchmarks/results/sequential.json").read_text())
    assert bench.power_table(results) in (root / "docs/workflows/mechanism.md").read_text()


def test_docs_oracle_table_is_the_benchmarks():
    """The page's table of the fewest pairs a sequential test needs is the benchmark's."""
    import json

    bench, root = _bench("bench_sequential")
    results = json.loads((root / "benchmarks/results/sequential.json").read_text())
    assert bench.oracle_table(results) in (root / "docs/workflows/mechanism.md").read_text()
    for row in results["oracle"]:  # the exact laws match the real samplers (64 bins, 200k)
        assert row["sampler_tv"] < 0.02
        assert row["min_pairs"] <= row["event_pairs"]  # no bet grows faster than KL_inf
        assert row["min_pairs"] <= row["ramp_pairs"] <= row["event_pairs"]


def test_oracle_kl_inf_and_kelly_growth_of_randomised_response():
    """Randomised response, P(truth) = 3/4 (true ε = ln 3), against the claim ε = 0: the
    closest pair the claim allows is (1/2, 1/2) for both inputs, KL_inf = 2·KL((3/4, 1/4) ‖
    (1/2, 1/2)) = 0.2616; at the claim ε = ln 3 nothing is left to find; the best event's
    Kelly growth stays below KL_inf."""
    bench, _ = _bench("bench_sequential")
    pa, pb = np.array([0.25, 0.75]), np.array([0.75, 0.25])
    want = 2 * (0.75 * math.log(1.5) + 0.25 * math.log(0.5))
    assert math.isclose(bench._kl_inf(pa, pb, 0.0), want, rel_tol=1e-6)
    assert bench._kl_inf(pa, pb, math.log(3.0)) < 1e-9
    growth = bench._best_event_growth(pa, pb, 0.0)  # S = {first outcome}: Z = X − Y
    kelly = 0.5625 * math.log(1.8) + 0.0625 * math.log(0.2)  # Z = ±1 w.p. 9/16, 1/16: λ = 0.8
    assert math.isclose(growth, kelly, rel_tol=1e-6)
    assert growth < want and bench._pair_epsilon(pa, pb) == math.log(3.0)


def test_oracle_witness_growth_against_events_and_a_naive_sum():
    """A witness with values 0 and 1 is an event: its growth is the event's Kelly growth. A
    ramp's growth is ``max_λ Σ_o Σ_o′ P(o) Q(o′) log(1 + λ(g(o) − e^ε g(o′)))``, summed over
    every pair of outputs (the slow form), on a law of 7 outputs with g on the 101-level grid;
    on Laplace outputs (whose log-likelihood ratio is linear between the two means) a ramp
    grows faster than every event, and no faster than ``KL_inf``."""
    from scipy import optimize

    bench, _ = _bench("bench_sequential")
    pa, pb = np.array([0.25, 0.75]), np.array([0.75, 0.25])
    event = bench._witness_growth(np.array([0.0, 1.0]), pa, pb, 1.0)  # S = {second outcome}
    assert math.isclose(event, bench._kelly_growth(0.75, 0.25, 1.0), rel_tol=1e-6)
    rng = np.random.default_rng(3)
    pos, neg = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    g, f = np.round(rng.uniform(size=7), 2), math.exp(0.1)
    z = (g[:, None] - f * g[None, :]).ravel()
    w = (pos[:, None] * neg[None, :]).ravel()
    naive = -optimize.minimize_scalar(lambda lam: -np.sum(w * np.log1p(lam * z)),
                                      bounds=(0.0, 0.9999 / f), method="bounded").fun  # fmt: skip
    assert math.isclose(bench._witness_growth(g, pos, neg, f), max(naive, 0.0), rel_tol=1e-6)
    x = np.linspace(-4, 4, 161)  # Laplace(±0.5, 1) on a grid, claim ε = 0.1 (true 1.0)
    pa, pb = np.exp(-np.abs(x + 0.5)), np.exp(-np.abs(x - 0.5))
    pa, pb = pa / pa.sum(), pb / pb.sum()
    ramp, _ = bench._best_ramp_growth(pa, pb, 0.1)
    events = max(bench._best_event_growth(pa, pb, 0.1), bench._best_event_growth(pb, pa, 0.1))
    assert bench._kl_inf(pa, pb, 0.1) >= ramp > 1.05 * events > 0  # 0.139, 0.122, 0.114


def test_docs_auto_sizing_table_is_the_benchmarks():
    """The mechanism page's table of the default (automatically sized) audits is exactly what
    bench_auto_sizing makes of its JSON, one row per DP-Sniper mechanism with a published
    bound."""
    import json

    bench, root = _bench("bench_auto_sizing")
    rows = json.loads((root / "benchmarks/results/auto_sizing.json").read_text())["rows"]
    assert [r["mechanism"] for r in rows] == bench.suite()
    assert bench.table(rows) in (root / "docs/workflows/mechanism.md").read_text()


def test_docs_auto_sizing_seeds_are_the_benchmarks():
    """The page's table and sentence over seeds 0-2 are what bench_auto_sizing makes of its two
    JSON files; seeds 1 and 2 cover the whole suite, each row under its own seed, and each
    ratio is its bound over the published one."""
    import json

    bench, root = _bench("bench_auto_sizing")
    results = json.loads((root / "benchmarks/results/auto_sizing.json").read_text())
    seeds = json.loads((root / "benchmarks/results/auto_sizing_seeds.json").read_text())
    assert sorted(seeds["seeds"]) == ["1", "2"]
    for seed, part in seeds["seeds"].items():
        assert [r["mechanism"] for r in part["rows"]] == bench.suite()
        for r in part["rows"]:
            assert r["seed"] == int(seed)
            assert math.isclose(r["ratio"], r["bound"] / r["published_dp_sniper"])
    page = (root / "docs/workflows/mechanism.md").read_text()
    assert bench.seeds_table(results, seeds) in page
    assert bench.seeds_summary(results, seeds) in " ".join(page.split())
