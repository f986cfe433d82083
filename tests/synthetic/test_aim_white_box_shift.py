"""AIM's white-box measurements carry the whole mean shift its analysis gives them (issue 46).

smartnoise-synth's AIM (McKenna, Mullins, Sheldon & Miklau 2022, arXiv:2201.12677) at
(ε, δ) = (1, 10⁻²), ``rounds = 4``, on ``tree-flip`` (3 × 1,000): the three one-way marginals
at σ₁ = √(rounds / (1.8 ρ)) (67.5 % of ρ), then a single round on the 32.5 % left, one choice
and one measurement at σ₂ = √(1 / (1.8 · 0.325 ρ)). Each measurement moves t's cell by one
count, so the Gaussian LLR's mean shift (E on D ∪ {t} minus E on D) is 3/σ₁² + 1/σ₂² = 0.2001
(μ = 0.447), on every run: the transcript's shape does not depend on the data. With the noise
scaled to nothing, one run on each dataset shows the recorded vectors are the exact marginals
and the statistic's difference is that shift, so a shift measured below it is sampling error,
not a measurement lost or read through the wrong cell or mean.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpaudit.attacks import marginal_counts, measurement_llr
from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell, SyntheticGenerator

needs_smartnoise = pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)


@needs_smartnoise
def test_aim_measurements_llr_shift_is_the_analysed_sum_of_inverse_variances():
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=1000)
    g = SyntheticGenerator(GeneratorCell("smartnoise-aim", 1.0, 1e-2, options=(("rounds", 4),)))
    g.spec = dataclasses.replace(g.spec, noise_scale=1e-9)  # the library's noise, ~0 counts
    tables = (pair.D, pair.D_prime)
    r = g.fit_runs(tables, [0, 1], [46, 47], domain=pair.domain)
    s1, s2 = math.sqrt(4 / (1.8 * r.rho)), math.sqrt(1 / (1.8 * 0.325 * r.rho))
    llr = []
    for run, data in zip(r.runs, tables, strict=True):
        ms = run["measurements"]
        assert sorted(m["clique"] for m in ms[:3]) == [[0], [1], [2]]  # in set order
        assert len(ms[3]["clique"]) == 2
        np.testing.assert_allclose([m["sigma"] for m in ms], [s1, s1, s1, s2], rtol=1e-9)
        for m in ms:
            np.testing.assert_allclose(m["y"], marginal_counts(data, m["clique"], pair.domain),
                                       atol=1e-6)  # fmt: skip
        llr.append(measurement_llr(ms, pair.D, pair.target, pair.domain))
    shift = 3 / s1**2 + 1 / s2**2
    assert shift == pytest.approx(0.20010, abs=5e-6)  # μ = 0.4473, 0.98× √(2ρ) = 0.4548
    np.testing.assert_allclose(llr, [-shift / 2, shift / 2], atol=1e-6)


@needs_smartnoise
def test_at_48_rounds_the_measurements_llr_is_the_analysed_budget_whatever_the_rounds():
    """At the library's default 48 rounds the rounds AIM takes depend on the data, but every
    round splits its budget 0.9 / 0.1 between its measurement and its choice, so with the
    noise scaled to nothing the measurements' LLR is ∓ρ_meas on D and D ∪ {t}, with ρ_meas =
    ρ₀ + 0.9(ρ − ρ₀), ρ₀ = 0.9ρ · 3/48: the mean shift 2ρ_meas = 0.187 of AIM's analysis."""
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=1000)
    g = SyntheticGenerator(GeneratorCell("smartnoise-aim", 1.0, 1e-2, options=(("rounds", 48),)))
    g.spec = dataclasses.replace(g.spec, noise_scale=1e-9)
    tables = (pair.D, pair.D_prime)
    r = g.fit_runs(tables, [0, 1], [46, 47], domain=pair.domain)
    init = 0.9 * r.rho * 3 / 48
    rho_meas = init + 0.9 * (r.rho - init)
    llr = []
    for run, data in zip(r.runs, tables, strict=True):
        ms = run["measurements"]
        assert sum(0.5 / m["sigma"] ** 2 for m in ms) == pytest.approx(rho_meas, rel=1e-9)
        for m in ms:
            np.testing.assert_allclose(m["y"], marginal_counts(data, m["clique"], pair.domain),
                                       atol=1e-6)  # fmt: skip
        llr.append(measurement_llr(ms, pair.D, pair.target, pair.domain))
    assert 2 * rho_meas == pytest.approx(0.18731, abs=5e-6)
    np.testing.assert_allclose(llr, [-rho_meas, rho_meas], atol=1e-6)


