"""A follow-up made standalone before it is researched (`deepsearch -c`, serve's and
MCP's continuations): "and when did it close?" after "Which film was shot in Leland?"
becomes "When did Maximum Overdrive stop showing in cinemas?", as Vane's
standaloneFollowUp does. One LLM call (tool `follow_up`, prompts/follow_up.md), on
the run's own client: its tokens count in the run's budget.

A reply that cannot be used (no valid object, an empty question, the budget spent)
leaves the question as the user wrote it: the earlier answer is in the run's
knowledge anyway (agent/handover.py), so the research still sees what it leans on.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepsearch.errors import BudgetExceeded, StructuredOutputError
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render

# What the prompt shows of the earlier answer: enough to resolve "it" and "the second".
EARLIER_ANSWER_CHARS = 4000
LONGEST_REWRITE = 2000


class FollowUpReply(BaseModel):
    think: str = Field("", max_length=400)
    question: str = Field(
        max_length=LONGEST_REWRITE,
        description="the new question, rewritten to stand on its own (or unchanged)",
    )


async def standalone_question(
    llm: LLMClient, earlier_question: str, earlier_answer: str, question: str
) -> str:
    """`question` rewritten to stand without the earlier exchange (see the module)."""
    content = render(
        "follow_up_input",
        earlier_question=earlier_question,
        earlier_answer=earlier_answer[:EARLIER_ANSWER_CHARS],
        question=question,
    )
    try:
        reply = await llm.generate_object(
            "follow_up", FollowUpReply, render("follow_up"), [Message(role="user", content=content)]
        )
    except (StructuredOutputError, BudgetExceeded):
        return question
    rewritten = " ".join(reply.value.question.split())
    return rewritten or question
