"""Jina search (s.jina.ai), JSON mode.

Request:  GET {jina_url}/?q=<query>&num=<limit>[&tbs=qdr:<h|d|w|m|y>][&gl=][&hl=]
          Authorization: Bearer <JINA_API_KEY>, Accept: application/json,
          X-Respond-With: no-content (snippets only; we read pages with our own reader)
Response: {"code": 200, "data": [{"title", "url", "description", "content"?, "date"?}], "meta": {...}}
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


class JinaSearch:
    name = "jina"
    supports_site_operator = True

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str, *, timeout_s: float = 15
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/"
        self._key = api_key
        self._timeout = timeout_s

    def params(self, query: SearchQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.q, "num": query.limit}
        if query.time_filter:
            params["tbs"] = f"qdr:{query.time_filter}"
        if country := region_country(query):
            params["gl"] = country
        if language := query_language(query):
            params["hl"] = language
        return params

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        data = await request_json(
            self._client,
            self.name,
            "GET",
            self._url,
            params=self.params(query),
            headers={
                "Authorization": f"Bearer {self._key}",
                "Accept": "application/json",
                "X-Respond-With": "no-content",
            },
            timeout_s=self._timeout,
        )
        if not isinstance(data, dict):
            raise SearchProviderError(self.name, "bad_response", "not a JSON object")
        rows = expect_list(self.name, data.get("data"), "data")
        items = (
            (r.get("title"), r.get("url"), r.get("description") or r.get("content"), r.get("date"))
            for r in rows
        )
        return make_results(self.name, items, query.limit)