def test_docs_aim_figures_are_the_recorded_run():
    """The synthetic-data page's AIM bullet states what the 2,000-pair audit recorded, and
    that run is the command the page gives."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rec = json.loads((root / "docs/results/synthetic-data/aim-worst-case-eps1-2000.json")
                     .read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["rounds"], st["runs"], st["pilot_runs"], st["seed"],
            st["dataset"], st["epsilon"]) == (["smartnoise-aim"], 4, 2000, 100, 46,
                                             "tree-flip", 1.0)  # fmt: skip
    wb, ms = ({**e["detail"], "eps": e["lower_bound"]["epsilon"]} for e in rec["entries"])
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    iv = wb["llr_mu_interval"]
    assert (f"√(mean shift) is **{wb['llr_mu_estimate']:.3f} (≈ 95 % interval "
            f"{iv['low']:.3f}–{iv['high']:.3f}), {wb['llr_mu_estimate'] / wb['implied_mu']:.2f}×"
            ) in page  # fmt: skip
    assert f"fitted Gaussians' μ {wb['mu_estimate']:.3f}" in page
    assert f"alone give {ms['llr_mu_estimate']:.3f}" in page
    assert (f"ε ≥ {wb['eps']:.3f} and μ ≥ {wb['mu_lower']:.3f} (white-box), ε ≥ {ms['eps']:.3f} "
            f"and μ ≥ {ms['mu_lower']:.3f}") in page  # fmt: skip
    si = ms["mean_shift_interval"]
    assert f"shift, {ms['mean_shift']:.3f} ({si['low']:.3f}–{si['high']:.3f})" in page


def test_docs_aim_4000_pair_figures_are_the_declared_run():
    """The page's AIM figures at confidence are those of the 4,000-pair audit, recorded with
    the declaration written before it ran (a fresh seed, reported whatever it gave); its
    √(mean shift) interval lies above 0.9× the implied μ."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tests" / "synthetic"))
    from page_rows import mean_shift_figure, white_box_row

    rec = json.loads((root / "docs/results/synthetic-data/aim-worst-case-eps1-4000.json")
                     .read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["rounds"], st["runs"], st["pilot_runs"], st["seed"],
            st["dataset"], st["epsilon"]) == (["smartnoise-aim"], 4, 4000, 100, 47,
                                             "tree-flip", 1.0)  # fmt: skip
    assert "4,000 evaluation run pairs, root seed 47" in rec["declared"]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    wb, ms = (e["detail"] for e in rec["entries"])
    assert wb["llr_mu_interval"]["low"] > 0.9 * wb["implied_mu"]
    assert wb["mu_estimate_interval"]["low"] > 0.9 * wb["implied_mu"]
    iv = wb["llr_mu_interval"]
    assert (f"√(mean shift) is **{wb['llr_mu_estimate']:.3f} (≈ 95 % interval "
            f"{iv['low']:.3f}–{iv['high']:.3f}), {wb['llr_mu_estimate'] / wb['implied_mu']:.2f}×"
            ) in page  # fmt: skip
    assert mean_shift_figure(ms) in page
    for e in rec["entries"]:
        assert white_box_row("smartnoise-aim (rounds = 4)", e, st, "tree-flip") in page
    si = ms["mean_shift_interval"]
    assert f"their shift, {ms['mean_shift']:.3f} ({si['low']:.3f}–{si['high']:.3f})" in page


