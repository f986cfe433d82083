"""Shared plumbing for the tests that run documentation examples: the ``>>>`` examples in
module docstrings, and those of README.md and of the documentation site (``docs/**/*.md``).
Importable from every test file (``pythonpath = ["tests"]``).

A page's examples live in fenced ``python`` blocks. Each block is one doctest, run in a fresh
namespace (so every block imports what it uses), with :data:`FLAGS`. A block that needs an
optional package says so on the line before its fence, in a comment a reader never sees::

    <!-- doctest: requires torch opacus -->

and is skipped, with the reason, when one of those modules cannot be found.
"""

from __future__ import annotations

import contextlib
import dataclasses
import doctest
import gc
import importlib
import importlib.util
import pathlib
import re
from collections.abc import Iterator

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(
    r"^(?:<!-- doctest: requires (?P<requires>[^>]*?) -->\n)?```python\n(?P<code>.*?)^```",
    flags=re.DOTALL | re.MULTILINE,
)

#: Pages whose examples a test elsewhere already runs (with assertions of its own), by the name
#: that test uses: ``section_examples(NAME)`` runs the blocks ``(page, blocks)`` (``None``: all
#: of them). ``tests/test_docs.py`` skips these blocks rather than run them twice, and fails when
#: no test uses a name any more.
SECTIONS: dict[str, tuple[str, tuple[int, ...] | None]] = {
    "01-architecture.md": ("extend/contributing.md", (0,)),
    "10-noisy-argmax.md": ("bounds/noisy-argmax.md", None),
    "30-lower-bounds-rdp.md": ("bounds/lower-bounds.md", None),
    "40-accounting.md": ("bounds/accounting.md", None),
    "50-many-canary.md": ("bounds/many-canary.md", None),
    "55-dp-sgd.md": ("workflows/dp-sgd.md", None),
    "57-lidp-dp-sgd.md": ("workflows/lifted-dp.md", None),
    "70-vote-extraction.md": ("workflows/vote-leakage.md", None),
    "80-serve-store-report.md": ("deploy/service.md", None),
    "85-label-dp.md": ("workflows/label-dp.md", None),
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
    page, indices = SECTIONS.get(section, (section, None))
    blocks = python_blocks(DOCS / page)
    return blocks if indices is None else [blocks[i] for i in indices]


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
    saved = [
        (reg, dict(reg._items), dict(reg._tags))
        for reg in gc.get_objects()
        if isinstance(reg, Registry)
    ]
    try:
        yield
    finally:
        for reg, items, tags in saved:
            reg._items.clear()
            reg._items.update(items)
            reg._tags.clear()
            reg._tags.update(tags)
