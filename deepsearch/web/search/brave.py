"""Brave Search API: GET {brave_url}?q=&count=, header X-Subscription-Token.

Response: {"web": {"results": [{"title", "url", "description", "age"?, "page_age"?}]}}
"""

from __future__ import annotations

from typing import Any

from deepsearch.web.search.base import HttpSearchProvider, Row, locale_params
from deepsearch.web.types import SearchQuery

# Brave has no hour window: the past day is the closest wider one.
_FRESHNESS = {"h": "pd", "d": "pd", "w": "pw", "m": "pm", "y": "py"}
_MAX_COUNT = 20  # the API refuses larger pages


class BraveSearch(HttpSearchProvider):
    name = "brave"
    rows_path = ("web", "results")

    def params(self, query: SearchQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.q, "count": min(query.limit, _MAX_COUNT)}
        if query.time_filter:
            params["freshness"] = _FRESHNESS[query.time_filter]
        params.update(locale_params(query, "country", "search_lang"))
        return params

    def headers(self) -> dict[str, str]:
        return {"X-Subscription-Token": self._key, "Accept": "application/json"}

    def row(self, item: dict[str, Any]) -> Row:
        date = item.get("page_age") or item.get("age")
        return item.get("title"), item.get("url"), item.get("description"), date
