"""No two modules of ``dpaudit`` import each other, directly or through others.

The graph is built from the source, without importing anything: every module under
``src/dpaudit`` is parsed with :mod:`ast`, and every ``import dpaudit…`` / ``from dpaudit…
import …`` / relative import in it is an edge — module-level imports *and* the lazy ones
inside functions (and under ``if TYPE_CHECKING``), because a lazy import that closes a circle
is still a circle in the design, only one that fails later. An edge goes to the module named
(``from dpaudit.data import features`` → ``dpaudit.data.features`` when that is a module,
else ``dpaudit.data``), not to its parent packages: importing
``dpaudit.systems.private_prediction._teachers`` runs ``dpaudit/systems/__init__.py`` first,
but a package whose ``__init__`` re-exports its submodules is not a circle unless a submodule
imports the package back.

A cycle is a strongly connected component of more than one module (Tarjan's algorithm), or a
module that imports itself.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "dpaudit"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph() -> dict[str, set[str]]:
    """Module → the ``dpaudit`` modules it imports (anywhere in its source); parsed once per
    process (every module's source), each caller getting its own copy."""
    return {name: set(targets) for name, targets in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                if base is None:
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                # ``import dpaudit.a.b`` names the module dpaudit.a.b (or its nearest package)
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and (target == ROOT or target.startswith(ROOT + ".")):
                    graph[name].add(target)
    return graph


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); each component sorted, components in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
    return out


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert "dpaudit.systems" in graph and "dpaudit.data" in graph
    assert "dpaudit.data._dataset" in graph["dpaudit.data._images"]
    # a function-level import counts (private_prediction._estimators imports _ridge lazily)
    pp = "dpaudit.systems.private_prediction"
    assert f"{pp}._ridge" in graph[f"{pp}._estimators"]


def test_the_cycle_finder_finds_a_cycle():
    toy = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert [c for c in strongly_connected_components(toy) if len(c) > 1] == [["a", "b", "c"]]


def test_no_import_cycles():
    graph = import_graph()
    cycles = [c for c in strongly_connected_components(graph) if len(c) > 1]
    self_imports = sorted(m for m, targets in graph.items() if m in targets)
    assert not cycles, f"modules importing each other in a circle: {cycles}"
    assert not self_imports, f"modules importing themselves: {self_imports}"


def test_the_data_layer_imports_no_system():
    graph = import_graph()
    above = ("dpaudit.systems", "dpaudit.attacks", "dpaudit.experiments", "dpaudit.cli")
    bad = {
        m: sorted(t for t in targets if t.startswith(above))
        for m, targets in graph.items()
        if m == "dpaudit.data" or m.startswith("dpaudit.data.")
    }
    assert not {m: t for m, t in bad.items() if t}


def _unit(module: str) -> str:
    """The package or top-level module of ``dpaudit`` a module belongs to
    (``dpaudit.mechanisms._group`` → ``dpaudit.mechanisms``; ``dpaudit.divergence`` itself)."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto ``dpaudit``'s packages and top-level modules (the root
    package ``dpaudit`` left out: it re-exports the public API from above every layer)."""
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        unit = _unit(module)
        if unit == ROOT:
            continue
        out.setdefault(unit, set()).update(
            _unit(t) for t in targets if _unit(t) not in (unit, ROOT)
        )
    return out


def test_the_unit_graph_collapses_packages():
    toy = {
        "dpaudit": {"dpaudit.a"},
        "dpaudit.a": {"dpaudit.a._x"},
        "dpaudit.a._x": {"dpaudit.b"},
        "dpaudit.b": set(),
        "dpaudit.b.c": {"dpaudit.a._x"},  # lazily or not: every import is an edge
    }
    graph = unit_graph(toy)
    assert graph == {"dpaudit.a": {"dpaudit.b"}, "dpaudit.b": {"dpaudit.a"}}
    assert [c for c in strongly_connected_components(graph) if len(c) > 1] == [
        ["dpaudit.a", "dpaudit.b"]
    ]


def test_no_two_packages_import_each_other():
    """No two packages (or a package and a top-level module such as ``dpaudit.divergence``)
    import each other, directly or through others, at module level or lazily: the layers'
    arrows all point one way, even where import-linter's contract allows siblings."""
    graph = import_graph()
    units = unit_graph(graph)
    cycles = [c for c in strongly_connected_components(units) if len(c) > 1]
    witnesses = {
        f"{m} -> {t}"
        for c in cycles
        for m, targets in graph.items()
        for t in targets
        if _unit(m) in c and _unit(t) in c and _unit(m) != _unit(t)
    }
    assert not cycles, f"packages importing each other: {cycles} (imports: {sorted(witnesses)})"
