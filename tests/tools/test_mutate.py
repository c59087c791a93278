"""tools/mutate.py, `make mutate` (the mutation run itself is not part of `make test`):
the modules and tests it picks, how it reads mutmut's files and reports survivors less
the equivalent ones, and mutation.toml kept honest: every listed equivalent names a
module, a function and a line that still exist, with a reason."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate_tool", ROOT / "tools" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_tool"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_listed_equivalent_still_names_a_line_of_its_module() -> None:
    data = tomllib.loads((ROOT / "mutation.toml").read_text("utf-8"))
    for entry in data["equivalent"]:
        assert set(entry) - {"near"} == {"module", "function", "before", "after", "why"}, entry
        source = (ROOT / entry["module"]).read_text("utf-8")
        assert entry["before"] in source, entry  # the code changed: review the entry
        assert entry["function"].split(".")[-1] in source, entry
        assert entry["before"] != entry["after"] and len(entry["why"]) > 20, entry
    for paths in data["tests"].values():
        assert all((ROOT / p).exists() for p in paths), paths


def test_modules_and_their_tests() -> None:
    tool = _tool()
    table = {"deepsearch/session.py": ["tests/test_session.py"]}
    assert tool.tests_for("deepsearch/llm/streaming.py", table) == ["tests/llm"]
    assert tool.tests_for("deepsearch/session.py", table) == ["tests/test_session.py"]
    assert tool.tests_for("deepsearch/library.py", table) == ["tests/test_library.py"]
    assert tool.tests_for("deepsearch/version.py", table) == ["tests"]
    files = tool.expand(["deepsearch/mcp_server", "deepsearch.llm.streaming"])
    assert files == [
        "deepsearch/llm/streaming.py",
        "deepsearch/mcp_server/__init__.py",
        "deepsearch/mcp_server/app.py",
        "deepsearch/mcp_server/call_log.py",
        "deepsearch/mcp_server/task_store.py",
        "deepsearch/mcp_server/tasks.py",
        "deepsearch/mcp_server/tool.py",
    ]
    with pytest.raises(SystemExit, match="no module or folder"):
        tool.expand(["deepsearch/nothing_here"])


MUTATED = '''
def x_f__mutmut_orig(a, b=1):
    """Doc."""
    return a + b


def x_f__mutmut_1(a, b=1):
    """Doc."""
    return a - b


def x_f__mutmut_2(a, b=2):
    """Doc."""
    return a + b


def x_f__mutmut_3(a, b=1):
    """Doc."""
    return a + b + 0
'''


def test_survivors_are_reported_with_their_diff_less_the_equivalent_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _tool()
    module = tmp_path / "mutants" / "deepsearch" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text(MUTATED, "utf-8")
    codes = {"deepsearch.m.x_f__mutmut_1": 1, "deepsearch.m.x_f__mutmut_2": 0}
    codes["deepsearch.m.x_f__mutmut_3"] = 0
    (module.parent / "m.py.meta").write_text(json.dumps({"exit_code_by_key": codes}), "utf-8")
    mutants = tool.read_mutants(tmp_path, ["deepsearch/m.py"])
    assert [(m.status, m.removed, m.added) for m in mutants] == [
        ("killed", ("return a + b",), ("return a - b",)),
        ("survived", ("def f(a, b=1):",), ("def f(a, b=2):",)),
        ("survived", ("return a + b",), ("return a + b + 0",)),
    ]
    equivalent = {
        "module": "deepsearch/m.py",
        "function": "f",
        "before": "return a + b",
        "after": "return a + b + 0",
        "why": "adding zero",
    }
    stale = {**equivalent, "after": "return b + a"}
    assert tool.report(mutants, [equivalent, stale]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^deepsearch/m.py +1 / 2 +50.0%  \(1\)$", out, re.M), out
    assert "survived: f in deepsearch/m.py (deepsearch.m.x_f__mutmut_2)" in out
    assert "-def f(a, b=1):\n+def f(a, b=2):" in out
    assert "mutmut_3" not in out  # listed as equivalent
    assert "stale [[equivalent]]" in out and "return b + a" in out
    assert tool.report([mutants[0]], []) == 0
