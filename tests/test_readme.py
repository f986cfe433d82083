"""README.md: what dpaudit is, the two commands, one worked example per workflow (each runs
as a doctest), the benchmark table and links into the documentation site, in at most
:data:`MAX_LINES` lines. Every relative link in README.md and in ``docs/`` must resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doctest_support import (
    DOCS,
    README,
    ROOT,
    doc_pages,
    python_blocks,
    registries_restored,
    run_blocks,
)

MAX_LINES = 300
TEXT = README.read_text()
BLOCKS = python_blocks(README)
#: ``[text](target)`` and ``![alt](target)``, outside code.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE = re.compile(r"^```.*?^```|`[^`\n]*`", flags=re.DOTALL | re.MULTILINE)


def test_readme_is_short():
    assert len(TEXT.splitlines()) <= MAX_LINES


def test_readme_shows_the_two_commands_first():
    assert TEXT.index("make demo") < TEXT.index("make test") < TEXT.index("## ")


def test_readme_has_one_example_per_workflow():
    code = "\n".join(b.code for b in BLOCKS)
    for entry_point in (
        "audit_private_prediction",
        "private-knn",
        "prompt-pate",
        "run_label_dp",
        "audit_dpsgd",
        "audit_canary_scores",
        "run_lidp_gaussian",
        "run_vote_leakage",
    ):
        assert entry_point in code, f"README has no worked example of {entry_point}"


def test_readme_benchmark_table_is_the_benchmarks_page_s():
    def table(text: str) -> str:
        start, end = "<!-- benchmark-table:start -->", "<!-- benchmark-table:end -->"
        return text[text.index(start) : text.index(end)]

    assert table(TEXT) == table((DOCS / "benchmarks.md").read_text())
    assert table(TEXT).count("\n|") >= 10


def test_readme_examples_import_only_top_level_packages():
    """The experiment modules move; their packages' re-exports stay."""
    deep = re.findall(r"from (dpaudit\.\w+\.\w[\w.]*) import", "\n".join(b.code for b in BLOCKS))
    assert deep == []


def test_readme_examples():
    empty = [b.name for b in BLOCKS if not b.doctest().examples]
    assert not empty, f"python blocks without >>> examples: {empty}"
    with registries_restored():
        failures, skipped = run_blocks(BLOCKS)
    assert failures == 0
    if skipped:
        pytest.skip("; ".join(skipped))


def _links(page: Path) -> list[str]:
    return _LINK.findall(_CODE.sub("", page.read_text()))


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor on the same page
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert broken == [], f"{page.name} links to missing files"
