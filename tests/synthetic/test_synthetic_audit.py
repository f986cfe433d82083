"""The synthetic-data audit: settings, refusals before any run, and (with the smartnoise
environment built: ``make venv-smartnoise``) the library as installed — its calibration, the
white-box reading of its scores, the planted bug and the inferred-domain violation refuted,
their controls not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from page_rows import mean_shift_figure, white_box_row

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.errors import MissingDependencyError
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.synthetic_data import (
    SyntheticDataSettings,
    audit_synthetic_data,
    pilot_threshold,
)
from dpaudit.systems import SYSTEMS
from dpaudit.systems._external import VENVS_ENV
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell, SyntheticGenerator

ROOT = Path(__file__).resolve().parents[2]
SMARTNOISE = LIBRARIES["smartnoise"]
needs_smartnoise = pytest.mark.skipif(
    not SMARTNOISE.available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"generators": ()}, "generators must name at least one"),
        ({"generators": ("dp-fedavg",)}, "unknown synthetic-data generator"),
        ({"threat_models": ("grey-box",)}, "unknown synthetic-data threat model"),
        ({"dataset": "nope"}, "unknown worst-case dataset"),
        ({"dataset": "tree-flip", "columns": 4}, "tree-flip design has 3 columns"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"runs": 0}, "runs"),
        ({"rounds": 0}, "rounds"),
    ],
)
def test_bad_settings_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        SyntheticDataSettings(**kw)


def test_missing_environment_is_refused_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))
    s = SyntheticDataSettings(generators=("smartnoise-mst",), runs=2, pilot_runs=2)
    with pytest.raises(MissingDependencyError, match="run `make venv-smartnoise`"):
        WORKFLOWS.get("synthetic-data").check_settings(s)
    with pytest.raises(MissingDependencyError, match="make venv-smartnoise"):
        audit_synthetic_data(s)


def test_data_outside_the_domain_is_refused_before_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))  # no environment: the domain fails first
    g = SyntheticGenerator(GeneratorCell("smartnoise-mst", 1.0, 1e-2))
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=3)
    bad = np.array([[0, 0], [0, 5]])
    with pytest.raises(ValueError, match=r"datasets\[1\] has values outside the declared domain"):
        g.fit_runs([pair.D, bad], [0, 1], [1, 2], domain=pair.domain)


def test_systems_registered_with_their_claims():
    names = SYSTEMS.names()
    for n in ("smartnoise-mst", "smartnoise-aim", "smartnoise-mst-quiet-noise"):
        assert n in names
    g = SYSTEMS.get("smartnoise-mst")(GeneratorCell("smartnoise-mst", 1.0, 1e-2))
    c = g.claim(rho=0.1)
    assert (c.epsilon, c.delta) == (1.0, 1e-2) and "ρ = 0.1" in c.source
    assert g.bug is None
    assert SYSTEMS.get("smartnoise-mst-quiet-noise")(
        GeneratorCell("smartnoise-mst-quiet-noise", 1.0, 1e-2)).bug  # fmt: skip
    with pytest.raises(ValueError, match="is not the δ the generator claims"):
        g.claim(delta=1e-5)


def test_pilot_threshold_prefers_the_separating_cut():
    t, e = pilot_threshold(np.arange(10.0, 30.0), np.arange(0.0, 20.0), 1e-2, 0.95)
    assert 10.0 <= t <= 20.0 and e > 0


def test_mean_shift_of_an_llr_estimates_mu_on_its_own_scale():
    """μ-GDP Gaussian LLRs, N(±μ²/2, μ²), seeded: the mean shift is μ² and its square root
    μ, within its interval; a statistic that is not an LLR gets the shift only."""
    from dpaudit.experiments.synthetic_data.pipeline import _mean_shift

    g = np.random.default_rng(4)
    mu, n = 0.45, 4000
    pos, neg = g.normal(mu**2 / 2, mu, n), g.normal(-(mu**2) / 2, mu, n)
    out = _mean_shift(pos, neg, "white-box")
    half = 1.96 * math.sqrt(2 * mu**2 / n)
    np.testing.assert_allclose(out["mean_shift_interval"].high - out["mean_shift"], half,
                               rtol=0.05)  # fmt: skip
    assert out["mean_shift_interval"].contains(mu**2)
    assert out["llr_mu_interval"].contains(mu)
    np.testing.assert_allclose(out["llr_mu_estimate"], math.sqrt(out["mean_shift"]))
    assert abs(out["llr_mu_estimate"] - mu) < 0.03
    assert set(_mean_shift(pos, neg, "black-box")) == {"mean_shift", "mean_shift_interval"}


@needs_smartnoise
def test_mst_as_installed_is_calibrated_as_it_claims_and_read_correctly():
    """White-box contract: MST measures every one-way marginal with σ√d and the d − 1 tree
    edges with σ√(d−1), σ = √(3/(2ρ)) (McKenna et al. 2021, Alg. 1 with mbi's unit-norm
    weights), chooses d − 1 edges with ε = √(8(ρ/3)/(d − 1)) each, and the attack's
    recomputed edge scores equal the library's own (selection_llr checks them). On tree-flip
    the scores nearly tie, so each run's choice LLR is one of the three closed-form values
    of ``test_mst_choice_llr_on_tree_flip_matches_its_closed_form`` (to the near-tie's 0.05)."""
    from dpaudit.attacks._synthetic import selection_llr

    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=200)
    g = SyntheticGenerator(GeneratorCell("smartnoise-mst", 1.0, 1e-2))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1, 0, 1], [11, 12, 13, 14], domain=pair.domain)
    assert r.version == "1.0.8"
    sigma = math.sqrt(3 / (2 * r.rho))
    e = math.exp(math.sqrt(8 * r.rho / 3 / 2))
    closed = [math.log(3 * e / (e + 2)), math.log(3 / (e + 2)) + math.log(2 * e / (e + 1)),
              math.log(3 / (e + 2)) + math.log(2 / (e + 1))]  # fmt: skip
    for run, data in zip(r.runs, (pair.D, pair.D_prime) * 2, strict=True):
        one = [m for m in run["measurements"] if len(m["clique"]) == 1]
        two = [m for m in run["measurements"] if len(m["clique"]) == 2]
        assert len(one) == 3 and len(two) == 2 and len(run["selections"]) == 2
        np.testing.assert_allclose([m["sigma"] for m in one], sigma * math.sqrt(3), rtol=1e-9)
        np.testing.assert_allclose([m["sigma"] for m in two], sigma * math.sqrt(2), rtol=1e-9)
        np.testing.assert_allclose([s["epsilon"] for s in run["selections"]],
                                   math.log(e), rtol=1e-9)  # fmt: skip
        llr = selection_llr(run["selections"], pair.D, pair.target, pair.domain,
                            check_observed=data)  # fmt: skip
        assert min(abs(llr - v) for v in closed) < 0.05, (llr, closed)


