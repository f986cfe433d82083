"""README.md is assembled from docs/sections/*.md (``make readme``) and shows the two commands."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_is_assembled_from_the_doc_sections():
    sections = sorted((ROOT / "docs" / "sections").glob("*.md"))
    assert sections, "docs/sections/*.md is missing"
    expected = "\n".join(p.read_text() for p in sections)
    assert (ROOT / "README.md").read_text() == expected, "README.md is stale: run `make readme`"


def test_readme_shows_the_two_commands_first():
    text = (ROOT / "README.md").read_text()
    assert text.index("make demo") < text.index("make test") < text.index("## ")
