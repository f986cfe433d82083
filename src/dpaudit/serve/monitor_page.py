"""The monitor's live page: the claim's e-value path against the alarm level, and the status.

A self-contained HTML file (inline SVG, no script, no network), rewritten atomically after
every poll by ``dpaudit monitor --page FILE`` and reloaded by the browser every few seconds.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.serve.monitor import DeploymentMonitor, MonitorStatus

__all__ = ["monitor_page", "write_monitor_page"]


def monitor_page(status: MonitorStatus, path: Sequence[tuple[int, float]], *,
                 refresh: float | None = 5.0) -> str:  # fmt: skip
    """The live page: the claim's log e-value path against the alarm level, and the status.

    Args:
        status: the current status.
        path: ``(answers, log e-value)`` points (:attr:`DeploymentMonitor.path`).
        refresh: seconds between reloads (None: a static page).
    """
    pts = np.asarray(path if len(path) else [(0, 0.0)], dtype=float)
    w, h, pad = 760.0, 320.0, 48.0
    xmax = max(float(pts[:, 0].max()), 1.0)
    lo = min(float(pts[:, 1].min()), -1.0)
    hi = max(float(pts[:, 1].max()), status.threshold) * 1.1

    def sx(x: float) -> float:
        return pad + (w - 2 * pad) * x / xmax

    def sy(y: float) -> float:
        return h - pad - (h - 2 * pad) * (y - lo) / (hi - lo)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    verdict = "ALARM: claim rejected" if status.alarm else "certified so far"
    colour = "#b00020" if status.alarm else "#1b5e20"
    upper = "none yet" if status.sigma_upper is None else f"{status.sigma_upper:.4g}"

    def fmt(x: float | None) -> str:
        return "—" if x is None else f"{x:.4g}"

    rows = [
        ("claim", f"{status.mechanism} σ = {status.claimed_sigma:g}"),
        ("answers monitored", f"{status.answers}"),
        ("e-value now", f"{math.exp(min(status.log_e_value, 700)):.4g}"),
        ("max e-value", f"{math.exp(min(status.max_log_e_value, 700)):.4g}"),
        ("alarm level 1/β", f"{math.exp(status.threshold):.4g}"),
        ("alarm at answer", "—" if status.alarm_at is None else str(status.alarm_at)),
        (f"noise upper bound ({status.confidence_level:g}, anytime)", upper),
        ("ε lower bound, one answer (anytime, Gaussian noise)", fmt(status.epsilon_lower)),
        ("exact ε of one answer at the claim", fmt(status.epsilon_exact_claimed)),
        ("ε the ledger charges one answer", f"{status.epsilon_claimed:.4g}"),
    ]
    table = "".join(
        f'<tr><th>{escape(k)}</th><td data-key="{escape(k)}">{escape(v)}</td></tr>' for k, v in rows
    )
    meta = f'<meta http-equiv="refresh" content="{refresh:g}">' if refresh else ""
    ythr = sy(status.threshold)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{meta}
<title>dpaudit monitor: {escape(status.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:820px}}
th{{text-align:left;padding-right:1em}} #verdict{{color:{colour};font-size:1.4em}}</style>
</head><body>
<h1>dpaudit monitor — {escape(status.name)}</h1>
<p id="verdict">{escape(verdict)}</p>
<svg id="evalue-path" width="{w:.0f}" height="{h:.0f}" role="img"
 aria-label="log e-value path">
<rect x="0" y="0" width="{w:.0f}" height="{h:.0f}" fill="#fafafa"/>
<line x1="{pad}" y1="{ythr:.1f}" x2="{w - pad}" y2="{ythr:.1f}" stroke="#b00020"
 stroke-dasharray="6,4"/>
<text x="{w - pad}" y="{ythr - 6:.1f}" text-anchor="end" fill="#b00020">alarm: log(1/β)</text>
<polyline id="path" fill="none" stroke="#1f4e9c" stroke-width="2" points="{line}"/>
<text x="{pad}" y="{h - 12}">0</text>
<text x="{w - pad}" y="{h - 12}" text-anchor="end">{int(xmax)} answers</text>
<text x="8" y="{pad - 16}">log e-value</text>
</svg>
<table id="status">{table}</table>
<p>An honest deployment reaches the alarm level with probability at most β over its whole
life, however often this page is read (Ville's inequality).</p>
</body></html>
"""


def write_monitor_page(monitor: DeploymentMonitor, path: Any, *,
                       refresh: float | None = 5.0) -> Any:  # fmt: skip
    """Write :func:`monitor_page` of ``monitor`` to ``path`` atomically; return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(monitor_page(monitor.status(), monitor.path, refresh=refresh), "utf-8")
    os.replace(tmp, p)
    return p
