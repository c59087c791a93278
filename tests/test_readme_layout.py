"""The README is read in five minutes and sets a provider before the first run; the
architecture page's Layout section describes the packages as they are: every package
under deepsearch/ (and agent/'s sub-packages) is listed, and nothing listed is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_LINES = 300
# What sets an LLM provider in a shell line (a key, a local server, the provider flag).
PROVIDER_STEP = re.compile(
    r"\b(GEMINI_API_KEY|OPENAI_API_KEY|OPENAI_BASE_URL|DEEPSEARCH_LLM_PROVIDER)=|--llm-provider"
)


def _layout_block() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layout", 1)[1]
    return section.split("```", 2)[1]


def _packages(base: Path) -> set[str]:
    return {p.parent.name for p in base.glob("*/__init__.py")}


def _shell_lines(markdown: str) -> list[str]:
    """The lines of the README's ```sh blocks, in order."""
    blocks = re.findall(r"```sh\n(.*?)```", markdown, flags=re.S)
    return [line for block in blocks for line in block.splitlines()]


def test_the_readme_fits_in_five_minutes() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_the_readme_sets_a_provider_before_its_first_research_run() -> None:
    lines = _shell_lines(README.read_text(encoding="utf-8"))
    first_run = next(i for i, line in enumerate(lines) if re.search(r"deepsearch \"", line))
    assert any(PROVIDER_STEP.search(line) for line in lines[:first_run]), lines[: first_run + 1]


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
