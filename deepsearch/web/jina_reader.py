"""Reader backed by Jina's hosted reader (r.jina.ai): it fetches and renders remotely.

No SSRF check on the target: the request to the target is made from Jina's
network, not ours. Only http(s) targets are forwarded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from deepsearch.clock import Clock, SystemClock
from deepsearch.web.cache import WebCache, page_cache_key
from deepsearch.web.types import Page, ReadFailure

if TYPE_CHECKING:
    import httpx

    from deepsearch.config import ReaderConfig


def _links(raw: Any, base: str) -> list[tuple[str, str]]:
    """Jina sends links as {anchor: url} or as [[anchor, url], ...]; keep http(s) ones."""
    pairs: list[tuple[str, str]] = []
    if isinstance(raw, dict):
        pairs = [(str(k), str(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, list | tuple) and len(item) == 2:
                pairs.append((str(item[0]), str(item[1])))
            elif isinstance(item, dict) and "url" in item:
                pairs.append((str(item.get("text") or item.get("title") or ""), str(item["url"])))
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for anchor, url in pairs:
        absolute = urljoin(base, url.strip())
        if urlsplit(absolute).scheme in ("http", "https") and absolute not in seen:
            seen.add(absolute)
            links.append((anchor.strip()[:200], absolute))
    return links


class JinaReader:
    name = "jina"

    def __init__(
        self,
        config: ReaderConfig,
        *,
        api_key: str | None = None,
        cache: WebCache | None = None,
        page_ttl_s: float = 86_400,
        http_client: httpx.AsyncClient | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self._api_key = api_key
        self._cache = cache
        self._page_ttl_s = page_ttl_s
        self._client = http_client
        self._owns_client = http_client is None
        self._clock = clock or SystemClock()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            from deepsearch.web.tls import client_context

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
                trust_env=False,
                verify=client_context(trust_env=False),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def read(self, url: str) -> Page | ReadFailure:
        url = url.strip()
        try:
            return await self._read(url)
        except Exception as exc:  # never let a library error reach the agent
            return ReadFailure(url=url, kind="network", detail=type(exc).__name__)

    async def _read(self, url: str) -> Page | ReadFailure:
        import httpx

        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            return ReadFailure(
                url=url, kind="blocked", detail=f"scheme {parts.scheme!r} is not allowed"
            )
        if not parts.hostname:
            return ReadFailure(url=url, kind="invalid_url", detail="URL has no host")
        key = page_cache_key(url)
        if self._cache is not None and (cached := self._cache.get(key)) is not None:
            return Page.model_validate(cached)

        headers = {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "X-With-Links-Summary": "true",
            "X-Timeout": str(int(self.config.timeout_s)),
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        endpoint = self.config.jina_url.rstrip("/") + "/"
        try:
            response = await self._http().post(endpoint, json={"url": url}, headers=headers)
        except httpx.TimeoutException:
            return ReadFailure(url=url, kind="timeout", detail="jina reader timed out")
        except httpx.HTTPError as exc:
            # The message names only the reader endpoint, never our key.
            return ReadFailure(url=url, kind="network", detail=f"jina reader: {type(exc).__name__}")
        if response.status_code >= 400:
            return ReadFailure(
                url=url,
                kind="http_status",
                status=response.status_code,
                detail=_jina_message(response),
            )
        try:
            payload = response.json()
        except ValueError:
            return ReadFailure(url=url, kind="network", detail="jina reader sent invalid JSON")
        data = payload.get("data") if isinstance(payload, dict) else None
        code = payload.get("code", 200) if isinstance(payload, dict) else 200
        if not isinstance(data, dict) or (isinstance(code, int) and code >= 400):
            status = code if isinstance(code, int) else None
            return ReadFailure(
                url=url, kind="http_status", status=status, detail="jina reader error"
            )
        page = self._page(url, data)
        if isinstance(page, ReadFailure):
            return page
        if self._cache is not None:
            self._cache.set(key, page.model_dump(mode="json"), ttl_s=self._page_ttl_s)
        return page

    def _page(self, url: str, data: dict[str, Any]) -> Page | ReadFailure:
        """Jina's `data` object as a Page with plain text (content links first)."""
        final_url = str(data.get("url") or url)
        try:
            text, content_links = _plain(str(data.get("content") or ""), final_url)
        except Exception as exc:  # the markdown converter must never pass for the network
            return ReadFailure(url=url, kind="extract", detail=f"{type(exc).__name__}: {exc}"[:300])
        if not text:
            return ReadFailure(url=url, kind="empty", detail="jina returned no content")
        in_content = {link for _, link in content_links}
        summary = [
            pair for pair in _links(data.get("links"), final_url) if pair[1] not in in_content
        ]
        return Page(
            url=url,
            final_url=final_url,
            title=str(data.get("title") or ""),
            text=text,
            published=data.get("publishedTime") or None,
            links=content_links + summary,
            content_links=len(content_links),
            content_type="text/markdown",
            fetched_at=self._clock.now().isoformat(),
        )


def _plain(markdown: str, base: str) -> tuple[str, list[tuple[str, str]]]:
    """Jina's markdown as the plain text every reader gives, and the links it held."""
    from deepsearch.web.markdown_plain import markdown_to_plain_with_links

    text, links = markdown_to_plain_with_links(markdown, base)
    return text.strip(), links


def _jina_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("readableMessage") or body.get("message") or response.reason_phrase)[
            :300
        ]
    return response.reason_phrase
