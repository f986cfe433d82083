"""PATECTGAN's white-box views: ``white-box-student`` (the relative residual on data made
here, the threat model's place among the others, and, with ``make venv-smartnoise-gan``, the
library's teacher steps recorded as they move the student: exactly what the generated rows
explain on D, more on D ∪ {t}) and ``white-box-conditions`` (the conditions its sample()
copies from private rows, and the fix that draws them from the public domain)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks._synthetic import PER_TARGET, SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_gan import (
    LOSS_CAP,
    RATIO_CAP,
    RATIO_FLOOR,
    condition_rates,
    conditions_llr,
    student_residual_ratio,
    target_conditions,
)
from dpaudit.experiments.synthetic_data import SyntheticDataSettings
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell

#: DPCTGAN's fast public settings of the white-box-dpsgd audit (no hidden layer, 4 rows a step).
FAST_DPCTGAN = ("sigma=2", "batch_size=4", "discriminator_dim=", "generator_dim=8",
                "embedding_dim=8")  # fmt: skip
needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)


def test_the_residual_ratio_is_the_naive_one_per_step():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(7, 16, 3))  # steps × hidden × columns
    f = g + rng.normal(scale=1e-3, size=g.shape) * (rng.random((7, 1, 1)) < 0.5)
    got = student_residual_ratio((g**2).sum(1), ((g - f) ** 2).sum(1))
    want = [np.linalg.norm(g[k] - f[k]) / np.linalg.norm(g[k]) for k in range(7)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert student_residual_ratio([[0.0]], [[0.0]]).tolist() == [0.0]
    with pytest.raises(ValueError, match="shape"):
        student_residual_ratio([[1.0, 2.0]], [[1.0]])
    with pytest.raises(ValueError, match="≥ 0"):
        student_residual_ratio([[1.0]], [[-1.0]])


def _record(residual_steps, columns=(1, 3, 5), steps=20, share=0.03):
    n2 = np.ones((steps, len(columns)))
    r2 = np.zeros_like(n2)
    r2[list(residual_steps)] = share**2
    return {"student": {"columns": list(columns), "steps": steps, "norm2": n2, "residual2": r2}}


def test_a_run_on_D_scores_the_floor_and_one_that_sampled_t_the_cap():
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=10)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-student")
    assert tm.statistic(_record([]), None, pair, pair.D) == RATIO_FLOOR
    assert tm.statistic(_record([4, 9]), None, pair, pair.D_prime) == RATIO_CAP
    assert tm.statistic(_record([4], share=1e-8), None, pair, pair.D_prime) == pytest.approx(-8.0)
    with pytest.raises(ValueError, match="recorded steps of PATECTGAN's student"):
        tm.statistic({"seconds": 1.0}, None, pair, None)
    tree = WORST_CASE_DATASETS.get("tree-flip")(columns=3, rows=10)
    with pytest.raises(ValueError, match="no row of D sets"):
        tm.statistic(_record([], columns=(1, 2, 4)), None, tree, tree.D)


def test_auto_audits_patectgan_under_its_student_and_only_patectgan():
    s = SyntheticDataSettings(generators=("smartnoise-patectgan",))
    assert s.threat_models_for("smartnoise-patectgan") == ("white-box-student",)
    assert s.threat_models_for("smartnoise-patectgan-quiet-noise") == ("white-box-student",)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-student")
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    assert served == {"smartnoise-patectgan", "smartnoise-patectgan-quiet-noise",
                      "smartnoise-patectgan-public-conditions",
                      "smartnoise-patectgan-separate-networks"}  # fmt: skip
    assert "student" in PER_TARGET and "conditions" not in PER_TARGET
    one_run = SyntheticDataSettings(generators=("smartnoise-patectgan",), mode="one-run")
    assert one_run.threat_models_for("smartnoise-patectgan") == ("black-box",)
    with pytest.raises(ValueError, match="for one target"):
        SyntheticDataSettings(generators=("smartnoise-patectgan",), mode="one-run",
                              threat_models=("white-box-student",))  # fmt: skip


@needs_gan
def test_the_teacher_steps_move_the_student_by_exactly_the_generated_rows_on_D_only():
    """PATECTGAN as installed at ε = 1 on unique-record (50 rows of zeros; one teacher, 5
    teacher and 5 student steps an iteration, 10 iterations, all moving the one network): on
    D every step's gradient on t's columns is exactly what the generated rows make (residual
    0, bit for bit); on D ∪ {t} the teacher steps whose batch drew t (one row in 51: nearly
    every step) leave a residual of a few per cent, whatever the votes' noise (the planted bug
    records the same); the student's own steps read generated rows only (residual 0)."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=50)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-student")
    for name in ("smartnoise-patectgan", "smartnoise-patectgan-quiet-noise"):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [7, 8], domain=pair.domain,
                       observe=("student",), target=pair.target)  # fmt: skip
        on_d, on_dp = (run["student"] for run in r.runs)
        assert on_d["columns"] == [1, 3, 5] and on_d["steps"] == on_d["norm2"].shape[0] == 100
        assert on_d["teacher_steps"] == on_dp["teacher_steps"] == 50
        assert on_d["norm2"].shape == on_d["residual2"].shape == (on_d["steps"], 3)
        assert (on_d["norm2"] > 0).all() and (on_d["residual2"] == 0).all()
        ratio = student_residual_ratio(on_dp["norm2"], on_dp["residual2"])
        assert np.count_nonzero(ratio) > 0 and 1e-3 < ratio.max() < 1.0
        assert np.count_nonzero(ratio) <= 50  # the teacher steps' only
        scores = [tm.statistic(run, None, pair, None) for run in r.runs]
        assert scores == [RATIO_FLOOR, RATIO_CAP]


