"""Size guard for `make lint`: no module over 400 lines, no function over 60 lines.

A module past ~400 lines or a function past ~60 is doing two jobs (docs/architecture.md, "Layout").
Counts physical lines: a module's whole file, a function from its `def` line to its
last line (decorators and docstring included). Exits 1 and lists every finding.

    python tools/size_guard.py [paths...]   # default: deepsearch bench tools
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
DEFAULT_ROOTS = ("deepsearch", "bench", "tools")


def python_files(roots: list[str]) -> Iterator[Path]:
    for root in roots:
        path = Path(root)
        if path.is_file():
            yield path
        else:
            yield from sorted(p for p in path.rglob("*.py") if ".venv" not in p.parts)


def findings(path: Path) -> Iterator[str]:
    source = path.read_text(encoding="utf-8")
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines > MAX_MODULE_LINES:
        yield f"{path}: module has {lines} lines (max {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield (
                    f"{path}:{node.lineno}: function {node.name} has {length} lines "
                    f"(max {MAX_FUNCTION_LINES})"
                )


def main(argv: list[str]) -> int:
    found = [line for path in python_files(argv or list(DEFAULT_ROOTS)) for line in findings(path)]
    for line in found:
        print(line)
    if found:
        print(f"size guard: {len(found)} finding(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
