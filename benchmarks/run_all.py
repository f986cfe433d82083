"""Run every ``benchmarks/bench_*.py`` in turn (``make bench``); each writes its JSON to
``benchmarks/results/`` and prints a summary. ``--quick`` sets ``DPAUDIT_BENCH_QUICK=1`` for
scripts that offer a smaller run."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys


def main(argv: list[str] | None = None) -> int:
    from _cli import bench_parser, parse

    args = parse(bench_parser(__doc__, quick_option=True), argv)
    here = pathlib.Path(__file__).parent
    env = dict(os.environ)
    if args.quick:
        env["DPAUDIT_BENCH_QUICK"] = "1"
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        rc = subprocess.call([sys.executable, str(script)], env=env)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
