"""The examples in the docstrings of the LLM fine-tuning modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

pytest.importorskip("dp_accounting")

MODULES = [
    "dpaudit.systems.llm._models",
    "dpaudit.systems.llm._finetune",
    "dpaudit.systems.llm._accounting",
    "dpaudit.attacks._llm",
    "dpaudit.attacks._llm_synthetic",
    "dpaudit.experiments.llm_fine_tuning.settings",
    "dpaudit.experiments.llm_fine_tuning.pipeline",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
