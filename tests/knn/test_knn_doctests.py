"""The examples in the docstrings of the Private-kNN modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.systems.private_prediction.knn",
    "dpaudit.systems.private_prediction._knn_core",
    "dpaudit.data._text",
    "dpaudit.data._images",
    "dpaudit.data.features",
    "dpaudit.attacks.knn",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
