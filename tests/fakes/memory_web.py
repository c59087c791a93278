"""In-memory fakes of the web layer (search and reader) for tests and bench/; not
shipped in the wheel (tests/test_wheel_contents.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult


class FakeSearch:
    """Returns canned results per query (or from a function), recording every query."""

    name = "fake"

    def __init__(
        self,
        results: Mapping[str, list[SearchResult]] | Callable[[SearchQuery], list[SearchResult]],
        *,
        delay_s: float = 0.0,
    ) -> None:
        self._results = results
        self.delay_s = delay_s
        self.queries: list[SearchQuery] = []

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.queries.append(query)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if callable(self._results):
            return list(self._results(query))
        return list(self._results.get(query.q, []))


class FakeReader:
    """Serves pages from a dict of url -> text (or Page); anything else is a 404."""

    def __init__(self, pages: Mapping[str, str | Page], *, delay_s: float = 0.0) -> None:
        self._pages = dict(pages)
        self.delay_s = delay_s
        self.reads: list[str] = []

    async def read(self, url: str) -> Page | ReadFailure:
        self.reads.append(url)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        page = self._pages.get(url)
        if page is None:
            return ReadFailure(url=url, kind="http_status", status=404, detail="not found")
        if isinstance(page, Page):
            return page
        return Page(
            url=url,
            final_url=url,
            title=url.rsplit("/", 1)[-1],
            text=page,
            fetched_at=datetime.now(UTC).isoformat(),
        )
