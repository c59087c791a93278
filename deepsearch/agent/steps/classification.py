"""The question's classification (which checks an answer must pass, whether fresh
sources come first), asked beside step 1's action instead of before it.

Step 1 is decided first; then the classification runs as a task of its own while the
action does, so its LLM call covers the first search's wait. Its verdict is waited
for only where it is used: a search's rewrite (the time filter), any other action
before it runs (judging an answer needs its checks), and the end of the step (the
hooks, the next step's rules). A question that needs fresh sources first allows
neither an answer nor a reflection on step 1: such a first decision is asked again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.gating import Gate
from deepsearch.agent.schema import ActionName
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.evaluator import Evaluator

if TYPE_CHECKING:  # imported by the first verdict, after the first request (later.py)
    from deepsearch.agent.judging.evaluator import QuestionEval


class Classification:
    """Asked once per run; `settled` applies its verdict to the gate and the state,
    once. `cancel` stops it when the step it ran beside ends research, `aclose` at
    the end of the run."""

    def __init__(
        self, evaluator: Evaluator, state: AgentState, gate: Gate, options: RunOptions
    ) -> None:
        self._evaluator, self._state, self._gate = evaluator, state, gate
        self._max_bad_attempts = options.max_bad_attempts
        self._task: asyncio.Task[QuestionEval] | None = None

    @property
    def pending(self) -> bool:
        return not self._state.question_classified

    def waiter(self) -> Callable[[], Awaitable[bool]] | None:
        """How a step's handler waits for the verdict; None once it is applied."""
        return self.settled if self.pending else None

    def start(self) -> None:
        if self._task is None:
            ask = self._evaluator.classify_or_default(self._state.question)
            self._task = asyncio.create_task(ask)

    async def settled(self) -> bool:
        """Waits for the verdict (asks now if it was not started) and applies it; its
        error, if it failed. Whether the question needs fresh sources."""
        if self.pending:
            self.start()
            assert self._task is not None
            verdict = await self._task
            if self.pending:  # another waiter may have applied it meanwhile
                from deepsearch.agent.judging.evaluator import metrics_for

                self._state.question_classified = True
                self._gate.after_classification(needs_freshness=verdict.needs_freshness)
                self._state.metrics = metrics_for(verdict, self._max_bad_attempts)
        return self._gate.needs_freshness

    async def keeps_first(self, action: ActionName) -> bool:
        """Starts the classification beside step 1's chosen `action`; False when its
        verdict forbids that action on step 1 (it is then decided again). Any later
        step keeps its action."""
        if not self.pending:
            return True
        self.start()
        if action == "search":  # the rewrite waits for the verdict, if it runs at all
            return True
        await self.settled()
        return bool(getattr(self._gate.allowed(self._state), action))

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def aclose(self) -> None:
        self.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
