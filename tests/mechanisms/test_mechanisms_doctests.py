"""The examples in the docstrings of dpaudit.mechanisms and dpaudit.divergence run and print
what they say, and so does the noisy-argmax section of the README (docs/sections)."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

MODULES = [
    "dpaudit.mechanisms",
    "dpaudit.mechanisms.noisy_argmax",
    "dpaudit.mechanisms.simple",
    "dpaudit.mechanisms._quadrature",
    "dpaudit.divergence",
]

SECTION = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sections" / "10-noisy-argmax.md"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=FLAGS)
    assert result.failed == 0


def test_module_examples_exist():
    """Each public function of the noisy-argmax core carries a runnable example."""
    finder = doctest.DocTestFinder()
    module = importlib.import_module("dpaudit.mechanisms.noisy_argmax")
    names = {t.name.rsplit(".", 1)[-1] for t in finder.find(module) if t.examples}
    assert {"argmax_probabilities", "log_argmax_probabilities", "sample_argmax_counts"} <= names


def test_readme_section_examples():
    # The ``>>>`` examples live in fenced code blocks; fences are not part of the output.
    blocks = re.findall(r"```python\n(.*?)```", SECTION.read_text(), flags=re.DOTALL)
    text = "\n".join(blocks)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, SECTION.name, str(SECTION), 0)
    assert test.examples, "the section should contain >>> examples"
    # Every example shows its output (a bare ``>>> f(...)`` documents nothing).
    silent = [ex.source for ex in test.examples if not ex.want and "import" not in ex.source]
    assert not silent, f"examples without output: {silent}"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    assert runner.failures == 0
