"""The bug catalogue's sequential mode: the evaluation runs streamed through an anytime-valid
test of the accountant's claim, stopping at the rejection."""

from __future__ import annotations

import pytest

pytest.importorskip("opacus")

from dpaudit.experiments.dpsgd_bugs import BUG_AUDITS, DPSGDBugsSettings, audit_dpsgd_bugs


def test_sequential_mode_stops_early_on_the_bug_and_never_on_the_control():
    """Noise calibrated twice: rejected within a third of the fixed audit's 300 runs (at half
    of them here); the correct implementation, same pair and statistic, not rejected."""
    s = DPSGDBugsSettings(bugs=("noise-scaled-twice",), runs_scale=0.5, mode="sequential")
    bug, control = audit_dpsgd_bugs(s).entries
    assert bug.gap.refutes_claim and bug.lower_bound.epsilon > bug.claim.epsilon
    assert "claim rejected at run pair" in bug.lower_bound.note
    assert bug.detail.runs <= BUG_AUDITS.get("noise-scaled-twice").runs / 3
    assert not control.gap.refutes_claim
    assert control.detail.runs == 150
    assert {r.strategy for r in bug.selections} == {"split", "anytime-valid"}


def test_mode_checked():
    with pytest.raises(ValueError, match="mode"):
        DPSGDBugsSettings(mode="streaming")
