"""The docstring examples of the label-DP modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.mechanisms._labels",
    "dpaudit.systems.label_dp._systems",
    "dpaudit.systems.label_dp._pate_fm",
    "dpaudit.systems.label_dp._cells",
    "dpaudit.systems.label_dp",
    "dpaudit.attacks._label_memorization",
    "dpaudit.experiments.label_dp.settings",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0


def test_docs_section_examples():
    from doctest_support import run_examples, section_examples

    assert run_examples(section_examples("85-label-dp.md")) == 0
