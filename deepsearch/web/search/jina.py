"""Jina search (s.jina.ai), JSON mode.

Request:  GET {jina_url}/?q=<query>&num=<limit>[&tbs=qdr:<h|d|w|m|y>][&gl=][&hl=]
          Authorization: Bearer <JINA_API_KEY>, Accept: application/json,
          X-Respond-With: no-content (snippets only; we read pages with our own reader)
Response: {"code": 200, "data": [{"title", "url", "description", "content"?, "date"?}], "meta": {...}}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepsearch.web.search.base import HttpSearchProvider, Row, google_params
from deepsearch.web.types import SearchQuery

if TYPE_CHECKING:
    import httpx


class JinaSearch(HttpSearchProvider):
    name = "jina"
    rows_path = ("data",)

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str, *, timeout_s: float = 15
    ) -> None:
        super().__init__(client, base_url.rstrip("/") + "/", api_key, timeout_s=timeout_s)

    def params(self, query: SearchQuery) -> dict[str, Any]:
        return google_params(query)

    def headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self._key}",
            "Accept": "application/json",
            "X-Respond-With": "no-content",
        }

    def row(self, item: dict[str, Any]) -> Row:
        snippet = item.get("description") or item.get("content")
        return item.get("title"), item.get("url"), snippet, item.get("date")
