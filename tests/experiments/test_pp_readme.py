"""The paper-scale private-prediction tables (docs/reproductions/private-prediction.md) are
generated from the stored results: they fail to match when either changes by hand."""

from __future__ import annotations

import json
import pathlib

import pytest

from dpaudit.report.pp_readme import (
    render_tables,
    rewrite_section,
    section_block,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
STORED = sorted((ROOT / "docs" / "results").glob("paper-*.json"))
SECTION = ROOT / "docs" / "reproductions" / "private-prediction.md"


def test_the_paper_scale_runs_are_stored():
    assert {p.stem for p in STORED} >= {"paper-fashion-mnist", "paper-mnist"}


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_readme_tables_equal_the_stored_results(path):
    summary = json.loads(path.read_text())
    expected = render_tables(summary)
    for doc in (SECTION,):
        block = section_block(doc.read_text(), path.stem)
        assert block is not None, f"{doc.name} has no pp-tables block for {path.stem}"
        assert block == expected, (
            f"{doc.name} disagrees with docs/results/{path.name}: run "
            "python scripts/pp_paper_run.py render"
        )
    findings = summary["findings"]["findings"]
    assert {f["name"] for f in findings} == {"pois-ge-nat", "capc-ge-pate", "natq-lt-advq"}


def test_rewrite_and_summary_round_trip():
    text = "intro\n<!-- pp-tables:demo:start -->\nstale\n<!-- pp-tables:demo:end -->\nrest\n"
    new = rewrite_section(text, "demo", "fresh\ntable")
    assert section_block(new, "demo") == "fresh\ntable"
    assert new.startswith("intro\n") and new.endswith("rest\n")
    assert section_block(new, "other") is None
    with pytest.raises(ValueError, match="pp-tables:other"):
        rewrite_section(text, "other", "x")
    summary = json.loads(STORED[0].read_text())
    assert json.loads(json.dumps(summary)) == summary
    assert "| PATE | Nat-AdvQ |" in render_tables(summary)
