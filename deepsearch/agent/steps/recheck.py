"""High effort's re-check as the loop runs it: the evaluator's queries for the second
search, its verdict on what they found, and a contradiction recorded like a failed
check (the answer retracted, the lesson joins the knowledge and research goes on).
The limits and reply schemas are judging's (agent/judging/recheck.py); the hook that
calls these after an accepted answer, with the search step's own pipeline, is
agent/hooks.py's."""

from __future__ import annotations

from deepsearch.agent import wording
from deepsearch.agent.judging.recheck import (
    MAX_QUERIES,
    RESULTS_SHOWN,
    RecheckQueries,
    RecheckVerdict,
    rejection_line,
)
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render, untrusted
from deepsearch.web.types import SearchResult


def results_question(queries: list[str]) -> str:
    """The question the second search's knowledge item answers."""
    return wording.knowledge_question("recheck_results", queries="; ".join(queries))


async def propose_queries(state: AgentState, llm: LLMClient, answer: str) -> list[str]:
    """The evaluator's queries for the second search (new ones are kept by the caller)."""
    content = render(
        "research_planner_recheck_input",
        question=state.question,
        answer=untrusted(answer),
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
        render(
            "query_rewriter_result", title=untrusted(r.title), snippet=untrusted(r.snippet[:300])
        )
        for r in results[:RESULTS_SHOWN]
    )
    content = render(
        "research_planner_recheck_results",
        question=state.question,
        answer=untrusted(answer),
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
    problem = verdict.contradiction()
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
    return rejection_line(problem)
