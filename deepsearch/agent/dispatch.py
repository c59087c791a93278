"""Run a step's chosen action: each payload type goes to its handler with the step's
context, and comes back as an `Outcome` for the loop to act on.

Each handler's module is imported when its action first runs (agent/later.py imports
the usual ones while the first LLM request is in flight): a run that never reflects
or codes never imports those handlers, and none is imported before the first request."""

from __future__ import annotations

from typing import assert_never

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
            from deepsearch.agent.actions.search import handle_search

            return await handle_search(payload, ctx)
        case VisitPayload():
            from deepsearch.agent.actions.visit import handle_visit

            return await handle_visit(payload, ctx)
        case ReflectPayload():
            from deepsearch.agent.actions.reflect import handle_reflect

            return await handle_reflect(payload, ctx)
        case CodingPayload():
            from deepsearch.agent.actions.coding import handle_coding

            return await handle_coding(payload, ctx)
        case AnswerPayload():
            from deepsearch.agent.actions.answer import handle_answer

            # What the answer rests on stays in view for every later prompt.
            await pin_support(
                list(ctx.state.evidence.values()), payload.answer, ctx.deps.similarity
            )
            return await handle_answer(payload, ctx)
        case _:
            assert_never(payload)
