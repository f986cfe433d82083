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
