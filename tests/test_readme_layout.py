"""README's Layout section describes the packages as they are: every package under
deepsearch/ (and agent/'s sub-packages) is listed, and nothing listed is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1]
    return section.split("```", 2)[1]


def _packages(base: Path) -> set[str]:
    return {p.parent.name for p in base.glob("*/__init__.py")}


def test_every_package_is_in_the_layout_and_every_listed_folder_exists() -> None:
    block = _layout_block()
    listed_top = set(re.findall(r"^  (\w+)/", block, flags=re.M))
    listed_agent = set(re.findall(r"^    (\w+)/", block, flags=re.M))
    assert listed_top == _packages(ROOT / "deepsearch")
    assert listed_agent == _packages(ROOT / "deepsearch" / "agent")


def test_every_listed_module_exists() -> None:
    block = _layout_block()
    for name in re.findall(r"^  (\w+\.py)", block, flags=re.M):
        assert (ROOT / "deepsearch" / name).is_file(), name
    for line in re.findall(r"^    ([\w., ]+\.py)\b", block, flags=re.M):
        for name in re.findall(r"\w+\.py", line):
            assert (ROOT / "deepsearch" / "agent" / name).is_file(), name


def test_every_module_of_the_package_and_of_agent_is_described() -> None:
    block = _layout_block()
    top = set(re.findall(r"^  (\w+\.py)", block, flags=re.M))
    agent = {n for line in re.findall(r"^    ([\w., ]+\.py)\b", block, flags=re.M)
             for n in re.findall(r"\w+\.py", line)}  # fmt: skip
    skip = {"__init__.py", "__main__.py"}
    assert {p.name for p in (ROOT / "deepsearch").glob("*.py")} - skip == top
    assert {p.name for p in (ROOT / "deepsearch" / "agent").glob("*.py")} - skip == agent
