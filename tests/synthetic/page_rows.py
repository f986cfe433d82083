"""The synthetic-data page's white-box rows and √(mean shift) figures, written from a recorded
run (``docs/results/synthetic-data/*.json``), for the tests that tie the page to its records."""

from __future__ import annotations


def white_box_row(name: str, e: dict, s: dict, dataset: str) -> str:
    """The "All audits" row of one recorded white-box entry ``e`` of a run with settings
    ``s``; ``dataset``: the label in the threat-model cell."""
    x = e["detail"]
    lo, hi = x["mu_estimate_interval"]["low"], x["mu_estimate_interval"]["high"]
    return (f"| {name} | {x['epsilon']:g} | {x['threat_model']} ({dataset}) | "
            f"{s['runs']:,} ({s['pilot_runs']}) | {e['lower_bound']['epsilon']:.3f} | "
            f"{'yes' if e['gap']['refutes_claim'] else 'no'} | {x['mu_lower']:.3f} | "
            f"{x['mu_estimate']:.3f} ± {(hi - lo) / 2:.3f} | {x['implied_mu']:.3f} | "
            f"{x['mu_ratio']:.2f} | {x['seconds_per_run']:.2f} |")  # fmt: skip


def mean_shift_figure(x: dict) -> str:
    """The prose's "√(mean shift) m (low–high, r×)" of an entry's detail ``x``."""
    llr = x["llr_mu_interval"]
    return (f"√(mean shift) {x['llr_mu_estimate']:.3f} ({llr['low']:.3f}–{llr['high']:.3f}, "
            f"{x['llr_mu_estimate'] / x['implied_mu']:.2f}×)")  # fmt: skip


def components_shifts(rec: dict, runs: int) -> dict:
    """A components file's per-statistic "shift ± se" figures (``{threat model: text}``),
    each shift recomputed from its per-run values, which must number ``runs`` a side, and
    its analysis AIM's at the file's rounds (its two parts add up to 2ρ)."""
    import numpy as np

    a = rec["analysis"]
    assert rec["run_pairs"] == runs and abs(a["white-box"] - 2 * rec["rho"]) < 1e-12
    out = {}
    for tm in ("white-box", "white-box-measurements", "white-box-selections"):
        x = rec[tm]
        assert len(x["D"]) == len(x["D_prime"]) == runs
        assert abs(np.mean(x["D_prime"]) - np.mean(x["D"]) - x["mean_shift"]) < 1e-12
        out[tm] = f"{x['mean_shift']:.3f} ± {x['mean_shift_se']:.3f}"
    return out
