"""Team mode: the planner's split, children within their token shares, a failing child,
a declined split, cancellation, and the children's reading cited by the parent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench import team_world
from bench.team_world import FIGURES, QUESTION, World, page_url, parts_in
from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.events import PhaseChanged, StepFinished, StepStarted
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.team.budget import MIN_CHILD_BUDGET, ShareTracker, budget_shares
from deepsearch.llm.base import Usage
from deepsearch.llm.tracker import TokenTracker
from tests.agent.helpers import InFlightProvider, counting_client, make_deps, options
from tests.fakes.clock import FakeClock

PARTS_FIGURES = [FIGURES[p] for p in parts_in(QUESTION)]
BETA = "What was the population of Beta in 2020?"


def world_deps(
    world: World, *, budget: int = 300_000, events: list[Any] | None = None
) -> tuple[AgentDeps, Any]:
    search, reader = team_world.web()
    return make_deps(world, budget=budget, search=search, reader=reader, events=events)


async def test_a_split_into_three_children_stays_within_their_shares() -> None:
    events: list[Any] = []
    deps, provider = world_deps(World(), events=events)
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.status == "answered"
    assert result.team_not_formed is None
    assert [m.id for m in result.team] == ["1", "2", "3"]
    assert all(m.status == "answered" for m in result.team)
    shares = [m.budget_share for m in result.team]
    assert sum(shares) <= result.usage.budget and min(shares) >= MIN_CHILD_BUDGET
    for member in result.team:
        assert 0 < member.tokens <= member.budget_share
    # The parent's total holds the children's spending and never exceeds the budget.
    assert sum(m.tokens for m in result.team) < result.usage.total_tokens <= result.usage.budget
    assert {s.agent for s in result.steps} == {"main", "1", "2", "3"}
    assert [s.agent for s in result.steps][0] == "main"  # the search the planner saw
    # With the sub-answers in its knowledge the parent may answer at once.
    assert [s.action for s in result.steps if s.agent == "main"] == ["search", "answer"]
    for figure in PARTS_FIGURES:
        assert figure in result.answer
    # Each child researched its own sub-problem (not the parent's question).
    questions = {c.messages[0].content for c in provider.calls_for("agent")}
    assert {m.question for m in result.team} <= questions
    assert len(provider.calls_for("research_planner")) == 1
    finalizing = [
        e.agent for e in events if isinstance(e, PhaseChanged) and e.phase == "finalizing"
    ]
    assert finalizing == ["main"]  # children never finalize: the parent does, once


async def test_children_run_concurrently() -> None:
    # A child's step waits until three children's steps are in flight: run one by one,
    # the first would wait out its hold alone and the peak would be one.
    def a_childs_step(request: Any) -> bool:
        return request.tool == "agent" and request.messages[0].content != QUESTION

    client, provider = counting_client(World(), budget=300_000, together=3, gated=a_childs_step)
    search, reader = team_world.web()
    deps = AgentDeps(llm=client, search=search, reader=reader, clock=FakeClock())
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert len(result.team) == 3
    # The parent's own steps are sequential: overlapping agent calls are children's.
    assert provider.peak["agent"] == 3


async def test_a_failing_child_never_fails_the_parent() -> None:
    deps, _ = world_deps(World(fail_questions={BETA}))
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.status == "answered"
    by_question = {m.question: m for m in result.team}
    assert by_question[BETA].status == "failed"
    assert by_question[BETA].error  # says why
    assert sum(m.status == "answered" for m in result.team) == 2
    assert [m.error for m in result.team if m.status == "answered"] == [None, None]
    assert FIGURES["beta"] in result.answer  # the parent researched the missing part itself


async def test_a_crashing_child_is_reported_failed_and_its_siblings_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_run = ResearchRun.run

    async def run(self: ResearchRun) -> Any:
        if self.state.question == BETA:
            raise RuntimeError("a bug in the child")
        return await real_run(self)

    monkeypatch.setattr(ResearchRun, "run", run)
    deps, _ = world_deps(World())
    result = await real_run(ResearchRun(QUESTION, deps, options(team_size=3)))
    assert result.status == "answered"
    statuses = {m.question: m.status for m in result.team}
    assert statuses.pop(BETA) == "failed"
    assert set(statuses.values()) == {"answered"}
    errors = {m.question: m.error for m in result.team}
    assert "a bug in the child" in (errors[BETA] or "")


async def test_a_declined_split_runs_no_child() -> None:
    deps, provider = world_deps(World(planner=team_world.declining_planner))
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.status == "answered"
    assert result.team == []
    # --json says why (issue 22, item 9): declined, with the planner's own reason
    assert result.team_not_formed == "declined: better researched as one"
    assert {s.agent for s in result.steps} == {"main"}
    assert len(provider.calls_for("research_planner")) == 1
    questions = {c.messages[0].content for c in provider.calls_for("agent")}
    assert questions == {QUESTION}


async def test_team_size_one_never_calls_the_planner() -> None:
    deps, provider = world_deps(World())
    result = await ResearchRun(QUESTION, deps, options()).run()
    assert result.status == "answered" and result.team == []
    assert result.team_not_formed == "team size 1"
    assert provider.calls_for("research_planner") == []


async def test_a_budget_too_small_for_two_shares_is_not_split() -> None:
    deps, provider = world_deps(World(), budget=20_000)
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.team == [] and result.team_not_formed == "budget too small to split"
    assert len(provider.calls_for("research_planner")) == 1
    assert result.usage.total_tokens <= 20_000


async def test_the_parent_cites_pages_only_a_child_read() -> None:
    deps, _ = world_deps(World())
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    cited = {ref.url for ref in result.references}
    assert cited & {page_url(p) for p in FIGURES}
    parent_read = {s.detail for s in result.steps if s.agent == "main" and s.action == "visit"}
    for url in cited:
        assert url in result.read_urls
        assert not any(url in d for d in parent_read)  # only a child read it


async def test_cancelling_the_parent_cancels_every_child_and_keeps_the_partial_result() -> None:
    events: list[Any] = []
    tasks: list[asyncio.Task[Any]] = []

    def cancel_once_every_child_is_at_work(event: Any) -> None:
        # Cancel from inside the event that completes the condition, in the same tick:
        # polling on wall time let fast children finish first under a loaded machine.
        events.append(event)
        started = {e.agent for e in events if isinstance(e, StepStarted)}
        read = [e for e in events if isinstance(e, StepFinished) and e.action == "visit"]
        if {"1", "2", "3"} <= started and any(e.agent != "main" for e in read):
            if tasks and not tasks[0].cancelling():
                tasks[0].cancel()

    client, _ = counting_client(World(), budget=300_000)
    search, reader = team_world.web()
    deps = AgentDeps(
        llm=client,
        search=search,
        reader=reader,
        clock=FakeClock(),
        emit=cancel_once_every_child_is_at_work,
    )
    run = ResearchRun(QUESTION, deps, options(team_size=3))
    task = asyncio.create_task(run.run())
    tasks.append(task)
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert task.cancelled(), "the run finished before every child was at work"
    assert len(run.team.children) == 3
    assert all(c.task is not None and c.task.cancelled() for c in run.team.children)
    snap = run.snapshot("interrupted")
    assert [m.status for m in snap.team] == ["interrupted"] * 3
    assert snap.steps[0].agent == "main" and snap.steps[0].action == "search"
    assert snap.usage.total_tokens <= snap.usage.budget
    # What the children read before the cancel is the parent's (to cite, or to report).
    assert any(page_url(p) in run.state.pages for p in parts_in(QUESTION))
    assert set(run.state.pages) <= set(snap.read_urls)


class _ParentStallsAfterTheTeam(InFlightProvider):
    """The parent's first agent call after its children finished never returns (the
    user presses Ctrl-C while it thinks)."""

    def __init__(self, run_of: list[ResearchRun]) -> None:
        super().__init__(World())
        self.run_of = run_of
        self.stalled = asyncio.Event()  # set once that call waits

    async def complete(self, request: Any) -> Any:
        run = self.run_of[0] if self.run_of else None
        children = run.team.children if run is not None else []
        done = children and all(c.result is not None for c in children)
        if done and request.tool == "agent" and request.messages[0].content == QUESTION:
            self.stalled.set()
            await asyncio.Event().wait()
        return await super().complete(request)


async def test_a_run_cut_short_after_its_children_answered_reports_their_answers() -> None:
    run_of: list[ResearchRun] = []
    provider = _ParentStallsAfterTheTeam(run_of)
    deps, _ = world_deps(World())
    deps.llm.provider = provider
    run = ResearchRun(QUESTION, deps, options(team_size=3))
    run_of.append(run)
    task = asyncio.create_task(run.run())
    await asyncio.wait_for(provider.stalled.wait(), 10)  # the parent waits on its stalled call
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = run.snapshot("interrupted")
    assert [m.status for m in snap.team] == ["answered"] * 3
    assert snap.answer.startswith("Partial answer:")
    for part, figure in zip(parts_in(QUESTION), PARTS_FIGURES, strict=True):
        assert figure in snap.answer, part
    # Nothing accepted, nothing invented: a run cut short before any child answered.
    empty = ResearchRun(QUESTION, world_deps(World())[0], options(team_size=3))
    assert empty.snapshot("interrupted").answer == ""


def test_shares_come_out_of_what_the_research_phase_has_left() -> None:
    parent = TokenTracker(100_000)
    parent.record("agent", Usage(prompt_tokens=5_000, completion_tokens=0))
    shares = budget_shares(parent, 3)
    assert len(shares) == 3 and len(set(shares)) == 1
    assert sum(shares) <= (parent.regular_budget - parent.used) * 0.6
    assert budget_shares(TokenTracker(20_000), 3) == []  # not two shares of 8k
    assert len(budget_shares(TokenTracker(35_000), 3)) == 2  # fewer, larger shares


def test_a_share_tracker_charges_the_parent_and_is_held_to_both_limits() -> None:
    parent = TokenTracker(50_000)
    child = ShareTracker(10_000, parent)
    child.record("agent", Usage(prompt_tokens=3_000, completion_tokens=1_000))
    assert child.used == 4_000 and parent.used == 4_000
    assert parent.by_tool()["agent"].calls == 1
    assert child.remaining == 6_000
    parent.record("agent", Usage(prompt_tokens=45_000, completion_tokens=0))
    assert child.remaining == 1_000  # the parent's limit binds


def test_merging_keeps_an_accepted_answer_pinned_and_any_child_reading() -> None:
    from deepsearch.agent.retrieval.evidence import PageEvidence
    from deepsearch.agent.state import AgentState, PageText
    from deepsearch.agent.team.merge import merge_child
    from deepsearch.agent.team.report import TeamMember
    from deepsearch.agent.types import KnowledgeItem

    def child_state(question: str, url: str) -> AgentState:
        state = AgentState.start(question)
        state.pages[url] = PageText(url=url, title="t", text="Beta had 873,500 people.")
        item = KnowledgeItem(question="page", answer="", type="url", references=[url])
        state.add_knowledge(item)
        state.evidence[url] = PageEvidence(url=url, title="t", chunks=["Beta had"], item=item)
        state.read_urls.append(url)
        state.searched_queries.append("Beta")
        return state

    parent = AgentState.start(QUESTION)
    ok = TeamMember(id="1", question=BETA, status="answered", answer="873,500", budget_share=1)
    merge_child(parent, child_state(BETA, "https://b.example/1"), ok)
    bad = ok.model_copy(update={"id": "2", "status": "failed", "answer": "guess"})
    merge_child(parent, child_state(BETA, "https://b.example/2"), bad)
    answers = [k for k in parent.knowledge if k.type == "qa"]
    assert [(k.question, k.answer, k.pinned) for k in answers] == [(BETA, "873,500", True)]
    assert (
        set(parent.pages) == set(parent.evidence) == {"https://b.example/1", "https://b.example/2"}
    )
    assert parent.read_urls == ["https://b.example/1", "https://b.example/2"]
    assert parent.searched_queries == ["Beta"]
    assert all(parent.evidence[u].item in parent.knowledge for u in parent.evidence)


async def test_children_get_a_narrower_job_and_a_share_of_the_time_left() -> None:
    deps, _ = world_deps(World())
    run = ResearchRun(QUESTION, deps, options(team_size=3, timeout_s=100, max_steps=50))
    result = await run.run()
    assert result.status == "answered"
    for child in run.team.children:
        opts = child.run.options
        assert opts.timeout_s == pytest.approx(100 * 0.85 * 0.7)  # the fake clock stood still
        assert (opts.team_size, opts.finalize, opts.direct_answer) == (1, False, False)
        assert opts.max_steps == 20


async def test_a_team_run_replays_from_its_cassette_with_the_same_result(tmp_path: Any) -> None:
    """Children call the LLM concurrently, in whatever order they get to: a replay must
    answer every call from the cassette (matched by request, not by arrival order) and
    give the same result, with the scripted model never asked."""
    from deepsearch.cassettes import record_deps, replay_deps

    cassette = tmp_path / "team"
    deps, _ = world_deps(World())
    recorder = record_deps(deps, cassette)
    recorded = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    recorder.write_result(recorded)
    assert recorded.status == "answered" and len(recorded.team) == 3

    deps, provider = world_deps(World())
    player = replay_deps(deps, cassette)
    replayed = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert player.first_miss(replayed.visited_urls) is None
    assert provider.calls == [], "replay asked the model"
    assert (replayed.status, replayed.answer) == (recorded.status, recorded.answer)
    assert replayed.references == recorded.references
    assert [(m.question, m.status, m.answer) for m in replayed.team] == [
        (m.question, m.status, m.answer) for m in recorded.team
    ]
