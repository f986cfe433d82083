"""The worked example of the service's docs page (docs/deploy) and the docstring examples of
the service, store and HTML-report modules run as written."""

from __future__ import annotations

import pytest

from doctest_support import module_examples, run_examples, section_examples


def test_docs_section_examples():
    assert run_examples(section_examples("80-serve-store-report.md")) == 0


@pytest.mark.parametrize(
    "module",
    [
        "dpaudit.serve.ledger",
        "dpaudit.serve.sqlite_ledger",
        "dpaudit.serve.service",
        "dpaudit.serve.settings",
        "dpaudit.serve.monitor",
        "dpaudit.store.runs",
        "dpaudit.store.compare",
        "dpaudit.report.html",
    ],
)
def test_module_examples(module):
    failed, attempted = module_examples(module)
    assert failed == 0 and attempted > 0
