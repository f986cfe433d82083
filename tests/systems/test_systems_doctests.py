"""The examples in the docstrings of dpaudit.systems run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.systems",
    "dpaudit.systems._protocols",
    "dpaudit.systems.private_prediction._cell",
    "dpaudit.data",
    "dpaudit.data._dataset",
    "dpaudit.data._images",
    "dpaudit.data._tabular",
    "dpaudit.data._load",
    "dpaudit.systems.private_prediction._ensemble",
    "dpaudit.mechanisms.values",
    "dpaudit.systems.private_prediction._predictor",
    "dpaudit.systems.private_prediction._teachers",
    "dpaudit.systems.private_prediction._torch_cnn",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
