"""The synthetic-data audit's one-run mode (issue 46: one-run bounds with many target records
per release): canary records each inserted with probability ½, one fit, one guess per canary
(Steinke, Nasr & Jagielski 2023, arXiv:2305.08846). DataSynthesizer's PrivBayes runs in
dpaudit's own environment, so these run in CI; smartnoise's MST only where its environment is
built."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpaudit.attacks import SYNTHETIC_THREAT_MODELS, canary_table
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data
from dpaudit.experiments.synthetic_data.one_run import audit_one_run, one_run_design
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

pytest.importorskip("DataSynthesizer", reason="the extra 'datasynthesizer' is not installed")

#: PrivBayes with its noise over the public domain (the fix of its support violation), so the
#: white-box reading of every canary's cell is defined: the cell options of its registry entry.
PUBLIC = (("k", 1), ("public_rows", 1000))


def _one_run(generator, seed, **kw):
    s = SyntheticDataSettings(generators=(generator,), mode="one-run", seed=seed,
                              threat_models=("white-box-laplace", "black-box"), **kw)  # fmt: skip
    return audit_synthetic_data(s).entries


def test_the_design_puts_each_canary_alone_in_its_first_column_cell():
    c = canary_table(canaries=50, rows=20, columns=4)
    assert c.domain.cardinalities == (51, 2, 2, 2)
    assert sorted(c.canaries[:, 0].tolist()) == list(range(1, 51))
    assert not np.isin(c.canaries[:, 0], c.base[:, 0]).any()
    inc = np.arange(50) % 3 == 0
    assert c.table(inc).shape == (20 + inc.sum(), 4)
    assert c.pair(7).D is c.base and c.pair(7).target.tolist() == [8, 1, 1, 1]
    with pytest.raises(ValueError, match="included must have one entry per canary"):
        c.table(np.ones(49, dtype=bool))
    for kw, match in (({"canaries": 1}, "canaries must be at least 2"),
                      ({"columns": 1}, "columns must be at least 2"),
                      ({"rows": 0}, "rows")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            canary_table(**kw)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"threat_models": ("black-box-density",)}, "no pilot runs to tune"),
        ({"canaries": 1}, "canaries must be at least 2"),
        ({"releases": 0}, "releases"),
    ],
)
def test_bad_one_run_settings_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        SyntheticDataSettings(generators=("datasynthesizer-privbayes",), mode="one-run", **kw)


def test_a_tenth_of_the_noise_is_refuted_in_one_release():
    """Planted bug: PrivBayes's Laplace noise at 0.1× its stated scale; 1,000 canaries in one
    fit. The white-box reading of each canary's noisy count refutes ε = 1 (1.564, 1.885 and
    3.213 on seeds 0–2, ~2 CPU-s each); the black-box count of its copies does not
    (0.34–0.97)."""
    wb, bb = _one_run("datasynthesizer-privbayes-public-support-quiet-noise", 0)
    assert wb.gap.refutes_claim and wb.lower_bound.epsilon > 1.25
    assert wb.detail.metrics.auc > 0.85 and wb.detail.mean_in > wb.detail.mean_out
    assert bb.detail.mean_in > bb.detail.mean_out and bb.lower_bound.epsilon < 10.0
    assert 400 < wb.detail.included < 600 and wb.detail.canaries == 1000
    assert {r.strategy for r in wb.selections} >= {"split", "bonferroni"}


def test_the_honest_generator_is_never_refuted_over_six_seeds():
    """PrivBayes at ε = 1 (public support): every one-run bound at most the claim; the
    white-box one is positive on some seeds (a non-trivial valid bound from one release)."""
    bounds = []
    for seed in range(6):
        for e in _one_run("datasynthesizer-privbayes-public-support", seed):
            assert not e.gap.refutes_claim, (seed, e.adversary, e.lower_bound.epsilon)
            bounds.append(e.lower_bound.epsilon)
    assert max(bounds) > 0.0


def test_releases_are_seeded_one_by_one_and_pooled_into_one_game():
    """Release r's inclusions and library seed come from its own child seed: the first
    release of a two-release audit is the one-release audit's release, and the game holds
    both releases' canaries."""
    g = "datasynthesizer-privbayes-public-support"
    s = SyntheticDataSettings(generators=(g,), mode="one-run", threat_models=("black-box",),
                              canaries=200, seed=3)  # fmt: skip
    cell = GeneratorCell(g, 1.0, 1e-2, options=PUBLIC)
    one = audit_one_run(g, s, cell, 0)[0].detail
    two = audit_one_run(g, dataclasses.replace(s, releases=2), cell, 0)[0].detail
    again = audit_one_run(g, s, cell, 0)[0].detail
    assert (one.included, one.mean_in, one.mean_out) == (again.included, again.mean_in,
                                                         again.mean_out)  # fmt: skip
    assert two.canaries * two.releases == 400 and two.included > one.included
    assert one.bounds.max_valid == again.bounds.max_valid


