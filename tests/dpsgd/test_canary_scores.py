"""Bring your own model: bounds from canary score files, and the two CLI commands."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special

from dpaudit.bounds import epsilon_from_scores, gdp_from_error_rates
from dpaudit.conversions import gdp_epsilon
from dpaudit.experiments.canary_scores.pipeline import (
    ScoresAuditSettings,
    audit_canary_scores,
    audit_scores,
    read_mask,
    read_scores,
)


def _scores(seed: int = 0, n: int = 800, shift: float = 1.0):
    g = np.random.default_rng(seed)
    return g.normal(shift, 1, n), g.normal(0, 1, n)


def test_gdp_from_error_rates_reference_and_edges():
    # TPR_lo = Φ(1), FPR_hi = ½ → μ = 1 → ε(1, 1e-5) = 4.377178 (Dong, Roth & Su Cor. 2.13).
    b = gdp_from_error_rates(special.ndtr(1.0), 0.5, 1e-5)
    assert b.mu == pytest.approx(1.0, abs=1e-12)
    assert b.epsilon == pytest.approx(4.377178, abs=1e-6)
    assert gdp_from_error_rates(0.3, 0.5, 1e-5).mu == 0.0
    assert gdp_from_error_rates(1.0, 0.5, 1e-5).epsilon == np.inf


def test_every_bound_and_validity_by_design():
    pos, neg = _scores()
    one = audit_canary_scores(pos, neg, rng=0, claimed_epsilon=0.5)
    ind = audit_canary_scores(pos, neg, rng=0, claimed_epsilon=0.5, design="independent")
    names = ["clopper-pearson", "gdp", "or", "or-fdp", "max"]
    assert [e.adversary for e in one.entries] == names
    valid_one = {e.adversary: e.lower_bound.epsilon_is_valid for e in one.entries}
    assert valid_one == {"clopper-pearson": False, "gdp": False, "or": True, "or-fdp": True,
                         "max": True}  # fmt: skip
    assert all(e.lower_bound.epsilon_is_valid for e in ind.entries)
    cp_one, cp_ind = one.entries[0], ind.entries[0]
    assert cp_one.lower_bound.epsilon == cp_ind.lower_bound.epsilon > 0.5
    assert cp_ind.gap.refutes_claim and not cp_one.gap.refutes_claim  # invalid never refutes
    # The CP entry is dpaudit.bounds.epsilon_from_scores; GDP uses its two intervals.
    d = one.detail
    gdp = gdp_from_error_rates(d.clopper_pearson.tpr_lower, d.clopper_pearson.fpr_upper, 1e-5)
    assert one.entries[1].lower_bound.epsilon == gdp.epsilon == gdp_epsilon(gdp.mu, 1e-5)
    assert d.num_in == d.num_out == 800
    bonf = audit_canary_scores(pos, neg, selection="bonferroni", max_points=50, rng=0)
    assert bonf.entries[0].selections[0].strategy == "bonferroni"
    ref = epsilon_from_scores(pos, neg, selection=_bonferroni_grid(pos, neg, 50), delta=1e-5)
    assert bonf.entries[0].lower_bound.epsilon == pytest.approx(ref.epsilon, rel=1e-12)


def _bonferroni_grid(pos, neg, points):
    from dpaudit.bounds import Bonferroni

    pooled = np.concatenate([pos, neg])
    return Bonferroni(tuple(np.unique(np.quantile(pooled, np.linspace(0, 1, points)))))


def test_files_csv_npy_mask_and_negate(tmp_path):
    pos, neg = _scores(1, 300)
    (tmp_path / "in.csv").write_text("score\n" + "\n".join(map(str, pos)) + "\n")
    np.save(tmp_path / "out.npy", neg)
    a = audit_scores(ScoresAuditSettings(in_scores=str(tmp_path / "in.csv"),
                                         out_scores=str(tmp_path / "out.npy")))  # fmt: skip
    allscores = np.concatenate([pos, neg])
    mask = np.r_[np.ones(300, int), np.zeros(300, int)]
    (tmp_path / "all.csv").write_text(
        "id,loss\n" + "\n".join(f"{i},{-v}" for i, v in enumerate(allscores)) + "\n"
    )
    (tmp_path / "mask.csv").write_text("\n".join("true" if m else "false" for m in mask))
    settings = ScoresAuditSettings(
        scores=str(tmp_path / "all.csv"), column="loss", negate=True,
        included=str(tmp_path / "mask.csv"),
    )  # fmt: skip
    b = audit_scores(settings)
    ea = [e.lower_bound.epsilon for e in a.entries]
    eb = [e.lower_bound.epsilon for e in b.entries]
    np.testing.assert_allclose(ea, eb, rtol=1e-12)
    assert read_mask(tmp_path / "mask.csv").sum() == 300
    np.testing.assert_allclose(read_scores(tmp_path / "in.csv"), pos, rtol=1e-15)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: audit_canary_scores([1.0, np.nan], [0.0, 1.0]), "finite"),
        (lambda: audit_canary_scores([], [0.0, 1.0]), "empty"),
        (lambda: audit_canary_scores([1.0, 2.0], [0.0], delta=0.0), "delta"),
        (lambda: audit_canary_scores([1.0, 2.0], [0.0], design="shadow"), "design"),
        (lambda: audit_canary_scores([1.0, 2.0], [0.0], selection="max"), "selection"),
        (lambda: audit_scores(ScoresAuditSettings()), "either"),
        (lambda: audit_scores(ScoresAuditSettings(in_scores="a.csv")), "go together"),
        (lambda: audit_scores(ScoresAuditSettings(scores="a.csv", in_scores="b")), "either"),
        (lambda: ScoresAuditSettings(scores="a", included="b", claimed_epsilon=-1.0),
         "claimed_epsilon"),
    ],
)  # fmt: skip
def test_bad_inputs(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_bad_files(tmp_path):
    (tmp_path / "s.csv").write_text("1.0\n2.0\nnan\n")
    (tmp_path / "m.csv").write_text("1\n0\n")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="finite"):
        read_scores(tmp_path / "s.csv")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_scores(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="name one with column"):
        read_scores(tmp_path / "t.csv")
    (tmp_path / "s.csv").write_text("1.0\n2.0\n3.0\n")
    with pytest.raises(ValueError, match="one entry per score"):
        audit_scores(ScoresAuditSettings(scores=str(tmp_path / "s.csv"),
                                         included=str(tmp_path / "m.csv")))  # fmt: skip
    (tmp_path / "m.csv").write_text("1\n2\n0\n")
    with pytest.raises(ValueError, match="0/1"):
        read_mask(tmp_path / "m.csv")


def test_cli_scores_and_dp_sgd_help(tmp_path):
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    pos, neg = _scores(2, 200)
    np.save(tmp_path / "in.npy", pos)
    np.save(tmp_path / "out.npy", neg)
    args = [
        "audit", "scores", "--in-scores", str(tmp_path / "in.npy"),
        "--out-scores", str(tmp_path / "out.npy"), "--claimed-epsilon", "2",
        "--design", "independent",
    ]  # fmt: skip
    res = CliRunner().invoke(build_app(), [*args, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["workflow"] == "scores" and len(data["entries"]) == 5
    res = CliRunner().invoke(build_app(), [*args, "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "clopper-pearson" in res.output and (tmp_path / "r" / "guess_sweep.png").is_file()
    bad = CliRunner().invoke(build_app(), ["audit", "scores", "--in-scores", "x.npy"])
    assert bad.exit_code == 2 and "go together" in bad.output
    res = CliRunner().invoke(build_app(), ["audit", "dp-sgd", "--help"])
    assert res.exit_code == 0 and "--noise-multiplier" in res.output
    bad = CliRunner().invoke(build_app(), ["audit", "dp-sgd", "--canaries", "0"])
    assert bad.exit_code == 2 and "num_canaries" in bad.output
    bad = CliRunner().invoke(build_app(), ["audit", "dp-sgd", "--noise-multiplier", "-1"])
    assert bad.exit_code == 2 and "noise_multiplier" in bad.output


def test_docstring_examples():
    from doctest_support import module_examples

    for name in (
        "dpaudit.experiments.canary_scores.pipeline",
        "dpaudit.bounds._one_run_max",
        "dpaudit.experiments.dpsgd.settings",
        "dpaudit.experiments.dpsgd.reproduction",
        "dpaudit.experiments.dpsgd.pipeline",
        "dpaudit.attacks._canaries",
        "dpaudit.attacks._mia_scores",
        "dpaudit.attacks._qmia",
    ):
        assert module_examples(name).failed == 0, name
    pytest.importorskip("opacus")
    for name in ("dpaudit.systems.dpsgd._dpsgd", "dpaudit.systems.dpsgd._opacus_accounting"):
        assert module_examples(name).failed == 0, name


def test_docs_section_examples():
    from doctest_support import run_examples, section_examples

    test = section_examples("55-dp-sgd.md")
    assert test.examples
    assert run_examples(test) == 0
