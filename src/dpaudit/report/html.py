"""One self-contained HTML file for any audit: numbers, how they were paid for, plots, raw JSON.

:func:`render_html` renders an :class:`~dpaudit.AuditResult` (the object, its ``to_dict()``,
or a run of the store, :class:`~dpaudit.store.RunRecord`) as a single HTML document that needs
nothing else — no CDN, no script, no network: the CSS is inline, the figures are PNGs embedded
as base64 data URIs, and the raw numbers are a downloadable JSON data URI.

Every result gets the generic part, read from the ``AuditResult`` alone:

* the lower bound next to every claim, the gap (claim / lower bound, the RDP excess, whether
  the claim is refuted) and the exact value where it is known;
* how every data-dependent choice was paid for (the entries' ``SelectionRecord`` s);
* the settings, seed, timings and package versions (and, for a stored run, its id, status,
  command and files).

A workflow with figures adds them (:data:`FIGURES`): the private-prediction audit its RDP
curves and ε bars (:mod:`dpaudit.report.private_prediction`; Chadha et al. 2024,
arXiv:2402.09403, Fig. 2/3 style), the vote-leakage reproduction its four figures
(:mod:`dpaudit.report.vote_leakage`; Wang et al. 2022, arXiv:2209.10732). Other workflows whose
entries carry RDP curves get one generic panel per entry (lower bound against the claims).
Figures are drawn from the JSON data (:func:`result_view`), so a stored run renders the same
as a live one. Without matplotlib (extra ``plot``) the report says so and omits them.

Example:
    >>> from dpaudit._results import AuditEntry, AuditResult, Claim, LowerBound
    >>> entry = AuditEntry("toy", None, LowerBound("Clopper-Pearson", 0.95, epsilon=0.5),
    ...                    claims=(Claim("data-independent", "Mironov 2017", epsilon=2.0),))
    >>> res = AuditResult("toy", (entry,), {"seed": 1}, 1, {}, {})
    >>> page = render_html(res, figures=False)
    >>> "0.5" in page and "https://" not in page
    True
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import to_jsonable

__all__ = [
    "FIGURES",
    "format_number",
    "register_figures",
    "render_html",
    "result_view",
    "write_html_report",
]

FigureMaker = Callable[[Any, Path], list[tuple[str, Path]]]
#: Workflow name → ``f(view, directory) -> [(caption, png path), …]`` (see module notes).
FIGURES: dict[str, FigureMaker] = {}


def register_figures(*workflows: str) -> Callable[[FigureMaker], FigureMaker]:
    """Decorator: register the figure maker of a workflow (``f(view, directory)``), under its
    name and any former names its stored results may carry."""

    def add(fn: FigureMaker) -> FigureMaker:
        for workflow in workflows:
            FIGURES[workflow] = fn
        return fn

    return add


# =============================================================================================
# Numbers and the attribute view of JSON data
# =============================================================================================


def format_number(x: Any, digits: int = 4) -> str:
    """How the report prints a number: 4 significant digits, ``∞``, ``–`` for none.

    Example:
        >>> [format_number(v) for v in (0.123456, 12346.0, None, "inf", 3, True)]
        ['0.1235', '1.235e+04', '–', '∞', '3', 'yes']
    """
    if x is None:
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, str):
        return {"inf": "∞", "-inf": "−∞", "nan": "NaN"}.get(x, x)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    v = float(x)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return "0" if v == 0 else f"{v:.{digits}g}"


def _leaf(values: list[Any]) -> Any:
    """A JSON list as an array where it is numbers (``"inf"``/``"nan"`` included)."""
    special = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
    flat = values
    while flat and isinstance(flat[0], list):
        flat = [v for row in flat for v in row]
    if flat and all(isinstance(v, bool) for v in flat):
        return np.asarray(values, dtype=bool)
    if flat and all(
        (isinstance(v, (int, float)) and not isinstance(v, bool))
        or (isinstance(v, str) and v in special)
        for v in flat
    ):

        def conv(v: Any) -> Any:
            if isinstance(v, list):
                return [conv(u) for u in v]
            return special.get(v, v) if isinstance(v, str) else v

        try:
            return np.asarray(
                conv(values),
                dtype=np.float64 if any(isinstance(v, (float, str)) for v in flat) else np.int64,
            )
        except ValueError:  # ragged
            return values
    if all(isinstance(v, str) for v in values):
        return tuple(values)
    return [result_view(v) for v in values]


class _View(dict):
    """A JSON object read like the dataclass it came from (``view.detail.dataset``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return result_view(self[name])
        except KeyError:
            raise AttributeError(name) from None


def result_view(data: Any) -> Any:
    """JSON data (``AuditResult.to_dict()``) readable as the original objects: attributes
    for keys, numpy arrays for lists of numbers, ``float`` for ``"inf"``/``"nan"`` strings.

    Example:
        >>> v = result_view({"detail": {"orders": [2, 4.5, "inf"]}})
        >>> v.detail.orders.tolist()
        [2.0, 4.5, inf]
    """
    if isinstance(data, _View):
        return data
    if isinstance(data, Mapping):
        return _View(data)
    if isinstance(data, list):
        return _leaf(data)
    return data


# =============================================================================================
# Figures
# =============================================================================================


@register_figures("private-prediction")
def _private_prediction_figures(view: Any, d: Path) -> list[tuple[str, Path]]:
    from dpaudit.report.private_prediction import plot_epsilon_bars, plot_rdp_curves

    return [
        (
            "RDP against the order: the audit's lower bound (valid at the stated confidence at "
            "every order) next to the exact RDP of the modelled mechanism and the data-dependent "
            "and data-independent claims (Chadha et al. 2024, arXiv:2402.09403, Fig. 2 style).",
            plot_rdp_curves(view, d / "rdp_vs_order.png"),
        ),
        (
            "ε at δ of each curve (Chadha et al. 2024 Fig. 3 style). The hatched audit bar is "
            "an RDP lower bound converted with an upper-bound conversion: display only.",
            plot_epsilon_bars(view, d / "epsilon_bars.png"),
        ),
    ]


def _vote_histograms(detail: Any) -> Any:
    from dpaudit.data import VoteHistograms

    h = detail.get("histograms")
    if not isinstance(h, Mapping):
        return None
    names = {f.name for f in dataclasses.fields(VoteHistograms)}
    v = result_view(h)
    return VoteHistograms(**{k: getattr(v, k) for k in names if k in h})


@register_figures("vote-leakage")
def _vote_leakage_figures(view: Any, d: Path) -> list[tuple[str, Path]]:
    from dpaudit.report import vote_leakage as vl

    detail = view.detail
    hs = _vote_histograms(detail)
    out = []
    parts = (
        ("query_limited", vl.plot_query_limited, "fig6_query_limited.png",
         "Query-limited extraction (Wang et al. 2022, arXiv:2209.10732, Fig. 6): error per "
         "histogram by σ; red dots: the privacy cost of the queries."),
        ("budget_limited", vl.plot_budget_limited, "fig4a_budget_limited.png",
         "Budget-limited extraction under Confident GNMax (Wang et al. 2022 Fig. 4a)."),
        ("noise_sweep", vl.plot_noise_sweep, "noise_helps_attacker.png",
         "More noise helps the attacker (Wang et al. 2022 §4.2): error and cost against σ."),
    )  # fmt: skip
    for key, fn, name, caption in parts:
        if detail.get(key) is not None:
            out.append((caption, fn(getattr(detail, key), d / name, histograms=hs)))
    if detail.get("attribute_inference") is not None:
        out.append(
            (
                "Consensus of PhD holders vs others on UCI Adult (Wang et al. 2022 Fig. 1).",
                vl.plot_attribute_inference(detail.attribute_inference, d / "fig1.png"),
            )
        )
    return out


def _generic_figures(view: Any, d: Path) -> list[tuple[str, Path]]:
    """One panel per entry with RDP curves: the lower bound against each claim."""
    from dpaudit.report._figures import figure, save

    entries = [e for e in view.entries if e.lower_bound.get("rdp") is not None]
    if not entries:
        return []
    fig, axes = figure(1, len(entries), 4.2, 3.4)
    for ax, e in zip(axes[0], entries, strict=True):
        lb = e.lower_bound.rdp
        mask = lb.epsilons > 0
        ax.plot(lb.orders[mask], lb.epsilons[mask], "-", color="tab:red", label="lower bound")
        for c in [*e.claims, *([e.exact] if e.get("exact") else [])]:
            if c.get("rdp") is not None:
                r = c.rdp
                ax.plot(r.orders, r.epsilons, "--", label=c.analysis)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Rényi order α")
        ax.set_ylabel("RDP ε(α)")
        ax.set_title(f"{e.system} · {e.adversary or ''}")
        ax.legend(fontsize=7)
    return [("RDP lower bound against the claims, per entry.", save(fig, d / "rdp.png"))]


def _figures(data: Mapping[str, Any]) -> tuple[list[tuple[str, str]], str]:
    """``[(caption, base64 PNG)]`` of a result, and a note when figures were left out."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], "Figures need matplotlib (pip install 'dpaudit[plot]'); none are shown."
    view = result_view(data)
    maker = FIGURES.get(str(data.get("workflow")), _generic_figures)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            made = maker(view, Path(tmp))
        except Exception as exc:  # a figure must never cost the numbers
            return [], f"The figures could not be drawn ({type(exc).__name__}: {exc})."
        out = [(cap, base64.b64encode(p.read_bytes()).decode("ascii")) for cap, p in made]
    return out, ""


# =============================================================================================
# HTML
# =============================================================================================

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}
main{max-width:1150px;margin:0 auto;padding:24px}
header{background:#1d2f4f;color:#fff;padding:20px 24px}
header h1{margin:0 0 6px;font-size:22px} header p{margin:0;opacity:.9}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:16px 20px;margin:18px 0}
h2{font-size:17px;margin:0 0 10px} h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}
th,td{border-bottom:1px solid #e5e8ee;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f6;font-weight:600} td.num{text-align:right;font-variant-numeric:tabular-nums}
.refuted{color:#b00020;font-weight:700} .ok{color:#1b6e3a} .muted{color:#667085}
.note{color:#444;font-size:13px} figure{margin:10px 0} img{max-width:100%;height:auto}
figcaption{font-size:12.5px;color:#444} code{background:#f0f2f6;padding:1px 4px;border-radius:3px}
a.button{display:inline-block;background:#1d2f4f;color:#fff;padding:8px 14px;border-radius:4px;
text-decoration:none}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num_cell(x: Any, *, cls: str = "num", **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{_e(v)}"' for k, v in attrs.items())
    return f'<td class="{cls}"{extra}>{_e(format_number(x))}</td>'


def _table(headers: list[str], rows: list[str], *, id: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    ident = f' id="{_e(id)}"' if id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


#: The kinds of ε that are not lower bounds, each with its footnote mark and text.
NON_BOUND_NOTES: dict[str, tuple[str, str]] = {
    "rdp-conversion": (
        "*",
        "display only: an RDP lower bound converted to (ε, δ) with an upper-bound conversion "
        "is not an (ε, δ) lower bound; the RDP curve is the valid bound.",
    ),
    "estimate": (
        "†",
        "an estimate, not a lower bound: a point value fitted to the observed scores (e.g. a "
        "Gaussian trade-off curve) with no guarantee that the true ε is above it.",
    ),
    "assumption": (
        "‡",
        "not a valid lower bound for how this audit was run (its note says which assumption "
        "fails); shown for comparison.",
    ),
}


def non_bound_kind(lower_bound: Mapping[str, Any]) -> str | None:
    """What an ε that is not a valid lower bound is (a key of :data:`NON_BOUND_NOTES`), or
    None for a valid bound or no ε: an RDP lower bound converted for display (it carries
    its RDP curve), an estimate (its method says so), else a bound whose assumption fails."""
    if lower_bound.get("epsilon_is_valid", True) or lower_bound.get("epsilon") is None:
        return None
    if lower_bound.get("rdp"):
        return "rdp-conversion"
    if "estimate" in str(lower_bound.get("method", "")).lower():
        return "estimate"
    return "assumption"


def _summary(data: Mapping[str, Any]) -> str:
    rows = []
    kinds: list[str] = []
    for i, e in enumerate(data.get("entries", [])):
        lb = e.get("lower_bound") or {}
        claims = e.get("claims") or []
        claim = claims[0] if claims else {}
        gap = e.get("gap") or {}
        exact = e.get("exact") or {}
        kind = non_bound_kind(lb)
        if kind is not None and kind not in kinds:
            kinds.append(kind)
        mark = "" if kind is None else NON_BOUND_NOTES[kind][0]
        lb_text = format_number(lb.get("epsilon")) + mark
        refutes = gap.get("refutes_claim")
        verdict = (
            '<td class="refuted">REFUTED</td>' if refutes else
            ('<td class="ok">no</td>' if refutes is not None else "<td>–</td>")
        )  # fmt: skip
        rows.append(
            f'<tr data-entry="{i}"><td>{_e(e.get("system"))}</td>'
            f"<td>{_e(e.get('adversary') or '–')}</td>"
            f'<td class="num" data-key="lower">{_e(lb_text)}</td>'
            f"{_num_cell(lb.get('delta'))}{_num_cell(lb.get('confidence_level'))}"
            f"{_num_cell(claim.get('epsilon'), data_key='claim')}"
            f"<td>{_e(claim.get('analysis', '–'))}</td>"
            f"{_num_cell(exact.get('epsilon'), data_key='exact')}"
            f"{_num_cell(gap.get('ratio'), data_key='ratio')}"
            f"{_num_cell(gap.get('rdp_excess'))}{verdict}</tr>"
        )
    table = _table(
        ["system", "adversary", "lower bound ε", "δ", "confidence", "claimed ε", "claim",
         "exact ε", "claim / lower", "RDP excess", "claim refuted"],
        rows, id="entries",
    )  # fmt: skip
    foot = "".join(
        f'<p class="note" data-kind="{_e(k)}">{_e(NON_BOUND_NOTES[k][0])} '
        f"{_e(NON_BOUND_NOTES[k][1])}</p>"
        for k in kinds
    )
    note = f'<p class="note">{_e(data.get("note"))}</p>' if data.get("note") else ""
    head = "<h2>Lower bounds next to the claims</h2>"
    return f'<section id="summary">{head}{table}{foot}{note}</section>'


def _entry_details(data: Mapping[str, Any]) -> str:
    parts = []
    for e in data.get("entries", []):
        lb = e.get("lower_bound") or {}
        title = f"{e.get('system')} · {e.get('adversary') or 'attack'}"
        lb_rows = [
            f"<tr><th>method</th><td>{_e(lb.get('method'))}</td></tr>",
            f"<tr><th>confidence level</th>{_num_cell(lb.get('confidence_level'), cls='')}</tr>",
            f"<tr><th>ε (δ = {_e(format_number(lb.get('delta')))})</th>"
            f"{_num_cell(lb.get('epsilon'), cls='')}</tr>",
            "<tr><th>ε is a valid lower bound</th>"
            f"<td>{_e(format_number(lb.get('epsilon_is_valid', True)))}</td></tr>",
        ]
        if lb.get("note"):
            lb_rows.append(f"<tr><th>note</th><td>{_e(lb['note'])}</td></tr>")
        claims = [*(e.get("claims") or [])]
        if e.get("exact"):
            claims.append({**e["exact"], "analysis": f"exact: {e['exact'].get('analysis')}"})
        claim_rows = [
            f"<tr><td>{_e(c.get('analysis'))}</td>{_num_cell(c.get('epsilon'))}"
            f"{_num_cell(c.get('delta'))}<td>{_e(c.get('conversion') or '–')}</td>"
            f"<td>{_e(c.get('source'))}</td></tr>"
            for c in claims
        ]
        sel = e.get("selections") or []
        sel_rows = [
            f"<tr><td>{_e(s.get('choice'))}</td><td>{_e(s.get('strategy'))}</td>"
            f"<td>{_e(s.get('detail'))}</td></tr>"
            for s in sel
        ] or ['<tr><td colspan="3" class="muted">no data-dependent choice recorded</td></tr>']
        parts.append(
            f"<h3>{_e(title)}</h3><table>{''.join(lb_rows)}</table>"
            + _table(["claim", "ε", "δ", "conversion", "source"], claim_rows)
            + _table(["choice", "paid for by", "how"], sel_rows)
        )
    return (
        '<section id="details"><h2>How every number was obtained</h2>'
        + "".join(parts)
        + "</section>"
    )


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, Mapping) and data:
        out = []
        for k, v in data.items():
            out.extend(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return [(prefix or "value", data)]


def _value_text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        text = ", ".join(format_number(x) if not isinstance(x, str) else x for x in v[:20])
        return f"[{text}{', …' if len(v) > 20 else ''}]"
    if isinstance(v, (float, int)) and not isinstance(v, bool):
        return str(v)
    return format_number(v) if v is None or isinstance(v, bool) else str(v)


def _kv_section(ident: str, title: str, data: Any, empty: str) -> str:
    items = _flatten(data) if data else []
    rows = [f"<tr><th>{_e(k)}</th><td>{_e(_value_text(v))}</td></tr>" for k, v in items]
    body = f"<table>{''.join(rows)}</table>" if rows else f'<p class="muted">{_e(empty)}</p>'
    return f'<section id="{ident}"><h2>{_e(title)}</h2>{body}</section>'


def _timings(data: Mapping[str, Any]) -> str:
    t = data.get("timings") or {}
    flat = _flatten(t) if isinstance(t, Mapping) and t else []
    rows = [
        f"<tr><th>{_e(k)}</th>"
        + (f"<td>{_e(v)}</td>" if isinstance(v, str) else _num_cell(v))
        + "</tr>"
        for k, v in flat
    ]
    body = f"<table>{''.join(rows)}</table>" if rows else '<p class="muted">none recorded</p>'
    return f'<section id="timings"><h2>Timings (wall seconds)</h2>{body}</section>'


def _run_section(run: Any) -> str:
    if run is None:
        return ""
    rows = [
        ("run id", run.id), ("status", run.status), ("created", run.created),
        ("finished", run.finished), ("wall seconds", format_number(run.wall_seconds)),
        ("command", run.command), ("resume with", run.resume_command),
        ("output directory", run.out_dir), ("host", run.host), ("attempts", run.attempts),
    ]  # fmt: skip
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v)
    arts = [
        f"<tr><td>{_e(a.kind)}</td><td><code>{_e(a.path)}</code></td>"
        f'<td class="num">{a.size}</td><td><code>{_e(a.sha256[:16])}…</code></td></tr>'
        for a in run.artefacts
    ]
    art = _table(["kind", "path", "bytes", "sha256"], arts) if arts else ""
    return f'<section id="run"><h2>Run</h2><table>{body}</table>{art}</section>'


def _source(source: Any) -> tuple[dict[str, Any], Any]:
    """(the result as plain data, the store's RunRecord or None)."""
    run = None
    if hasattr(source, "artefacts") and hasattr(source, "result") and hasattr(source, "status"):
        run = source
        if source.result is None:
            raise ValueError(
                f"run {source.id} has no result to report (status {source.status}); "
                "get it with its result"
            )
        source = source.result
    if hasattr(source, "to_dict"):
        data = source.to_dict()
    elif isinstance(source, Mapping):
        data = to_jsonable(dict(source))
    else:
        raise TypeError(
            "source must be an AuditResult, its to_dict(), or a stored run, got "
            f"{type(source).__name__}"
        )
    if "entries" not in data or "workflow" not in data:
        raise ValueError("source is not an AuditResult (no 'workflow' and 'entries')")
    return data, run


def render_html(source: Any, *, figures: bool = True, title: str | None = None) -> str:
    """The self-contained HTML report of a result (module notes).

    Args:
        source: an :class:`~dpaudit.AuditResult`, its ``to_dict()``, or a
            :class:`~dpaudit.store.RunRecord` with its result.
        figures: draw the workflow's figures (needs matplotlib).
        title: the page title (default: from the workflow and run).

    Returns:
        The HTML document.

    Raises:
        TypeError, ValueError: ``source`` is not a result (or a run without one).
    """
    data, run = _source(source)
    workflow = str(data.get("workflow"))
    label = f"{workflow}" + (f" · run {run.id}" if run is not None else "")
    page_title = title or f"dpaudit report: {label}"
    raw = json.dumps(data, allow_nan=False, indent=1).encode("utf-8")
    figs, fig_note = _figures(data) if figures else ([], "")
    fig_html = "".join(
        f'<figure><img alt="{_e(cap[:80])}" src="data:image/png;base64,{b64}">'
        f"<figcaption>{_e(cap)}</figcaption></figure>"
        for cap, b64 in figs
    )
    if fig_note:
        fig_html += f'<p class="note">{_e(fig_note)}</p>'
    fig_section = f'<section id="figures"><h2>Figures</h2>{fig_html}</section>' if fig_html else ""
    seed = format_number(data.get("seed"))
    versions = data.get("versions") or {}
    dl_name = f"results-{run.id if run is not None else workflow}.json"
    body = "".join(
        [
            _summary(data),
            fig_section,
            _entry_details(data),
            _run_section(run),
            _kv_section("settings", "Settings", data.get("settings"), "no settings recorded"),
            _timings(data),
            _kv_section("versions", "Versions", versions, "no versions recorded"),
            '<section id="raw"><h2>Raw numbers</h2><p>Every number above, and the detail '
            "behind it, as strict JSON (the AuditResult's <code>to_dict()</code>).</p>"
            f'<a class="button" id="download-json" download="{_e(dl_name)}" '
            f'href="data:application/json;base64,{base64.b64encode(raw).decode("ascii")}">'
            f"Download {_e(dl_name)} ({len(raw):,} bytes)</a></section>",
        ]
    )
    generated = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime())
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(page_title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>dpaudit audit report</h1><p>workflow <b>{_e(workflow)}</b>"
        + (f" · run <b>{_e(run.id)}</b> ({_e(run.status)})" if run is not None else "")
        + f" · seed {_e(seed)} · {len(data.get('entries', []))} entries</p></header>"
        f'<main>{body}<p class="muted">Generated by dpaudit '
        f"{_e(versions.get('dpaudit', ''))} at {generated}; this file is self-contained "
        "(no network).</p></main></body></html>\n"
    )


def write_html_report(
    source: Any, path: str | Path, *, figures: bool = True, title: str | None = None
) -> Path:
    """Write :func:`render_html` to ``path`` (parents created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(source, figures=figures, title=title), encoding="utf-8")
    return out
