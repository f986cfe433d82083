"""The bug catalogue page's sequential-mode table is the benchmark's (issue 41): made by
``benchmarks/bench_dpsgd_bugs_sequential.py`` from its recorded cells, never typed by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_dpsgd_bugs_sequential as bench
    finally:
        sys.path.pop(0)
    return bench


def test_docs_table_is_the_recorded_summary():
    bench = _bench()
    recorded = json.loads(bench.OUT.read_text())
    assert recorded["summary"] == bench._summary(recorded["cells"])
    start, end = bench.MARKERS
    page = bench.DOCS.read_text()
    table = page[page.index(start) + len(start) : page.index(end)].strip()
    assert table == bench.docs_table(recorded["summary"])


def test_every_audit_meets_a_third_and_no_control_is_rejected():
    """The acceptance figures, read from the recorded run: each bug's median run pairs to
    rejection ≤ 1/3 of the fixed audit's, and no seed rejects its control."""
    summary = json.loads(_bench().OUT.read_text())["summary"]
    assert {r["audit"] for r in summary} >= {"noise-scaled-twice", "weighted-sampler"}
    for r in summary:
        assert r["ratio"] is not None and r["ratio"] <= 1 / 3, r
        assert r["bug_rejected_seeds"] > r["seeds"] / 2, r
        assert r["control_rejected_seeds"] == 0, r
