"""Fetch the top-ranked unread URLs in the background while the model decides a step.

A visit then usually finds its pages already fetched: `read` awaits a fetch in flight
(or takes a finished one) instead of fetching the URL a second time. With a reader
that reads in two phases (`TwoPhaseReader`: the local one), a background read of a
page below the best EAGER stops after the fetch and the page is extracted only when a
visit reads it, so a prefetched page nobody reads costs no extraction (the best
EAGER, which a visit reads all but always, are extracted while the model decides).
Prefetching is bounded (`limit` reads in flight), reads that leave the top of the list
or that the model did not pick are cancelled (`retain`), and `aclose` cancels
everything at the end of the run.
No tokens are spent, so nothing is counted in the budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, TypeVar, runtime_checkable

from deepsearch.agent.limits import MAX_VISITS
from deepsearch.web.types import Page, RawPage, Reader, ReadFailure, TwoPhaseReader

# A visit reads the model's picks first, then tops up to MAX_VISITS with the pages read
# ahead for its step (`ahead`), never with one it would fetch after the decision. With
# the ranked top MAX_VISITS ahead, that is the same set of pages a visit read when it
# fetched its top-ups itself; a prefetched page goes unread only when a pick lies
# outside that top (1 fetch in 31 on the lean bench's five questions). With
# MAX_VISITS - 1 ahead, the fifth page was fetched after the decision (0.2-0.8 s).
DEFAULT_LIMIT = MAX_VISITS
# The best EAGER pages ahead are extracted as soon as fetched, while the model decides:
# a visit reads them unless three or more of its picks lie outside what was read ahead
# (its top-ups are the best pages ahead), so their extraction leaves the wait after the
# decision. The rest are extracted only when a visit reads them.
EAGER = MAX_VISITS - 2
MAX_KEPT = 8  # finished reads kept for a later visit
# The reads of a step start this many event-loop turns after its decision's LLM call:
# the call writes its request within them (on a kept-alive connection nothing waits
# before it), while the first reads' synchronous start (the reader's client and TLS
# context, made on first use) held that request back ~0.3 s when they ran first.
LEAD_TURNS = 10
_T = TypeVar("_T")


@runtime_checkable
class _Warmable(Protocol):
    def warm(self) -> None: ...


def warm_reader(reader: Reader) -> None:
    """A visit is likely soon: a reader with a one-time set-up (the local one's
    extractor imports, ~0.3-0.6 s of CPU) starts it now in the background, beside the
    LLM calls before the visit, rather than beside the visit's first fetch (where, on
    a busy machine, it was still running when the model had decided)."""
    if isinstance(reader, _Warmable):
        reader.warm()


async def safe_read(reader: Reader, url: str) -> Page | ReadFailure:
    """The reader's result; an exception becomes a failure (the reader promises not
    to raise; stay safe if it does)."""
    return await _safe(reader.read(url), url)


async def _safe(call: Awaitable[_T], url: str) -> _T | ReadFailure:
    try:
        return await call
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return ReadFailure(url=url, kind="network", detail=str(exc)[:200] or type(exc).__name__)


async def safe_fetch(reader: Reader, url: str) -> Page | RawPage | ReadFailure:
    """A background read: the fetch alone when the reader has two phases."""
    if isinstance(reader, TwoPhaseReader):
        return await _safe(reader.fetch_raw(url), url)
    return await safe_read(reader, url)


async def after_sent(call: Awaitable[_T], then: Callable[[], object]) -> _T:
    """`call`'s result, with `then()` run LEAD_TURNS event-loop turns after the call
    began: work beside an LLM call starts once its request is on the wire, never
    holding it back."""
    task = asyncio.ensure_future(call)
    try:
        for _ in range(LEAD_TURNS):
            if task.done():
                break
            await asyncio.sleep(0)
        then()
        return await task
    except BaseException:
        task.cancel()  # cut short (Ctrl-C, --timeout): the call stops with the step
        raise


class Prefetcher:
    def __init__(self, reader: Reader, *, limit: int = DEFAULT_LIMIT) -> None:
        self.reader = reader
        self.limit = limit
        self._tasks: dict[str, asyncio.Task[Page | RawPage | ReadFailure]] = {}
        self.started: list[str] = []  # every URL a background read was started for
        self.ahead: list[str] = []  # the last `start`'s URLs being (or already) read

    def in_flight(self) -> list[str]:
        return [u for u, t in self._tasks.items() if not t.done()]

    def start(self, urls: Iterable[str]) -> None:
        """Begin background reads of `urls` (best first) while fewer than `limit` run."""
        urls = list(urls)
        for rank, url in enumerate(urls):
            if len(self.in_flight()) >= self.limit:
                break
            if url not in self._tasks:
                read = safe_read if rank < EAGER else safe_fetch
                self._tasks[url] = asyncio.create_task(read(self.reader, url))
                self.started.append(url)
        self._forget_old()
        self.ahead = [url for url in urls if url in self._tasks]

    def retain(self, wanted: Iterable[str]) -> None:
        """Cancel reads in flight that are no longer wanted (finished ones stay)."""
        keep = set(wanted)
        for url, task in list(self._tasks.items()):
            if url not in keep and not task.done():
                task.cancel()
                del self._tasks[url]

    async def behind(
        self, call: Awaitable[_T], wanted: list[str], *, also: Callable[[], object] | None = None
    ) -> _T:
        """`call`'s result (the step's decision), with the reads of `wanted` started
        LEAD_TURNS turns after it (reads no longer wanted stop at once), then `also()`."""
        self.retain(wanted)

        def then() -> None:
            self.start(wanted)
            if also is not None:
                also()

        return await after_sent(call, then)

    async def read(self, url: str) -> Page | ReadFailure:
        """The URL's page: the background read's result if one was started (extracted
        now), else a fresh read. Each URL is fetched at most once."""
        task = self._tasks.pop(url, None)  # retain() drops what it cancels: never stale
        if task is None:
            return await safe_read(self.reader, url)
        fetched = await task
        return await self._extract(fetched) if isinstance(fetched, RawPage) else fetched

    async def _extract(self, fetched: RawPage) -> Page | ReadFailure:
        if not isinstance(self.reader, TwoPhaseReader):  # never: only its fetch_raw makes one
            return ReadFailure(url=fetched.url, kind="extract", detail="no extractor")
        return await _safe(self.reader.extract_raw(fetched), fetched.url)

    async def aclose(self) -> None:
        """Cancel every background read and wait for them to finish."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget_old(self) -> None:
        done = [u for u, t in self._tasks.items() if t.done()]
        for url in done[: max(0, len(done) - MAX_KEPT)]:
            del self._tasks[url]
