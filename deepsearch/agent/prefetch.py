"""Read the top-ranked unread URLs in the background while the model decides a step.

A visit then usually finds its pages already read: `read` awaits a read in flight
(or takes a finished one) instead of reading the URL a second time. Prefetching is
bounded (`limit` reads in flight), reads that leave the top of the list are
cancelled (`retain`), and `aclose` cancels everything at the end of the run. No
tokens are spent, so nothing is counted in the budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from deepsearch.agent.limits import MAX_VISITS
from deepsearch.web.types import Page, Reader, ReadFailure

DEFAULT_LIMIT = MAX_VISITS  # what one visit reads
MAX_KEPT = 8  # finished reads kept for a later visit


async def safe_read(reader: Reader, url: str) -> Page | ReadFailure:
    """The reader's result; an exception becomes a failure (the reader promises not
    to raise; stay safe if it does)."""
    try:
        return await reader.read(url)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return ReadFailure(url=url, kind="network", detail=str(exc)[:200] or type(exc).__name__)


class Prefetcher:
    def __init__(self, reader: Reader, *, limit: int = DEFAULT_LIMIT) -> None:
        self.reader = reader
        self.limit = limit
        self._tasks: dict[str, asyncio.Task[Page | ReadFailure]] = {}
        self.started: list[str] = []  # every URL a background read was started for

    def in_flight(self) -> list[str]:
        return [u for u, t in self._tasks.items() if not t.done()]

    def start(self, urls: Iterable[str]) -> None:
        """Begin background reads of `urls` (best first) while fewer than `limit` run."""
        for url in urls:
            if len(self.in_flight()) >= self.limit:
                break
            if url not in self._tasks:
                self._tasks[url] = asyncio.create_task(safe_read(self.reader, url))
                self.started.append(url)
        self._forget_old()

    def retain(self, wanted: Iterable[str]) -> None:
        """Cancel reads in flight that are no longer wanted (finished ones stay)."""
        keep = set(wanted)
        for url, task in list(self._tasks.items()):
            if url not in keep and not task.done():
                task.cancel()
                del self._tasks[url]

    async def read(self, url: str) -> Page | ReadFailure:
        """The URL's page: the background read's result if one was started, else a
        fresh read. Each URL is read at most once."""
        task = self._tasks.pop(url, None)  # retain() drops what it cancels: never stale
        if task is None:
            return await safe_read(self.reader, url)
        return await task

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
