"""Background reads of the top unread URLs while the model decides."""

from __future__ import annotations

import asyncio
from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.prefetch import Prefetcher
from deepsearch.llm.base import CompletionRequest
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tracker import TokenTracker
from deepsearch.web.types import Page, RawPage, ReadFailure, SearchResult
from tests.agent.helpers import (
    InFlightProvider,
    counting_client,
    evaluator_reply,
    make_deps,
    options,
)
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import offline_settings

URLS = [f"https://site{i}.org/page" for i in range(6)]


class CountingReader(FakeReader):
    """A slow reader that records reads started, finished and cancelled; each start
    goes into `log` (shared with the LLM's) as ("read", url), each end as ("done", url),
    so order shows overlap.
    `ticks`: a read also yields that many turns to the event loop first, a latency
    counted in the loop's turns (as the fake LLM's), not in seconds."""

    def __init__(self, delay_s: float, ticks: int = 0) -> None:
        super().__init__({u: f"Text of {u} about moons of Mars." for u in URLS}, delay_s=delay_s)
        self.ticks = ticks
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self.log: list[tuple[str, str]] = []

    def started_at(self, url: str) -> int:
        return self.log.index(("read", url))

    async def read(self, url: str) -> Page | ReadFailure:
        self.log.append(("read", url))
        try:
            for _ in range(self.ticks):
                await asyncio.sleep(0)
            page = await super().read(url)
        except asyncio.CancelledError:
            self.cancelled.append(url)
            raise
        self.finished.append(url)
        self.log.append(("done", url))
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
    reader = CountingReader(delay_s=0, ticks=200)  # ten times a model call's 20
    client, provider = counting_client(loop_llm([SEARCH, VISIT, ANSWER]), log=reader.log)
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=5))
    result = await run.run()
    assert result.status == "answered"
    assert len(reader.reads) == len(set(reader.reads)), "no URL is read twice"
    visited = run.state.visited
    ahead = run.prefetch.started
    # Five pages were already being read while the model decided to visit (step 2);
    # its picks among them, the visit tops up with the rest and fetches nothing after.
    assert len(ahead) == 5 and sorted(visited) == sorted(ahead)
    start, end = provider.calls_of("agent")[1]
    assert all(start < reader.started_at(u) < end for u in ahead)
    # still in flight when the model had decided: the visit awaited them
    assert all(reader.log.index(("done", u)) > end for u in ahead)
    assert [u for u in reader.reads if reader.started_at(u) > end] == []


async def test_background_reads_are_cancelled_when_the_run_ends() -> None:
    reader = CountingReader(delay_s=3600)  # would hang the run (and the suite) if left running
    client, _ = counting_client(loop_llm([SEARCH, ANSWER]))
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=3, timeout_s=20))
    result = await run.run()
    assert result.status == "answered"
    assert run.prefetch.started  # reads began while the model decided step 2
    await asyncio.sleep(0)
    assert sorted(reader.cancelled) == sorted(run.prefetch.started)
    assert not run.prefetch.in_flight() and not reader.finished


async def test_nothing_is_prefetched_while_the_rewriter_thinks_nor_from_a_bad_host() -> None:
    """The engine's order is not the ranked list a visit reads: reads started during
    the rewrite were mostly wasted. The step after the search prefetches instead."""
    from deepsearch.agent.steps.rewrite import make_query_rewriter

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
    client, provider = counting_client(routed, log=reader.log)
    deps, _ = make_deps(lambda r: None, search=thin, reader=reader)
    deps.llm = client
    deps.rewrite_queries = make_query_rewriter(client, deps.similarity)
    opts = options(max_steps=2, bad_hostnames=["site0.org"])
    await ResearchRun("How many moons has Mars?", deps, opts).run()
    ((_, rewritten),) = provider.calls_of("query_rewriter")
    reads = [i for i, (edge, _) in enumerate(reader.log) if edge == "read"]
    assert reads and all(i > rewritten for i in reads)
    assert URLS[0] not in reader.reads  # --bad-hostnames: never read, not even ahead


