"""The synthetic-data page's out-of-process figures are the benchmark's recorded ones
(``benchmarks/bench_synthetic.py`` → ``benchmarks/results/synthetic.json``)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_page_quotes_the_recorded_benchmark():
    bench = json.loads((ROOT / "benchmarks" / "results" / "synthetic.json").read_text())
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    full, white = bench["smartnoise_mst_full"], bench["smartnoise_mst_white_box"]
    assert f"project to {full['projected_minutes_1000_runs_two_cores']:.1f} minutes" in page
    assert f"{full['seconds_per_run_in_worker']:.2f} s per fit" in page
    assert f"{white['projected_minutes_1000_runs_two_cores']:.1f} minutes for the audit's" in page
    assert f"costs {100 * full['overhead_fraction']:.1f} % of a fit" in page
    assert (
        full["projected_minutes_1000_runs_two_cores"]
        <= bench["targets"]["minutes_1000_smartnoise_mst_two_cores"]
    )
    assert full["overhead_fraction"] <= bench["targets"]["overhead_fraction"]
    measured = bench["smartnoise_mst_measured"]  # --measure 1000: the target itself, timed
    assert measured["runs"] == 1000 and measured["workers"] == 2
    assert f"1,000 smartnoise MST fits took {measured['minutes']:.2f} minutes" in page
    assert f"{measured['seconds_per_run_in_worker']:.2f} s per fit inside a worker" in page
    assert measured["minutes"] <= measured["target_minutes_1000_runs"]