def test_the_workflow_runs_the_mode_as_installed():
    """``audit_synthetic_data`` in one-run mode on PrivBayes as installed: one entry per
    threat model, the library's pure-ε claim, the design checked before the fit."""
    s = SyntheticDataSettings(generators=("datasynthesizer-privbayes",), mode="one-run",
                              threat_models=("black-box",), canaries=300)  # fmt: skip
    res = audit_synthetic_data(s)
    (e,) = res.entries
    assert e.adversary == "black-box (one run: 300 canaries × 1)"
    assert e.claims[0].epsilon == 1.0 and e.claims[0].delta == 0.0
    assert e.lower_bound.epsilon >= 0.0 and not e.gap.refutes_claim
    assert "one-run" in res.note.lower() or "One-run" in res.note
    assert one_run_design(s).domain.cardinalities == (301, 2, 2)
    wb = dataclasses.replace(s, threat_models=("white-box-laplace",))  # seed 0 leaves out
    # the last canary: the support read from the data stops short of the public domain
    with pytest.raises(ValueError, match=r"white-box-laplace cannot read release 0.*support"):
        audit_synthetic_data(wb)  # as installed: noisy counts over the data's support
    assert not SYNTHETIC_THREAT_MODELS.get("black-box").tuned


@pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)
def test_mst_with_a_tenth_of_the_noise_is_refuted_by_the_copies():
    """smartnoise's MST at (1, 10⁻²), 6 releases of 1,000 canaries: as installed its domain
    compression merges the rare canary values and the copy count finds nothing (0); at 0.1×
    the noise the canaries' cells pass the compression threshold and the copies refute the
    claim (1.149 and 1.399 in two runs of 4 releases; its noise cannot be seeded)."""
    s = SyntheticDataSettings(generators=("smartnoise-mst", "smartnoise-mst-quiet-noise"),
                              mode="one-run", threat_models=("black-box",), releases=6)  # fmt: skip
    honest, bug = audit_synthetic_data(s).entries
    assert bug.gap.refutes_claim and not honest.gap.refutes_claim


@pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)
def test_aim_with_a_tenth_of_the_noise_is_refuted_by_its_measurements_in_one_release():
    """smartnoise's AIM (rounds = 4) at (1, 10⁻²), 1,000 canaries in one fit: the white-box
    reading of its noisy marginals refutes the planted bug (2.668 in one run; its noise cannot
    be seeded) and not the generator as installed (0), whose copies show nothing either."""
    s = SyntheticDataSettings(generators=("smartnoise-aim", "smartnoise-aim-quiet-noise"),
                              mode="one-run", rounds=4,
                              threat_models=("black-box", "white-box-measurements"))  # fmt: skip
    honest_bb, honest_wb, _, bug_wb = audit_synthetic_data(s).entries
    assert bug_wb.gap.refutes_claim and bug_wb.detail.threat_model == "white-box-measurements"
    assert not honest_wb.gap.refutes_claim and not honest_bb.gap.refutes_claim
