"""The documentation site (``mkdocs.yml``, ``docs/``) cannot go stale: every ``>>>`` example
of its pages runs as a doctest, every console output it shows is what the command prints
today (``scripts/docs_console.py``), and every page is in the navigation.

``make test`` also builds the site with ``mkdocs build --strict``, which fails on a broken link,
anchor or API reference.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from doctest_support import (
    DOCS,
    ROOT,
    SECTIONS,
    python_blocks,
    registries_restored,
    run_blocks,
)

sys.path.insert(0, str(ROOT / "scripts"))
import docs_console

PAGES = sorted(p for p in DOCS.rglob("*.md") if "sections" not in p.parts)  # TODO
#: Blocks that the tests named in :data:`doctest_support.SECTIONS` run already.
#: (``30-lower-bounds-rdp.md``'s test executes the code without comparing outputs: not skipped.)
ELSEWHERE = {
    (DOCS / page, i)
    for name, (page, indices) in SECTIONS.items()
    if name != "30-lower-bounds-rdp.md"
    for i in indices
}
#: Every page's blocks that no other test runs, by page.
BLOCKS = {
    page: blocks
    for page in PAGES
    if (blocks := [b for b in python_blocks(page) if (page, b.index) not in ELSEWHERE])
}


def _nav() -> list[str]:
    """The pages of ``nav:`` in mkdocs.yml (read without YAML tags, which need mkdocs)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)


def test_every_page_is_in_the_navigation_and_every_entry_exists():
    nav = _nav()
    assert len(nav) == len(set(nav)), "a page is listed twice in the nav"
    pages = {str(p.relative_to(DOCS)) for p in PAGES}
    assert sorted(pages - set(nav)) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(set(nav) - pages) == [], "nav entries without a page"


def test_the_pages_hold_examples():
    assert sum(len(b) for b in BLOCKS.values()) + len(ELSEWHERE) >= 20


@pytest.mark.parametrize("page", list(BLOCKS), ids=lambda p: str(p.relative_to(DOCS)))
def test_page_examples(page):
    blocks = BLOCKS[page]
    empty = [b.name for b in blocks if not b.doctest().examples]
    assert not empty, f"python blocks without >>> examples: {empty}"
    with registries_restored():
        failures, skipped = run_blocks(blocks)
    assert failures == 0
    if skipped:
        pytest.skip("; ".join(skipped))


def test_pages_run_by_other_tests_are_still_run():
    """Each name of ``SECTIONS`` must be used by a test, or its blocks would run nowhere."""
    sources = "\n".join(
        p.read_text() for p in (ROOT / "tests").rglob("test_*.py") if p != Path(__file__)
    )
    unused = [name for name in SECTIONS if f'"{name}"' not in sources]
    assert not unused, f"no test runs {unused}: remove them from doctest_support.SECTIONS"


# --------------------------------------------------------------------------- console outputs


def test_every_console_block_is_a_known_snippet_and_every_snippet_is_shown():
    shown: set[str] = set()
    for page in docs_console.pages():
        shown |= set(docs_console.shown(page.read_text()))
    assert sorted(shown - set(docs_console.SNIPPETS)) == []
    assert sorted(set(docs_console.SNIPPETS) - shown) == []


def _blocks_of(name: str) -> list[tuple[str, str]]:
    out = []
    for page in docs_console.pages():
        for body in docs_console.shown(page.read_text()).get(name, []):
            out.append((str(page.relative_to(ROOT)), body))
    return out


@pytest.mark.parametrize("name", [n for n, s in docs_console.SNIPPETS.items() if s.slow], ids=str)
def test_slow_console_outputs_are_the_stored_run(name):
    snippet = docs_console.SNIPPETS[name]
    assert snippet.stored.is_file(), "run: python scripts/docs_console.py render --slow"
    expected = docs_console.block(snippet.stored.read_text())
    for page, body in _blocks_of(name):
        assert body == expected, f"{page}: run python scripts/docs_console.py render"


@pytest.mark.parametrize(
    "name", [n for n, s in docs_console.SNIPPETS.items() if not s.slow], ids=str
)
def test_console_outputs_are_what_the_command_prints(name):
    for module in ("typer", "rich"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the command line needs {module} (extra 'cli')")
    expected = docs_console.block(docs_console.run(docs_console.SNIPPETS[name]))
    for page, body in _blocks_of(name):
        assert body == expected, f"{page} is stale: run python scripts/docs_console.py render"
