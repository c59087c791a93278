"""The second search pass: the query rewriter, driven through the real loop."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.retrieval.similarity import LexicalSimilarity
from deepsearch.agent.steps.rewrite import make_query_rewriter
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import CLASSIFY_SIMPLE, evaluator_reply, make_deps, options
from tests.fakes.memory_web import FakeReader, FakeSearch

QUESTION = "What is the latest population of Tokyo?"
ANSWER = {"think": "", "action": {"answer": {"answer": "About 14 million."}}}


def search_step(*queries: str) -> dict[str, Any]:
    return {"think": "", "action": {"search": {"queries": list(queries)}}}


def reflect_step(question: str) -> dict[str, Any]:
    return {"think": "", "action": {"reflect": {"questions": [question]}}}


def results_for(query: SearchQuery) -> list[SearchResult]:
    slug = "-".join(query.q.lower().split())
    return [
        SearchResult(
            title=f"About {query.q}",
            url=f"https://example.org/{slug}",
            snippet=f"Snippet about {query.q}.",
            provider="fake",
        )
    ]


async def run(
    steps: list[dict[str, Any]],
    rewrites: list[dict[str, Any]],
    *,
    fresh: bool = False,
    only: list[str] | None = None,
    results_per_query: int = 7,
) -> tuple[list[SearchQuery], list[CompletionRequest]]:
    """Run the loop with a scripted rewriter; returns every query sent, in order."""
    queue = list(steps)
    rewriter_calls: list[CompletionRequest] = []

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "query_rewriter":
            rewriter_calls.append(request)
            return {"think": "expand", "queries": rewrites}
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if "needs_definitive" in (request.json_schema or {}).get("properties", {}):
            return {**CLASSIFY_SIMPLE, "needs_freshness": fresh}
        return evaluator_reply(request)

    search = FakeSearch(results_for)
    deps, _ = make_deps(reply, search=search, reader=FakeReader({}))
    sim = LexicalSimilarity()
    deps.similarity = sim
    # Sites and limit come from the run options alone: the search action applies them.
    deps.rewrite_queries = make_query_rewriter(deps.llm, sim)
    opts = options(
        max_steps=len(steps), only_hostnames=only or [], results_per_query=results_per_query
    )
    await ResearchRun(QUESTION, deps, opts).run()
    return search.queries, rewriter_calls


async def test_followups_run_in_the_same_step_with_freshness_sites_language_limit() -> None:
    queries, calls = await run(
        [search_step("Tokyo population"), ANSWER],
        [{"q": "Tokyo population 2024"}, {"q": "東京 人口", "language": "ja"}],
        fresh=True,
        only=["example.org"],
    )
    # One search step, yet both passes ran: the follow-ups are part of that step.
    assert len(calls) == 1
    assert [q.q for q in queries] == ["Tokyo population", "Tokyo population 2024", "東京 人口"]
    raw, *followups = queries
    assert raw.time_filter is None
    assert all(q.time_filter is not None for q in followups)  # the question wants fresh data
    assert all(q.sites == ["example.org"] for q in queries)
    assert [q.language for q in followups] == [None, "ja"]
    assert all(q.limit == 7 for q in queries)


async def test_no_time_filter_without_freshness_nor_sites_without_only_hostnames() -> None:
    queries, _ = await run(
        [search_step("Tokyo population"), ANSWER],
        [{"q": "Tokyo census 2020 results"}],
        fresh=False,
        results_per_query=4,
    )
    assert [q.q for q in queries] == ["Tokyo population", "Tokyo census 2020 results"]
    assert all(q.time_filter is None and q.sites == [] and q.limit == 4 for q in queries)


async def test_near_duplicates_of_earlier_queries_are_dropped() -> None:
    queries, calls = await run(
        [
            search_step("Tokyo population", "Tokyo census"),
            reflect_step("How is the Tokyo metropolitan area defined?"),
            # A raw query that rewords step 1's: dropped; the new one runs.
            search_step("population of Tokyo", "Tokyo metropolitan area size"),
            ANSWER,
        ],
        # The rewriter proposes the same near-duplicates at both search steps.
        [{"q": "Tokyo populations"}, {"q": "population of tokyo"}, {"q": "Tokyo ward map"}],
    )
    sent = [q.q for q in queries]
    assert len(calls) == 2
    assert sent == [
        "Tokyo population",
        "Tokyo census",
        "Tokyo ward map",
        "Tokyo metropolitan area size",
    ]
    assert len({q.casefold() for q in sent}) == len(sent)


def many_on_topic(query: SearchQuery) -> list[SearchResult]:
    return [
        SearchResult(
            title=f"Tokyo population {i}",
            url=f"https://s{i}.org/tokyo",
            snippet="The population of Tokyo is about 14 million.",
            provider="fake",
        )
        for i in range(3)
    ]


async def test_no_rewrite_call_when_the_raw_pass_came_back_strong() -> None:
    from deepsearch.agent import actions

    strong = actions.search.Batch(  # type: ignore[attr-defined]
        queries=["Tokyo population"], results=many_on_topic(SearchQuery(q="x")), errors=[]
    )
    assert actions.search.came_back_strong(strong)  # type: ignore[attr-defined]
    strong.results = strong.results[:2]
    assert not actions.search.came_back_strong(strong)  # type: ignore[attr-defined]
    off_topic = [
        r.model_copy(update={"title": "Osaka", "snippet": "Kansai"})
        for r in many_on_topic(SearchQuery(q="x"))
    ]
    strong.results = off_topic
    assert not actions.search.came_back_strong(strong)  # type: ignore[attr-defined]


async def test_a_strong_raw_search_skips_the_rewriter_in_the_loop() -> None:
    calls: list[CompletionRequest] = []
    queue = [search_step("Tokyo population"), ANSWER]

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "query_rewriter":
            calls.append(request)
            return {"think": "", "queries": [{"q": "Tokyo residents count"}]}
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "finalizer":
            return request.messages[-1].content
        return evaluator_reply(request)

    search = FakeSearch(many_on_topic)
    deps, _ = make_deps(reply, search=search, reader=FakeReader({}))
    deps.rewrite_queries = make_query_rewriter(deps.llm, deps.similarity)
    await ResearchRun(QUESTION, deps, options(max_steps=2)).run()
    assert [q.q for q in search.queries] == ["Tokyo population"] and not calls
