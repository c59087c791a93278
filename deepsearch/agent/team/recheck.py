"""High effort's re-check: an answer the evaluator accepted is held against a second,
independent search (queries not run before) before it is final. A contradiction
rejects it like a failed check (the lesson joins the knowledge and research goes on);
at most MAX_RECHECKS per run, so a question whose sources disagree still ends. A
re-check that cannot be paid for, understood or run (a provider or search failure)
leaves the accepted answer accepted: the evaluator already passed it, and an extra
check that failed to happen is no evidence against it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from deepsearch.agent import diary
from deepsearch.agent.actions.search import add_to_pool, new_queries, run_queries
from deepsearch.agent.outcomes import Accepted, Outcome, Rejected
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import RunError
from deepsearch.llm.base import Message
from deepsearch.prompts import render
from deepsearch.web.types import SearchQuery, SearchResult

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun

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


async def _queries(run: ResearchRun, answer: str) -> list[str]:
    st = run.state
    content = render(
        "research_planner_recheck_input",
        question=st.question,
        answer=answer,
        queries="\n".join(st.searched_queries),
    )
    reply = await run.deps.llm.generate_object(
        "evaluator",
        RecheckQueries,
        render("research_planner_recheck_queries", max_queries=MAX_QUERIES),
        [Message(role="user", content=content)],
    )
    return new_queries(st, reply.value.queries)


async def _search(run: ResearchRun, queries: list[str]) -> list[SearchResult]:
    """The second search; its hits join the pool, the snippets (citable evidence) and,
    as side-info, the knowledge of later prompts."""
    st, opts = run.state, run.options
    sites = list(opts.only_hostnames)
    batch = [SearchQuery(q=q, sites=sites, limit=opts.results_per_query) for q in queries]
    results, _ = await run_queries(run.deps, batch)
    st.record_queries(queries)
    for result in results:
        add_to_pool(st, result)
    if results:
        digest = "; ".join(f"{r.title}: {r.snippet}" for r in results[:RESULTS_SHOWN])
        st.add_knowledge(
            KnowledgeItem(
                question=diary.question("recheck_results", queries="; ".join(queries)),
                answer=digest[:4000],
                type="side-info",
                references=[r.url for r in results[:RESULTS_SHOWN]],
            )
        )
    return results


async def _verdict(run: ResearchRun, answer: str, results: list[SearchResult]) -> RecheckVerdict:
    digest = "\n".join(
        render("query_rewriter_result", title=r.title, snippet=r.snippet[:300])
        for r in results[:RESULTS_SHOWN]
    )
    content = render(
        "research_planner_recheck_results",
        question=run.state.question,
        answer=answer,
        results=digest,
    )
    reply = await run.deps.llm.generate_object(
        "evaluator",
        RecheckVerdict,
        render("research_planner_recheck_verdict"),
        [Message(role="user", content=content)],
    )
    return reply.value


def _reject(run: ResearchRun, answer: str, verdict: RecheckVerdict) -> Rejected:
    st = run.state
    st.retract_answer()
    problem = verdict.problem or verdict.think
    st.add_knowledge(
        KnowledgeItem(
            question=diary.question("recheck_contradiction", question=st.question, answer=answer),
            answer=problem,
            type="qa",
        )
    )
    st.note("recheck_contradicted", problem=problem)
    return Rejected(f"answer rejected by the re-check: {problem[:200]}")


async def recheck_accepted(run: ResearchRun, outcome: Outcome) -> Outcome:
    """`outcome` unchanged unless it accepted an answer and the options ask for a
    re-check; then Accepted with what the re-check did, or Rejected."""
    st = run.state
    if not isinstance(outcome, Accepted) or not run.options.recheck:
        return outcome
    if st.rechecks >= MAX_RECHECKS:
        return outcome
    answer = st.final_answer or ""
    st.rechecks += 1
    try:
        queries = await _queries(run, answer)
        if not queries:
            return Accepted(f"{outcome.detail}; re-check: no new query")
        results = await _search(run, queries)
        verdict = await _verdict(run, answer, results)
    except RunError as exc:  # the budget, the provider, the search or an unusable reply
        return Accepted(f"{outcome.detail}; re-check skipped ({type(exc).__name__})")
    if not verdict.consistent:
        return _reject(run, answer, verdict)
    shown = " | ".join(queries)
    return Accepted(
        f"{outcome.detail}; re-checked by a second search ({len(results)} results: {shown})"
    )
