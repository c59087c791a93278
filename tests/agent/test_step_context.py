"""The narrow step context and the loop's hooks (issue 19): handlers and hooks get a
StepContext, never the run; a hook sees each outcome and may change it; team mode
builds its children with the spawner it was given; the outcome that ends research
is a value; the view never breaks the run; the step modules never import the loop."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import team_world
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import AgentEvent, Notice, safe_emit
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.outcomes import Accepted, Continue, Outcome, Stop
from deepsearch.agent.result import ResearchResult, UsageReport, result_so_far
from deepsearch.agent.schema import allowed_actions
from deepsearch.agent.state import AgentState, EvalMetric
from deepsearch.agent.step import LoopHook, StepContext
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.agent.team.mode import TeamMode
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.tracker import TokenTracker
from tests.agent.helpers import STRICT_PASS, make_deps, options, scripted, step_context
from tests.fakes.scripted_llm import ToolQueues, scripted_client

Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look it up", "action": {"search": {"queries": ["eiffel tower completed"]}}}
VISIT = {"think": "read", "action": {"visit": {"url_indices": [1]}}}
ANSWER = {"think": "done", "action": {"answer": {"answer": "It was completed in 1889."}}}
NOW = datetime(2026, 12, 1, tzinfo=UTC)
AGENT = Path(__file__).resolve().parents[2] / "deepsearch" / "agent"


class Recorder(LoopHook):
    """Records what the loop hands it; `stop` turns the first step's outcome into
    Stop(stop); `reopen` is what its after_step says."""

    def __init__(self, *, stop: str = "", reopen: bool = False) -> None:
        self.outcomes: list[Outcome] = []
        self.after_steps: list[str] = []
        self.contexts: list[StepContext] = []
        self.stop, self.reopen = stop, reopen

    async def after_outcome(self, ctx: StepContext, outcome: Outcome) -> Outcome:
        self.outcomes.append(outcome)
        self.contexts.append(ctx)
        if self.stop and ctx.state.step == 1:
            return Stop(self.stop)
        return outcome

    async def after_step(self, ctx: StepContext) -> bool:
        self.after_steps.append(ctx.state.steps[-1].action)
        return self.reopen


async def test_a_hook_sees_each_outcome_and_runs_after_each_step_that_went_on() -> None:
    script = scripted([SEARCH, VISIT, ANSWER], checks=1)
    deps, _ = make_deps(script)
    run = ResearchRun(Q, deps, options())
    hook = Recorder()
    run.hooks = (hook,)
    result = await run.run()
    script.assert_complete()
    assert result.status == "answered"
    assert [type(o) for o in hook.outcomes] == [Continue, Continue, Accepted]
    assert hook.after_steps == ["search", "visit"]  # not after the accepted answer
    ctx = hook.contexts[0]
    assert ctx.state is run.state and ctx.prefetch is run.prefetch
    assert ctx.gate.needs_freshness is False  # a read-only view, not the gate
    assert not hasattr(ctx.gate, "after")


async def test_a_stop_a_hook_returns_ends_research_as_a_value() -> None:
    deps, _ = make_deps(scripted([SEARCH]))
    run = ResearchRun(Q, deps, options())
    run.hooks = (Recorder(stop="stopped by the hook after search"),)
    ended = await run._research_phase()
    assert ended == Stop("stopped by the hook after search")
    assert run.stop_reason == "stopped by the hook after search"
    assert run.research_ended_at == 1


async def test_a_limit_ends_research_with_a_stop_value() -> None:
    deps, _ = make_deps(scripted([SEARCH]))
    run = ResearchRun(Q, deps, options(max_steps=1))
    assert await run._research_phase() == Stop("step limit of 1 reached")
    assert (run.stop_reason, run.research_ended_at) == ("step limit of 1 reached", 1)


def _offered(provider: Any) -> list[set[str]]:
    return [set(allowed_actions(c.json_schema or {})) for c in provider.calls_for("agent")]


async def test_a_hook_whose_step_brought_answers_reopens_the_gate() -> None:
    for reopen in (False, True):
        deps, provider = make_deps(scripted([SEARCH, VISIT]))
        run = ResearchRun(Q, deps, options(max_steps=2))
        run.hooks = (Recorder(reopen=reopen),)
        await run._research_phase()
        # A search bars answering next ("snippets are no evidence") unless a hook's
        # step brought accepted answers (team mode's children).
        assert ("answer" in _offered(provider)[1]) is reopen


class FakeChild:
    """A child run that answers its question at once."""

    def __init__(self, question: str, deps: AgentDeps, options: RunOptions) -> None:
        self.state, self.deps, self.options = AgentState.start(question), deps, options
        self.stop_reason = ""

    async def run(self) -> ResearchResult:
        usage = UsageReport.from_tracker(TokenTracker(1000))
        return result_so_far(self.state.question, "answered", usage, answer="Answered.")

    def snapshot(self, status: Any, *, error: str | None = None) -> ResearchResult:
        usage = UsageReport.from_tracker(TokenTracker(1000))
        return result_so_far(self.state.question, status, usage, error=error)


async def test_team_mode_builds_its_children_with_the_spawner_it_was_given() -> None:
    search, reader = team_world.web()
    deps, _ = make_deps(team_world.World(), budget=300_000, search=search, reader=reader)
    spawned: list[FakeChild] = []

    def spawn(question: str, child_deps: AgentDeps, opts: RunOptions) -> FakeChild:
        spawned.append(FakeChild(question, child_deps, opts))
        return spawned[-1]

    team = TeamMode(3, spawn=spawn, time_left=lambda: 100.0)
    state = AgentState.start(team_world.QUESTION)
    state.begin_step()
    state.record_step("search", "", "")
    ctx = step_context(state, deps, options(team_size=3, timeout_s=200))
    assert await team.after_step(ctx) is True  # accepted sub-answers: the gate reopens
    assert [c.state.question for c in spawned] == [
        f"What was the population of {p.capitalize()} in 2020?"
        for p in team_world.parts_in(team_world.QUESTION)
    ]
    assert all(c.options.team_size == 1 and not c.options.finalize for c in spawned)
    assert all(c.options.timeout_s == 70.0 for c in spawned)  # 70% of the time left
    assert all(c.deps.llm.tracker is not deps.llm.tracker for c in spawned)  # own shares
    pinned = [k for k in state.knowledge if k.pinned and k.answer == "Answered."]
    assert len(pinned) == 3
    assert await team.after_step(ctx) is False  # it plans once


async def test_the_strict_check_shows_only_the_knowledge_its_allowance_holds() -> None:
    client, provider = scripted_client(ToolQueues({"evaluator": [STRICT_PASS] * 2}))
    old = KnowledgeItem(question="old", answer="Gustave Eiffel " + "word " * 300, type="qa")
    new = KnowledgeItem(question="new", answer="completed in 1889", type="qa")
    strict = [EvalMetric(type="strict", attempts_left=1)]
    for allowance, shown in ((20_000, True), (40, False)):
        await Evaluator(client).evaluate(
            Q, "1889", strict, [old, new], now=NOW, knowledge_tokens=allowance
        )
        system = provider.calls[-1].system
        assert "completed in 1889" in system
        assert ("Gustave Eiffel" in system) is shown


async def test_the_answer_handler_passes_the_evaluators_own_allowance() -> None:
    from deepsearch.agent.actions.answer import handle_answer
    from deepsearch.agent.schema import AnswerPayload

    # budget // 12 = 4,000 tokens of knowledge for the evaluator: the long old item
    # no longer fits (the evaluator's default of 20,000 would show it).
    deps, provider = make_deps(ToolQueues({"evaluator": [STRICT_PASS]}), budget=48_000)
    state = AgentState.start(Q)
    state.step, state.metrics = 2, [EvalMetric(type="strict", attempts_left=1)]
    state.add_knowledge(KnowledgeItem(question="old", answer="Gustave " * 6000, type="qa"))
    state.add_knowledge(KnowledgeItem(question="new", answer="completed in 1889", type="qa"))
    outcome = await handle_answer(
        AnswerPayload(answer="It was completed in 1889."), step_context(state, deps)
    )
    assert isinstance(outcome, Accepted)
    system = provider.calls_for("evaluator")[-1].system
    assert "completed in 1889" in system and "Gustave" not in system


async def test_a_view_that_raises_never_breaks_the_run() -> None:
    def broken(event: AgentEvent) -> None:
        raise RuntimeError("the terminal is gone")

    safe_emit(broken, Notice(text="x"))  # dropped, not raised
    script = scripted([SEARCH, VISIT, ANSWER], checks=1)
    deps, _ = make_deps(script)
    deps.emit = broken
    result = await ResearchRun(Q, deps, options()).run()
    assert result.status == "answered"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_handlers_hooks_team_mode_and_judging_never_import_the_loop() -> None:
    below = [AGENT / "dispatch.py", AGENT / "step.py", AGENT / "hooks.py"]
    for folder in ("actions", "team", "judging"):
        below += sorted((AGENT / folder).glob("*.py"))
    assert len(below) > 15
    for path in below:
        assert "deepsearch.agent.loop" not in _imports(path), path.name
    # judging is a toolkit: it never imports the loop's steps either.
    for path in (AGENT / "judging").glob("*.py"):
        imported = _imports(path)
        assert not any(m.startswith("deepsearch.agent.actions") for m in imported), path.name
        assert "deepsearch.agent.step" not in imported, path.name
