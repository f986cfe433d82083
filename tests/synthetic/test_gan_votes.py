"""PATEGAN's white-box view (``white-box-votes``): the label transcript's privacy loss against a
naive loop over scipy's Laplace, its place among the threat models, and (with ``make
venv-smartnoise-gan``) the shadow teachers the worker trains beside the library's: on a copy
of the run's own data they vote exactly as the library's teachers do, query for query."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import laplace

from dpaudit.attacks._synthetic import PER_TARGET, SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_gan import pate_label_llr
from dpaudit.experiments.synthetic_data import SyntheticDataSettings
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell

needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)
#: PATEGAN's public settings that make a fit short: 10 iterations, one teacher step each.
FAST = (("batch_size", 512), ("teacher_iters", 1))


def _naive_llr(labels, v1, v0, teachers, scale):
    out = 0.0
    for lab, a, b in zip(labels, v1, v0, strict=True):
        p1 = laplace.sf(teachers / 2 - a, scale=scale)  # P(a + L > T/2)
        p0 = laplace.sf(teachers / 2 - b, scale=scale)
        out += math.log(p1 / p0) if lab == 1 else math.log((1 - p1) / (1 - p0))
    return out


def test_the_label_llr_is_the_naive_sum_over_scipys_laplace():
    rng = np.random.default_rng(0)
    for teachers, scale in ((1, 1000.0), (3, 2.0), (4, 0.5)):
        v1, v0 = rng.integers(0, teachers + 1, (2, 200))
        labels = rng.integers(0, 2, 200)
        got = pate_label_llr(labels, v1, v0, teachers=teachers, scale=scale)
        assert got == pytest.approx(_naive_llr(labels, v1, v0, teachers, scale), rel=1e-10)
    assert pate_label_llr([1, 0, 1], [1, 0, 0], [1, 0, 0], teachers=1, scale=5.0) == 0.0


def test_the_label_llr_is_a_likelihood_ratio_its_exponential_has_mean_one_under_D():
    """Labels drawn as smartnoise's pate draws them from the votes on D: E[exp(LLR)] = 1."""
    rng = np.random.default_rng(1)
    v0, v1 = np.array([0, 1, 2, 2]), np.array([1, 1, 3, 0])
    draws = []
    for _ in range(20_000):
        labels = (v0 + rng.laplace(0.0, 1.5, 4) > 1.5).astype(int)  # T = 3
        draws.append(math.exp(pate_label_llr(labels, v1, v0, teachers=3, scale=1.5)))
    assert np.mean(draws) == pytest.approx(1.0, abs=0.03)


def test_the_label_llr_refuses_bad_inputs():
    with pytest.raises(ValueError, match="0 or 1"):
        pate_label_llr([2], [0], [0], teachers=1, scale=1.0)
    with pytest.raises(ValueError, match="counts of 0 … 1"):
        pate_label_llr([1], [2], [0], teachers=1, scale=1.0)
    with pytest.raises(ValueError, match="one length"):
        pate_label_llr([1, 0], [1], [0], teachers=1, scale=1.0)
    with pytest.raises(ValueError, match="scale"):
        pate_label_llr([1], [1], [0], teachers=1, scale=0.0)


def test_auto_audits_pategan_under_its_votes_and_dpgan_under_its_gradients():
    s = SyntheticDataSettings(generators=("smartnoise-pategan",))
    assert s.threat_models_for("smartnoise-pategan") == ("white-box-votes",)
    assert s.threat_models_for("smartnoise-dpgan") == ("white-box-dpsgd",)
    assert "votes" in PER_TARGET
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-votes")
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    assert served == {"smartnoise-pategan", "smartnoise-pategan-quiet-noise"}
    assert tm.llr
    one_run = SyntheticDataSettings(generators=("smartnoise-pategan",), mode="one-run")
    assert one_run.threat_models_for("smartnoise-pategan") == ("black-box",)


