"""Run a step's chosen action: each payload type goes to its handler with the parts of
the run it needs, and comes back as an `Outcome` for the loop to act on."""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from deepsearch.agent.actions.answer import handle_answer
from deepsearch.agent.actions.coding import handle_coding
from deepsearch.agent.actions.reflect import handle_reflect
from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.actions.visit import handle_visit
from deepsearch.agent.outcomes import Outcome
from deepsearch.agent.retrieval.evidence import pin_support
from deepsearch.agent.schema import (
    ActionPayload,
    AnswerPayload,
    CodingPayload,
    ReflectPayload,
    SearchPayload,
    VisitPayload,
)

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun


async def perform(run: ResearchRun, payload: ActionPayload) -> Outcome:
    """The action's outcome; outside failures come back as outcomes, not exceptions."""
    st, deps, options = run.state, run.deps, run.options
    match payload:
        case SearchPayload():
            freshness = run.gate.needs_freshness
            return await handle_search(payload, st, deps, options, needs_freshness=freshness)
        case VisitPayload():
            return await handle_visit(payload, st, deps, options, prefetch=run.prefetch)
        case ReflectPayload():
            return await handle_reflect(payload, st, deps, options)
        case CodingPayload():
            return await handle_coding(payload, st, deps, options)
        case AnswerPayload():
            return await _answer(run, payload)
        case _:
            assert_never(payload)


async def _answer(run: ResearchRun, payload: AnswerPayload) -> Outcome:
    # What the answer rests on stays in view for every later prompt.
    await pin_support(list(run.state.evidence.values()), payload.answer, run.deps.similarity)
    run.evaluator.knowledge_tokens = run.knowledge_allowance("evaluator")
    return await handle_answer(
        payload, run.state, run.evaluator, now=run.deps.clock.now(), options=run.options
    )
