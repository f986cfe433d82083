"""Issue 45: each kind of ε that is not a lower bound gets its own mark and footnote in the
HTML report (an RDP conversion for display, an estimate, a bound whose assumption fails), and
``dpaudit report`` writes the report beside the results it renders."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpaudit._results import AuditEntry, AuditResult, Claim, Curve, LowerBound
from dpaudit.report import render_html
from dpaudit.report.html import NON_BOUND_NOTES, non_bound_kind

ORDERS = np.array([2.0, 4.0, 8.0])
CLAIM = (Claim("accountant", "Mironov 2017, arXiv:1702.07476", epsilon=8.0, delta=1e-5),)


def _entry(adversary: str, lower: LowerBound) -> AuditEntry:
    return AuditEntry("dp-sgd", adversary, lower, CLAIM)


def _result(*entries: AuditEntry) -> AuditResult:
    return AuditResult("dp-sgd", entries, {"seed": 0}, 0, {}, {})


VALID = _entry("lira:one-run", LowerBound("one-run bound", 0.95, 1.5, 1e-5))
CONVERTED = _entry(
    "2-cut", LowerBound("2-cut RDP audit", 0.95, 2.25, 1e-5, epsilon_is_valid=False,
                        rdp=Curve(ORDERS, [0.1, 0.2, 0.3]))
)  # fmt: skip
ESTIMATE = _entry(
    "llr:gaussian-pair",
    LowerBound("Gaussian-pair estimate (Agrawal et al. 2026, arXiv:2606.12733)", 0.95, 3.75,
               1e-5, epsilon_is_valid=False, note="rests on a Gaussian trade-off curve"),
)  # fmt: skip
ASSUMPTION = _entry(
    "clopper-pearson",
    LowerBound("Clopper-Pearson threshold audit", 0.95, 4.5, 1e-5, epsilon_is_valid=False,
               note="NOT a valid lower bound for canaries of one training run"),
)  # fmt: skip


def _notes(page: str) -> dict[str, str]:
    return dict(re.findall(r'<p class="note" data-kind="([a-z-]+)">([^<]*)</p>', page))


def test_each_kind_of_non_bound_has_its_own_footnote():
    page = render_html(_result(VALID, CONVERTED, ESTIMATE, ASSUMPTION), figures=False)
    notes = _notes(page)
    assert set(notes) == {"rdp-conversion", "estimate", "assumption"}
    for kind, (mark, text) in NON_BOUND_NOTES.items():
        assert notes[kind].startswith(mark) and text.split(":")[0] in notes[kind]
    # each value carries its own mark, the valid bound none
    for value, mark in (("1.5", ""), ("2.25", "*"), ("3.75", "†"), ("4.5", "‡")):
        assert f'data-key="lower">{value}{mark}</td>' in page


def test_the_gaussian_pair_estimate_is_not_called_an_rdp_conversion():
    page = render_html(_result(VALID, ESTIMATE), figures=False)
    assert set(_notes(page)) == {"estimate"}
    assert "upper-bound conversion" not in page


def test_non_bound_kind():
    assert non_bound_kind(VALID.lower_bound.to_dict()) is None
    assert non_bound_kind({"epsilon": None, "epsilon_is_valid": False}) is None
    assert non_bound_kind(CONVERTED.lower_bound.to_dict()) == "rdp-conversion"
    assert non_bound_kind(ESTIMATE.lower_bound.to_dict()) == "estimate"
    assert non_bound_kind(ASSUMPTION.lower_bound.to_dict()) == "assumption"


def test_report_is_written_beside_its_results_json(tmp_path, monkeypatch):
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    results = tmp_path / "run" / "results.json"
    results.parent.mkdir()
    results.write_text(json.dumps(_result(VALID, ESTIMATE).to_dict()))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = CliRunner().invoke(build_app(), ["report", str(results), "--no-figures", "--json"])
    assert res.exit_code == 0, res.output
    written = json.loads(res.output)["report"]
    assert written == str((tmp_path / "run" / "report.html").resolve())
    assert not (elsewhere / "report.html").exists()
    out = tmp_path / "x.html"  # --out still decides when given
    res = CliRunner().invoke(
        build_app(), ["report", str(results), "--no-figures", "--out", str(out)]
    )
    assert res.exit_code == 0 and out.is_file()
