"""Shared plumbing for the tests that run documentation examples: the ``>>>`` examples in
module docstrings and in the fenced ``python`` blocks of ``docs/sections/*.md`` (from which
README.md is assembled). Importable from every test file (``pythonpath = ["tests"]``)."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
SECTIONS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "sections"


def module_examples(name: str) -> doctest.TestResults:
    """Run the docstring examples of module ``name``; returns (failed, attempted)."""
    return doctest.testmod(importlib.import_module(name), optionflags=FLAGS)


def section_code(section: str) -> str:
    """The fenced ``python`` blocks of ``docs/sections/<section>``, joined (fences dropped)."""
    text = (SECTIONS / section).read_text()
    return "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL))


def section_examples(section: str) -> doctest.DocTest:
    """The ``>>>`` examples of a docs section, parsed as one doctest."""
    path = SECTIONS / section
    return doctest.DocTestParser().get_doctest(section_code(section), {}, path.name, str(path), 0)


def run_examples(test: doctest.DocTest) -> int:
    """Run a parsed doctest; returns the number of failures (reported on stdout)."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    return runner.failures
