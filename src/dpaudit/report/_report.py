"""One report per workflow: how its :class:`~dpaudit.AuditResult` is shown and written.

A :class:`Report` is the value a workflow's registry entry names
(:class:`dpaudit.experiments.Workflow`, ``report="dpaudit.report.label_dp:REPORT"``): its
``render(console, result)`` prints the tables on a rich console, its
``write(result, out_dir)`` writes ``results.json`` and the workflow's tables and plots and
returns the paths written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Report", "generic_report"]


def _paths(written: Any, out_dir: Path) -> tuple[Path, ...]:
    """The files a writer reports (a dict, a sequence, a folder or one path)."""
    if isinstance(written, dict):
        return tuple(Path(p) for p in written.values())
    if isinstance(written, (list, tuple)):
        return tuple(Path(p) for p in written)
    if written is None or Path(written).is_dir():
        return tuple(sorted(p for p in out_dir.iterdir() if p.is_file()))
    return (Path(written),)


@dataclasses.dataclass(frozen=True)
class Report:
    """A workflow's report.

    Attributes:
        render: ``render(console, result)``: print the result's tables.
        writer: ``writer(result, out_dir, *, plots)``: write the files, PNG plots only when
            ``plots`` (returns a path, a folder, a sequence or a dict of paths).
    """

    render: Callable[[Any, Any], None]
    writer: Callable[..., Any]

    def write(self, result: Any, out_dir: Path, *, plots: bool = True) -> tuple[Path, ...]:
        """Write the result's files into ``out_dir`` (created) and return their paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        return _paths(self.writer(result, out, plots=plots), out)


def _render_generic(console: Any, result: Any) -> None:
    """One row per entry: system, adversary, ε lower bound, claim, refuted."""
    from rich.table import Table

    t = Table(title=f"{result.workflow}: lower bounds next to claims")
    for col in ("system", "adversary", "ε ≥", "claim ε", "refutes claim"):
        t.add_column(col, justify="right" if "ε" in col else "left")
    for e in result.entries:
        lb = None if e.lower_bound is None else e.lower_bound.epsilon
        claim = e.claims[0].epsilon if e.claims else None
        t.add_row(
            str(e.system),
            str(e.adversary),
            "—" if lb is None else f"{lb:.4g}",
            "—" if claim is None else f"{claim:.4g}",
            "—" if e.gap is None else str(e.gap.refutes_claim),
        )
    console.print(t)


def _write_generic(result: Any, out_dir: Path, *, plots: bool = True) -> tuple[Path, ...]:
    return (result.write_json(out_dir / "results.json"),)


#: The report of a workflow that brings none of its own: a table of entries, ``results.json``.
generic_report = Report(render=_render_generic, writer=_write_generic)
