"""tools/import_cycles.py, the cycle check of `make lint`: it finds every cycle (two
modules, around a loop, type-only, lazy), lists the imports to break, lets through
exactly the known ones and fails on a known entry that is no cycle any more."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_cycles", ROOT / "tools" / "import_cycles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cycles = _tool()


def test_components_of_a_graph() -> None:
    graph = {
        "a": {"b"},
        "b": {"c", "outside"},  # a module outside the graph is ignored
        "c": {"a"},
        "d": {"e"},
        "e": {"d", "f"},
        "f": set(),
        "g": {"g"},  # a module naming itself is no cycle between modules
    }
    assert cycles.strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]
    assert cycles.strongly_connected({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_a_long_chain_needs_no_recursion() -> None:
    n = 5000  # deeper than the default recursion limit
    graph = {f"m{i}": {f"m{i + 1}"} for i in range(n)} | {f"m{n}": {"m0"}}
    (component,) = cycles.strongly_connected(graph)
    assert len(component) == n + 1


def _package(tmp_path: Path, name: str, files: dict[str, str]) -> str:
    root = tmp_path / name
    root.mkdir()
    for path, text in files.items():
        (root / path).write_text(text, encoding="utf-8")
    return name


@pytest.fixture
def cyclic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package with a type-only cycle (a, b), a lazy one around three modules
    (c, d, e), a package face imported back (__init__, f) and a clean module (g)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    name = _package(
        tmp_path,
        "cyclic_pkg",
        {
            "__init__.py": "from cyclic_pkg.f import VALUE\n",
            "f.py": "VALUE = 1\n\ndef version():\n    from cyclic_pkg import VALUE\n    return VALUE\n",
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic_pkg.b import B\n",
            "b.py": "from cyclic_pkg.a import *\nB = 1\n",
            "c.py": "import cyclic_pkg.d\n",
            "d.py": "def later():\n    from cyclic_pkg import e\n",
            "e.py": "from cyclic_pkg.c import *\nimport cyclic_pkg.g\n",
            "g.py": "X = 1\n",
        },
    )
    yield name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def test_every_cycle_of_a_package_is_reported_with_its_imports(cyclic: str) -> None:
    graph, imports = cycles.build(cyclic)
    lines, failures = cycles.check(graph, imports, ())
    assert failures == 3
    assert "cycle of 2 modules: cyclic_pkg, cyclic_pkg.f" in lines
    assert "cycle of 2 modules: cyclic_pkg.a, cyclic_pkg.b" in lines
    assert "cycle of 3 modules: cyclic_pkg.c, cyclic_pkg.d, cyclic_pkg.e" in lines
    assert "    cyclic_pkg.a -> cyclic_pkg.b (l.3)" in lines  # under TYPE_CHECKING
    assert "    cyclic_pkg.d -> cyclic_pkg.e (l.2)" in lines  # inside a function
    assert not any("cyclic_pkg.g" in line for line in lines)


def test_known_cycles_pass_exactly_and_stale_entries_fail(cyclic: str) -> None:
    graph, imports = cycles.build(cyclic)
    known = [
        frozenset({"cyclic_pkg", "cyclic_pkg.f"}),
        frozenset({"cyclic_pkg.a", "cyclic_pkg.b"}),
        frozenset({"cyclic_pkg.c", "cyclic_pkg.d", "cyclic_pkg.e"}),
    ]
    lines, failures = cycles.check(graph, imports, known)
    assert failures == 0 and all(line.startswith("known (KNOWN_CYCLES)") for line in lines)
    # A known cycle that grew is a new one; an entry matching nothing must be removed.
    partial = [frozenset({"cyclic_pkg.c", "cyclic_pkg.d"}), *known[:2]]
    lines, failures = cycles.check(graph, imports, partial)
    assert failures == 2
    assert "cycle of 3 modules: cyclic_pkg.c, cyclic_pkg.d, cyclic_pkg.e" in lines
    assert any(line.startswith("KNOWN_CYCLES entry is no cycle now") for line in lines)


def test_main_exits_1_on_a_cycle_and_0_without(
    cyclic: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cycles.main([cyclic]) == 1
    assert "import_cycles: 3 finding(s) in cyclic_pkg (8 modules)" in capsys.readouterr().out
    clean = _package(
        tmp_path, "clean_pkg", {"__init__.py": "", "a.py": "import clean_pkg.b\n", "b.py": ""}
    )
    assert cycles.main([clean]) == 0
    assert capsys.readouterr().out == ""
