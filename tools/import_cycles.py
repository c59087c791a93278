"""Import-cycle check for `make lint`: no two modules of deepsearch import each other,
directly or around a loop. Exits 1 and lists every cycle not in KNOWN_CYCLES.

The graph is grimp's (import-linter's own), over every module of the package:
- imports under TYPE_CHECKING count. A type-only cycle still means neither module can
  be read, moved or tested without the other, and most cycles are one (before issue
  19, four of the six cycles were type-only). import-linter's contracts
  (pyproject.toml) count them the same way.
- imports inside functions count: a lazy import defers a cycle to run time.
- a submodule does not "import" its package: running `a/b.py` runs `a/__init__.py`,
  but counting that would make every package whose `__init__` re-exports a submodule
  a cycle. An `__init__` that imports a module which imports the package back (for
  `__version__`, say) is a cycle, and is found.

A cycle is a strongly connected component of the module graph; each is printed with
its imports inside the component (line numbers), so the edge to break is in view.

    python tools/import_cycles.py [package]   # default: deepsearch
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

# Cycles tolerated while a branch removes them, each exactly (a cycle that grows or shrinks is
# new). An entry that no longer matches a cycle fails too, so the list empties as they land.
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative: the
    graph of a large package is deeper than Python's recursion limit likes), each
    sorted, in sorted order. Imports of modules outside `graph` are ignored."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next((m for m in edges if m in graph), None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    found.extend(_pop_component(node, stack, on_stack))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return sorted(found)


def _pop_component(node: str, stack: list[str], on_stack: set[str]) -> list[list[str]]:
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
            break
    return [sorted(component)] if len(component) > 1 else []


def build(package: str) -> tuple[dict[str, set[str]], Any]:
    """The package's module graph (module -> the package's modules it imports) and
    grimp's graph, for line numbers."""
    import grimp

    # No cache: the whole graph builds in well under a second, and none is left behind.
    imports = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    graph = {m: set(imports.find_modules_directly_imported_by(m)) for m in imports.modules}
    return graph, imports


def describe(component: list[str], graph: Mapping[str, set[str]], imports: Any) -> list[str]:
    """A cycle's members and the imports between them, `a -> b (l.12, l.40)`."""
    members = set(component)
    lines = [f"cycle of {len(component)} modules: {', '.join(component)}"]
    for module in component:
        for target in sorted(graph[module] & members):
            details = imports.get_import_details(importer=module, imported=target)
            where = ", ".join(f"l.{d['line_number']}" for d in details)
            lines.append(f"    {module} -> {target} ({where})")
    return lines


def check(
    graph: Mapping[str, set[str]], imports: Any, known: Iterable[frozenset[str]]
) -> tuple[list[str], int]:
    """(the report's lines, how many findings): new cycles, and known entries stale."""
    allowed = set(known)
    components = strongly_connected(graph)
    lines: list[str] = []
    failures = 0
    for component in components:
        if frozenset(component) in allowed:
            lines.append(f"known (KNOWN_CYCLES): {', '.join(component)}")
            continue
        failures += 1
        lines.extend(describe(component, graph, imports))
    present = {frozenset(c) for c in components}
    for entry in sorted(allowed - present, key=sorted):
        failures += 1
        lines.append(f"KNOWN_CYCLES entry is no cycle now, remove it: {', '.join(sorted(entry))}")
    return lines, failures


def main(argv: list[str]) -> int:
    package = argv[0] if argv else "deepsearch"
    graph, imports = build(package)
    lines, failures = check(graph, imports, KNOWN_CYCLES if package == "deepsearch" else ())
    for line in lines:
        print(line)
    if failures:
        print(f"import_cycles: {failures} finding(s) in {package} ({len(graph)} modules)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
