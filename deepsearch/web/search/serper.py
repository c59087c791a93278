"""Serper (Google results): POST {serper_url} JSON {q, num, tbs?, gl?, hl?}, header X-API-KEY.

Response: {"organic": [{"title", "link", "snippet", "date"?}]}
"""

from __future__ import annotations

from typing import Any

from deepsearch.web.search.base import HttpSearchProvider, Row, google_params
from deepsearch.web.types import SearchQuery


class SerperSearch(HttpSearchProvider):
    name = "serper"
    method = "POST"
    rows_path = ("organic",)

    def body(self, query: SearchQuery) -> dict[str, Any]:
        return google_params(query)

    def payload(self, query: SearchQuery) -> dict[str, Any]:
        return self.body(query)

    def headers(self) -> dict[str, str]:
        return {"X-API-KEY": self._key, "Content-Type": "application/json"}

    def row(self, item: dict[str, Any]) -> Row:
        return item.get("title"), item.get("link"), item.get("snippet"), item.get("date")