@needs_smartnoise
def test_aim_white_box_spends_exactly_its_budget_and_stops_after_its_last_measurement():
    """AIM as smartnoise implements it (McKenna et al. 2022, arXiv:2201.12677, Alg. 1): the
    one-way marginals, then rounds of one exponential-mechanism choice (ρ = ε²/8, bounded
    range) and one Gaussian measurement (ρ = 1/(2σ²)) until ρ is spent. The recorded
    transcript spends exactly the library's ρ (so nothing it measured is missing), the run
    stops after its last measurement (no final model fit), and the attack's recomputed scores
    are the library's own."""
    from dpaudit.attacks import selection_llr

    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=200)
    g = SyntheticGenerator(GeneratorCell("smartnoise-aim", 1.0, 1e-2, options=(("rounds", 4),)))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 4], domain=pair.domain)
    for run, data in zip(r.runs, (pair.D, pair.D_prime), strict=True):
        ms, sels = run["measurements"], run["selections"]
        assert len(ms) == 3 + len(sels) and len(sels) >= 1
        spent = sum(0.5 / m["sigma"] ** 2 for m in ms) + sum(s["epsilon"] ** 2 / 8 for s in sels)
        assert spent == pytest.approx(r.rho, rel=1e-9)
        selection_llr(sels, pair.D, pair.target, pair.domain, check_observed=data)


@needs_smartnoise
def test_smartnoise_samples_the_private_row_count_by_default():
    """Known violation: smartnoise's ``sample()`` with no argument returns ``len(data)`` rows
    (its ``num_rows``), the private table's exact size, so the synthetic table of D ∪ {t} has
    one row more than that of D on every run; the control (a public size) does not move."""
    from dpaudit.attacks import synthetic_rows

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)
    for name, rows in (("smartnoise-mst-library-rows", (21, 20)), ("smartnoise-mst", (9, 9))):
        g = SyntheticGenerator(GeneratorCell(name, 1.0, 1e-2))
        r = g.fit_runs([pair.D, pair.D_prime], [1, 0], [5, 6], domain=pair.domain,
                       observe=("synthetic",), sample_rows=9)  # fmt: skip
        assert tuple(synthetic_rows(t) for t in r.synthetic) == rows


@needs_smartnoise
def test_planted_quiet_noise_is_refused_and_correct_mst_is_not():
    """40 evaluation run pairs (10 pilot): the planted bug's noisy marginals separate D from
    D ∪ {t} with μ ≈ 3–4, not perfectly, and 20 pairs bound ε by about 1.26–1.58 at most, so
    one or two runs on the wrong side of the pilot's threshold left the bound under the
    claim of 1 on 5 of 9 runs at 20 pairs (0.75–1.59, 6 or 14 pilot pairs; smartnoise's
    noise is not seedable); at 40 pairs four runs gave 2.02–2.23."""
    s = SyntheticDataSettings(
        generators=("smartnoise-mst-quiet-noise", "smartnoise-mst"), runs=40, pilot_runs=10,
        group_size=50, threat_models=("white-box-measurements",), seed=1,
    )  # fmt: skip
    r = audit_synthetic_data(s)
    bug, ok = r.entries
    assert bug.system == "smartnoise-mst-quiet-noise" and bug.gap.refutes_claim
    assert bug.lower_bound.epsilon > 1.0
    assert not ok.gap.refutes_claim
    assert r.versions["smartnoise-synth"] == "1.0.8"


