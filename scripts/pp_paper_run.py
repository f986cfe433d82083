"""Run a paper-scale private-prediction audit and regenerate the documentation's tables from it.

    python scripts/pp_paper_run.py run paper-fashion-mnist [--n-jobs N] [--out runs/NAME]
    python scripts/pp_paper_run.py store runs/NAME/results.json --load-before 1.2 --load-after 1.5
    python scripts/pp_paper_run.py render            # rewrite the page from docs/results
    python scripts/pp_paper_run.py render --check    # exit 1 when the page is out of date

``run`` audits the shipped config NAME (as ``dpaudit audit private-prediction --config NAME``
does), records the machine's load average before and after, writes the full result to
``runs/NAME/results.json`` and its summary (:func:`dpaudit.report.pp_readme.summarise`) to
``docs/results/NAME.json``, then renders. ``store`` summarises a ``results.json`` written by
such a run (``--out``) with the 1-minute load averages observed before and after it.
``render`` replaces, in
``docs/reproductions/private-prediction.md``, the block between the
``<!-- pp-tables:NAME:start/end -->`` markers of every stored summary. A test
(``tests/experiments/test_pp_readme.py``) fails when that page and the
stored results disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
SECTION = ROOT / "docs" / "reproductions" / "private-prediction.md"


def run(name: str, n_jobs: int | None, out: Path) -> None:
    from dpaudit.experiments.private_prediction import audit_private_prediction
    from dpaudit.experiments.private_prediction.config import find_config, load_config
    from dpaudit.report.pp_readme import summarise

    overrides = {} if n_jobs is None else {"n_jobs": n_jobs}
    settings = load_config(find_config(name), overrides=overrides)
    before = list(os.getloadavg())
    start = time.perf_counter()
    result = audit_private_prediction(settings)
    print(f"{name}: {time.perf_counter() - start:.0f} s")
    after = list(os.getloadavg())
    out.mkdir(parents=True, exist_ok=True)
    result.write_json(out / "results.json")
    load = {"before": before, "after": after, "cpus": os.cpu_count()}
    summary = summarise(json.loads(result.to_json()), load=load)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out / 'results.json'} and {RESULTS / (name + '.json')}")


def store(path: Path, before: float, after: float) -> None:
    from dpaudit.report.pp_readme import summarise

    result = json.loads(path.read_text())
    load = {"before": [before], "after": [after], "cpus": os.cpu_count()}
    summary = summarise(result, load=load)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{summary['name']}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out}")


def render(check: bool) -> int:
    from dpaudit.report.pp_readme import render_tables, rewrite_section

    text = SECTION.read_text()
    new = text
    for path in sorted(RESULTS.glob("*.json")):
        summary = json.loads(path.read_text())
        new = rewrite_section(new, path.stem, render_tables(summary))
    if check:
        if new != text:
            print(f"{SECTION} is out of date: run python scripts/pp_paper_run.py render")
            return 1
        return 0
    SECTION.write_text(new)
    print(f"rewrote {SECTION}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("--n-jobs", type=int, default=None)
    r.add_argument("--out", type=Path, default=None)
    st = sub.add_parser("store")
    st.add_argument("results", type=Path)
    st.add_argument("--load-before", type=float, required=True)
    st.add_argument("--load-after", type=float, required=True)
    c = sub.add_parser("render")
    c.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.name, args.n_jobs, args.out or ROOT / "runs" / args.name)
        return render(check=False)
    if args.cmd == "store":
        store(args.results, args.load_before, args.load_after)
        return render(check=False)
    return render(args.check)


if __name__ == "__main__":
    sys.exit(main())
