"""A search says why it found nothing (issue 36, item 11): a web provider failing next
to `local` is one notice, not silence; a host restriction that keeps nothing says so;
one result is "1 result"."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.outcomes import Continue
from deepsearch.agent.schema import SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.web.search.chain import SearchChain
from deepsearch.web.search.fused import FusedSearch
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import make_deps, options, router, step_context
from tests.fakes.memory_web import FakeSearch
from tests.web.test_search_chain import Scripted, err

HIT = SearchResult(title="Magma", url="https://elsewhere.org/magma", snippet="Magma.", provider="f")


def _held_to_sites(query: SearchQuery) -> list[SearchResult]:
    """As the chain answers: the engine's hits, none on the restricted hosts."""
    return [] if query.sites else [HIT]


async def _search(events: list[Any], *queries: str, **opts: Any) -> Continue:
    deps, _ = make_deps(router([]), search=FakeSearch(_held_to_sites), events=events)
    ctx = step_context(AgentState.start("What is magma?"), deps, options(**opts))
    outcome = await handle_search(SearchPayload(queries=list(queries)), ctx)
    assert isinstance(outcome, Continue)
    return outcome


async def test_a_host_restriction_that_keeps_nothing_says_why() -> None:
    events: list[Any] = []
    outcome = await _search(events, "what is magma", only_hostnames=["en.wikipedia.org"])
    assert outcome.detail == "0 results on en.wikipedia.org: what is magma"
    [notice] = [e for e in events if e.kind == "notice"]
    assert notice.once == "only-hostnames-empty"
    assert notice.text.startswith("nothing found on en.wikipedia.org: only-hostnames keeps")


async def test_without_a_restriction_nothing_is_said_and_one_result_is_singular() -> None:
    events: list[Any] = []
    outcome = await _search(events, "what is magma")
    assert outcome.detail == "1 result: what is magma"
    assert [e for e in events if e.kind == "notice"] == []


async def test_the_web_failing_beside_the_corpus_is_told_once() -> None:
    told: list[str] = []
    web = SearchChain([Scripted("duckduckgo", err("duckduckgo", "network"))], retry_pause_s=0)
    local = SearchChain([Scripted("local", ["file:///notes/magma.md"])])
    fused = FusedSearch(web, local)
    fused.on_web_failure = told.append
    for q in ("magma", "crust"):
        urls = [r.url for r in await fused.search(SearchQuery(q=q))]
        assert urls == ["file:///notes/magma.md"]
    assert told == [
        "web search failed (duckduckgo: network (boom)); results come from the local corpus only"
    ]


async def test_a_web_that_answers_beside_the_corpus_says_nothing() -> None:
    told: list[str] = []
    web = SearchChain([Scripted("duckduckgo", ["https://a.org/1"])])
    fused = FusedSearch(web, SearchChain([Scripted("local", ["file:///n.md"])]))
    fused.on_web_failure = told.append
    await fused.search(SearchQuery(q="magma"))
    assert told == []
