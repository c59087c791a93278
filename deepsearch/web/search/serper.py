"""Serper (Google results): POST {serper_url} JSON {q, num, tbs?, gl?, hl?}, header X-API-KEY.

Response: {"organic": [{"title", "link", "snippet", "date"?}]}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepsearch.web.search.base import (
    SearchProviderError,
    expect_list,
    make_results,
    query_language,
    region_country,
    request_json,
)
from deepsearch.web.types import SearchQuery, SearchResult

if TYPE_CHECKING:
    import httpx


class SerperSearch:
    name = "serper"
    supports_site_operator = True

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str, *, timeout_s: float = 15
    ) -> None:
        self._client = client
        self._url = base_url
        self._key = api_key
        self._timeout = timeout_s

    def body(self, query: SearchQuery) -> dict[str, Any]:
        body: dict[str, Any] = {"q": query.q, "num": query.limit}
        if query.time_filter:
            body["tbs"] = f"qdr:{query.time_filter}"
        if country := region_country(query):
            body["gl"] = country
        if language := query_language(query):
            body["hl"] = language
        return body

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        data = await request_json(
            self._client,
            self.name,
            "POST",
            self._url,
            json_body=self.body(query),
            headers={"X-API-KEY": self._key, "Content-Type": "application/json"},
            timeout_s=self._timeout,
        )
        if not isinstance(data, dict):
            raise SearchProviderError(self.name, "bad_response", "not a JSON object")
        rows = expect_list(self.name, data.get("organic"), "organic")
        items = ((r.get("title"), r.get("link"), r.get("snippet"), r.get("date")) for r in rows)
        return make_results(self.name, items, query.limit)
