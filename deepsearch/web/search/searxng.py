"""SearXNG through its JSON API: GET {base}/search?q=...&format=json.

The instance must have `json` among its enabled formats (settings.yml `search.formats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepsearch.web.search.base import (
    TIME_WORDS,
    HttpSearchProvider,
    Row,
    expect_list,
    query_language,
)
from deepsearch.web.types import SearchQuery

if TYPE_CHECKING:
    import httpx


class SearxngSearch(HttpSearchProvider):
    name = "searxng"
    supports_site_operator = True  # SearXNG forwards `site:` to engines that support it
    rows_path = ("results",)

    def __init__(self, client: httpx.AsyncClient, base_url: str, *, timeout_s: float = 15) -> None:
        base = base_url.rstrip("/")
        # Accept both the instance root and its /search endpoint as the configured URL.
        url = base if base.endswith("/search") else base + "/search"
        super().__init__(client, url, "", timeout_s=timeout_s)

    def params(self, query: SearchQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.q, "format": "json"}
        if query.time_filter:
            params["time_range"] = TIME_WORDS[query.time_filter]
        language = query_language(query)
        if language:
            params["language"] = language
        return params

    def headers(self) -> dict[str, str]:
        return {"Accept": "application/json"}

    def rows(self, data: Any) -> list[dict[str, Any]]:
        # Unlike the keyed APIs, an answer that is not an object reads as no results.
        return expect_list(
            self.name, data.get("results") if isinstance(data, dict) else None, "results"
        )

    def row(self, item: dict[str, Any]) -> Row:
        return item.get("title"), item.get("url"), item.get("content"), item.get("publishedDate")
