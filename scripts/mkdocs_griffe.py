"""A griffe extension for the API reference (``mkdocs.yml``): read ``Example:`` as ``Examples:``.

dpaudit's docstrings introduce their doctests with a Google-style ``Example:`` header. griffe
parses only ``Examples:`` as an examples section (rendered as code) and treats ``Example:`` as
an admonition whose text is Markdown, where a doctest output such as ``[1.478, 0.491]`` reads
as a reference link. Renaming the header when the docstring is loaded renders every doctest as
code, without touching the sources.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADER = re.compile(r"^(\s*)Example:[ \t]*$", flags=re.MULTILINE)


class DoctestExamples(griffe.Extension):
    """Rename ``Example:`` section headers to ``Examples:`` in every loaded docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _HEADER.sub(r"\1Examples:", obj.docstring.value)