@needs_smartnoise
def test_aim_at_its_default_48_rounds_spends_rho_exactly():
    """At the library's default 16 × 3 = 48 rounds AIM (Alg. 1) starts at σ = √(48/(1.8ρ))
    on the one-way marginals and ε = √(0.8ρ/48) per choice, halves σ and doubles ε when a
    round changes the model too little, and spends what is left on a last round: the recorded
    transcript spends ρ exactly (Σ 1/(2σ²) + Σ ε²/8 = ρ), so the white-box view's mean shift
    is at most 2ρ (the marginals' Σ 1/σ² exactly, each choice at most ε²/4), μ ≤ √(2ρ)."""
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=1000)
    g = SyntheticGenerator(GeneratorCell("smartnoise-aim", 1.0, 1e-2, options=(("rounds", 48),)))
    r = g.fit_runs([pair.D_prime], [0], [46], domain=pair.domain)
    (run,) = r.runs
    ms, sels = run["measurements"], run["selections"]
    sigma0 = math.sqrt(48 / (1.8 * r.rho))
    np.testing.assert_allclose([m["sigma"] for m in ms[:3]], sigma0, rtol=1e-9)
    assert len(ms) == 3 + len(sels) and 1 < len(sels) < 48
    assert sels[0]["epsilon"] == pytest.approx(math.sqrt(0.8 * r.rho / 48), rel=1e-9)
    spent = sum(0.5 / m["sigma"] ** 2 for m in ms) + sum(s["epsilon"] ** 2 / 8 for s in sels)
    assert spent == pytest.approx(r.rho, rel=1e-9)


def test_docs_aim_48_round_figures_are_the_declared_run():
    """The page's bullet and rows of AIM at its default 48 rounds state what the declared
    200-pair audit recorded (bounds 0 on all three statistics; the estimates and intervals)."""
    import json
    from pathlib import Path

    from page_rows import mean_shift_figure, white_box_row

    root = Path(__file__).resolve().parents[2]
    rec = json.loads((root / "docs/results/synthetic-data/aim-default-rounds-eps1.json")
                     .read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["rounds"], st["runs"], st["pilot_runs"], st["seed"]) == (
        ["smartnoise-aim"], 48, 200, 20, 47)  # fmt: skip
    assert "Declared" in rec["declared"] and "--rounds 48" in rec["command"]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    for e in rec["entries"]:
        assert white_box_row("smartnoise-aim (rounds = 48)", e, st, "tree-flip") in page
        assert e["lower_bound"]["epsilon"] == 0 and not e["gap"]["refutes_claim"]
    wb, ms, _ = (e["detail"] for e in rec["entries"])
    assert f"white-box {mean_shift_figure(wb)} and the fitted Gaussians' μ" in page
    assert f"{wb['mu_estimate']:.3f} ({wb['mu_ratio']:.2f}×)" in page
    assert f"the marginals alone {mean_shift_figure(ms)}" in page
    assert (
        "--runs 200 --pilot-runs 20 --group-size 10 --executor processes --workers 2 --seed 47"
        in page
    )


def _declared_48_round_audit_on_page(res, page: str, *, seed: int, runs: int) -> dict:
    """A declared 48-round audit's recorded file (``…-seed{seed}.json``, 20 pilot pairs) and
    its rows, bounds, estimates and time as the page states them; its white-box detail."""
    import json

    from page_rows import mean_shift_figure, white_box_row

    rec = json.loads((res / f"aim-default-rounds-eps1-seed{seed}.json").read_text())
    st = rec["settings"]
    assert (st["generators"], st["rounds"], st["runs"], st["pilot_runs"], st["seed"]) == (
        ["smartnoise-aim"], 48, runs, 20, seed)  # fmt: skip
    assert f"{runs:,} evaluation run pairs, root seed {seed}" in rec["declared"]
    assert f"--seed {seed}" in rec["command"] and "--rounds 48" in rec["command"]
    for e in rec["entries"]:
        assert white_box_row("smartnoise-aim (rounds = 48)", e, st, "tree-flip") in page
    (wb, ms, _), (b_wb, b_ms, _) = ((e["detail"] for e in rec["entries"]),
                                    (e["lower_bound"] for e in rec["entries"]))  # fmt: skip
    bounds = (f"ε ≥ {b_wb['epsilon']:.3f} and μ ≥ {wb['mu_lower']:.3f} (white-box), ε ≥ "
              f"{b_ms['epsilon']:.3f} and μ ≥ {ms['mu_lower']:.3f} (marginals alone)")  # fmt: skip
    assert bounds in page
    assert (f"white-box {mean_shift_figure(wb)}, the fitted Gaussians' μ "
            f"{wb['mu_estimate']:.3f} ({wb['mu_ratio']:.2f}×)") in page  # fmt: skip
    assert f"the marginals alone {mean_shift_figure(ms)}" in page
    assert (
        f"{rec['timings']['total'] / 60:.0f} min on 2 engine workers, {wb['seconds_per_run']:.2f} s"
        in page
    )
    return wb


