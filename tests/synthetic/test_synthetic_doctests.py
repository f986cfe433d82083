"""The examples in the docstrings of the synthetic-data modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.systems._external",
    "dpaudit.systems.synthetic._generators",
    "dpaudit.systems.synthetic._inprocess",
    "dpaudit.systems.synthetic._privbayes",
    "dpaudit.attacks._synthetic",
    "dpaudit.attacks._synthetic_privbayes",
    "dpaudit.attacks._synthetic_adult",
    "dpaudit.attacks._synthetic_density",
    "dpaudit.experiments.synthetic_data.settings",
    "dpaudit.experiments.synthetic_data.pipeline",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
