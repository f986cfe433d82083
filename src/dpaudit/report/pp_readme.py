"""The paper-scale private-prediction tables of the docs, generated from stored results.

A paper-scale run (``scripts/pp_paper_run.py run NAME``) keeps a small summary of its
:class:`dpaudit.AuditResult` in ``docs/results/NAME.json`` (:func:`summarise`: the composed
numbers, flips, findings, timings and the machine's load; no per-query arrays). The docs page
``docs/reproductions/private-prediction.md`` holds, between the markers
``<!-- pp-tables:NAME:start -->`` and ``<!-- pp-tables:NAME:end -->``, exactly what
:func:`render_tables` makes of that summary; :func:`rewrite_section` puts it there and a test
fails when the two disagree. Nothing in those tables is typed by hand.

Example:
    >>> text = "a\\n<!-- pp-tables:x:start -->\\nold\\n<!-- pp-tables:x:end -->\\nb"
    >>> rewrite_section(text, "x", "new").splitlines()[2]
    'new'
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["MARKERS", "render_tables", "rewrite_section", "section_block", "summarise"]

MARKERS = ("<!-- pp-tables:{name}:start -->", "<!-- pp-tables:{name}:end -->")
_ADV = {"nat-advq": "Nat-AdvQ", "pois-advq": "Pois-AdvQ", "pois-natq": "Pois-NatQ"}
_ALG = {"pate": "PATE", "capc": "CaPC"}
_ORDER = 10.0


def _interval(flips: dict[str, Any]) -> list[float]:
    return [float(flips["interval"]["low"]), float(flips["interval"]["high"])]


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    d = entry["detail"]
    orders = np.asarray(d["orders"], dtype=float)
    i = int(np.argmin(np.abs(orders - _ORDER)))
    prof = d.get("profile") or {}
    out = {
        "system": d["algorithm"],
        "adversary": d["adversary"],
        "composition": d["composition"],
        "epsilon": {
            k: d["epsilon"][k] for k in ("audit", "exact", "data_dependent", "data_independent")
        },
        "rdp_order": float(orders[i]),
        "rdp_audit": float(d["audit"][i]),
        "rdp_exact": float(d["exact"][i]),
        "flips": {
            "num_flips": int(d["flips"]["num_flips"]),
            "num_retrainings": int(d["flips"]["num_retrainings"]),
            "interval": _interval(d["flips"]),
        },
        "profile": {k: prof.get(k) for k in ("kind", "flips", "trials", "selected_among")},
        "worst_query_test_index": d["worst_query_test_index"],
        "ordering_holds": bool(
            d["ordering"]["audit_le_exact"]
            and d["ordering"]["exact_le_data_dependent"]
            and d["ordering"]["data_dependent_le_data_independent"]
        ),
    }
    conf = d.get("confirmation")
    if conf:
        out["screening_flips"] = {
            "num_flips": int(conf["screening_flips"]["num_flips"]),
            "num_retrainings": int(conf["screening_flips"]["num_retrainings"]),
        }
        out["worst_output_probabilities"] = conf["output_probabilities"]
    return out


def summarise(result: dict[str, Any], *, load: dict[str, Any] | None = None) -> dict[str, Any]:
    """The small summary of a private-prediction result (its JSON as a dict) that the README
    tables are made from.

    Args:
        result: ``json.loads(audit_result.to_json())``.
        load: how busy the machine was (e.g. ``{"before": [1, 5, 15 min], "after": [...],
            "cpus": 2}``), recorded with the timings.

    Returns:
        A JSON-able dict.
    """
    det = result["detail"]
    return {
        "name": result["settings"]["name"],
        "settings": result["settings"],
        "dataset": det["dataset"],
        "num_train": det["num_train"],
        "num_test": det["num_test"],
        "plurality_accuracy": det["plurality_accuracy"],
        "retrainings": det.get("retrainings", {}),
        "entries": [_entry(e) for e in result["entries"]],
        "findings": det.get("findings"),
        "timings": {"total": result["timings"]["total"], "stages": _stage_totals(result)},
        "load": load or {},
        "versions": result.get("versions", {}),
    }


#: Stage names of the pipeline's clock (``system/adversary/stage`` or ``system/stage``),
#: in the order the run line reports them.
_STAGES = ("load", "training", "retraining", "models", "sampling", "audit", "confirmation")


def _stage_totals(result: dict[str, Any]) -> dict[str, float]:
    """Wall seconds per pipeline stage, summed over systems and adversaries."""
    out: dict[str, float] = {}
    for key, seconds in result["timings"].items():
        stage = key.rsplit("/", 1)[-1]
        if stage in _STAGES:
            out[stage] = out.get(stage, 0.0) + float(seconds)
    return {k: out[k] for k in _STAGES if k in out}


def _g(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return f"{x:.{digits}g}"


def _flips_cell(e: dict[str, Any]) -> str:
    f = e["flips"]
    lo, hi = f["interval"]
    if e["composition"] == "queries":
        prof = e["profile"]
        return (
            f"{prof['flips'] / prof['trials']:.2%} of the queries per retraining "
            f"({prof['trials']} retrainings)"
        )
    text = f"{f['num_flips']}/{f['num_retrainings']} [{lo:.2f}, {hi:.2f}]"
    if "screening_flips" in e:
        s = e["screening_flips"]
        text += f" (screening {s['num_flips']}/{s['num_retrainings']})"
    return text


def _main_table(summary: dict[str, Any]) -> list[str]:
    rows = [
        "| alg | adversary | ε audit* | ε exact | ε data-dep. | ε data-indep. | "
        f"RDP({_g(summary['entries'][0]['rdp_order'])}) audit / exact | "
        "flips of the affected teacher [95% CI] | order ok |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in summary["entries"]:
        eps = e["epsilon"]
        rows.append(
            f"| {_ALG.get(e['system'], e['system'])} | {_ADV.get(e['adversary'], e['adversary'])}"
            f" | {_g(eps['audit'])} | {_g(eps['exact'])} | {_g(eps['data_dependent'])} | "
            f"{_g(eps['data_independent'])} | {_g(e['rdp_audit'])} / {_g(e['rdp_exact'])} | "
            f"{_flips_cell(e)} | {'yes' if e['ordering_holds'] else 'NO'} |"
        )
    return rows


def _side(iv: dict[str, Any]) -> str:
    name = f"{_ALG.get(iv['system'], iv['system'])} {_ADV.get(iv['adversary'], iv['adversary'])}"
    return f"{name} {_g(iv['epsilon'])} [{_g(iv['low'])}, {_g(iv['high'])}]"


def _findings_table(summary: dict[str, Any]) -> list[str]:
    check = summary.get("findings")
    if not check:
        return []
    rows = [
        f"Findings (all intervals hold together at {check['confidence_level']:.0%}: "
        f"Bonferroni over {check['num_intervals']} intervals; ε at δ of the composed exact "
        "curve over each flip-probability interval):",
        "",
        "| finding | verdict | expected larger: ε [interval] | expected smaller: ε [interval] "
        "| comparison | retrainings per side to resolve |",
        "|---|---|---|---|---|---|",
    ]
    for f in check["findings"]:
        for i, c in enumerate(f["comparisons"]):
            need = c["retrainings_needed"]
            need_cell = "" if c["verdict"] != "unresolved" else ("–" if need is None else need)
            rows.append(
                f"| {f['statement'] if i == 0 else ''} | {f['verdict'] if i == 0 else ''} | "
                f"{_side(c['larger'])} | {_side(c['smaller'])} | {c['verdict']} | "
                f"{need_cell} |"
            )
    return rows


def _run_line(summary: dict[str, Any]) -> str:
    s = summary["settings"]
    total = summary["timings"]["total"]
    load = summary.get("load") or {}
    acc = ", ".join(f"{_ALG.get(k, k)} {v:.1%}" for k, v in summary["plurality_accuracy"].items())
    text = (
        f"Run `{summary['name']}` (seed {s['seed']}): {summary['num_train']:,} training "
        f"images, {s['system']['teachers']} teachers ({s['system']['estimator']}), σ = "
        f"{s['system']['sigma']:g}, n_Q = {s['adversary']['queries']}, "
        f"T = {s['engine']['experiments']:.0e} experiments per query, N_g = "
        f"{s['adversary']['instantiations']}, R = {s['adversary']['retrainings']}, "
        f"R_c = {s['adversary']['confirmations']}; plurality accuracy {acc}. "
        f"Wall time {int(total // 60)} min {total % 60:.0f} s"
    )
    if load:
        text += (
            f" on {load.get('cpus', '?')} cores, load average "
            f"{_g(load['before'][0], 2)} before and {_g(load['after'][0], 2)} after the run"
        )
    stages = summary["timings"].get("stages")
    if stages:
        text += " (" + ", ".join(f"{k} {v:.0f} s" for k, v in stages.items()) + ")"
    return text + "."


def render_tables(summary: dict[str, Any]) -> str:
    """The markdown of one stored paper-scale run: the run line, the results table and the
    findings table."""
    lines = [_run_line(summary), "", *_main_table(summary), ""]
    findings = _findings_table(summary)
    if findings:
        lines += [*findings, ""]
    return "\n".join(lines).rstrip("\n")


def section_block(text: str, name: str) -> str | None:
    """The text between the markers of ``name`` (None when they are missing)."""
    start, end = (m.format(name=name) for m in MARKERS)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def rewrite_section(text: str, name: str, markdown: str) -> str:
    """``text`` with the block of ``name`` replaced by ``markdown``.

    Raises:
        ValueError: the markers are missing.
    """
    start, end = (m.format(name=name) for m in MARKERS)
    if start not in text or end not in text:
        raise ValueError(f"the text has no {start} … {end} block")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{markdown}\n{end}{tail}"
