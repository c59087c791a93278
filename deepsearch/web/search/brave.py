"""Brave Search API: GET {brave_url}?q=&count=, header X-Subscription-Token.

Response: {"web": {"results": [{"title", "url", "description", "age"?, "page_age"?}]}}
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

# Brave has no hour window: the past day is the closest wider one.
_FRESHNESS = {"h": "pd", "d": "pd", "w": "pw", "m": "pm", "y": "py"}
_MAX_COUNT = 20  # the API refuses larger pages


class BraveSearch:
    name = "brave"
    supports_site_operator = True

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str, *, timeout_s: float = 15
    ) -> None:
        self._client = client
        self._url = base_url
        self._key = api_key
        self._timeout = timeout_s

    def params(self, query: SearchQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.q, "count": min(query.limit, _MAX_COUNT)}
        if query.time_filter:
            params["freshness"] = _FRESHNESS[query.time_filter]
        if country := region_country(query):
            params["country"] = country
        if language := query_language(query):
            params["search_lang"] = language
        return params

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        data = await request_json(
            self._client,
            self.name,
            "GET",
            self._url,
            params=self.params(query),
            headers={"X-Subscription-Token": self._key, "Accept": "application/json"},
            timeout_s=self._timeout,
        )
        if not isinstance(data, dict):
            raise SearchProviderError(self.name, "bad_response", "not a JSON object")
        web = data.get("web") if isinstance(data.get("web"), dict) else {}
        rows = expect_list(self.name, web.get("results"), "web.results")
        items = (
            (r.get("title"), r.get("url"), r.get("description"), r.get("page_age") or r.get("age"))
            for r in rows
        )
        return make_results(self.name, items, query.limit)