@needs_smartnoise
def test_inferred_domain_violation_is_refuted_and_its_control_is_not():
    s = SyntheticDataSettings(
        generators=("smartnoise-mst-inferred-domain", "smartnoise-mst"), dataset="unique-record",
        runs=15, pilot_runs=3, group_size=18, threat_models=("white-box-domain",), seed=2,
    )  # fmt: skip
    r = audit_synthetic_data(s)
    bad, control = r.entries
    assert bad.gap.refutes_claim and bad.detail.fp == 0 and bad.detail.tp == 15
    assert bad.lower_bound.epsilon > 1.2
    assert not control.gap.refutes_claim and control.lower_bound.epsilon == 0.0


def test_sequential_mode_needs_one_threat_model():
    with pytest.raises(ValueError, match="give one threat model"):
        SyntheticDataSettings(mode="sequential", threat_models=("white-box", "black-box"))
    with pytest.raises(ValueError, match="mode"):
        SyntheticDataSettings(mode="anytime")


@needs_smartnoise
def test_sequential_mode_stops_early_on_the_planted_bug_and_keeps_the_control(tmp_path):
    s = SyntheticDataSettings(
        generators=("smartnoise-mst-quiet-noise", "smartnoise-mst"), runs=48, pilot_runs=6,
        group_size=16, threat_models=("white-box-measurements",), seed=1, mode="sequential",
    )  # fmt: skip
    bug, ok = audit_synthetic_data(s, checkpoint=tmp_path).entries
    assert bug.adversary.endswith("sequential") and bug.lower_bound.epsilon_is_valid
    assert bug.gap.refutes_claim and bug.detail.runs <= 32 < s.runs  # stopped within 2 jobs
    assert "claim rejected at run pair" in bug.lower_bound.note
    assert not ok.gap.refutes_claim and ok.detail.runs == s.runs
    assert math.isnan(bug.detail.mu_lower)


@pytest.mark.parametrize(
    ("recorded", "generator"),
    [
        ("mst-worst-case-eps1.json", "smartnoise-mst"),
        ("dpmm-worst-case-eps1.json", "dpmm-mst"),
        ("dpmm-worst-case-choices-eps1.json", "dpmm-mst"),
        ("dpmm-worst-case-choices-eps1-seed48.json", "dpmm-mst"),
        ("dpmm-worst-case-eps10.json", "dpmm-mst"),
    ],
)
def test_docs_mst_rows_come_from_the_recorded_run(recorded, generator):
    """The MST rows of the docs page (dpmm's at ε = 1 and 10), and the √(mean shift)
    figures of its prose, state what ``docs/results/synthetic-data/<recorded>`` holds."""
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    d = json.loads((ROOT / "docs/results/synthetic-data" / recorded).read_text())
    s = d["settings"]
    assert s["generators"] == [generator] and s["dataset"] == "tree-flip"
    for e in d["entries"]:
        row = white_box_row(generator, e, s, e["detail"]["dataset"])
        assert row in page, row
        fig = mean_shift_figure(e["detail"])
        assert fig in page, fig


@pytest.mark.parametrize(
    ("generator", "threat_model", "serves"),
    [
        ("dpmm-mst-data-domain", "white-box", "white-box-measurements"),  # marginals only
        ("smartnoise-mwem-public-domain", "white-box", "white-box-mwem"),
        ("smartnoise-mst", "white-box-laplace", "white-box-selections"),
        ("datasynthesizer-privbayes", "white-box-mwem", "white-box-network"),
        ("smartnoise-dpctgan", "white-box-domain", "black-box-density"),  # no white-box view
    ],
)
def test_a_threat_model_the_generator_cannot_serve_is_refused_before_any_run(
    generator, threat_model, serves
):
    match = rf"{threat_model!r}, which generator {generator!r}.*cannot serve; its threat models: "
    with pytest.raises(ValueError, match=match + rf".*{serves}"):
        SyntheticDataSettings(generators=(generator,), threat_models=(threat_model,))


def test_auto_is_each_generators_fullest_view():
    """The default threat model, per generator; given beside others it is named once."""
    s = SyntheticDataSettings(generators=("smartnoise-mst",))
    assert s.threat_models == ("auto",)
    want = {"smartnoise-mst": "white-box", "smartnoise-aim": "white-box",
            "smartnoise-mwem": "white-box-mwem", "datasynthesizer-privbayes": "white-box-laplace",
            "dpmm-mst": "white-box", "dpmm-aim": "white-box",
            "smartnoise-dpctgan": "white-box-dpsgd",
            "smartnoise-patectgan": "white-box-student", "smartnoise-dpgan": "white-box-dpsgd",
            "smartnoise-pategan": "white-box-votes"}  # fmt: skip
    for g, t in want.items():
        assert s.threat_models_for(g) == (t,)
    both = SyntheticDataSettings(generators=("smartnoise-mst",),
                                 threat_models=("white-box", "auto", "black-box"))  # fmt: skip
    assert both.threat_models_for("smartnoise-mst") == ("white-box", "black-box")
