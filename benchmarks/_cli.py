"""The benchmarks' command lines, parsed the way ``dpaudit`` parses its own: named options
(``--runs 96``), ``--help`` listing them, and a bad or unknown option refused in one line
naming it, with exit code 2, before anything is measured.

Every ``bench_*.py`` builds its options with :func:`bench_parser` (never by reading
``sys.argv`` by hand) and parses them in ``main()``, so importing a benchmark (the tests do)
parses nothing. ``--quick`` is the smaller run of ``make bench-quick`` (also
``DPAUDIT_BENCH_QUICK=1``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

__all__ = ["bench_parser", "parse", "quick"]


def bench_parser(doc: str | None, *, quick_option: bool = False) -> argparse.ArgumentParser:
    """An option parser described by the first line of the benchmark's docstring.

    Args:
        doc: the script's ``__doc__``.
        quick_option: add ``--quick`` (the smaller run; see :func:`quick`).
    """
    lines = (doc or "").strip().splitlines()
    parser = argparse.ArgumentParser(
        description=lines[0] if lines else None,
        allow_abbrev=False,  # an option is its full name, as on the dpaudit command line
    )
    if quick_option:
        parser.add_argument(
            "--quick", action="store_true", help="the smaller run (also DPAUDIT_BENCH_QUICK=1)"
        )
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default: the command line); a bad option exits with code 2 and one
    ``error:`` line naming it (argparse's usage line above it)."""
    return parser.parse_args(None if argv is None else list(argv))


def quick(args: argparse.Namespace | None = None) -> bool:
    """Whether the smaller run was asked for: ``--quick`` or ``DPAUDIT_BENCH_QUICK=1``."""
    return bool(getattr(args, "quick", False)) or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
