"""The research_planner tool: split a question into independent sub-problems, or not.

Fixes the reference's planner: its schema always demanded exactly three sub-problems
whatever the team size; here the schema's limit is the team size, and the planner
may decline (which is respected: no child runs).
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, Field, create_model

from deepsearch.agent.state import AgentState
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render

SNIPPET_CHARS = 3000  # what the planner sees of the first search (names, not answers)
MAX_SUBPROBLEM_CHARS = 300


class ResearchPlan(BaseModel):
    think: str = Field("", max_length=800)
    split: bool = Field(
        description="true only if the question is several independent research problems"
    )
    subproblems: list[str] = Field(default_factory=list)


@cache
def plan_schema(team_size: int) -> type[ResearchPlan]:
    """The plan with the list held to `team_size` (the model sees the limit)."""
    return create_model(
        f"ResearchPlan{team_size}",
        __base__=ResearchPlan,
        subproblems=(
            list[str],
            Field(
                default_factory=list,
                max_length=team_size,
                description=f"up to {team_size} self-contained sub-questions; empty if not split",
            ),
        ),
    )


def first_snippets(state: AgentState) -> str:
    """The search results the run has seen so far, as the planner's context."""
    texts = [k.answer for k in state.knowledge if k.type == "side-info"]
    return "\n".join(texts)[:SNIPPET_CHARS]


def _subproblems(plan: ResearchPlan, question: str, team_size: int) -> list[str]:
    """Distinct, non-blank sub-problems other than the question itself."""
    seen = {question.strip().casefold()}
    kept: list[str] = []
    for text in plan.subproblems:
        cleaned = " ".join(text.split())[:MAX_SUBPROBLEM_CHARS]
        if cleaned and cleaned.casefold() not in seen:
            seen.add(cleaned.casefold())
            kept.append(cleaned)
    return kept[:team_size]


async def plan_team(llm: LLMClient, state: AgentState, team_size: int) -> tuple[list[str], str]:
    """(sub-problems, why); no sub-problems when it declines to split or proposes fewer
    than two (one sub-problem is the question again), and `why` then says which, with
    the planner's reason ("declined: better researched as one")."""
    content = render(
        "research_planner_input", question=state.question, snippets=first_snippets(state) or "-"
    )
    result = await llm.generate_object(
        "research_planner",
        plan_schema(team_size),
        render("research_planner", team_size=team_size),
        [Message(role="user", content=content)],
    )
    plan = result.value
    reason = " ".join(plan.think.split()) or "no reason given"
    if not plan.split:
        return [], f"declined: {reason}"
    parts = _subproblems(plan, state.question, team_size)
    if len(parts) < 2:
        return [], f"fewer than two distinct sub-questions proposed: {reason}"
    return parts, reason
