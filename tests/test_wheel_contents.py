"""The wheel ships what a run uses, not the test worlds: the files hatchling would pack
(its own walk of pyproject's `[tool.hatch.build.targets.wheel]`, the one `pip wheel`
makes, without building an archive) hold no test module, no test double and nothing
that imports `tests`, and do hold the code, prompts and configuration a run reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A module named for tests: testing.py, fake_x.py, test_x.py, conftest.py, or
# anything under a tests/ or fakes/ folder.
TEST_MODULE = re.compile(
    r"(^|/)(tests?|testing|fakes?)(/|\.py$)|(^|/)(test|fake)_[^/]*\.py$|conftest\.py$"
)
IMPORTS_TESTS = re.compile(r"^\s*(from|import)\s+tests\b", re.MULTILINE)
DOUBLE = re.compile(r"^class\s+((?:Fake|Scripted|Stub|Mock)\w*)", re.MULTILINE)
# Test doubles in the package: none (they live in tests/fakes/; the test names any).
KNOWN_DOUBLES: set[str] = set()


def wheel_files() -> list[str]:
    from hatchling.builders.wheel import WheelBuilder  # ~14 ms: not in every worker's collection

    builder = WheelBuilder(str(ROOT))
    return sorted(f.distribution_path for f in builder.recurse_included_files())


def test_the_wheel_holds_the_package_its_prompts_and_its_config() -> None:
    files = wheel_files()
    assert "deepsearch/cli.py" in files and "deepsearch/agent/loop.py" in files
    assert "deepsearch/_prompts/agent.md" in files and "deepsearch/_data/config.json" in files
    assert "deepsearch/llm/data/prices.json" in files  # the price table (docs/cost.md)
    assert {f.split("/")[0] for f in files} == {"deepsearch"}, "one top-level package"


def test_the_wheel_ships_no_test_world() -> None:
    files = wheel_files()
    assert [f for f in files if TEST_MODULE.search(f)] == []
    modules = {f: (ROOT / f).read_text("utf-8") for f in files if f.endswith(".py")}
    assert [f for f, text in modules.items() if IMPORTS_TESTS.search(text)] == []
    doubles = {f"{f}: {name}" for f, text in modules.items() for name in DOUBLE.findall(text)}
    assert doubles == KNOWN_DOUBLES
