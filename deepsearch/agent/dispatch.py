"""Run a step's chosen action: each payload type goes to its handler with the step's
context, and comes back as an `Outcome` for the loop to act on."""

from __future__ import annotations

from typing import assert_never

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
from deepsearch.agent.step import StepContext


async def perform(ctx: StepContext, payload: ActionPayload) -> Outcome:
    """The action's outcome; outside failures come back as outcomes, not exceptions."""
    match payload:
        case SearchPayload():
            return await handle_search(payload, ctx)
        case VisitPayload():
            return await handle_visit(payload, ctx)
        case ReflectPayload():
            return await handle_reflect(payload, ctx)
        case CodingPayload():
            return await handle_coding(payload, ctx)
        case AnswerPayload():
            # What the answer rests on stays in view for every later prompt.
            await pin_support(
                list(ctx.state.evidence.values()), payload.answer, ctx.deps.similarity
            )
            return await handle_answer(payload, ctx)
        case _:
            assert_never(payload)
