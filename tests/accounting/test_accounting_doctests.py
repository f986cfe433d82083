"""The examples in the docstrings of dpaudit.accounting (and of the RDP conversion it
re-exports) run and print what they say, and so does the accounting section of the README
(docs/bounds/accounting.md), including the worked example of formulas.md §1.8 item 7."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

from doctest_support import module_examples, run_examples, section_examples

pytest.importorskip("dp_accounting")  # the subsampled-Gaussian examples need it

MODULES = [
    "dpaudit.accounting",
    "dpaudit.accounting._batches",
    "dpaudit.accounting._confident",
    "dpaudit.accounting._curve",
    "dpaudit.accounting._gnmax",
    "dpaudit.accounting._label",
    "dpaudit.accounting._ledger",
    "dpaudit.accounting._lnmax",
    "dpaudit.accounting._mechanisms",
    "dpaudit.accounting._pate",
    "dpaudit.accounting._smooth",
    "dpaudit.accounting._subsampled",
    "dpaudit.conversions._rdp",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0


def test_every_public_function_has_an_example():
    """Each public function of dpaudit.accounting carries a runnable example (style.md §9)."""
    accounting = importlib.import_module("dpaudit.accounting")
    finder = doctest.DocTestFinder()
    missing = [
        name
        for name in accounting.__all__
        if inspect.isfunction(getattr(accounting, name))
        and not any(t.examples for t in finder.find(getattr(accounting, name), name, globs={}))
    ]
    assert not missing, f"public functions without a docstring example: {missing}"


def test_readme_section_examples():
    test = section_examples("40-accounting.md")
    assert test.examples, "the section should contain >>> examples"
    assert sum(bool(ex.want) for ex in test.examples) >= 8, "the examples should show output"
    assert run_examples(test) == 0
