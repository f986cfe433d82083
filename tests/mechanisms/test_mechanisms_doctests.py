"""The examples in the docstrings of dpaudit.mechanisms and dpaudit.divergence run and print
what they say, and so does the noisy-argmax docs page (docs/bounds/noisy-argmax.md)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from doctest_support import module_examples, run_examples, section_examples

MODULES = [
    "dpaudit.mechanisms",
    "dpaudit.mechanisms.noisy_argmax",
    "dpaudit.mechanisms.simple",
    "dpaudit.mechanisms._quadrature",
    "dpaudit.divergence",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0


def test_module_examples_exist():
    """Each public function of the noisy-argmax core carries a runnable example."""
    finder = doctest.DocTestFinder()
    module = importlib.import_module("dpaudit.mechanisms.noisy_argmax")
    names = {t.name.rsplit(".", 1)[-1] for t in finder.find(module) if t.examples}
    assert {"argmax_probabilities", "log_argmax_probabilities", "sample_argmax_counts"} <= names


def test_readme_section_examples():
    test = section_examples("10-noisy-argmax.md")
    assert test.examples, "the section should contain >>> examples"
    # Every example shows its output (a bare ``>>> f(...)`` documents nothing).
    silent = [ex.source for ex in test.examples if not ex.want and "import" not in ex.source]
    assert not silent, f"examples without output: {silent}"
    assert run_examples(test) == 0
