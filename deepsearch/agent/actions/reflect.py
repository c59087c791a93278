"""reflect: new sub-questions join the gaps queue."""

from __future__ import annotations

from deepsearch.agent.outcomes import Continue
from deepsearch.agent.schema import MAX_SUBQUESTIONS, ReflectPayload
from deepsearch.agent.step import StepContext


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?")


async def handle_reflect(payload: ReflectPayload, ctx: StepContext) -> Continue:
    state = ctx.state
    asked = {_key(q) for q in state.all_questions}
    fresh: list[str] = []
    for question in payload.questions:
        question = " ".join(question.split())[:300]
        if question and _key(question) not in asked:
            asked.add(_key(question))
            fresh.append(question)
    # Near-duplicates of anything already asked are dropped too, not just exact repeats.
    fresh = await ctx.deps.similarity.dedup(fresh, state.all_questions)
    fresh = fresh[:MAX_SUBQUESTIONS]
    if not fresh:
        state.note("sub_questions_repeated")
        return Continue("no new sub-questions")
    state.open_sub_questions(fresh)
    state.note("sub_questions", questions=" | ".join(fresh))
    return Continue(" | ".join(fresh))
