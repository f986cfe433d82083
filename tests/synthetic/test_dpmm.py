"""dpmm 0.1.9 as installed (``make venv-dpmm``; skipped without it): the noise its MST and AIM
actually add, read from the transcript the worker records, and the μ that noise leaves to an
audit of the noisy marginals — the ceiling behind the page's dpmm rows — and the one-way AIM
setting that comes closest, as installed, to the dpmm authors' own audit (Ganev, Annamalai &
Kulynych 2026, "Tight auditing of differential privacy in MST and AIM", arXiv:2604.18352)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from page_rows import components_shifts, mean_shift_figure, white_box_row

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS, measurement_llr, selection_llr
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell, SyntheticGenerator

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results" / "synthetic-data"
needs_dpmm = pytest.mark.skipif(
    not LIBRARIES["dpmm"].available(), reason="dpmm environment not built: make venv-dpmm"
)


def test_one_way_aim_is_registered_with_library_settings_only():
    spec = GENERATORS.get("dpmm-aim-one-way")
    assert (spec.library, spec.synth, spec.bug, spec.public_domain) == ("dpmm", "aim", None, True)
    assert dict(spec.options) == {"degree": 1, "rounds": 3, "compress": False, "n_iters": 50}
    assert "dpmm-aim-one-way" in SYSTEMS.names(tag="synthetic-data")


@needs_dpmm
def test_dpmm_mst_measures_every_marginal_with_sigma_root_3():
    """MST (McKenna, Miklau & Sheldon 2021, arXiv:2108.04978, Alg. 1) puts σ = √(3/(2ρ)) on
    unit-norm weights: σ√d on each of d one-way marginals and σ√(d − 1) on each of the d − 1
    tree edges. dpmm 0.1.9 normalises the edges' weights over its one-way cliques too (its
    ``measure`` takes ``weights = ones(len(self.cliques))`` before the edges join them), so on
    3 columns all five marginals get σ√3 = 3/√(2ρ): Σ 1/σ² = 10ρ/9, and the noisy marginals'
    μ is √(10ρ/9) = √(5/9) ≈ 0.745 of the implied √(2ρ), at every ε."""
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=200)
    g = SyntheticGenerator(GeneratorCell("dpmm-mst", 1.0, 1e-2))
    r = g.fit_runs([pair.D_prime], [0], [7], domain=pair.domain)
    (run,) = r.runs
    ms = run["measurements"]
    assert r.version == "0.1.9" and sorted(len(m["clique"]) for m in ms) == [1, 1, 1, 2, 2]
    np.testing.assert_allclose([m["sigma"] for m in ms], 3 / math.sqrt(2 * r.rho), rtol=1e-9)
    mu = math.sqrt(sum(1 / m["sigma"] ** 2 for m in ms))
    assert mu == pytest.approx(math.sqrt(10 * r.rho / 9), rel=1e-9)
    assert mu / SyntheticGenerator.implied_mu(r.rho) == pytest.approx(math.sqrt(5 / 9), rel=1e-9)
    assert round(mu, 3) == 0.339


@needs_dpmm
def test_dpmm_mst_records_its_tree_choices_and_they_read_as_the_closed_form():
    """dpmm's MST chooses its tree as smartnoise's does (McKenna, Miklau & Sheldon 2021,
    arXiv:2108.04978: ρ/3 over r − 1 = 2 exponential-mechanism choices of ε = √(8(ρ/3)/2)
    each, coefficient ε/2, sensitivity 1, each edge scored by the L1 distance between its
    marginal and the model estimate fitted on the one-way measurements). The worker records
    them; the scores recomputed from the recorded estimate equal dpmm's own (the statistic's
    check), and on tree-flip each run's choice log-likelihood ratio is one of the closed
    form's three values (0.232, 0.029, −0.342; within 0.03, the estimate's near-tie)."""
    pair = WORST_CASE_DATASETS.get("tree-flip")()
    g = SyntheticGenerator(GeneratorCell("dpmm-mst", 1.0, 1e-2))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 4], domain=pair.domain,
                   observe=("measurements", "selections"))  # fmt: skip
    e = math.exp(math.sqrt(8 * r.rho / 3 / 2))
    closed = (math.log(3 * e / (e + 2)), math.log(3 / (e + 2)) + math.log(2 * e / (e + 1)),
              math.log(3 / (e + 2)) + math.log(2 / (e + 1)))  # fmt: skip
    for run, fitted in zip(r.runs, (pair.D, pair.D_prime), strict=True):
        sels = run["selections"]
        assert [len(s["candidates"]) for s in sels] == [3, 2]
        assert sels[0]["candidates"] == [[0, 1], [0, 2], [1, 2]]
        np.testing.assert_allclose([s["epsilon"] for s in sels], math.log(e), rtol=1e-12)
        llr = selection_llr(sels, pair.D, pair.target, pair.domain, check_observed=fitted)
        assert min(abs(llr - v) for v in closed) < 0.03
    assert GENERATORS.get("dpmm-mst").white_box == ("measurements", "selections")


@needs_dpmm
def test_dpmm_aim_records_its_choice_and_spends_rho_as_alg_1_says():
    """AIM (McKenna, Mullins, Sheldon & Miklau 2022, arXiv:2201.12677, Alg. 1) as dpmm 0.1.9
    implements it, at 4 rounds on 3 columns: σ = √(4/(1.8ρ)) on the three one-way marginals
    (0.675ρ), then one last round on the remaining 0.325ρ — a choice with ε = √(8 · 0.1 ·
    0.325ρ) and one marginal with σ = √(1/(1.8 · 0.325ρ)) — so ρ is spent exactly. The choice
    is among the degree-2 workload's six candidates (weights Σ |cl ∩ W|: 2 one-way, 4 two-way;
    sensitivity the largest, 4); the worker records it, the scores recomputed from the recorded
    model estimate equal dpmm's own (the statistic's check), and the choice's log-likelihood
    ratio is within its ε (coefficient ε/2 over the sensitivity, on both score and normaliser)."""
    pair = WORST_CASE_DATASETS.get("tree-flip")()
    g = SyntheticGenerator(GeneratorCell("dpmm-aim", 1.0, 1e-2, options=(("rounds", 4),)))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 4], domain=pair.domain,
                   observe=("measurements", "selections"))  # fmt: skip
    eps = math.sqrt(8 * 0.1 * 0.325 * r.rho)
    for run, fitted in zip(r.runs, (pair.D, pair.D_prime), strict=True):
        (sel,) = run["selections"]
        assert sorted(map(len, sel["candidates"])) == [1, 1, 1, 2, 2, 2]
        assert sorted(sel["weights"]) == [2, 2, 2, 4, 4, 4] and sel["sensitivity"] == 4
        assert sel["epsilon"] == pytest.approx(eps, rel=1e-9)
        ms = run["measurements"]
        np.testing.assert_allclose([m["sigma"] for m in ms],
                                   [math.sqrt(4 / (1.8 * r.rho))] * 3
                                   + [math.sqrt(1 / (1.8 * 0.325 * r.rho))], rtol=1e-9)  # fmt: skip
        assert ms[3]["clique"] == sel["candidates"][sel["chosen"]]
        spent = sum(0.5 / m["sigma"] ** 2 for m in ms) + sel["epsilon"] ** 2 / 8
        assert spent == pytest.approx(r.rho, rel=1e-9)
        llr = selection_llr([sel], pair.D, pair.target, pair.domain, check_observed=fitted)
        assert abs(llr) <= eps
    assert GENERATORS.get("dpmm-aim").white_box == ("measurements", "selections")


@needs_dpmm
def test_dpmm_aim_at_its_default_48_rounds_spends_rho_exactly():
    """At the library's default 16 × 3 = 48 rounds dpmm's AIM starts, as smartnoise's does,
    at σ = √(48/(1.8ρ)) and ε = √(0.8ρ/48), halves σ as its model stops moving and spends what
    is left on a last round: the recorded transcript spends ρ exactly, so the white-box view's
    ceiling is √(2ρ) (arXiv:2201.12677, Alg. 1)."""
    pair = WORST_CASE_DATASETS.get("tree-flip")()
    g = SyntheticGenerator(GeneratorCell("dpmm-aim", 1.0, 1e-2, options=(("rounds", 48),)))
    r = g.fit_runs([pair.D_prime], [0], [5], domain=pair.domain,
                   observe=("measurements", "selections"))  # fmt: skip
    (run,) = r.runs
    ms, sels = run["measurements"], run["selections"]
    np.testing.assert_allclose([m["sigma"] for m in ms[:3]], math.sqrt(48 / (1.8 * r.rho)),
                               rtol=1e-9)  # fmt: skip
    assert len(ms) == 3 + len(sels) and 1 < len(sels) < 48
    assert sels[0]["epsilon"] == pytest.approx(math.sqrt(0.8 * r.rho / 48), rel=1e-9)
    spent = sum(0.5 / m["sigma"] ** 2 for m in ms) + sum(x["epsilon"] ** 2 / 8 for x in sels)
    assert spent == pytest.approx(r.rho, rel=1e-9)


@needs_dpmm
def test_one_way_aim_puts_99_percent_of_rho_on_the_one_way_marginals():
    """AIM (McKenna, Mullins, Sheldon & Miklau 2022, arXiv:2201.12677, Alg. 1) as dpmm
    implements it, given the one-way workload (degree 1) and 3 rounds on 3 columns: σ =
    √(rounds/(2 · 0.9ρ)) on each one-way marginal (0.9ρ for the three), then one last round on
    the remaining 0.1ρ, 0.9 of it on one more one-way marginal. The noisy marginals carry
    0.99ρ, so their μ is √(1.98ρ) = 0.995 of the implied √(2ρ); every one holds the target's
    cell over the public domain (no compression), so the white-box statistic reads them all."""
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=10)
    g = SyntheticGenerator(GeneratorCell("dpmm-aim-one-way", 1.0, 1e-2))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 4], domain=pair.domain)
    for run in r.runs:
        ms = run["measurements"]
        assert [len(m["clique"]) for m in ms] == [1, 1, 1, 1]
        assert all(len(m["y"]) == 2 for m in ms)
        np.testing.assert_allclose([m["sigma"] for m in ms[:3]], math.sqrt(3 / (1.8 * r.rho)),
                                   rtol=1e-9)  # fmt: skip
        assert ms[3]["sigma"] == pytest.approx(math.sqrt(1 / (0.18 * r.rho)), rel=1e-9)
        assert sum(0.5 / m["sigma"] ** 2 for m in ms) == pytest.approx(0.99 * r.rho, rel=1e-9)
        assert math.isfinite(measurement_llr(ms, pair.D, pair.target, pair.domain))
    assert round(math.sqrt(1.98 * r.rho), 4) == 0.4525


def _gdp_posterior_mass(mu: float, tp: int, fn: int, fp: int, tn: int, *, swap: bool) -> float:
    """Posterior mass of the μ-GDP region {FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ)} (Dong, Roth & Su 2022,
    arXiv:1905.02383, Eq. 6) under independent Jeffreys posteriors FPR ~ Beta(½ + fp, ½ + tn),
    FNR ~ Beta(½ + fn, ½ + tp) (the joint-Beta model of Zanella-Béguelin et al. 2023,
    arXiv:2206.05199). ``swap``: the trade-off curve evaluated with FPR and μ exchanged, as
    the dpmm authors' ``audit_utils.JointBetaMu`` passes them to riskcal's
    ``get_beta_from_gdp(mu, alpha)``."""
    from scipy import integrate
    from scipy.stats import beta, norm

    fpr, fnr = beta(0.5 + fp, 0.5 + tn), beta(0.5 + fn, 0.5 + tp)

    def curve(a):
        return norm.cdf(-norm.ppf(mu) - a) if swap else norm.cdf(norm.ppf(1 - a) - mu)

    return integrate.quad(lambda a: fpr.pdf(a) * fnr.sf(curve(a)), 0, 1, epsabs=1e-7)[0]


def test_the_authors_mu_emp_is_the_swapped_trade_off_curve():
    """The dpmm authors' default audit (arXiv:2604.18352; their ``run_audit`` on their
    ``features.pkl``: gradient boosting, threshold of largest TPR − FPR on the validation
    runs) ends at TP = 1257, FN = 743, FP = 949, TN = 1051 on 2,000 + 2,000 test runs (our
    re-run of their code). The μ whose GDP region holds 10 % posterior mass is 0.3405 with
    riskcal's argument order, and 0.426 — their notebook's 0.42617713 — with FPR and μ
    exchanged: the reported μ_emp ≈ 0.43 is not a lower bound of the curve it names."""
    from scipy.optimize import brentq

    counts = {"tp": 1257, "fn": 743, "fp": 949, "tn": 1051}
    right = brentq(lambda m: _gdp_posterior_mass(m, **counts, swap=False) - 0.1, 1e-6, 2.0,
                   xtol=1e-6)  # fmt: skip
    swapped = brentq(lambda m: _gdp_posterior_mass(m, **counts, swap=True) - 0.1, 1e-6,
                     1 - 1e-6, xtol=1e-6)  # fmt: skip
    assert right == pytest.approx(0.3405, abs=2e-4)
    assert swapped == pytest.approx(0.42618, abs=2e-4)
    from scipy.stats import norm

    point = norm.ppf(1 - 949 / 2000) - norm.ppf(743 / 2000)  # μ at the test point itself
    assert right < round(point, 3) == 0.392 < swapped


def test_docs_one_way_aim_row_comes_from_the_recorded_run():
    """The page's ``dpmm-aim-one-way`` row and its √(mean shift) figure state what
    ``docs/results/synthetic-data/dpmm-aim-one-way-eps1.json`` holds."""
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    d = json.loads((RESULTS / "dpmm-aim-one-way-eps1.json").read_text())
    s = d["settings"]
    assert s["generators"] == ["dpmm-aim-one-way"] and s["dataset"] == "unique-record"
    (e,) = d["entries"]
    x = e["detail"]
    row = white_box_row("dpmm-aim-one-way", e, s, f"{x['dataset']}, {x['columns']} × {x['rows']}")
    assert row in page, row
    fig = mean_shift_figure(x)
    assert fig in page, fig


def test_a_cell_cannot_override_what_the_entry_fixes():
    """The workflow's default config sets AIM's ``rounds = 8``; on ``dpmm-aim-one-way``, whose
    entry fixes 3 rounds, that is refused naming the option, while the same value passes."""
    with pytest.raises(ValueError, match=r"options sets rounds=8, but dpmm-aim-one-way fixes "
                                         r"rounds=3"):  # fmt: skip
        GeneratorCell("dpmm-aim-one-way", 1.0, 1e-2, options=(("rounds", 8),))
    GeneratorCell("dpmm-aim-one-way", 1.0, 1e-2, options=(("rounds", 3),))
    GeneratorCell("dpmm-aim", 1.0, 1e-2, options=(("rounds", 8),))


@pytest.mark.parametrize("seed", [47, 48])
def test_docs_dpmm_choice_figures_are_the_recorded_runs(seed):
    """The page's per-component figures of the dpmm audits with their tree choices come from
    their journals' records: outcome counts, χ² p-values (recomputed here with scipy), the two
    mean shifts with their standard errors, and the largest deviation from the closed form."""
    from scipy.stats import chisquare

    name = "dpmm-worst-case-choices-eps1" + ("" if seed == 47 else f"-seed{seed}")
    rec = json.loads((RESULTS / f"{name}-outcomes.json").read_text())
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    audit = json.loads((RESULTS / f"{name}.json").read_text())
    assert audit["settings"]["seed"] == seed and "Declared" in audit["declared"]
    assert rec["run_pairs"] == audit["settings"]["runs"] == 200
    for side in ("D", "D_prime"):
        x = rec[side]
        assert sum(x["counts"]) == 200 == len(x["selections_llr"])
        assert chisquare(x["counts"], x["expected"]).pvalue == pytest.approx(x["p_value"])
        llr = np.asarray(x["selections_llr"])
        dev = np.abs(llr[:, None] - np.asarray(rec["closed_form"]["llr"])[None, :]).min(1)
        assert dev.max() == pytest.approx(x["max_deviation_from_closed_form"])
        assert dev.max() < 0.03
    d, dp = rec["D"], rec["D_prime"]
    counts = (f"on D ∪ {{t}} the outcomes are {', '.join(map(str, dp['counts']))} against "
              f"{', '.join(f'{v:.0f}' for v in dp['expected'])} expected (χ² p = "
              f"{dp['p_value']:.2f}); on D they are {', '.join(map(str, d['counts']))} against "
              f"{d['expected'][0]:.0f} each (p = {d['p_value']:.3f})")  # fmt: skip
    assert counts in page.replace("On D", "on D")
    shift = np.mean(dp["selections_llr"]) - np.mean(d["selections_llr"])
    assert shift == pytest.approx(rec["mean_shift"])
    assert f"The choices' is {rec['mean_shift']:.3f} ± {rec['mean_shift_se']:.3f}" in page
    m = rec["measurements_mean_shift"], rec["measurements_mean_shift_se"]
    assert f"the marginals' shift is {m[0]:.3f} ± {m[1]:.3f}" in page
    dev = max(d["max_deviation_from_closed_form"], dp["max_deviation_from_closed_form"])
    assert f"(largest deviation {dev:.3f})" in page


def test_docs_dpmm_choice_figures_pooled_over_both_audits():
    """The page's pooled figures of the two declared dpmm MST choice audits (seeds 47 and 48,
    400 evaluation run pairs): both shifts with their standard errors and the outcome counts
    with their χ² p-values against the closed form."""
    from scipy.stats import chisquare

    recs = [json.loads((RESULTS / f).read_text()) for f in (
        "dpmm-worst-case-choices-eps1-outcomes.json",
        "dpmm-worst-case-choices-eps1-seed48-outcomes.json")]  # fmt: skip
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())

    def pooled(side, key):
        return np.concatenate([r[side][key] for r in recs])

    def shift(key, ref, digits):
        a, b = pooled("D_prime", key), pooled("D", key)
        se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        m = a.mean() - b.mean()
        return f"{m:.3f} ± {se:.3f} against {ref:.{digits}f} ({(m - ref) / se:.1f}"

    cf = recs[0]["closed_form"]
    m = shift("selections_llr", cf["mean_shift"], 4)
    closed = m.replace("against", "against the closed form's")
    assert f"the choices' shift is {closed}" in page
    m = shift("measurements_llr", recs[0]["measurements_closed_form"], 3)
    assert f"the marginals' {m} high)" in page
    dp, d = (np.sum([r[s]["counts"] for r in recs], axis=0) for s in ("D_prime", "D"))
    exp = np.asarray(cf["p_D_prime"]) * dp.sum()
    text = (f"the outcomes are {', '.join(map(str, dp))} against "
            f"{', '.join(f'{v:.0f}' for v in exp)} expected on D ∪ {{t}} (χ² p = "
            f"{chisquare(dp, exp).pvalue:.2f}) and {', '.join(map(str, d))} on D (p = "
            f"{chisquare(d).pvalue:.2f})")  # fmt: skip
    assert text in page, text


@pytest.mark.parametrize("eps", [1, 10])
def test_docs_dpmm_aim_figures_are_the_recorded_runs(eps):
    """The page's dpmm-aim rows, √(mean shift) figures and per-component shifts state what the
    declared audits recorded; the components' per-run values are the audit's (their shifts
    recomputed here) and the analysis is AIM's at 4 rounds (ρ spent exactly: marginals plus
    the choice's ceiling is 2ρ)."""
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    audit = json.loads((RESULTS / f"dpmm-aim-worst-case-eps{eps}.json").read_text())
    s = audit["settings"]
    assert s["generators"] == ["dpmm-aim"] and s["rounds"] == 4 and s["dataset"] == "tree-flip"
    assert "Declared" in audit["declared"] and f"--seed {s['seed']}" in audit["command"]
    for e in audit["entries"]:
        assert white_box_row("dpmm-aim (rounds = 4)", e, s, "tree-flip") in page
        if e["detail"]["threat_model"] == "white-box":
            assert mean_shift_figure(e["detail"]) in page
    rec = json.loads((RESULTS / f"dpmm-aim-worst-case-eps{eps}-components.json").read_text())
    a = rec["analysis"]
    assert rec["run_pairs"] == s["runs"] and a["white-box"] == pytest.approx(2 * rec["rho"])
    names = {"white-box": "the whole", "white-box-measurements": "the marginals' shift is",
             "white-box-selections": "the choice's"}  # fmt: skip
    for tm, ref in (
        ("white-box-measurements", "measurements"),
        ("white-box-selections", "choice_ceiling"),
        ("white-box", "white-box"),
    ):
        x = rec[tm]
        shift = np.mean(x["D_prime"]) - np.mean(x["D"])
        assert shift == pytest.approx(x["mean_shift"]) and len(x["D"]) == s["runs"]
        fig = f"{names[tm]} {x['mean_shift']:.3f} ± {x['mean_shift_se']:.3f}"
        assert fig in page and f"{a[ref]:.3f}" in page, fig


