"""Team mode as a loop hook (agent/step.py's LoopHook), called after each step: after
the first search, with a team size above one, the planner may split the question;
the children then run concurrently (one TaskGroup), and their work joins the parent's
state whatever way they end, cancellation included (Ctrl-C, SIGTERM and the parent's
time limit cancel the group, so every child task is cancelled with it).

Planning, splitting the budget, the children's parts and merging are imported only
by a run with a team (agent/later.py imports them beside its first LLM request).

The loop hands in how a child run is made (`spawn`) and how much of the research
phase's time is left (`time_left`); team mode never imports the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import Notice, safe_emit
from deepsearch.agent.result import ResearchResult, Status
from deepsearch.agent.state import AgentState, StepRecord
from deepsearch.agent.step import LoopHook, StepContext
from deepsearch.agent.team.report import TeamMember
from deepsearch.errors import BudgetExceeded, StructuredOutputError

# Shown to the user (not the model) above the accepted sub-answers of a cut-short run.
PARTIAL_NOTE = "Partial answer: the run was cut short before it combined these sub-answers."


class ChildRun(Protocol):
    """What team mode uses of a child's run (the loop's ResearchRun is one)."""

    @property
    def state(self) -> AgentState: ...
    @property
    def deps(self) -> AgentDeps: ...
    @property
    def stop_reason(self) -> str: ...
    def run(self) -> Awaitable[ResearchResult]: ...
    def snapshot(self, status: Status, *, error: str | None = None) -> ResearchResult: ...


# (sub-question, its deps, its options) -> a run that researches it.
SpawnChild = Callable[[str, AgentDeps, RunOptions], ChildRun]


@dataclass
class Child:
    id: str
    question: str
    share: int
    run: ChildRun
    result: ResearchResult | None = None
    task: asyncio.Task[None] | None = None

    def member(self) -> TeamMember:
        """Its report entry; a child without a result was cut short with its parent."""
        result = self.result or self.run.snapshot("interrupted")
        return TeamMember(
            id=self.id,
            question=self.question,
            status=result.status,
            answer=result.answer,
            tokens=self.run.deps.llm.tracker.used,
            budget_share=self.share,
            error=None if result.status == "answered" else _why(result, self.run),
        )


def _why(result: ResearchResult, run: ChildRun) -> str | None:
    """Why a child ended without an accepted answer: its error, else what stopped it."""
    return result.error or run.stop_reason or None


class TeamMode(LoopHook):
    """Team mode: the hook that may split the question, and what the result reports
    of the team (its members, their steps, a cut-short run's sub-answers)."""

    def __init__(
        self, size: int, *, spawn: SpawnChild, time_left: Callable[[], float | None]
    ) -> None:
        self.size = size
        self.spawn = spawn  # builds a child's run
        self.time_left = time_left  # seconds left of the parent's research phase, or None
        self.planned = False
        # Why no team formed, for the result's `team_not_formed` (None once one did).
        self.not_formed: str | None = (
            "team size 1" if size < 2 else "not planned: the planner runs after the first search"
        )
        self.children: list[Child] = []
        self.split_at = 0  # how many of the parent's steps came before the children's

    async def after_step(self, ctx: StepContext) -> bool:
        """Plan once, right after the parent's first search (the planner sees its
        snippets), and run the children if the planner split the question. True when
        a child's accepted answer joined the knowledge."""
        steps = ctx.state.steps
        if self.size < 2 or self.planned or not steps or steps[-1].action != "search":
            return False
        self.planned = True
        from deepsearch.agent.team.budget import budget_shares
        from deepsearch.agent.team.plan import plan_team

        try:
            parts, why = await plan_team(ctx.deps.llm, ctx.state, self.size)
        except (StructuredOutputError, BudgetExceeded) as exc:
            self.not_formed = f"no plan: {type(exc).__name__}"
            _notice(ctx, f"team: no plan ({type(exc).__name__}); researching alone")
            return False
        shares = budget_shares(ctx.deps.llm.tracker, len(parts))
        if not parts or not shares:
            reason = why if not parts else "budget too small to split"
            self.not_formed = reason
            _notice(ctx, f"team: not split ({reason[:160]})")
            return False
        self.not_formed = None
        self._start(ctx, parts[: len(shares)], shares)
        return await self._run_all(ctx.state)

    def _start(self, ctx: StepContext, parts: list[str], shares: list[int]) -> None:
        time_left = self.time_left()
        self.split_at = len(ctx.state.steps)
        from deepsearch.agent.team.children import child_deps, child_options

        for number, (question, share) in enumerate(zip(parts, shares, strict=True), 1):
            cid = str(number)
            deps = child_deps(ctx.deps, cid, share)
            child_run = self.spawn(question, deps, child_options(ctx.options, time_left))
            self.children.append(Child(id=cid, question=question, share=share, run=child_run))
        listed = "; ".join(f"[{c.id}] {c.question}" for c in self.children)
        _notice(ctx, f"team: {len(self.children)} sub-researches: {listed}")

    async def _run_all(self, state: AgentState) -> bool:
        """Run the children; True when one's answer was accepted."""
        from deepsearch.agent.team.merge import merge_child

        try:
            async with asyncio.TaskGroup() as group:
                for child in self.children:
                    child.task = group.create_task(_run_child(child))
        finally:  # cut short too: what the children read is the parent's to use
            for child in self.children:
                merge_child(state, child.run.state, child.member())
            outcomes = "; ".join(f'"{c.question}": {c.member().status}' for c in self.children)
            state.note("team_split", outcomes=outcomes)
        return any(c.result is not None and c.result.status == "answered" for c in self.children)

    def all_steps(self, main: list[StepRecord]) -> list[StepRecord]:
        """The parent's steps with each child's, marked with its id, where they ran."""
        marked = [
            record.model_copy(update={"agent": child.id})
            for child in self.children
            for record in child.run.state.steps
        ]
        return [*main[: self.split_at], *marked, *main[self.split_at :]]

    def report(self) -> list[TeamMember]:
        return [child.member() for child in self.children]

    def partial_answer(self) -> str:
        """For a run cut short before it combined them: the sub-answers its children
        had accepted, each under its question (nothing when none was accepted)."""
        accepted = [
            (c.question, c.result.answer.strip())
            for c in self.children
            if c.result is not None and c.result.status == "answered" and c.result.answer.strip()
        ]
        if not accepted:
            return ""
        parts = "\n\n".join(f"**{question}**\n{answer}" for question, answer in accepted)
        return f"{PARTIAL_NOTE}\n\n{parts}"


async def _run_child(child: Child) -> None:
    """A child that fails never fails the parent (nor, in the TaskGroup, its siblings)."""
    try:
        child.result = await child.run.run()
    except Exception as exc:
        child.result = child.run.snapshot("failed", error=f"{type(exc).__name__}: {exc}")


def _notice(ctx: StepContext, text: str) -> None:
    safe_emit(ctx.deps.emit, Notice(text=text))
