"""Background reads of the top unread URLs while the model decides."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.prefetch import Prefetcher
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.testing import FakeReader, FakeSearch
from deepsearch.web.types import Page, ReadFailure, SearchResult
from tests.agent.helpers import evaluator_reply, latency_client, make_deps, options

URLS = [f"https://site{i}.org/page" for i in range(6)]


class CountingReader(FakeReader):
    """A slow reader that records reads started, finished and cancelled."""

    def __init__(self, delay_s: float) -> None:
        super().__init__({u: f"Text of {u} about moons of Mars." for u in URLS}, delay_s=delay_s)
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self.started_at: dict[str, float] = {}

    async def read(self, url: str) -> Page | ReadFailure:
        self.started_at[url] = time.monotonic()
        try:
            page = await super().read(url)
        except asyncio.CancelledError:
            self.cancelled.append(url)
            raise
        self.finished.append(url)
        return page


async def test_a_read_in_flight_is_awaited_not_repeated() -> None:
    reader = CountingReader(delay_s=0.05)
    prefetch = Prefetcher(reader, limit=3)
    prefetch.start(URLS)
    assert prefetch.in_flight() == URLS[:3]  # bounded
    pages = await asyncio.gather(*(prefetch.read(u) for u in URLS[:4]))
    assert [p.url for p in pages] == URLS[:4]
    assert reader.reads == URLS[:4]  # the three in flight were awaited, one read fresh
    await prefetch.aclose()


async def test_reads_no_longer_wanted_and_all_at_close_are_cancelled() -> None:
    reader = CountingReader(delay_s=5)
    prefetch = Prefetcher(reader, limit=4)
    prefetch.start(URLS)
    await asyncio.sleep(0.01)
    prefetch.retain(URLS[1:3])
    await asyncio.sleep(0.01)
    assert sorted(reader.cancelled) == sorted([URLS[0], URLS[3]])
    assert prefetch.in_flight() == URLS[1:3]
    await prefetch.aclose()
    assert sorted(reader.cancelled) == sorted(URLS[:4]) and not prefetch.in_flight()


def loop_llm(steps: list[dict[str, Any]]) -> Any:
    queue = list(steps)

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "finalizer":
            return request.messages[-1].content
        return evaluator_reply(request)

    return reply


def moon_search() -> FakeSearch:
    return FakeSearch(
        lambda q: [SearchResult(title="Moons", url=u, snippet="moons", provider="f") for u in URLS]
    )


SEARCH = {"think": "", "action": {"search": {"queries": ["moons of mars"]}}}
VISIT = {"think": "", "action": {"visit": {"url_indices": [1, 2]}}}
ANSWER = {"think": "", "action": {"answer": {"answer": "Mars has two moons."}}}


async def test_a_visit_finds_its_pages_read_while_the_model_decided() -> None:
    reader = CountingReader(delay_s=0.2)
    client, provider = latency_client(loop_llm([SEARCH, VISIT, ANSWER]), latency_s=0.1)
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=5))
    result = await run.run()
    assert result.status == "answered"
    assert len(reader.reads) == len(set(reader.reads)), "no URL is read twice"
    visited = run.state.visited
    assert len(visited) == 5 and set(visited) <= set(run.prefetch.started)
    # Every page was already being read while the model decided to visit (step 2).
    decide_visit = [iv for iv in provider.intervals if iv[0] == "agent"][1]
    assert all(decide_visit[1] <= reader.started_at[u] < decide_visit[2] for u in visited)


async def test_background_reads_are_cancelled_when_the_run_ends() -> None:
    reader = CountingReader(delay_s=3600)  # would hang the run (and the suite) if left running
    client, _ = latency_client(loop_llm([SEARCH, ANSWER]), latency_s=0.05)
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=3, timeout_s=20))
    result = await run.run()
    assert result.status == "answered"
    assert run.prefetch.started  # reads began while the model decided step 2
    await asyncio.sleep(0)
    assert sorted(reader.cancelled) == sorted(run.prefetch.started)
    assert not run.prefetch.in_flight() and not reader.finished


async def test_raw_results_start_reading_while_the_rewriter_thinks_never_a_bad_host() -> None:
    from deepsearch.agent.retrieval.rewrite import make_query_rewriter

    scripted = loop_llm([SEARCH, ANSWER])

    def routed(request: CompletionRequest) -> Any:
        if request.tool == "query_rewriter":
            return {"think": "", "queries": [{"q": "martian moons phobos"}]}
        return scripted(request)

    thin = FakeSearch(
        lambda q: [
            SearchResult(title=f"r{i}", url=u, snippet="", provider="f") for i, u in enumerate(URLS)
        ]
    )
    reader = CountingReader(delay_s=0.05)
    client, provider = latency_client(routed, latency_s=0.1)
    deps, _ = make_deps(lambda r: None, search=thin, reader=reader)
    deps.llm = client
    deps.rewrite_queries = make_query_rewriter(client, deps.similarity)
    opts = options(max_steps=2, bad_hostnames=["site0.org"])
    await ResearchRun("How many moons has Mars?", deps, opts).run()
    rewrite = next(iv for iv in provider.intervals if iv[0] == "query_rewriter")
    early = [u for u, t in reader.started_at.items() if t < rewrite[2]]
    assert early, "raw results were being read during the rewrite call"
    assert URLS[0] not in reader.reads  # --bad-hostnames: never read, not even ahead
