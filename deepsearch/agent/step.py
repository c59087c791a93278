"""What one step's action, and a loop hook, may use: `StepContext`; and `LoopHook`,
the points of a step where the loop calls a behaviour of its own (team mode, high
effort's re-check).

The loop builds a context for each action it runs. Handlers and hooks read the run's
parts from it and change the state through its named methods; they never see the
loop's object. What else they need comes as an argument (the evaluator's knowledge
allowance), and the gate reaches them only as a read-only view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.gating import GateView
from deepsearch.agent.outcomes import Outcome
from deepsearch.agent.prefetch import Prefetcher
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.evaluator import Evaluator


@dataclass(frozen=True)
class StepContext:
    """The run's parts one step may use."""

    state: AgentState
    deps: AgentDeps
    options: RunOptions
    evaluator: Evaluator
    gate: GateView = field(default_factory=GateView)
    # Background reads of the top unread URLs (a visit awaits them there); None: read now.
    prefetch: Prefetcher | None = None


class LoopHook:
    """A behaviour the loop calls at fixed points of a step; each default does nothing.

    - `after_outcome`: the action's outcome, possibly changed (the re-check may reject
      an accepted answer); the loop acts on what it returns.
    - `after_step`: after a step that did not end research. True when what the hook
      added to the knowledge lifts what the last step forbade (the loop then calls
      `Gate.reopen`).
    """

    async def after_outcome(self, ctx: StepContext, outcome: Outcome) -> Outcome:
        return outcome

    async def after_step(self, ctx: StepContext) -> bool:
        return False
