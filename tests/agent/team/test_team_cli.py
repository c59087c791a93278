"""`deepsearch --team-size 3 "compare …" --json` end to end in process: the real
command, settings and runtime options, with the scripted multi-part world in place of
the providers (build_deps patched): three children within their shares, and an answer
cited from their reading."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import team_world
from bench.team_world import FIGURES, QUESTION, page_url, parts_in
from deepsearch.agent.deps import AgentDeps
from deepsearch.config import Settings
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.scripted_llm import ScriptedProvider


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[ScriptedProvider]:
    providers: list[ScriptedProvider] = []

    async def build_deps(settings: Settings, *, emit: Any, **_: Any) -> AgentDeps:
        provider = ScriptedProvider(team_world.World())
        providers.append(provider)
        llm = LLMClient(
            provider=provider,
            provider_name="openai",
            settings=settings,
            tracker=TokenTracker(settings.agent.token_budget),
        )
        search, reader = team_world.web()
        return AgentDeps(llm=llm, search=search, reader=reader, emit=emit)

    monkeypatch.setattr("deepsearch.runtime.build_deps", build_deps)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-team-cli-test-0000000000")
    monkeypatch.setenv("HOME", str(tmp_path))
    return providers


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    from deepsearch.cli import main

    with pytest.raises(SystemExit) as done:
        main([QUESTION, "--llm-provider", "openai", "--no-cache", "--quiet", "--json", *args])
    return int(done.value.code or 0), json.loads(capsys.readouterr().out)


def test_team_size_three_answers_from_the_childrens_reading(
    world: list[ScriptedProvider], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(capsys, "--team-size", "3")
    assert code == 0 and out["status"] == "answered"
    assert [m["status"] for m in out["team"]] == ["answered"] * 3
    assert sum(m["budget_share"] for m in out["team"]) <= out["usage"]["budget"]
    assert all(0 < m["tokens"] <= m["budget_share"] for m in out["team"])
    assert out["usage"]["total_tokens"] <= out["usage"]["budget"]
    cited = {ref["url"] for ref in out["references"]}
    assert cited == {page_url(p) for p in parts_in(QUESTION)}
    main_visits = [s for s in out["steps"] if s["agent"] == "main" and s["action"] == "visit"]
    assert main_visits == []  # every cited page was read by a child
    assert all(FIGURES[p] in out["answer"] for p in parts_in(QUESTION))


def test_effort_high_splits_in_two_and_an_explicit_team_size_wins(
    world: list[ScriptedProvider], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = run_cli(capsys, "--effort", "high")
    assert len(out["team"]) == 2 and out["usage"]["budget"] == 1_000_000
    _, out = run_cli(capsys, "--effort", "high", "--team-size", "1")
    assert out["team"] == []
    assert world[-1].calls_for("research_planner") == []


def test_a_team_size_out_of_range_is_one_line_and_exit_2(
    world: list[ScriptedProvider], capsys: pytest.CaptureFixture[str]
) -> None:
    from deepsearch.cli import main

    with pytest.raises(SystemExit) as done:
        main([QUESTION, "--llm-provider", "openai", "--team-size", "9"])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--team-size" in err[0] and "Traceback" not in err[0]
