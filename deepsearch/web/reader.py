"""The page reader: `read(url)` -> Page | ReadFailure, never an exception.

The local reader fetches with one shared httpx client whose connections go
through the SSRF guard, follows redirects by hand (the guard runs on every
hop), streams bodies under a byte cap, and extracts text in a worker thread
(`read` = `fetch_raw` + `extract_raw`: a prefetch stops after the fetch). Each host gets `per_host_concurrency` reads at once until it answers 429/503:
then that read waits (Retry-After, capped) and is retried once, and the host's
limit is halved for the rest of the run.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel

from deepsearch.clock import Clock, SystemClock
from deepsearch.web import warmup
from deepsearch.web.cache import WebCache, page_cache_key
from deepsearch.web.host_limits import HostLimiter, retry_after_s
from deepsearch.web.ssrf import BlockedURL, HostResolutionError, Resolver, SSRFGuard
from deepsearch.web.types import Page, RawPage, ReadFailure, ReadFailureKind

if TYPE_CHECKING:
    import httpx

    from deepsearch.config import ReaderConfig, Settings
    from deepsearch.web.jina_reader import JinaReader

USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
DEFAULT_HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": (
        "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf;q=0.9,"
        "text/plain;q=0.8,application/json;q=0.8,*/*;q=0.5"
    ),
    "Accept-Language": "en-US,en;q=0.9",
}
R = TypeVar("R")
_REDIRECT_CODES = {301, 302, 303, 307, 308}
THROTTLE_CODES = {429, 503}


class _Throttled(BaseModel):
    """A 429/503 answer: the host asks us to slow down."""

    failure: ReadFailure
    retry_after_s: float | None = None


def _unexpected(url: str, exc: Exception) -> ReadFailure:
    return ReadFailure(url=url, kind="network", detail=f"{type(exc).__name__}: {exc}"[:300])


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def classify_connect_error(exc: BaseException) -> str:
    """dns / tls / refused / network for a failed connection."""
    import socket

    chain = _exception_chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ssl.SSLError | ssl.CertificateError) for e in chain) or any(
        word in text for word in ("ssl", "certificate", "tls")
    ):
        return "tls"
    if any(isinstance(e, socket.gaierror | HostResolutionError) for e in chain) or any(
        word in text
        for word in ("name or service not known", "nodename nor servname", "getaddrinfo")
    ):
        return "dns"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "refused"
    return "network"


class LocalReader:
    """Reads pages itself (httpx + trafilatura/pypdf)."""

    def __init__(
        self,
        config: ReaderConfig,
        *,
        cache: WebCache | None = None,
        page_ttl_s: float = 86_400,
        http_client: httpx.AsyncClient | None = None,
        resolver: Resolver | None = None,
        guard: SSRFGuard | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self._cache = cache
        self._page_ttl_s = page_ttl_s
        self._guard = guard or SSRFGuard(allow_private=config.allow_private_urls, resolver=resolver)
        self._client = http_client
        self._owns_client = http_client is None
        self._clock = clock or SystemClock()
        self._global_slots: asyncio.Semaphore | None = None
        self._host_slots: dict[str, HostLimiter] = {}
        # Wait before retrying a throttled read: Retry-After when sent, capped so a
        # "come back in an hour" cannot stall a run; default when none is sent.
        self.max_retry_wait_s = 5.0
        self.default_retry_wait_s = 1.0
        self._extractors_warm = False

    # ------------------------------------------------------------ plumbing

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            from deepsearch.web.ssrf import guarded_transport

            self._client = httpx.AsyncClient(
                transport=guarded_transport(self._guard),
                timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
                headers=DEFAULT_HEADERS,
                follow_redirects=False,
                trust_env=False,  # a proxy from the environment would bypass the guard
            )
        return self._client

    def _host_slot(self, host: str) -> HostLimiter:
        slot = self._host_slots.get(host)
        if slot is None:
            slot = HostLimiter(self.config.per_host_concurrency)
            self._host_slots[host] = slot
        return slot

    def host_limit(self, host: str) -> int:
        """How many reads of `host` may run at once now (lowered after a 429/503)."""
        return self._host_slot(host).limit

    def _global_slot(self) -> asyncio.Semaphore:
        if self._global_slots is None:
            self._global_slots = asyncio.Semaphore(self.config.global_concurrency)
        return self._global_slots

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
        self._client = None if self._owns_client else self._client

    # ------------------------------------------------------------ reading

    async def read(self, url: str) -> Page | ReadFailure:
        fetched = await self.fetch_raw(url)
        return await self.extract_raw(fetched) if isinstance(fetched, RawPage) else fetched

    def warm(self) -> None:
        """Start the extractor's one-time set-up (warmup) in the background, once: the
        agent calls this as soon as a visit is likely (search results came back), so
        it overlaps the calls before the visit, not only the visit's first fetch."""
        if not self._extractors_warm:
            self._extractors_warm = True
            warmup.start()

    async def fetch_raw(self, url: str) -> RawPage | Page | ReadFailure:
        """The body, not yet extracted (a cached page comes whole)."""
        url = url.strip()
        self.warm()  # at the latest: the extractor's imports beside the first fetch
        try:
            return await self._fetch_raw(url)
        except Exception as exc:  # the agent must never see a raw library error
            return _unexpected(url, exc)

    async def _fetch_raw(self, url: str) -> RawPage | Page | ReadFailure:
        try:
            host, _ = self._guard.check_scheme(url)
        except BlockedURL as exc:
            blocked = bool(urlsplit(url).scheme) and "scheme" in str(exc)
            kind: ReadFailureKind = "blocked" if blocked else "invalid_url"
            return ReadFailure(url=url, kind=kind, detail=str(exc))
        if self._cache is not None:
            cached = self._cache.get(page_cache_key(url))
            if cached is not None:
                # The page may have been cached by a run with --allow-private-urls: this
                # run's guard must still approve the host before the page is served.
                if not self._guard.allow_private:
                    try:
                        await self._guard.check_url(url)
                    except BlockedURL as exc:
                        return ReadFailure(url=url, kind="blocked", detail=str(exc))
                    except HostResolutionError as exc:
                        return ReadFailure(url=url, kind="dns", detail=str(exc))
                return Page.model_validate(cached)
        return await self._fetch_polite(host, url)

    async def extract_raw(self, fetched: RawPage) -> Page | ReadFailure:
        """The second half of `read`: the page's text (in a worker thread), cached."""
        try:
            return await self._extract(fetched)
        except Exception as exc:  # the agent must never see a raw library error
            return _unexpected(fetched.url, exc)

    async def _extract(self, fetched: RawPage) -> Page | ReadFailure:
        url = fetched.url
        try:
            from deepsearch.web.extract import Unsupported, extract_body

            result = await asyncio.to_thread(
                _extract_warm, extract_body, fetched.body, fetched.content_type, fetched.final_url
            )
        except Exception as exc:  # ImportError of a parser included: not a network error
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]  # one line
            return ReadFailure(url=url, kind="extract", detail=detail)
        if isinstance(result, Unsupported):
            return ReadFailure(url=url, kind="unsupported_type", detail=result.content_type)
        if not result.text.strip():
            return ReadFailure(url=url, kind="empty", detail="no text could be extracted")
        page = Page(
            url=url,
            final_url=fetched.final_url,
            title=result.title,
            text=result.text,
            published=result.published,
            links=result.links,
            content_links=result.content_links,
            content_type=fetched.content_type.split(";")[0].strip().lower() or "text/plain",
            fetched_at=self._clock.now().isoformat(),
        )
        if self._cache is not None:
            self._cache.set(
                page_cache_key(url), page.model_dump(mode="json"), ttl_s=self._page_ttl_s
            )
        return page

    async def _fetch_polite(self, host: str, url: str) -> RawPage | ReadFailure:
        """Fetch under the host's and the global limit; one retry after a 429/503."""
        limiter = self._host_slot(host)
        first = await self._fetch_limited(limiter, url)
        if not isinstance(first, _Throttled):
            return first
        wait = self.default_retry_wait_s if first.retry_after_s is None else first.retry_after_s
        await self._clock.sleep(min(wait, self.max_retry_wait_s))
        second = await self._fetch_limited(limiter, url)
        return second.failure if isinstance(second, _Throttled) else second  # no third try

    async def _fetch_limited(
        self, limiter: HostLimiter, url: str
    ) -> RawPage | _Throttled | ReadFailure:
        """One fetch inside the host's and the global slot; a throttled answer lowers
        the host's limit (once per generation of concurrent reads)."""
        async with limiter, self._global_slot():
            generation = limiter.generation
            fetched = await self._fetch_mapped(url)
        if isinstance(fetched, _Throttled):
            limiter.throttled(since=generation)
        return fetched

    async def _fetch_mapped(self, url: str) -> RawPage | _Throttled | ReadFailure:
        """_fetch with the total timeout, every error mapped to a ReadFailure."""
        import httpx

        try:
            return await asyncio.wait_for(self._fetch(url), self.config.timeout_s)
        except BlockedURL as exc:
            return ReadFailure(url=url, kind="blocked", detail=str(exc))
        except HostResolutionError as exc:
            return ReadFailure(url=url, kind="dns", detail=str(exc))
        except (TimeoutError, httpx.TimeoutException):
            return ReadFailure(
                url=url, kind="timeout", detail=f"no complete answer in {self.config.timeout_s:g}s"
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return ReadFailure(url=url, kind="invalid_url", detail=str(exc))
        except httpx.ConnectError as exc:
            kind = classify_connect_error(exc)
            return ReadFailure(url=url, kind=kind, detail=str(exc)[:300])  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            return ReadFailure(url=url, kind="network", detail=f"{type(exc).__name__}: {exc}"[:300])

    async def _fetch(self, url: str) -> RawPage | _Throttled | ReadFailure:
        client = self._http()
        seen = {url}
        current = url
        for _hop in range(self.config.max_redirects + 1):
            # Early, clear refusal (and the only check for an injected client); our own
            # transport checks again and pins the address when it connects.
            await self._guard.check_url(current)
            async with client.stream("GET", current, follow_redirects=False) as response:
                self._check_peer(response)
                status = response.status_code
                location = response.headers.get("location")
                if status in _REDIRECT_CODES and location:
                    target = urljoin(str(response.url), location.strip())
                    if target in seen:
                        return ReadFailure(
                            url=url,
                            kind="http_status",
                            status=status,
                            detail=f"redirect loop at {target}",
                        )
                    seen.add(target)
                    current = target
                    continue
                if status >= 400 or not 200 <= status < 300:
                    failure = ReadFailure(
                        url=url, kind="http_status", status=status, detail=response.reason_phrase
                    )
                    if status in THROTTLE_CODES:
                        wait = retry_after_s(response.headers.get("retry-after"), self._clock)
                        return _Throttled(failure=failure, retry_after_s=wait)
                    return failure
                return await self._read_body(url, response)
        return ReadFailure(
            url=url,
            kind="http_status",
            status=status,
            detail=f"more than {self.config.max_redirects} redirects",
        )

    def _check_peer(self, response: httpx.Response) -> None:
        """The address actually connected to (covers injected clients too)."""
        stream = response.extensions.get("network_stream")
        if stream is None:
            return
        try:
            peer: Any = stream.get_extra_info("server_addr")
        except Exception:  # backends without socket info: nothing to verify
            return
        self._guard.check_peer(peer)

    async def _read_body(self, url: str, response: httpx.Response) -> RawPage | ReadFailure:
        from deepsearch.web.extract import classify, split_content_type

        limit = self.config.max_bytes
        content_type = response.headers.get("content-type", "")
        mime, _ = split_content_type(content_type)
        if mime and mime not in ("application/octet-stream", "binary/octet-stream"):
            if classify(mime, b"") is None:  # refuse before downloading anything
                return ReadFailure(url=url, kind="unsupported_type", detail=mime)
        declared = response.headers.get("content-length", "")
        if (
            declared.isdigit()
            and int(declared) > limit
            and "content-encoding" not in response.headers
        ):
            return ReadFailure(url=url, kind="too_large", detail=f"{declared} bytes declared")
        body = bytearray()
        async for chunk in response.aiter_bytes():  # decoded: a gzip bomb hits the cap too
            body += chunk
            if len(body) > limit:
                return ReadFailure(url=url, kind="too_large", detail=f"over {limit} bytes")
        return RawPage(
            url=url, final_url=str(response.url), content_type=content_type, body=bytes(body)
        )


def _extract_warm(extract: Callable[[bytes, str | None, str], R], *args: Any) -> R:
    """`extract(*args)` once the extractor's one-time set-up is done (warmup.ensure):
    the pages of a visit, extracted at once, never each build it."""
    warmup.ensure()
    return extract(*args)


def build_reader(
    settings: Settings,
    *,
    cache: WebCache | None = None,
    http_client: httpx.AsyncClient | None = None,
    resolver: Resolver | None = None,
    clock: Clock | None = None,
) -> LocalReader | JinaReader:
    """The reader the configuration asks for (settings.reader.provider)."""
    if settings.reader.provider == "jina":
        from deepsearch.web.jina_reader import JinaReader

        key = settings.keys.jina_api_key
        return JinaReader(
            settings.reader,
            api_key=key.get_secret_value() if key else None,
            cache=cache,
            page_ttl_s=settings.cache.page_ttl_s,
            http_client=http_client,
            clock=clock,
        )
    return LocalReader(
        settings.reader,
        cache=cache,
        page_ttl_s=settings.cache.page_ttl_s,
        http_client=http_client,
        resolver=resolver,
        clock=clock,
    )
