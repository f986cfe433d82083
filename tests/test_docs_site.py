"""The documentation site (``mkdocs.yml``, ``docs/``) cannot go stale: every ``>>>`` example
of its pages runs as a doctest, every console output it shows is what the command prints
today (``scripts/docs_console.py``), every ``dpaudit.…`` name in its text exists, every
``dpaudit …`` command line it shows parses, and every page is in the navigation. (README.md:
``tests/test_readme.py``; the names and command lines of README.md are checked here too.)

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

PAGES = sorted(DOCS.rglob("*.md"))
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


# --------------------------------------------------------------------------- names in the text

#: ``dpaudit.something`` in inline code, up to the first character that is not part of a name.
_NAME = re.compile(r"`(dpaudit(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?=[`(\[ ,])")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute chain below the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("page", docs_console.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_dpaudit_names_in_the_text_exist(page):
    """A module or object named in the text (``dpaudit.attacks.ADVERSARIES``) must exist, so
    a page cannot point at a module that moved."""
    text = page.read_text()
    names = sorted(set(_NAME.findall(text)))
    missing = [n for n in names if not _resolves(n)]
    assert missing == [], f"{page.relative_to(ROOT)} names what does not exist"


# --------------------------------------------------------------------------- command lines

_FENCED = re.compile(r"^```([a-z]*)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
_INLINE = re.compile(r"`(dpaudit [^`]+)`")
#: An inline command with a placeholder (``dpaudit audit NAME``, ``--query …``) is not parsed.
_PLACEHOLDER = re.compile(r"[…|\[\]<>]|\b[A-Z]{2,}\b")


def _command_lines(text: str) -> list[str]:
    """The ``dpaudit …`` command lines of a page: in shell blocks (``\\`` continuations joined,
    ``  # comments`` dropped), after a ``$ `` prompt in text blocks, and in inline code
    without placeholders."""
    out = []
    for lang, body in _FENCED.findall(text):
        if lang not in ("bash", "console", "sh", "shell", "text", ""):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("$ "):
                line = line[2:]
            elif lang == "text":
                continue
            if line.startswith("dpaudit "):
                out.append(re.split(r"\s+#\s", line)[0])
    out += [c for c in _INLINE.findall(text) if not _PLACEHOLDER.search(c)]
    return out


def _parse(app, line: str) -> None:
    """Parse ``line`` (without ``dpaudit``) as the command line would, without running it."""
    import shlex

    command, ctx, args = app, None, shlex.split(line)
    while hasattr(command, "resolve_command"):  # a group: find the subcommand
        ctx = command.make_context(command.name or "dpaudit", args, parent=ctx)
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            return
        _, command, args = command.resolve_command(ctx, rest)
    command.make_context(command.name, args, parent=ctx)


#: The pages that show ``dpaudit`` command lines.
COMMAND_PAGES = [p for p in docs_console.pages() if _command_lines(p.read_text())]


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_command_lines_in_the_docs_parse(page):
    """Every ``dpaudit`` command a page shows names a command and options that exist (values
    are not checked: a page may say ``--config my.toml``)."""
    for module in ("typer", "rich"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the command line needs {module} (extra 'cli')")
    import typer.main

    from dpaudit.cli import build_app

    app = typer.main.get_command(build_app())
    bad = []
    for line in _command_lines(page.read_text()):
        try:
            _parse(app, line.removeprefix("dpaudit "))
        except Exception as exc:
            if type(exc).__name__ in ("NoSuchOption", "UsageError", "BadOptionUsage"):
                bad.append(f"{line}: {exc.format_message()}")
    assert bad == [], "\n".join(bad)
