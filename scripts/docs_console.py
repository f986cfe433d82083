"""The console outputs shown in README.md and docs/: produced by real runs, checked by a test.

    python scripts/docs_console.py render          # rerun the fast commands, rewrite the pages
    python scripts/docs_console.py render --slow   # also rerun the slow ones (`dpaudit demo`)
    python scripts/docs_console.py check           # exit 1 when a page disagrees with a run
    python scripts/docs_console.py list            # the snippets and where they are shown

A page shows the output of snippet NAME between the markers ``<!-- console:NAME:start -->``
and ``<!-- console:NAME:end -->``: a ``text`` fence holding ``$ `` and the command line, then
what the command printed (rich tables at a fixed width of :data:`COLUMNS` columns, trailing
blanks removed, the temporary working directory cut from paths). Nothing between the markers
is typed by hand.

A *fast* snippet is rerun by ``tests/test_docs_site.py``, which fails when a page differs from
what the command prints today. A *slow* one (``make demo`` takes minutes) is run by
``render --slow`` only: its output is stored in ``docs/snippets/NAME.txt`` and the test checks
that every page shows exactly that file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
STORED = DOCS / "snippets"
#: The terminal width the outputs are rendered at (rich wraps its tables to it).
COLUMNS = 120
#: The ``dpaudit`` command, run by the interpreter running this script.
DPAUDIT = (sys.executable, "-c", "from dpaudit.cli import main; main()")
MARKERS = ("<!-- console:{name}:start -->", "<!-- console:{name}:end -->")
_BLOCK = re.compile(
    r"<!-- console:(?P<name>[a-z0-9-]+):start -->\n(?P<body>.*?)<!-- console:(?P=name):end -->",
    flags=re.DOTALL,
)


def _mnist_votes(cwd: Path) -> None:
    """The 15 MNIST vote histograms of the package data, as whitespace text (one per line)."""
    text = (resources.files("dpaudit") / "data" / "pate_votes_mnist.json").read_text()
    rows = json.loads(text)["histograms"].values()
    (cwd / "mnist_votes.txt").write_text("".join(" ".join(map(str, r)) + "\n" for r in rows))


def _monitored_ledger(cwd: Path) -> None:
    """The ledger of the demo's deployment (digits, 30 teachers, σ = 4, cache off) after
    2,000 answers to digits test images (seeded noise and traffic)."""
    import numpy as np

    from dpaudit.data import load_subset
    from dpaudit.serve import ServeSettings, build_service

    svc = build_service(ServeSettings.of(
        teachers=30, sigma=4.0, dataset="digits", ledger=str(cwd / "ledger.sqlite"),
        noise_seed=0, epsilon=1e12, client_epsilon=1e11,
    ))  # fmt: skip
    client = svc.authenticate(svc.ledger.add_client("traffic", 1e11))
    X, g = load_subset("digits", seed=0).X_test, np.random.default_rng(1)
    for _ in range(8):
        svc.predict(client, X[g.integers(0, len(X), size=250)])
    svc.ledger.close()


@dataclasses.dataclass(frozen=True)
class Snippet:
    """One command whose output the docs show.

    Attributes:
        name: the marker name.
        args: the ``dpaudit`` arguments, as typed.
        slow: too slow for the test suite; stored in ``docs/snippets/NAME.txt`` instead.
        files: writes the input files the command reads into its working directory.
    """

    name: str
    args: str
    slow: bool = False
    files: Callable[[Path], None] | None = None

    @property
    def command(self) -> str:
        """The command line as the page shows it."""
        return f"dpaudit {self.args}"

    @property
    def stored(self) -> Path:
        return STORED / f"{self.name}.txt"


SNIPPETS: dict[str, Snippet] = {
    s.name: s
    for s in (
        Snippet("demo", "demo --no-progress", slow=True),
        Snippet("argmax", "argmax --votes 200,30,20 --sigma 40"),
        Snippet(
            "account-pate",
            "account pate --votes-file mnist_votes.txt --sigma 40 --delta 1e-5",
            files=_mnist_votes,
        ),
        Snippet(
            "extract-histogram",
            "attack extract-histogram --votes 4,7,6,8,4,2,0,214,4,1 --sigma 40 --queries 10000 "
            "--seed 0",
        ),
        Snippet(
            "lidp-gaussian",
            "audit lidp-gaussian --sigma 2.149 --dim 1000 --canaries 16 --runs 1000 "
            "--repetitions 4 --seed 11",
        ),
        Snippet(
            "monitor",
            "monitor --ledger ledger.sqlite --max-answers 2000 --interval 0",
            slow=True,
            files=_monitored_ledger,
        ),
    )
}


def run(snippet: Snippet) -> str:
    """Run the command in a fresh directory; return ``$ command`` and its normalised output.

    Raises:
        RuntimeError: the command failed (its output is in the message).
    """
    with tempfile.TemporaryDirectory(prefix="dpaudit-docs-") as tmp:
        cwd = Path(tmp).resolve()
        if snippet.files is not None:
            snippet.files(cwd)
        env = {
            **os.environ,
            "COLUMNS": str(COLUMNS),
            "LINES": "50",
            "DPAUDIT_STORE": "off",
            "NO_COLOR": "1",
            "TERM": "dumb",
        }
        argv = [*DPAUDIT, *shlex.split(snippet.args)]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                f"{snippet.command} exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            )
        out = proc.stdout.replace(f"{cwd}/", "").replace(str(cwd), ".")
    lines = [line.rstrip() for line in out.rstrip("\n").split("\n")]
    return "\n".join([f"$ {snippet.command}", *lines]) + "\n"


def block(text: str) -> str:
    """What a page holds between the markers for a command's output ``text``."""
    return f"```text\n{text}```\n"