def _outcomes_script():
    """``scripts/dpmm_choice_outcomes.py``, loaded as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "dpmm_choice_outcomes", ROOT / "scripts" / "dpmm_choice_outcomes.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_choice_outcome_script_closed_form_is_the_enumerated_mechanism():
    """``scripts/dpmm_choice_outcomes.py``'s closed form against a naive enumeration of MST's
    two exponential-mechanism choices on tree-flip (weights exp(ε q / 2), ε = √(8(ρ/3)/2);
    scores 0 on D, (−1, +1, −1) for (a, b), (a, c), (b, c) on D ∪ {t}), and its AIM analysis
    at 4 rounds spends 2ρ of mean shift (marginals plus the choice's ceiling)."""
    import itertools

    mod = _outcomes_script()
    rho = 0.10341283143348314
    eps = math.sqrt(8 * rho / 3 / 2)

    def outcomes(q):
        p = np.zeros(3)
        for first, second in itertools.permutations(range(3), 2):
            w1 = np.exp(eps * np.asarray(q) / 2)
            rest = [k for k in range(3) if k != first]
            w2 = np.exp(eps * np.asarray([q[k] for k in rest]) / 2)
            pr = w1[first] / w1.sum() * w2[rest.index(second)] / w2.sum()
            p[0 if first == 1 else (1 if second == 1 else 2)] += pr
        return p

    cf = mod.closed_form(rho)
    p_d, p_dp = outcomes([0, 0, 0]), outcomes([-1, 1, -1])
    np.testing.assert_allclose(cf["p_D"], p_d, rtol=1e-12)
    np.testing.assert_allclose(cf["p_D_prime"], p_dp, rtol=1e-12)
    np.testing.assert_allclose(cf["llr"], np.log(p_dp / p_d), rtol=1e-12)
    assert cf["mean_shift"] == pytest.approx(float(np.dot(p_dp - p_d, np.log(p_dp / p_d))))
    rows = np.zeros((2, 10))
    assert mod.aim_components(rows, rho)["analysis"]["white-box"] == pytest.approx(2 * rho)


def _aim_budget_loop(rho, rounds, columns, anneal):
    """AIM's budget as smartnoise-synth 1.0.8 and dpmm 0.1.9 spend it, step by step (McKenna
    et al. 2022, Alg. 1): the one-way marginals at σ₀, then rounds of a choice (ε²/8) and a
    measurement (1/(2σ²)) until the rest would not pay for two, which one last round spends
    (0.9 / 0.1); ``anneal(t)`` says whether round t halves σ and doubles ε. Returns the sum of
    1/σ² over the measurements and of 2 · ε²/8 over the choices."""
    sigma, eps = math.sqrt(rounds / (1.8 * rho)), math.sqrt(0.8 * rho / rounds)
    used, meas, choice, t, last = columns * 0.5 / sigma**2, columns / sigma**2, 0.0, 0, False
    while not last:
        t += 1
        if rho - used < 2 * (0.5 / sigma**2 + eps**2 / 8):
            rest = rho - used
            sigma, eps, last = math.sqrt(1 / (1.8 * rest)), math.sqrt(0.8 * rest), True
        used += eps**2 / 8 + 0.5 / sigma**2
        meas, choice = meas + 1 / sigma**2, choice + 2 * eps**2 / 8
        if anneal(t):
            sigma, eps = sigma / 2, eps * 2
    assert used == pytest.approx(rho, rel=1e-12)
    return meas, choice


@pytest.mark.parametrize("rounds", [4, 7, 48])
def test_aim_analysis_is_the_budget_loop_whatever_it_anneals(rounds):
    """The script's AIM analysis (the marginals' mean shift 2(ρ₀ + 0.9(ρ − ρ₀)), the choices'
    ceiling 0.2(ρ − ρ₀)) against the budget loop run round by round, annealing never, always
    or at random: the same at every rounds setting, whatever the data make AIM do."""
    mod = _outcomes_script()
    rho = 0.10341283143348314
    a = mod.aim_analysis(rho, rounds)
    rng = np.random.default_rng(rounds)
    for anneal in (lambda t: False, lambda t: True, lambda t: rng.random() < 0.3):
        meas, choice = _aim_budget_loop(rho, rounds, 3, anneal)
        assert a["measurements"] == pytest.approx(meas, rel=1e-12)
        assert a["choice_ceiling"] == pytest.approx(choice, rel=1e-12)
    assert a["white-box"] == pytest.approx(2 * rho)


def test_a_components_file_pools_as_the_journal_rows_it_was_written_from():
    """``--pool``: the per-run values an AIM components file keeps, read back as journal rows,
    give the file's own mean shifts and analysis again, to the last bit."""
    mod = _outcomes_script()
    path = RESULTS / "aim-default-rounds-eps1-components.json"
    comp = json.loads(path.read_text())
    rows, label = mod.pooled_rows(path)
    assert rows.shape == (comp["run_pairs"], 10) and label == "seeds 47, 48, pooled"
    again = mod.aim_components(rows, float(rows[0, -1]), comp["analysis"]["rounds"])
    for key in ("analysis", *mod.COLUMNS):
        assert again[key] == comp[key]


def test_docs_dpmm_aim_48_round_figures_are_the_declared_run():
    """The page's rows and figures of dpmm's AIM at its default 48 rounds state what the
    declared 60-pair audit recorded (bounds 0 on all three statistics)."""
    rec = json.loads((RESULTS / "dpmm-aim-default-rounds-eps1.json").read_text())
    st = rec["settings"]
    assert (st["generators"], st["rounds"], st["runs"], st["pilot_runs"], st["seed"]) == (
        ["dpmm-aim"], 48, 60, 20, 47)  # fmt: skip
    assert "Declared" in rec["declared"] and "--rounds 48" in rec["command"]
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    for e in rec["entries"]:
        assert white_box_row("dpmm-aim (rounds = 48)", e, st, "tree-flip") in page
        assert e["lower_bound"]["epsilon"] == 0 and not e["gap"]["refutes_claim"]
    wb = rec["entries"][0]["detail"]
    assert wb["threat_model"] == "white-box"
    fig = f"{mean_shift_figure(wb)} and the fitted Gaussians' μ {wb['mu_estimate']:.3f}"
    assert fig in page
    iv = wb["llr_mu_interval"]
    assert f"(60 give √(mean shift) {wb['llr_mu_estimate']:.3f}, {iv['low']:.3f}–" in page
    comp = json.loads((RESULTS / "dpmm-aim-default-rounds-eps1-components.json").read_text())
    figs, a = components_shifts(comp, 60), comp["analysis"]
    assert a["rounds"] == 48 and "(seed 47)" in comp["source"]
    assert (f"the marginals' shift is {figs['white-box-measurements']} against their exact "
            f"{a['measurements']:.3f} and the choices' {figs['white-box-selections']} against "
            f"their ceiling {a['choice_ceiling']:.3f}") in page  # fmt: skip
