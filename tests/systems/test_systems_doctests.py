"""The examples in the docstrings of dpaudit.systems run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.systems",
    "dpaudit.data",
    "dpaudit.data._dataset",
    "dpaudit.data._images",
    "dpaudit.data._tabular",
    "dpaudit.data._load",
    "dpaudit.systems._ensemble",
    "dpaudit.mechanisms.values",
    "dpaudit.systems._predictor",
    "dpaudit.systems._teachers",
    "dpaudit.systems._torch_cnn",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