def test_docs_aim_48_round_second_audit_and_pooled_figures_are_the_recorded_runs():
    """The second 48-round audit (declared, seed 48, 800 pairs): its rows, bounds and
    estimates; and the pooled components of both audits' 1,000 evaluation pairs against
    AIM's analysis at 48 rounds, as the page states them."""
    import json
    from pathlib import Path

    from page_rows import components_shifts

    root = Path(__file__).resolve().parents[2]
    res = root / "docs/results/synthetic-data"
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    wb = _declared_48_round_audit_on_page(res, page, seed=48, runs=800)
    comp = json.loads((res / "aim-default-rounds-eps1-components.json").read_text())
    figs, a = components_shifts(comp, 1000), comp["analysis"]
    assert a["rounds"] == 48 and "seeds 47, 48, pooled" in comp["source"]
    m, se = (
        comp["white-box-measurements"]["mean_shift"],
        comp["white-box-measurements"]["mean_shift_se"],
    )
    assert (f"the marginals' shift is {figs['white-box-measurements']} against their exact "
            f"{a['measurements']:.3f}, {(a['measurements'] - m) / se:.1f} standard errors below "
            f"it; the choices' {figs['white-box-selections']} against their ceiling "
            f"{a['choice_ceiling']:.3f}; the whole {figs['white-box']}") in page  # fmt: skip
    w, wse = comp["white-box"]["mean_shift"], comp["white-box"]["mean_shift_se"]
    lo, hi = math.sqrt(w - 1.96 * wse), math.sqrt(w + 1.96 * wse)
    ratio = math.sqrt(w) / wb["implied_mu"]
    fig = f"√(mean shift) {math.sqrt(w):.3f} ({lo:.3f}–{hi:.3f}, {ratio:.2f}×)"
    assert fig in page
    sd = [np.std(comp["white-box-measurements"][k]) for k in ("D_prime", "D")]
    spread = math.sqrt(a["measurements"])  # √(2ρ_meas): the LLR's standard deviation
    assert (f"(standard deviations {sd[0]:.3f} on D ∪ {{t}} and {sd[1]:.3f} on D against "
            f"√(2ρ_meas) = {spread:.3f})") in page  # fmt: skip


def test_docs_aim_48_round_third_audit_and_2000_pooled_figures_are_the_recorded_runs():
    """The third 48-round audit (declared, seed 49, 1,000 pairs): its rows and bounds, its
    own components against AIM's analysis (a fresh test of the earlier shortfall), and the
    components of all three audits' 2,000 evaluation pairs, as the page states them."""
    import json
    from pathlib import Path

    from page_rows import components_shifts

    root = Path(__file__).resolve().parents[2]
    res = root / "docs/results/synthetic-data"
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    wb = _declared_48_round_audit_on_page(res, page, seed=49, runs=1000)
    for name, runs, seeds in (("seed49-components", 1000, "(seed 49)"),
                              ("components-2000", 2000, "seeds 47, 48, 49, pooled")):  # fmt: skip
        comp = json.loads((res / f"aim-default-rounds-eps1-{name}.json").read_text())
        figs, a = components_shifts(comp, runs), comp["analysis"]
        assert a["rounds"] == 48 and seeds in comp["source"]
        m = comp["white-box-measurements"]
        z = (m["mean_shift"] - a["measurements"]) / m["mean_shift_se"]
        w, wse = comp["white-box"]["mean_shift"], comp["white-box"]["mean_shift_se"]
        lo, hi = math.sqrt(max(w - 1.96 * wse, 0)), math.sqrt(w + 1.96 * wse)
        assert (f"{runs:,} pairs: the marginals' shift {figs['white-box-measurements']} "
                f"against their exact {a['measurements']:.3f} ({f'{z:+.1f}'.replace('-', '−')} "
                f"standard errors), the "
                f"choices' {figs['white-box-selections']} against their ceiling "
                f"{a['choice_ceiling']:.3f}, the whole {figs['white-box']}, √(mean shift) "
                f"{math.sqrt(w):.3f} ({lo:.3f}–{hi:.3f}, "
                f"{math.sqrt(w) / wb['implied_mu']:.2f}×)") in page  # fmt: skip
