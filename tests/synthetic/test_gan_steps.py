"""DPGAN's step count (``white-box-steps``): the statistic, its place among the threat models,
and (with ``make venv-smartnoise-gan``) the library's step count read off the private row
count at a boundary of ⌊n/64⌋, and the fix that reads a public one."""

from __future__ import annotations

import pytest

from dpaudit.attacks._synthetic import SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.experiments.synthetic_data import SyntheticDataSettings
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell

needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)


def test_the_statistic_is_the_step_count_and_serves_the_dp_sgd_gans_only():
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-steps")
    assert tm.statistic({"accounting": {"steps": 640}}, None, None, None) == 640.0
    with pytest.raises(ValueError, match="accounting holds none"):
        tm.statistic({"accounting": {"queries": 3}}, None, None, None)
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    assert {"smartnoise-dpgan", "smartnoise-dpgan-public-rows", "smartnoise-dpctgan"} <= served
    assert not {g for g in served if "pate" in g}
    s = SyntheticDataSettings(generators=("smartnoise-dpgan-public-rows",))
    assert s.threat_models_for("smartnoise-dpgan-public-rows") == ("white-box-dpsgd",)


@needs_gan
def test_dpgans_step_count_reads_the_private_row_count_and_the_fix_a_public_one():
    """At (1, 10⁻²) on unique-record with 1,023 rows: D trains 21 epochs of 15 batches (630
    opacus steps, two a batch), D ∪ {t} (1,024 rows) 20 of 16 (640); given the public row
    count 1,000, both train 20 epochs of 15 batches (600)."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=1023)
    steps = {}
    for name in ("smartnoise-dpgan", "smartnoise-dpgan-public-rows"):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 3], domain=pair.domain,
                       observe=("accounting",))  # fmt: skip
        steps[name] = [(run["accounting"]["steps"], run["accounting"]["epochs"]) for run in r.runs]
    assert steps == {"smartnoise-dpgan": [(630, 21), (640, 20)],
                     "smartnoise-dpgan-public-rows": [(600, 20), (600, 20)]}  # fmt: skip


@needs_gan
def test_the_worker_refuses_public_rows_for_another_gan():
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)
    g = SYSTEMS.get("smartnoise-patectgan")(
        GeneratorCell("smartnoise-patectgan", 1.0, 1e-2, options=(("public_rows", 100),))
    )
    with pytest.raises(Exception, match=r"public_rows .* applies to DPGAN and DPCTGAN only"):
        g.fit_runs([pair.D], [0], [1], domain=pair.domain, observe=("accounting",))


@needs_gan
def test_dpctgans_accountant_trades_epochs_for_batches_at_its_boundary():
    """DPCTGAN (batches of 500) on 999 rows trains 10 epochs of one batch, on 1,000 rows 5 of
    two: 20 opacus steps either way, so its step count does not show n there."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=999)
    g = SYSTEMS.get("smartnoise-dpctgan")(GeneratorCell("smartnoise-dpctgan", 1.0, 1e-2))
    r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [3, 3], domain=pair.domain,
                   observe=("accounting",))  # fmt: skip
    got = [(run["accounting"]["steps"], run["accounting"]["epochs"]) for run in r.runs]
    assert got == [(20, 10), (20, 5)]


def test_docs_dpgan_steps_figures_are_the_recorded_run():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    rec = json.loads(
        (
            root / "docs/results/synthetic-data/dpgan-unique-record-white-box-steps-eps1.json"
        ).read_text()
    )
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (
        ["smartnoise-dpgan", "smartnoise-dpgan-public-rows"],
        ["white-box-steps"],
    )
    keys = ("dataset", "rows", "epsilon", "runs", "pilot_runs", "seed")
    assert tuple(st[k] for k in keys) == ("unique-record", 1023, 1.0, 30, 10, 46)
    (lib, ctl) = rec["entries"]
    x = lib["detail"]
    assert (x["tp"], x["fp"], x["threshold"]) == (30, 0, 640.0)
    assert ctl["detail"]["threshold"] == 600.0 and ctl["lower_bound"]["epsilon"] == 0.0
    assert (f"ε ≥ {lib['lower_bound']['epsilon']:.3f} and μ ≥ {x['mu_lower']:.2f}** (30 of 30 "
            "runs on D ∪ {t} at 640 steps, 0 of 30 on D)") in page  # fmt: skip
    assert f"{round(rec['timings']['total'])} s on one worker" in page


def test_docs_dpgan_steps_controls_over_20_seeds_are_the_recorded_runs():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    rec = json.loads(
        (root / "docs/results/synthetic-data/dpgan-steps-controls-eps1.json").read_text()
    )
    audits = rec["audits"]
    assert sorted(a["seed"] for a in audits) == list(range(20))
    assert all((a["epsilon"], a["tp"], a["fp"], a["threshold"], a["runs"], a["pilot_runs"])
               == (0.0, 10, 10, 600.0, 10, 5) for a in audits)  # fmt: skip
    assert f"{round(rec['seconds']):,} s in all" in page
