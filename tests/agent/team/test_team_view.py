"""Team mode is visible: the live view marks a child's steps with its id (and a child's
end is not the run's), and --json carries `team` and `steps[].agent`."""

from __future__ import annotations

import io
import json

from rich.console import Console

from bench import team_world
from bench.team_world import QUESTION, World
from deepsearch.agent.events import Notice, PhaseChanged, StepFinished, StepStarted
from deepsearch.agent.loop import ResearchRun
from deepsearch.frontend.live import LiveView
from deepsearch.frontend.output import safe_result
from tests.agent.helpers import make_deps, options
from tests.fakes.clock import FakeClock


def view() -> tuple[LiveView, io.StringIO, list[str]]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    live = LiveView(console=console, clock=FakeClock())
    stops: list[str] = []
    live._spin = lambda: None  # type: ignore[method-assign]  # no spinner thread in tests
    live.stop = lambda: stops.append("stop")  # type: ignore[method-assign]
    return live, buffer, stops


def step(agent: str, tokens_used: int, budget: int) -> StepFinished:
    return StepFinished(
        step=2, action="visit", think="", detail="read 1: https://a.example/x",
        tokens_used=tokens_used, budget=budget, elapsed_s=1.0, agent=agent,
    )  # fmt: skip


def test_a_childs_steps_and_notices_lead_with_its_id() -> None:
    live, buffer, _ = view()
    live(step("main", 1_000, 500_000))
    live(step("2", 300, 40_000))
    live(Notice(text="stopping research: step limit", agent="3"))
    main, child, notice = buffer.getvalue().splitlines()
    assert main.startswith("  2 visit ")
    assert child.startswith("[2]   2 visit ")
    assert "[3] stopping research" in notice
    live(StepStarted(step=4, question="q", allowed=["search"], agent="1"))
    assert live.status_text().startswith("[1] step 4")


def test_a_child_neither_resets_the_runs_token_figures_nor_ends_the_view() -> None:
    live, buffer, stops = view()
    live(step("main", 12_000, 500_000))
    shown = live.status_text()
    live(step("1", 300, 40_000))
    assert live.status_text() == shown  # still the run's 12k of 500k
    live(PhaseChanged(phase="beast", reason="85% of the budget", agent="1"))
    live(PhaseChanged(phase="done", agent="1"))
    assert stops == []
    assert "[1] Beast Mode" in buffer.getvalue()
    live(PhaseChanged(phase="done"))
    assert stops == ["stop"]


async def test_json_has_the_team_and_each_steps_agent() -> None:
    search, reader = team_world.web()
    deps, _ = make_deps(World(), budget=300_000, search=search, reader=reader)
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    data = json.loads(safe_result(result).model_dump_json())
    assert data["schema_version"] == "2"  # additive fields: no bump (see the README)
    assert [set(m) for m in data["team"]] == [
        {"id", "question", "status", "answer", "tokens", "budget_share", "error"}
    ] * 3
    assert [m["id"] for m in data["team"]] == ["1", "2", "3"]
    agents = [s["agent"] for s in data["steps"]]
    assert agents[0] == "main" and agents[-1] == "main"
    assert agents.index("1") < agents.index("2") < agents.index("3")
