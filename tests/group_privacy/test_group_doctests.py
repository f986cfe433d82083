"""The docstring examples of the group-privacy modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

MODULES = [
    "dpaudit.mechanisms._group",
    "dpaudit.divergence",
    "dpaudit.attacks._group",
    "dpaudit.experiments.group_privacy.settings",
    "dpaudit.experiments.group_privacy.pipeline",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = module_examples(name)
    assert result.attempted > 0 and result.failed == 0
