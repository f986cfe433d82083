"""The examples in the docstrings of the federated modules run and print what they say."""

from __future__ import annotations

import pytest

from doctest_support import module_examples

pytest.importorskip("dp_accounting")

MODULES = [
    "dpaudit.systems.federated._clients",
    "dpaudit.systems.federated._fedavg",
    "dpaudit.systems.federated._user_dpsgd",
    "dpaudit.systems.federated._flower",
    "dpaudit.data._documents",
    "dpaudit.attacks._federated",
    "dpaudit.experiments.federated.settings",
    "dpaudit.experiments.federated.pipeline",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    assert module_examples(name).failed == 0