def expected(snippet: Snippet, *, rerun: bool) -> str:
    """The output a page must show: a fresh run, or the stored file of a slow snippet."""
    if snippet.slow and not rerun:
        return snippet.stored.read_text()
    return run(snippet)


def pages() -> list[Path]:
    """README.md and every Markdown page of the documentation site."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def shown(text: str) -> dict[str, list[str]]:
    """The blocks of a page: marker name → the texts between its markers (in order)."""
    out: dict[str, list[str]] = {}
    for m in _BLOCK.finditer(text):
        out.setdefault(m["name"], []).append(m["body"])
    return out


def rewrite(text: str, name: str, output: str) -> str:
    """``text`` with every block of ``name`` replaced by ``output`` (as :func:`block`)."""
    start, end = (m.format(name=name) for m in MARKERS)
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), flags=re.DOTALL)
    return pattern.sub(lambda _: f"{start}\n{block(output)}{end}", text)


def _used() -> dict[str, list[Path]]:
    where: dict[str, list[Path]] = {}
    for page in pages():
        for name in shown(page.read_text()):
            where.setdefault(name, []).append(page)
    return where


def render(slow: bool, check: bool) -> int:
    where = _used()
    unknown = sorted(set(where) - set(SNIPPETS))
    if unknown:
        print(f"unknown console blocks: {unknown} (add them to SNIPPETS)")
        return 1
    stale = 0
    for name, snippet in SNIPPETS.items():
        if name not in where:
            print(f"snippet {name!r} is shown on no page")
            stale += 1
            continue
        rerun = slow and not check
        output = expected(snippet, rerun=rerun)
        if snippet.slow and rerun:
            STORED.mkdir(parents=True, exist_ok=True)
            snippet.stored.write_text(output)
            print(f"wrote {snippet.stored.relative_to(ROOT)}")
        for page in where[name]:
            text = page.read_text()
            new = rewrite(text, name, output)
            if new == text:
                continue
            if check:
                print(f"{page.relative_to(ROOT)}: console block {name!r} is out of date")
                stale += 1
            else:
                page.write_text(new)
                print(f"rewrote {name!r} in {page.relative_to(ROOT)}")
    return 1 if check and stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="rerun the commands and rewrite the pages")
    r.add_argument("--slow", action="store_true", help="also rerun the slow commands")
    sub.add_parser("check", help="exit 1 when a page disagrees with a run")
    sub.add_parser("list", help="the snippets and the pages showing them")
    args = parser.parse_args(argv)
    if args.cmd == "list":
        where = _used()
        for name, s in SNIPPETS.items():
            pages_ = ", ".join(str(p.relative_to(ROOT)) for p in where.get(name, [])) or "-"
            print(f"{name:18s} {'slow' if s.slow else 'fast'}  {s.command}\n{'':24s}{pages_}")
        return 0
    return render(slow=getattr(args, "slow", False), check=args.cmd == "check")


if __name__ == "__main__":
    sys.exit(main())
