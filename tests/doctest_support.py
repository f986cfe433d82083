"""Shared plumbing for the tests that run documentation examples: the ``>>>`` examples in
module docstrings, and those of README.md and of the documentation site (``docs/**/*.md``).
Importable from every test file (``pythonpath = ["tests"]``).

A page's examples live in fenced ``python`` blocks. Each block is one doctest; the blocks of a
page run in order in one namespace, as a reader goes through them (:func:`run_blocks`), with
:data:`FLAGS`. A block that needs an optional package says so on the line before its fence, in
a comment a reader never sees::

    <!-- doctest: requires torch opacus -->

and is skipped when one of those modules cannot be found (a block that uses its names must
say so too).
"""

from __future__ import annotations

import contextlib
import dataclasses
import doctest
import importlib
import importlib.util
import pathlib
import re
import sys
from collections.abc import Iterator

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(
    r"^(?:<!-- doctest: requires (?P<requires>[^>]*?) -->\n)?```python\n(?P<code>.*?)^```",
    flags=re.DOTALL | re.MULTILINE,
)

#: Blocks that a test elsewhere already runs (with assertions of its own), by the name that
#: test uses: ``section_examples(NAME)`` runs the blocks ``(page, indices)`` of ``docs/`` (the
#: names are those of the former ``docs/sections/*.md``). ``tests/test_docs_site.py`` skips these
#: blocks rather than run them twice, and fails when no test uses a name any more.
SECTIONS: dict[str, tuple[str, tuple[int, ...]]] = {
    "01-architecture.md": ("extend/contributing.md", (0,)),
    "10-noisy-argmax.md": ("bounds/noisy-argmax.md", (0,)),
    "30-lower-bounds-rdp.md": ("bounds/lower-bounds.md", (0, 1, 2, 3)),
    "40-accounting.md": ("bounds/accounting.md", (0, 1)),
    "50-many-canary.md": ("bounds/many-canary.md", (0,)),
    "55-dp-sgd.md": ("workflows/dp-sgd.md", (3,)),
    "57-lidp-dp-sgd.md": ("workflows/lifted-dp.md", (1,)),
    "70-vote-extraction.md": ("workflows/vote-leakage.md", (1, 2)),
    "80-serve-store-report.md": ("deploy/service.md", (0,)),
    "85-label-dp.md": ("workflows/label-dp.md", (1,)),
}


@dataclasses.dataclass(frozen=True)
class CodeBlock:
    """A fenced ``python`` block of a page.

    Attributes:
        page: the Markdown file.
        index: the block's position among the page's ``python`` blocks (from 0).
        line: the line of its opening fence (from 1).
        code: its text, fences dropped.
        requires: the modules its ``<!-- doctest: requires … -->`` comment names.
    """

    page: pathlib.Path
    index: int
    line: int
    code: str
    requires: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``page:line`` relative to the repository (the test id)."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def missing(self) -> list[str]:
        """The required modules that cannot be found."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def doctest(self) -> doctest.DocTest:
        """The block's ``>>>`` examples as one doctest (line numbers as in the page)."""
        return doctest.DocTestParser().get_doctest(
            self.code, {}, self.name, str(self.page), self.line
        )


def doc_pages() -> list[pathlib.Path]:
    """README.md and every Markdown page of the documentation site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def python_blocks(page: pathlib.Path) -> list[CodeBlock]:
    """The fenced ``python`` blocks of ``page``, in order."""
    text = page.read_text()
    blocks = []
    for i, m in enumerate(_FENCE.finditer(text)):
        fence = m.start("code") - len("```python\n")
        requires = tuple((m["requires"] or "").split())
        line = text.count("\n", 0, fence) + 1
        blocks.append(CodeBlock(page, i, line, m["code"], requires))
    return blocks


def module_examples(name: str) -> doctest.TestResults:
    """Run the docstring examples of module ``name``; returns (failed, attempted)."""
    return doctest.testmod(importlib.import_module(name), optionflags=FLAGS)


def _section_blocks(section: str) -> list[CodeBlock]:
    if section in SECTIONS:
        page, indices = SECTIONS[section]
        blocks = python_blocks(DOCS / page)
        return [blocks[i] for i in indices]
    return python_blocks(DOCS / section)


def section_code(section: str) -> str:
    """The Python source of a page's examples, joined (prompts and outputs dropped).

    ``section`` is a page of ``docs/`` (``"bounds/accounting.md"``) or a name of
    :data:`SECTIONS`.
    """
    parts = []
    for block in _section_blocks(section):
        examples = block.doctest().examples
        parts.append("".join(ex.source for ex in examples) if examples else block.code)
    return "\n".join(parts)


def section_examples(section: str) -> doctest.DocTest:
    """The ``>>>`` examples of a page (or of a name of :data:`SECTIONS`) as one doctest."""
    blocks = _section_blocks(section)
    path = blocks[0].page if blocks else DOCS / section
    code = "\n".join(b.code for b in blocks)
    return doctest.DocTestParser().get_doctest(code, {}, path.name, str(path), 0)


def run_blocks(blocks: list[CodeBlock]) -> tuple[int, list[str]]:
    """Run the blocks' examples in order in one namespace, skipping those whose required
    modules are missing; returns the number of failures (reported on stdout) and the skipped
    blocks with the reason."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    globs: dict[str, object] = {"__name__": "__doc_examples__"}
    skipped = []
    for block in blocks:
        missing = block.missing()
        if missing:
            skipped.append(f"{block.name} needs {', '.join(missing)}")
            continue
        test = block.doctest()
        test.globs = globs
        runner.run(test, clear_globs=False)
    globs.clear()
    return runner.failures, skipped


def run_examples(test: doctest.DocTest) -> int:
    """Run a parsed doctest; returns the number of failures (reported on stdout)."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    return runner.failures


@contextlib.contextmanager
def registries_restored() -> Iterator[None]:
    """Undo whatever an example registers (systems, adversaries, workflows, …) on exit."""
    from dpaudit._registry import Registry

    importlib.import_module("dpaudit.experiments")  # imports (and so fills) every registry
    registries = {
        id(value): value
        for name, module in list(sys.modules.items())
        if name == "dpaudit" or name.startswith("dpaudit.")
        for value in list(vars(module).values())
        if isinstance(value, Registry)
    }
    saved = [(reg, dict(reg._items), dict(reg._tags)) for reg in registries.values()]
    try:
        yield
    finally:
        for reg, items, tags in saved:
            reg._items.clear()
            reg._items.update(items)
            reg._tags.clear()
            reg._tags.update(tags)