def _fit(name, which, seeds, rows=1000, datasets=None):
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=rows)
    g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=FAST))
    tables = datasets if datasets is not None else [pair.D, pair.D_prime]
    return pair, g.fit_runs(tables, which, seeds, domain=pair.domain, observe=("votes",))


@needs_gan
def test_shadow_teachers_on_a_copy_of_the_data_vote_as_the_librarys_teachers():
    """The shadow teacher replays each of the teacher's steps with the teacher's seeds: on a
    copy of the run's own 1,000 rows its votes are the library teacher's, query for query,
    and the privacy loss is 0; the labels are the library's (the seed fixes them)."""
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=1000)
    _, r = _fit("smartnoise-pategan", [0, 0], [5, 5], datasets=[pair.D, pair.D.copy()])
    rec = r.runs[0]["votes"]
    assert (rec["teachers"], rec["scale"], rec["queries"]) == (1, 1000.0, 25_600)
    assert rec["votes"].shape == (25_600, 2) and rec["labels"].shape == (25_600,)
    np.testing.assert_array_equal(rec["votes"][:, 0], rec["votes"][:, 1])
    np.testing.assert_array_equal(rec["labels"], r.runs[1]["votes"]["labels"])
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-votes")
    assert tm.statistic(r.runs[0], None, pair, None) == 0.0


@needs_gan
def test_the_votes_are_recorded_on_both_datasets_and_the_statistic_reads_them():
    """On unique-record (1,000 rows of zeros, t = 1 1 1) the teachers of D and of D ∪ {t}
    agree on nearly every generated row; the statistic is the naive sum over the queries."""
    pair, r = _fit("smartnoise-pategan-quiet-noise", [1, 0], [6, 7])
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-votes")
    for run in r.runs:
        rec = run["votes"]
        assert rec["scale"] == 1000.0  # the scale the library states, not the bug's
        assert np.mean(rec["votes"][:, 0] == rec["votes"][:, 1]) > 0.95
        want = _naive_llr(rec["labels"], rec["votes"][:, 1], rec["votes"][:, 0], 1, 1000.0)
        assert tm.statistic(run, None, pair, None) == pytest.approx(want, abs=1e-9)


@needs_gan
def test_the_worker_refuses_votes_for_another_gan_or_another_teacher_count():
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)
    g = SYSTEMS.get("smartnoise-dpgan")(GeneratorCell("smartnoise-dpgan", 1.0, 1e-2))
    with pytest.raises(Exception, match="votes are recorded for PATEGAN only"):
        g.fit_runs([pair.D], [0], [1], domain=pair.domain, observe=("votes",))
    big = np.zeros((2000, 3), dtype=np.int64)
    with pytest.raises(Exception, match="gives PATEGAN 2 teachers, not 1"):
        _fit("smartnoise-pategan", [0], [1], datasets=[np.zeros((1000, 3), np.int64), big])


def test_docs_pategan_votes_figures_are_the_recorded_run():
    """The page's PATEGAN white-box figures are those of the recorded audit, run as it says."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    rec = json.loads((root / "docs/results/synthetic-data/"
                      "pategan-unique-record-white-box-votes-eps1.json").read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (
        ["smartnoise-pategan-quiet-noise", "smartnoise-pategan"],
        ["white-box-votes"],
    )
    got = tuple(
        st[k] for k in ("dataset", "rows", "columns", "epsilon", "runs", "pilot_runs", "seed")
    )
    assert got == ("unique-record", 1000, 3, 1.0, 30, 10, 46)
    bug, lib = (e["detail"] for e in rec["entries"])
    assert all(e["lower_bound"]["epsilon"] == 0.0 for e in rec["entries"])
    assert (f"{lib['tp']} and {lib['fp']} of 30 runs at the pilot's threshold for the library, "
            f"{bug['tp']} and {bug['fp']} for the planted bug") in page  # fmt: skip
    assert lib["llr_mu_estimate"] == bug["llr_mu_estimate"] == 0.0
    assert f"with an interval up to {lib['llr_mu_interval']['high']:.3f} for the library" in page
    assert f"{round(rec['timings']['total'])} s on 2 workers" in page
