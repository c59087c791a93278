"""The hook the research loop calls after each step: after the first search, with a
team size above one, the planner may split the question; the children then run
concurrently (one TaskGroup), and their work joins the parent's state whatever way
they end, cancellation included (Ctrl-C, SIGTERM and the parent's time limit cancel
the group, so every child task is cancelled with it)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deepsearch.agent.events import Notice
from deepsearch.agent.outcomes import Outcome
from deepsearch.agent.result import ResearchResult
from deepsearch.agent.schema import AllowFlags
from deepsearch.agent.state import StepRecord
from deepsearch.agent.team.budget import budget_shares
from deepsearch.agent.team.children import child_deps, child_options
from deepsearch.agent.team.effort import withdraw_switched_off
from deepsearch.agent.team.merge import merge_child
from deepsearch.agent.team.plan import plan_team
from deepsearch.agent.team.recheck import recheck_accepted
from deepsearch.agent.team.report import TeamMember
from deepsearch.errors import BudgetExceeded, StructuredOutputError

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun

# Shown to the user (not the model) above the accepted sub-answers of a cut-short run.
PARTIAL_NOTE = "Partial answer: the run was cut short before it combined these sub-answers."


@dataclass
class Child:
    id: str
    question: str
    share: int
    run: ResearchRun
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


def _why(result: ResearchResult, run: ResearchRun) -> str | None:
    """Why a child ended without an accepted answer: its error, else what stopped it."""
    return result.error or run.stop_reason or None


class TeamMode:
    """The loop's one handle on team mode and the effort presets' behaviour."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.planned = False
        # Why no team formed, for the result's `team_not_formed` (None once one did).
        self.not_formed: str | None = (
            "team size 1" if size < 2 else "not planned: the planner runs after the first search"
        )
        self.children: list[Child] = []
        self.split_at = 0  # how many of the parent's steps came before the children's

    @classmethod
    def for_run(cls, run: ResearchRun) -> TeamMode:
        """The run's team (of `team_size`), its switched-off actions withdrawn."""
        withdraw_switched_off(run.gate, run.options)
        return cls(run.options.team_size)

    async def after_step(self, run: ResearchRun) -> None:
        """Plan once, right after the parent's first search (the planner sees its
        snippets), and run the children if the planner split the question."""
        steps = run.state.steps
        if self.size < 2 or self.planned or not steps or steps[-1].action != "search":
            return
        self.planned = True
        try:
            parts, why = await plan_team(run.deps.llm, run.state, self.size)
        except (StructuredOutputError, BudgetExceeded) as exc:
            self.not_formed = f"no plan: {type(exc).__name__}"
            _notice(run, f"team: no plan ({type(exc).__name__}); researching alone")
            return
        shares = budget_shares(run.deps.llm.tracker, len(parts))
        if not parts or not shares:
            reason = why if not parts else "budget too small to split"
            self.not_formed = reason
            _notice(run, f"team: not split ({reason[:160]})")
            return
        self.not_formed = None
        self._start(run, parts[: len(shares)], shares)
        await self._run_all(run)

    def _start(self, run: ResearchRun, parts: list[str], shares: list[int]) -> None:
        time_left = _time_left(run)
        self.split_at = len(run.state.steps)
        for number, (question, share) in enumerate(zip(parts, shares, strict=True), 1):
            cid = str(number)
            deps = child_deps(run.deps, cid, share)
            child_run = type(run)(question, deps, child_options(run.options, time_left))
            self.children.append(Child(id=cid, question=question, share=share, run=child_run))
        listed = "; ".join(f"[{c.id}] {c.question}" for c in self.children)
        _notice(run, f"team: {len(self.children)} sub-researches: {listed}")

    async def _run_all(self, run: ResearchRun) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for child in self.children:
                    child.task = group.create_task(_run_child(child))
        finally:  # cut short too: what the children read is the parent's to use
            for child in self.children:
                merge_child(run.state, child.run.state, child.member())
            outcomes = "; ".join(f'"{c.question}": {c.member().status}' for c in self.children)
            run.state.note("team_split", outcomes=outcomes)
        if any(c.result is not None and c.result.status == "answered" for c in self.children):
            # The search step barred answering next ("snippets are no evidence"); with
            # accepted sub-answers in the knowledge that reason is gone.
            run.gate.last = AllowFlags()

    @staticmethod
    async def recheck(run: ResearchRun, outcome: Outcome) -> Outcome:
        """An accepted answer, re-checked when the options ask for it (effort high)."""
        return await recheck_accepted(run, outcome)

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


def _notice(run: ResearchRun, text: str) -> None:
    try:
        run.deps.emit(Notice(text=text))
    except Exception:  # the view must never break the run
        pass


def _time_left(run: ResearchRun) -> float | None:
    """Seconds left of the parent's research phase (85% of --timeout), None without one."""
    from deepsearch.agent.loop import LOOP_TIME_SHARE

    return run.deadline.remaining(LOOP_TIME_SHARE)
