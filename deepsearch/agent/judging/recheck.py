"""High effort's re-check, its judgement: an answer the evaluator accepted is held
against a second, independent search (queries not run before) before it is final.
Here: the queries the evaluator proposes, its verdict on what they found, and a
contradiction recorded like a failed check (the lesson joins the knowledge and
research goes on). The search is the search step's own pipeline, and the hook that
runs a re-check after an accepted answer is agent/hooks.py's (judging never imports
the loop's steps).

At most MAX_RECHECKS per run, so a question whose sources disagree still ends.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepsearch.agent import wording
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render
from deepsearch.web.types import SearchResult

MAX_RECHECKS = 2
MAX_QUERIES = 3
RESULTS_SHOWN = 15


class RecheckQueries(BaseModel):
    think: str = Field("", max_length=400)
    queries: list[str] = Field(default_factory=list, max_length=MAX_QUERIES)


class RecheckVerdict(BaseModel):
    think: str = Field("", max_length=600)
    consistent: bool = Field(description="false only if the results contradict a key claim")
    problem: str = Field("", max_length=600, description="what is contradicted, and how")


def results_question(queries: list[str]) -> str:
    """The question the second search's knowledge item answers."""
    return wording.knowledge_question("recheck_results", queries="; ".join(queries))


async def propose_queries(state: AgentState, llm: LLMClient, answer: str) -> list[str]:
    """The evaluator's queries for the second search (new ones are kept by the caller)."""
    content = render(
        "research_planner_recheck_input",
        question=state.question,
        answer=answer,
        queries="\n".join(state.searched_queries),
    )
    reply = await llm.generate_object(
        "evaluator",
        RecheckQueries,
        render("research_planner_recheck_queries", max_queries=MAX_QUERIES),
        [Message(role="user", content=content)],
    )
    return reply.value.queries


async def judge_results(
    state: AgentState, llm: LLMClient, answer: str, results: list[SearchResult]
) -> RecheckVerdict:
    digest = "\n".join(
        render("query_rewriter_result", title=r.title, snippet=r.snippet[:300])
        for r in results[:RESULTS_SHOWN]
    )
    content = render(
        "research_planner_recheck_results",
        question=state.question,
        answer=answer,
        results=digest,
    )
    reply = await llm.generate_object(
        "evaluator",
        RecheckVerdict,
        render("research_planner_recheck_verdict"),
        [Message(role="user", content=content)],
    )
    return reply.value


def record_contradiction(state: AgentState, answer: str, verdict: RecheckVerdict) -> str:
    """The answer retracted and the lesson kept; the step log's line for it."""
    state.retract_answer()
    problem = verdict.problem or verdict.think
    state.add_knowledge(
        KnowledgeItem(
            question=wording.knowledge_question(
                "recheck_contradiction", question=state.question, answer=answer
            ),
            answer=problem,
            type="qa",
        )
    )
    state.note("recheck_contradicted", problem=problem)
    return f"answer rejected by the re-check: {problem[:200]}"
