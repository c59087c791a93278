"""SearXNG through its JSON API: GET {base}/search?q=...&format=json.

The instance must have `json` among its enabled formats (settings.yml `search.formats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepsearch.web.search.base import (
    TIME_WORDS,
    expect_list,
    make_results,
    query_language,
    request_json,
)
from deepsearch.web.types import SearchQuery, SearchResult

if TYPE_CHECKING:
    import httpx


class SearxngSearch:
    name = "searxng"
    supports_site_operator = True  # SearXNG forwards `site:` to engines that support it

    def __init__(self, client: httpx.AsyncClient, base_url: str, *, timeout_s: float = 15) -> None:
        self._client = client
        base = base_url.rstrip("/")
        # Accept both the instance root and its /search endpoint as the configured URL.
        self._url = base if base.endswith("/search") else base + "/search"
        self._timeout = timeout_s

    def params(self, query: SearchQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.q, "format": "json"}
        if query.time_filter:
            params["time_range"] = TIME_WORDS[query.time_filter]
        language = query_language(query)
        if language:
            params["language"] = language
        return params

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        data = await request_json(
            self._client,
            self.name,
            "GET",
            self._url,
            params=self.params(query),
            headers={"Accept": "application/json"},
            timeout_s=self._timeout,
        )
        rows = expect_list(
            self.name, data.get("results") if isinstance(data, dict) else None, "results"
        )
        items = (
            (r.get("title"), r.get("url"), r.get("content"), r.get("publishedDate")) for r in rows
        )
        return make_results(self.name, items, query.limit)
