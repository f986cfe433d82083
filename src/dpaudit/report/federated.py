"""Report of the federated audit (``dpaudit audit federated``): per threat model the valid
bound, Andrew et al.'s estimate (Andrew et al. 2024, arXiv:2302.03098; an estimate, not a
bound), the reported claim and every other claim of the entry (the example-level guarantee,
and the valid user-level one where the system reports another unit's), the exact ε where
there is one; ``results.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpaudit.report._report import Report

__all__ = ["REPORT", "render_federated"]


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def render_federated(console: Any, result: Any) -> None:
    """One row per threat model, then one line per claim beside the reported one."""
    from rich.table import Table

    t = Table(title=f"{result.workflow}: lower bounds next to claims")
    for col in ("system", "adversary", "ε ≥", "estimate ε", "claim ε", "exact ε", "refutes"):
        t.add_column(col, justify="right" if "ε" in col else "left")
    for e in result.entries:
        est = getattr(e.detail, "estimate", None)
        t.add_row(
            str(e.system),
            str(e.adversary),
            _num(None if e.lower_bound is None else e.lower_bound.epsilon),
            "—" if est is None else f"{est.epsilon_null_variance:.4g} / {est.epsilon:.4g}",
            _num(e.claims[0].epsilon if e.claims else None),
            _num(None if e.exact is None else e.exact.epsilon),
            "—" if e.gap is None else str(e.gap.refutes_claim),
        )
    console.print(t)
    if result.entries:
        e = result.entries[0]
        console.print(f"claim: {e.claims[0].analysis} — ε = {_num(e.claims[0].epsilon)}")
        for c in e.claims[1:]:
            console.print(f"beside it: {c.analysis} — ε = {_num(c.epsilon)}")
    console.print(
        "estimate ε: Andrew et al.'s, null variance / fitted variance — an estimate under a "
        "Gaussian assumption, not a bound"
    )


def _write(result: Any, out_dir: Path, *, plots: bool = True) -> tuple[Path, ...]:
    return (result.write_json(out_dir / "results.json"),)


#: The federated workflow's report.
REPORT = Report(render=render_federated, writer=_write)
