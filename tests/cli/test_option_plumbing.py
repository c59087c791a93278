"""Command-line options reach the research loop (in-process, nothing is researched)."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.result import ResearchResult


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[RunOptions]:
    """Every RunOptions a ResearchRun is built with; the run itself returns at once."""
    seen: list[RunOptions] = []
    original = ResearchRun.__init__

    def init(self: ResearchRun, question: str, deps: Any, options: RunOptions) -> None:
        seen.append(options)
        original(self, question, deps, options)

    async def run(self: ResearchRun) -> ResearchResult:
        return self.snapshot("answered")

    monkeypatch.setattr(ResearchRun, "__init__", init)
    monkeypatch.setattr(ResearchRun, "run", run)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-plumbing-test-0000000000")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DEEPSEARCH_CACHE_DIR", str(tmp_path / "cache"))
    return seen


def run_cli(*args: str) -> int:
    from deepsearch.cli import main

    with pytest.raises(SystemExit) as done:
        main(["What is plumbing?", "--llm-provider", "openai", "--no-cache", "--quiet", *args])
    return int(done.value.code or 0)


def test_timeout_reaches_the_run_options(captured: list[RunOptions]) -> None:
    assert run_cli("--timeout", "42", "--max-steps", "7", "--json") == 0
    assert len(captured) == 1
    assert captured[0].timeout_s == 42
    assert captured[0].max_steps == 7


def test_no_timeout_means_no_wall_clock_limit(captured: list[RunOptions]) -> None:
    assert run_cli("--json") == 0
    assert captured[0].timeout_s is None