@needs_gan
def test_with_separate_networks_no_step_of_the_student_reads_a_real_row():
    """The fix of the shared network (control): the student and the teacher are networks of
    their own, so no teacher step moves the student (0 of its 50 recorded steps) and each of
    the student's own steps is exactly what its generated rows make on D and on D ∪ {t}:
    both runs score the floor. The accountant counts what the library's does (the same
    25,000 queries), and the teacher's votes are no longer the student's: at the seed the two
    runs' synthetic tables differ from the installed library's."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=50)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-student")
    got = {}
    for name in ("smartnoise-patectgan", "smartnoise-patectgan-separate-networks"):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2))
        got[name] = g.fit_runs([pair.D, pair.D_prime], [0, 1], [7, 8], domain=pair.domain,
                               observe=("student", "synthetic"), target=pair.target,
                               sample_rows=20)  # fmt: skip
    r = got["smartnoise-patectgan-separate-networks"]
    for run in r.runs:
        st = run["student"]
        assert (st["steps"], st["teacher_steps"]) == (50, 0)
        assert (st["norm2"] > 0).all() and (st["residual2"] == 0).all()
        assert run["accounting"]["queries"] == 25_000
        assert tm.statistic(run, None, pair, None) == RATIO_FLOOR
    lib = got["smartnoise-patectgan"]
    assert [run["accounting"] for run in r.runs] == [run["accounting"] for run in lib.runs]
    assert any(not np.array_equal(a, b) for a, b in zip(r.synthetic, lib.synthetic, strict=True))


@needs_gan
def test_the_worker_refuses_separate_networks_for_another_gan_or_a_bad_value():
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)
    for name, value in (("smartnoise-dpctgan", "separate"), ("smartnoise-patectgan", "one")):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=(("networks", value),)))
        with pytest.raises(Exception, match=r"networks .* applies to PATECTGAN only"):
            g.fit_runs([pair.D], [0], [1], domain=pair.domain, observe=("accounting",))


@needs_gan
def test_the_worker_refuses_the_student_view_for_dpctgan_or_without_a_target():
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=10)
    g = SYSTEMS.get("smartnoise-dpctgan")(GeneratorCell("smartnoise-dpctgan", 1.0, 1e-2))
    with pytest.raises(Exception, match="student is recorded for PATECTGAN"):
        g.fit_runs([pair.D], [0], [1], domain=pair.domain, observe=("student",),
                   target=pair.target)  # fmt: skip


def test_the_conditions_count_is_the_naive_count_of_the_targets_categories():
    rng = np.random.default_rng(2)
    cards = (2, 3, 2)
    target = (1, 2, 0)  # categories 1, 2 + 2 = 4 and 5 + 0 = 5
    cats = rng.integers(0, 7, size=500)
    assert target_conditions(cats, target, cards) == sum(int(c) in (1, 4, 5) for c in cats)
    with pytest.raises(ValueError, match="index the 7"):
        target_conditions([7], target, cards)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-conditions")
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=10)
    rec = {"categories": [0, 1, 2, 5], "rule": "rows"}  # t's categories 1, 3, 5: two rows
    assert tm.statistic({"conditions": rec}, None, pair, None) == LOSS_CAP  # impossible on D
    rec = {"categories": [0, 2, 4, 0], "rule": "rows"}
    assert tm.statistic({"conditions": rec}, None, pair, None) == pytest.approx(4 * np.log(10 / 11))
    with pytest.raises(ValueError, match="sample_rows > 0"):
        tm.statistic({"seconds": 1.0}, None, pair, None)
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    fixes = {"smartnoise-dpctgan-public-training-conditions", "smartnoise-dpctgan-public-rows",
             "smartnoise-patectgan-separate-networks"}  # fmt: skip
    assert served == {f"smartnoise-{g}{v}" for g in ("patectgan", "dpctgan")
                      for v in ("", "-quiet-noise", "-public-conditions")} | fixes  # fmt: skip


def _naive_rate(X, t, cards, rule):
    """Per synthetic row, by enumeration: a column uniformly, then the category as the rule
    draws it (a uniformly drawn row's; or by frequency, an absent category counted once)."""
    total = 0.0
    for j, k in enumerate(cards):
        if rule == "rows":
            total += np.mean([row[j] == t[j] for row in X])
        else:
            counts = [max(sum(row[j] == v for row in X), 1) for v in range(k)]
            total += counts[t[j]] / sum(counts)
    return total / len(cards)


def test_the_condition_rates_and_llr_are_the_naive_ones():
    from scipy.stats import binom

    rng = np.random.default_rng(4)
    cards = (2, 3, 4)
    X = rng.integers(0, 2, size=(9, 3))
    t = np.array([1, 2, 0])
    for rule in ("rows", "frequencies"):
        p0, p1 = condition_rates(X, t, cards, rule)
        assert p0 == pytest.approx(_naive_rate(X, t, cards, rule), abs=1e-12)
        assert p1 == pytest.approx(_naive_rate(np.vstack([X, t]), t, cards, rule), abs=1e-12)
    for k, n, p0, p1 in ((3, 40, 0.05, 0.12), (0, 40, 0.05, 0.12), (40, 40, 0.3, 0.9)):
        want = binom.logpmf(k, n, p1) - binom.logpmf(k, n, p0)
        assert conditions_llr(k, n, p0, p1) == pytest.approx(want, rel=1e-10)
    assert conditions_llr(0, 50, 0.0, 0.02) == pytest.approx(50 * np.log(0.98))
    assert conditions_llr(2, 50, 0.0, 0.02) == np.inf
    with pytest.raises(ValueError, match="rule"):
        condition_rates(X, t, cards, "uniform")
    with pytest.raises(ValueError, match="at most rows"):
        conditions_llr(5, 4, 0.1, 0.2)


def test_twin_record_gives_t_a_twin_in_d():
    pair = WORST_CASE_DATASETS.get("twin-record")(columns=3, rows=5)
    assert pair.D.tolist() == [[0, 0, 0]] * 4 + [[1, 1, 1]] and pair.target.tolist() == [1, 1, 1]
    assert pair.domain.cardinalities == (2, 2, 2) and len(pair.D_prime) == 6
    with pytest.raises(ValueError, match="columns ≥ 2"):
        WORST_CASE_DATASETS.get("twin-record")(columns=1, rows=5)


@needs_gan
def test_sample_copies_private_conditions_and_the_fix_draws_public_ones():
    """PATECTGAN as installed, 1,000 synthetic rows after a fit on unique-record (50 rows of
    zeros, t = 1 1 1): on D no row is conditioned on a category t alone holds; on D ∪ {t},
    each row is with probability 1/51 (Binomial(1000, 1/51): mean 19.6). With the public
    conditions (the fix) half the rows are, on either dataset (Binomial(1000, 1/2))."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=50)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-conditions")
    got = {}
    for name in ("smartnoise-patectgan", "smartnoise-patectgan-public-conditions"):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [7, 8], domain=pair.domain,
                       observe=("conditions",), sample_rows=1000)  # fmt: skip
        assert all(run["conditions"]["categories"].shape == (1000,) for run in r.runs)
        assert all(run["conditions"]["rule"] == "rows" for run in r.runs)
        got[name] = [target_conditions(run["conditions"]["categories"], pair.target,
                                       pair.domain.cardinalities) for run in r.runs]  # fmt: skip
        stats = [tm.statistic(run, None, pair, None) for run in r.runs]
        assert stats[1] == LOSS_CAP
    on_d, on_dp = got["smartnoise-patectgan"]
    assert on_d == 0 and 5 <= on_dp <= 40
    assert all(430 <= v <= 570 for v in got["smartnoise-patectgan-public-conditions"])


def test_docs_patectgan_white_box_figures_are_the_recorded_runs():
    """The synthetic-data page's PATECTGAN white-box figures are those of the recorded run,
    and that run is the command the page gives (its settings)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rec = json.loads((root / "docs/results/synthetic-data/"
                      "gan-unique-record-white-box-student-eps1.json").read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (
        ["smartnoise-patectgan-quiet-noise", "smartnoise-patectgan"],
        ["white-box-student"],
    )
    keys = ("dataset", "rows", "columns", "epsilon", "delta", "runs", "pilot_runs", "seed")
    assert tuple(st[k] for k in keys) == ("unique-record", 1000, 3, 1.0, 0.01, 30, 10, 46)
    page = (root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8")
    bug, lib = (e["detail"] for e in rec["entries"])
    bounds = {round(e["lower_bound"]["epsilon"], 3) for e in rec["entries"]}
    assert bounds == {2.022} and "ε ≥ 2.022 and μ ≥ 2.39**" in page
    for d in (bug, lib):
        assert (d["tp"], d["fp"], d["mean_shift"]) == (30, 0, RATIO_CAP - RATIO_FLOOR)
        assert f"{d['mu_lower']:.2f}" == "2.39" and d["implied_mu"] == pytest.approx(
            0.5325, abs=1e-4
        )
    assert "the mean shift is 7.0" in page and "30 of 30 runs on\nD ∪ {t} at the cap" in page
    assert f"{rec['timings']['total']:.0f} s on one worker" in page


def test_docs_patectgan_network_control_figures_are_the_recorded_runs():
    """Violation 1's control (separate networks): the page's figures are those of the recorded
    audit, whose settings are the violation's audit's but for the generator, and of the 20
    root seeds' audits, none of which refutes it."""
    rec, page = _recorded("gan-unique-record-white-box-student-control-eps1.json")
    flat = " ".join(page.split())
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (
        ["smartnoise-patectgan-separate-networks"], ["white-box-student"])  # fmt: skip
    keys = ("dataset", "rows", "columns", "epsilon", "delta", "runs", "pilot_runs", "seed")
    assert tuple(st[k] for k in keys) == ("unique-record", 1000, 3, 1.0, 0.01, 30, 10, 46)
    (e,) = rec["entries"]
    d = e["detail"]
    assert e["lower_bound"]["epsilon"] == 0.0 and (d["tp"], d["fp"]) == (30, 30)
    assert d["threshold"] == RATIO_FLOOR and d["mean_shift"] == 0.0
    fig = (f"`gan-unique-record-white-box-student-control-eps1.json`, "
           f"{rec['timings']['total']:.0f} s on 2 workers beside a test run, "
           f"{d['seconds_per_run']:.1f} CPU-s a "
           f"fit): **the control is not refuted, ε ≥ 0.000** (30 and 30 of 30 runs")  # fmt: skip
    assert fig in flat
    ctl, _ = _recorded("patectgan-networks-controls-eps1.json")
    seeds = ctl["audits"]["smartnoise-patectgan-separate-networks"]["seeds"]
    assert [r["seed"] for r in seeds] == list(range(20))
    assert all((r["dataset"], r["rows"], r["runs"], r["pilot_runs"], r["threat_models"]) ==
               ("unique-record", 1000, 20, 5, ["white-box-student"]) for r in seeds)  # fmt: skip
    assert all(r["epsilon"] == 0.0 and r["tp"] == r["fp"] == 20 for r in seeds)
    total = sum(r["seconds"] for r in seeds)
    assert (f"(`patectgan-networks-controls-eps1.json`, {total:,.0f} s in all): every bound "
            f"is 0.000") in flat  # fmt: skip


@needs_gan
def test_dpctgan_samples_conditions_by_private_frequencies_and_the_fix_by_public_ones():
    """DPCTGAN as installed (the fast network of the white-box audit), 3,000 synthetic rows
    after a fit on twin-record (49 rows of zeros and one of ones, t = 1 1 1): a row is
    conditioned on one of t's categories with probability 1/50 on D and 2/51 on D ∪ {t} (a
    column uniformly, then its category by the private frequency): means 60 and 118. With
    the public conditions (the fix), 1/2 on either (1,500)."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("twin-record")(columns=3, rows=50)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-conditions")
    opts = SyntheticDataSettings(dpctgan_options=FAST_DPCTGAN).dpctgan_settings()
    got = {}
    for name in ("smartnoise-dpctgan", "smartnoise-dpctgan-public-conditions"):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=opts))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [7, 8], domain=pair.domain,
                       observe=("conditions",), sample_rows=3000)  # fmt: skip
        assert all(run["conditions"]["rule"] == "frequencies" for run in r.runs)
        got[name] = [target_conditions(run["conditions"]["categories"], pair.target,
                                       pair.domain.cardinalities) for run in r.runs]  # fmt: skip
        if name == "smartnoise-dpctgan":
            assert [tm.statistic(run, None, pair, None) for run in r.runs][1] == LOSS_CAP
    on_d, on_dp = got["smartnoise-dpctgan"]
    assert 30 <= on_d <= 90 and 85 <= on_dp <= 155
    assert all(1380 <= v <= 1620 for v in got["smartnoise-dpctgan-public-conditions"])


def _recorded(name):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rec = json.loads((root / "docs/results/synthetic-data" / name).read_text())
    page = (root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8")
    return rec, page


def test_docs_conditions_figures_are_the_recorded_run():
    """The page's figures for violation 2 (PATECTGAN's sample() conditions) and its control
    are those of the recorded run, whose settings the page states."""
    rec, page = _recorded("gan-unique-record-white-box-conditions-eps1.json")
    st = rec["settings"]
    assert st["generators"] == ["smartnoise-patectgan", "smartnoise-patectgan-public-conditions"]
    keys = ("threat_models", "dataset", "rows", "columns", "sample_rows", "runs", "pilot_runs",
            "seed", "epsilon")  # fmt: skip
    assert tuple(st[k] for k in keys) == (["white-box-conditions"], "unique-record", 50, 3,
                                          1000, 30, 10, 47, 1.0)  # fmt: skip
    lib, ctl = rec["entries"]
    assert round(lib["lower_bound"]["epsilon"], 3) == 2.022 and ctl["lower_bound"]["epsilon"] == 0
    assert (lib["detail"]["tp"], lib["detail"]["fp"]) == (30, 0)
    assert (ctl["detail"]["tp"], ctl["detail"]["fp"]) == (30, 30)
    assert f"ε ≥ 2.022 and μ ≥ {lib['detail']['mu_lower']:.2f}**" in page
    assert "**the control is not, ε ≥ 0.000** (30\nand 30" in page
    assert f"{rec['timings']['total']:.0f} s on one worker" in page


def test_docs_dpgan_pategan_figures_are_the_recorded_run():
    rec, page = _recorded("dpgan-pategan-unique-record-black-box-eps1.json")
    st = rec["settings"]
    assert st["generators"] == ["smartnoise-dpgan", "smartnoise-pategan"]
    assert (st["dataset"], st["rows"], st["runs"], st["pilot_runs"], st["seed"]) == (
        "unique-record", 1000, 20, 10, 46)  # fmt: skip
    assert {e["lower_bound"]["epsilon"] for e in rec["entries"]} == {0.0}
    assert len(rec["entries"]) == 6 and "every bound 0.000" in page
    assert (
        f"`dpgan-pategan-unique-record-black-box-eps1.json`, {rec['timings']['total']:.0f} s"
        in page
    )


def test_docs_dpctgan_conditions_figures_are_the_recorded_run():
    rec, page = _recorded("gan-twin-record-white-box-conditions-eps1.json")
    st = rec["settings"]
    assert st["generators"] == ["smartnoise-dpctgan", "smartnoise-dpctgan-public-conditions"]
    keys = ("threat_models", "dataset", "rows", "columns", "sample_rows", "runs", "pilot_runs",
            "seed", "epsilon")  # fmt: skip
    assert tuple(st[k] for k in keys) == (["white-box-conditions"], "twin-record", 50, 3, 3000,
                                          30, 10, 46, 1.0)  # fmt: skip
    assert tuple(st["dpctgan_options"]) == FAST_DPCTGAN
    lib, ctl = rec["entries"]
    assert round(lib["lower_bound"]["epsilon"], 3) == 2.022 and ctl["lower_bound"]["epsilon"] == 0
    assert (lib["detail"]["tp"], lib["detail"]["fp"], ctl["detail"]["tp"], ctl["detail"]["fp"]) == (
        30, 0, 30, 30)  # fmt: skip
    assert "**DPCTGAN as installed is refuted, ε ≥ 2.022 and μ ≥ 2.39**" in page
    assert (
        f"`gan-twin-record-white-box-conditions-eps1.json`, {rec['timings']['total']:.0f} s" in page
    )


def test_docs_conditions_controls_over_20_seeds_are_the_recorded_runs():
    rec, page = _recorded("gan-conditions-controls-eps1.json")
    for name, dataset, rows in (
        ("smartnoise-patectgan-public-conditions", "unique-record", 1000),
        ("smartnoise-dpctgan-public-conditions", "twin-record", 3000),
    ):
        seeds = rec["audits"][name]["seeds"]
        assert [r["seed"] for r in seeds] == list(range(20))
        assert all((r["dataset"], r["sample_rows"], r["runs"], r["pilot_runs"]) ==
                   (dataset, rows, 20, 5) for r in seeds)  # fmt: skip
        assert all(r["epsilon"] == 0.0 for r in seeds)
        assert f"`{name}` ({sum(r['seconds'] for r in seeds):,.0f} s" in " ".join(page.split())
    assert "neither control is refuted on any seed" in " ".join(page.split())
