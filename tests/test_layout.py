"""Layout rules of the package (the redesign's acceptance items).

* No module in ``src/dpaudit`` is longer than :data:`MAX_MODULE_LINES` lines.
* No function in ``src/dpaudit/experiments`` is longer than :data:`MAX_FUNCTION_LINES` lines,
  counted from the ``def`` line to the last line of the body, without the docstring.
* No module of ``src/dpaudit/experiments`` or ``src/dpaudit/cli`` compares a value with the
  name of a registered system or workflow (``==``, ``!=``, ``in``, ``not in`` against a string
  literal or a tuple/list/set of them): behaviour that depends on the system or workflow
  belongs to the registered plug-in, not to a branch on its name.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "dpaudit"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60
_NAME_COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _modules(*parts: str) -> list[Path]:
    return sorted(PACKAGE.joinpath(*parts).rglob("*.py"))


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def function_length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` line to the last body line, less the docstring's lines
    (decorators are not counted)."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        length -= first.end_lineno - first.lineno + 1
    return length


def _string_literals(node: ast.expr) -> Iterator[str]:
    """The string constants of ``node``: itself, or the items of a tuple/list/set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                yield item.value


def _registered_names() -> frozenset[str]:
    from dpaudit.experiments import WORKFLOWS
    from dpaudit.experiments.dpsgd import THREAT_MODELS
    from dpaudit.systems import SYSTEMS

    names = (SYSTEMS, WORKFLOWS, THREAT_MODELS)
    return frozenset(n for registry in names for n in registry.names())


def test_no_module_is_over_the_line_limit():
    long = []
    for path in _modules():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


def test_no_experiment_function_is_over_the_line_limit():
    long = []
    for path in _modules("experiments"):
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = function_length(node)
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{_where(path, node.lineno)} {node.name}: {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_no_branch_on_a_registered_system_or_workflow_name():
    names = _registered_names()
    assert {"private-prediction", "pate"} <= names  # the registries were populated
    found = []
    for path in [*_modules("experiments"), *_modules("cli")]:
        for node in ast.walk(_parse(path)):
            if not isinstance(node, ast.Compare):
                continue
            if not any(isinstance(op, _NAME_COMPARISONS) for op in node.ops):
                continue
            for side in (node.left, *node.comparators):
                hits = sorted(set(_string_literals(side)) & names)
                if hits:
                    found.append(f"{_where(path, node.lineno)} compares with {', '.join(hits)}")
    assert not found, "comparisons with registered names:\n" + "\n".join(found)


def test_function_length_skips_the_docstring():
    source = """
        @decorator
        def f(
            x,
        ):
            '''One.

            Two.'''
            y = x
            return y
    """
    tree = ast.parse(textwrap.dedent(source))
    (f,) = tree.body
    assert function_length(f) == 5  # signature (3 lines) + 2 body lines