class TwoPhase(CountingReader):
    """A two-phase reader (as the local one): counts fetches and extractions."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(delay_s)
        self.fetched: list[str] = []
        self.extracted: list[str] = []

    async def fetch_raw(self, url: str) -> RawPage | Page | ReadFailure:
        self.fetched.append(url)
        await asyncio.sleep(self.delay_s)
        return RawPage(url=url, final_url=url, content_type="text/plain", body=b"moons")

    async def extract_raw(self, fetched: RawPage) -> Page | ReadFailure:
        self.extracted.append(fetched.url)
        self.log.append(("extract", fetched.url))
        return await FakeReader.read(self, fetched.url)

    async def read(self, url: str) -> Page | ReadFailure:
        fetched = await self.fetch_raw(url)
        assert isinstance(fetched, RawPage)
        return await self.extract_raw(fetched)


async def test_a_prefetched_page_that_is_not_read_is_never_extracted() -> None:
    # The model picks the 5th and 6th results: a visit reads them, then tops up with the
    # ranked top 3; the 4th, prefetched, is never read, so never extracted (nor is a
    # 6th fetched after the decision: the top-ups are the pages read ahead).
    reader = TwoPhase(delay_s=0.01)
    picks = {"think": "", "action": {"visit": {"url_indices": [5, 6]}}}
    client, _ = counting_client(loop_llm([SEARCH, picks, ANSWER]))
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    result = await run.run()
    assert result.status == "answered"
    assert len(run.prefetch.started) == 5  # the ranked top five
    assert len(reader.fetched) == len(set(reader.fetched)), "no URL is fetched twice"
    unread = [u for u in reader.fetched if u not in run.state.visited]
    assert unread and not set(unread) & set(reader.extracted)
    assert sorted(reader.extracted) == sorted(run.state.visited)


class HeldReader(CountingReader):
    """Every read waits until `release` is set: still in flight when the model decides."""

    def __init__(self) -> None:
        super().__init__(delay_s=0)
        self.release = asyncio.Event()

    async def read(self, url: str) -> Page | ReadFailure:
        self.log.append(("read", url))
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.append(url)
            raise
        return await FakeReader.read(self, url)


async def test_reads_the_model_did_not_pick_stop_at_its_decision() -> None:
    reader = HeldReader()
    reflect = {"think": "", "action": {"reflect": {"questions": ["Which moons?"]}}}
    client, _ = counting_client(loop_llm([SEARCH, reflect, VISIT, ANSWER]))
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=5, timeout_s=20))
    dedup = deps.similarity.dedup
    in_flight: dict[str, list[str]] = {}

    async def recording(fresh: list[str], *args: Any, **kw: Any) -> list[str]:
        for text in fresh:  # as each action runs: the search's queries, the reflection's
            in_flight[text] = run.prefetch.in_flight()
        if "Which moons?" in fresh:
            reader.release.set()  # the reads still running from now on end at once
        return await dedup(fresh, *args, **kw)

    deps.similarity.dedup = recording  # type: ignore[method-assign]
    await run.run()
    first = run.prefetch.started[:5]
    assert len(first) == 5  # after the search: a visit was likely
    # The model reflected instead: its decision stopped them, before the reflection ran.
    assert in_flight["Which moons?"] == []
    await asyncio.sleep(0)
    assert set(first) <= set(reader.cancelled)
    # The visit after the reflection had nothing read ahead: topped up by rank to five.
    assert len(run.state.visited) == 5 and len(run.state.read_urls) == 5


async def test_the_step_after_a_visit_prefetches_nothing() -> None:
    reader = CountingReader(delay_s=0.01)
    client, _ = counting_client(loop_llm([SEARCH, VISIT, ANSWER]))
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    await run.run()
    assert len(run.state.visited) == 5  # the picks and the top-ups read ahead
    assert reader.reads == list(dict.fromkeys(reader.reads))  # each URL once
    assert set(reader.reads) == set(run.state.visited)  # the 6th never fetched ahead


async def test_a_visit_tops_up_only_with_pages_read_ahead_never_fetching_after() -> None:
    # Only three read ahead (a smaller limit): the visit reads its picks (in those three)
    # and tops up with the third, not with the ranked 4th and 5th fetched after.
    reader = CountingReader(delay_s=0.01)
    client, provider = counting_client(loop_llm([SEARCH, VISIT, ANSWER]), log=reader.log)
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    run.prefetch = Prefetcher(reader, limit=3)
    result = await run.run()
    assert result.status == "answered"
    assert len(run.prefetch.started) == 3 and sorted(run.state.visited) == sorted(URLS[:3])
    _, decided = provider.calls_of("agent")[1]
    assert [u for u in reader.reads if reader.started_at(u) > decided] == []


class SlowToSend(InFlightProvider):
    """Yields a few event-loop turns before its request is on the wire (logged as
    "start"), as the SDK's client does (its pool, its locks) before writing."""

    async def complete(self, request: CompletionRequest) -> Any:
        for _ in range(3):
            await asyncio.sleep(0)
        return await super().complete(request)


async def test_the_reads_ahead_start_after_the_decisions_request_is_sent() -> None:
    reader = CountingReader(delay_s=0.01)
    provider = SlowToSend(loop_llm([SEARCH, VISIT, ANSWER]), log=reader.log)
    settings = offline_settings()
    tracker = TokenTracker(200_000)
    client = LLMClient(
        provider=provider, provider_name="openai", settings=settings, tracker=tracker
    )
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    assert (await run.run()).status == "answered"
    start, end = provider.calls_of("agent")[1]
    assert all(start < reader.started_at(u) < end for u in run.prefetch.started[:5])


async def test_a_decision_cut_short_stops_with_its_step() -> None:
    prefetch = Prefetcher(CountingReader(delay_s=0.01))
    started, stopped = asyncio.Event(), asyncio.Event()

    async def decision() -> None:
        started.set()
        try:
            await asyncio.Event().wait()  # a model that never replies
        finally:
            stopped.set()

    step = asyncio.create_task(prefetch.behind(decision(), URLS[:2]))
    await started.wait()  # within the lead turns: the reads have not started yet
    assert prefetch.in_flight() == []
    step.cancel()  # Ctrl-C, --timeout
    await asyncio.gather(step, return_exceptions=True)
    await asyncio.sleep(0)
    assert stopped.is_set() and prefetch.in_flight() == []
    await prefetch.aclose()


async def test_the_best_pages_ahead_are_extracted_while_the_model_decides() -> None:
    # A visit reads the best three ahead unless three of its picks lie outside: their
    # extraction runs during the decision; the 4th and 5th wait for the visit to read them.
    reader = TwoPhase(delay_s=0.0)
    client, provider = counting_client(loop_llm([SEARCH, VISIT, ANSWER]), log=reader.log)
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    assert (await run.run()).status == "answered"
    ahead = run.prefetch.started
    start, end = provider.calls_of("agent")[1]
    extracted_at = {u: reader.log.index(("extract", u)) for u in ahead}
    assert all(start < extracted_at[u] < end for u in ahead[:3])
    assert all(extracted_at[u] > end for u in ahead[3:5])
    assert sorted(reader.extracted) == sorted(run.state.visited)  # none extracted twice
