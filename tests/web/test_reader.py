"""The local reader against a real loopback HTTP server (guard opted out: loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from deepsearch.config import ReaderConfig
from deepsearch.web.cache import WebCache
from deepsearch.web.reader import LocalReader
from deepsearch.web.types import Page, ReadFailure
from tests.fakes.clock import FakeClock
from tests.fakes.web_server import CYRILLIC_TEXT, LATIN1_TEXT, LoopbackServer, site_routes


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackServer]:
    with LoopbackServer(routes=site_routes()) as server:
        yield server


def make_reader(**overrides: object) -> LocalReader:
    config = ReaderConfig(allow_private_urls=True, **overrides)  # type: ignore[arg-type]
    return LocalReader(config, clock=FakeClock())


@pytest.fixture
async def reader() -> AsyncIterator[LocalReader]:
    r = make_reader()
    yield r
    await r.aclose()


def page(result: Page | ReadFailure) -> Page:
    assert isinstance(result, Page), result
    return result


def failure(result: Page | ReadFailure) -> ReadFailure:
    assert isinstance(result, ReadFailure), result
    return result


async def test_html_article_plain_text_table_links_metadata(
    site: LoopbackServer, reader: LocalReader
) -> None:
    p = page(await reader.read(site.url("/article")))
    assert p.title == "Tidal Power in the Bay of Fundy"
    assert p.published == "2024-05-17"
    assert "highest tides in the world" in p.text
    assert "\n| 2016 | 2.0 |\n| 2022 | 9.0 |\n\n" in p.text  # the table survives, a row a line
    assert "described in the 2019 report and on the provincial site, sit" in p.text
    assert "](" not in p.text and "http" not in p.text  # anchor text kept, no targets
    assert "Copyright Example News" not in p.text  # boilerplate dropped
    assert p.content_type == "text/html"
    assert p.fetched_at.startswith("2026-01-01")
    urls = [u for _, u in p.links]
    assert site.url("/reports/fundy-2019.pdf") in urls
    assert "https://energy.example.org/tides" in urls
    assert len(urls) == len(set(urls))  # deduplicated
    assert all(u.startswith("http") for u in urls)  # mailto: and #top dropped
    assert ("the provincial site", "https://energy.example.org/tides") in p.links
    # the article's own links first, then navigation
    assert p.links[: p.content_links] == [
        ("2019 report", site.url("/reports/fundy-2019.pdf")),
        ("the provincial site", "https://energy.example.org/tides"),
    ]
    assert p.links[p.content_links :] == [("Home", site.url("/")), ("About", site.url("/about"))]


async def test_user_agent_is_a_browser(site: LoopbackServer, reader: LocalReader) -> None:
    page(await reader.read(site.url("/plain.txt")))
    headers = site.requests[-1][1]
    assert "Mozilla/5.0" in headers["User-Agent"]


async def test_pdf_text(site: LoopbackServer, reader: LocalReader) -> None:
    p = page(await reader.read(site.url("/doc.pdf")))
    assert "Hello from a tiny PDF document" in p.text
    assert p.title == "Tiny Test PDF"
    assert p.content_type == "application/pdf"


@pytest.mark.parametrize(
    ("path", "expected", "ctype"),
    [
        ("/plain.txt", "Just plain text, kept as it is.\nSecond line.", "text/plain"),
        ("/notes.md", "Notes\n\n- one\n- two", "text/markdown"),
        ("/data.json", '{"answer": 42, "unit": "metres"}', "application/json"),
    ],
)
async def test_text_json_as_they_are_markdown_as_plain(
    site: LoopbackServer, reader: LocalReader, path: str, expected: str, ctype: str
) -> None:
    p = page(await reader.read(site.url(path)))
    assert p.text == expected
    assert p.content_type == ctype


@pytest.mark.parametrize(
    ("path", "ctype"), [("/image.png", "image/png"), ("/blob", "application/octet-stream")]
)
async def test_binary_refused(
    site: LoopbackServer, reader: LocalReader, path: str, ctype: str
) -> None:
    f = failure(await reader.read(site.url(path)))
    assert f.kind == "unsupported_type"
    assert f.detail == ctype


@pytest.mark.parametrize(("path", "status"), [("/missing", 404), ("/error", 500)])
async def test_http_errors(
    site: LoopbackServer, reader: LocalReader, path: str, status: int
) -> None:
    f = failure(await reader.read(site.url(path)))
    assert (f.kind, f.status) == ("http_status", status)


@pytest.mark.parametrize("path", ["/cp1251", "/cp1251-unlabelled"])
async def test_cyrillic_charset(site: LoopbackServer, reader: LocalReader, path: str) -> None:
    p = page(await reader.read(site.url(path)))
    assert "столицей Российской Федерации" in p.text
    assert CYRILLIC_TEXT.split()[0] in p.text


async def test_meta_charset_without_header(site: LoopbackServer, reader: LocalReader) -> None:
    p = page(await reader.read(site.url("/latin1-meta")))
    assert "café de la gare était fermé" in p.text
    assert LATIN1_TEXT[:20] in p.text


async def test_gzip_body(site: LoopbackServer, reader: LocalReader) -> None:
    p = page(await reader.read(site.url("/gzip")))
    assert "highest tides in the world" in p.text


async def test_huge_body_aborted_early(site: LoopbackServer) -> None:
    r = make_reader(max_bytes=1024 * 1024)
    try:
        f = failure(await r.read(site.url("/huge")))
    finally:
        await r.aclose()
    assert f.kind == "too_large"
    # The server wanted to send 50 MB; we hung up after ~1 MB (plus socket buffers).
    assert site.bytes_sent.get("/huge", 0) < 16 * 1024 * 1024


async def test_huge_declared_length_refused_before_body(
    site: LoopbackServer, reader: LocalReader
) -> None:
    f = failure(await reader.read(site.url("/huge-declared")))
    assert f.kind == "too_large"


async def test_slow_body_total_timeout(site: LoopbackServer) -> None:
    # The body would end after 2 s; each byte comes well within the 0.2 s read timeout.
    r = make_reader(timeout_s=0.2)
    try:
        f = failure(await r.read(site.url("/slow")))
    finally:
        await r.aclose()
    assert f.kind == "timeout"


async def test_redirect_loop(site: LoopbackServer, reader: LocalReader) -> None:
    f = failure(await reader.read(site.url("/loop/a")))
    assert f.kind == "http_status"
    assert "loop" in f.detail


async def test_redirect_limit(site: LoopbackServer, reader: LocalReader) -> None:
    p = page(await reader.read(site.url("/hop?n=5")))
    assert p.final_url == site.url("/hop?n=0")
    assert p.text == "You reached the end of the redirect chain."
    f = failure(await reader.read(site.url("/hop?n=6")))
    assert f.kind == "http_status"
    assert "more than 5 redirects" in f.detail


async def test_empty_extraction(site: LoopbackServer, reader: LocalReader) -> None:
    f = failure(await reader.read(site.url("/blank")))
    assert f.kind == "empty"


async def test_connection_refused(reader: LocalReader) -> None:
    server = LoopbackServer()
    port = server.port
    server.server_close()  # nothing listens on that port any more
    f = failure(await reader.read(f"http://127.0.0.1:{port}/"))
    assert f.kind == "refused"
    assert f.host_is_dead


async def test_dns_failure_from_resolver() -> None:
    async def no_such_host(host: str, port: int) -> list[str]:
        from deepsearch.web.ssrf import HostResolutionError

        raise HostResolutionError(f"cannot resolve {host!r}")

    r = LocalReader(ReaderConfig(), resolver=no_such_host)
    try:
        f = failure(await r.read("https://no-such-host.test/page"))
    finally:
        await r.aclose()
    assert f.kind == "dns"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("ftp://example.com/x", "blocked"),
        ("file:///etc/passwd", "blocked"),
        ("not a url", "invalid_url"),
        ("http:///path", "invalid_url"),
    ],
)
async def test_bad_urls(reader: LocalReader, url: str, kind: str) -> None:
    assert failure(await reader.read(url)).kind == kind


async def test_page_cache_hit_expiry_and_no_failure_caching(
    site: LoopbackServer, tmp_path: object
) -> None:
    clock = FakeClock()
    cache = WebCache(str(tmp_path), clock=clock)
    r = LocalReader(ReaderConfig(allow_private_urls=True), cache=cache, page_ttl_s=60)
    try:
        first = page(await r.read(site.url("/notes.md")))
        before = len(site.requests)
        second = page(await r.read(site.url("/notes.md")))
        assert len(site.requests) == before  # served from the cache
        assert second == first
        clock.advance(61)  # past the page TTL: fetched again
        page(await r.read(site.url("/notes.md")))
        assert len(site.requests) == before + 1
        failure(await r.read(site.url("/missing")))
        failure(await r.read(site.url("/missing")))
        assert len(site.requests) == before + 3  # failures are not cached
    finally:
        await r.aclose()
        cache.close()


async def test_a_page_cached_with_private_urls_allowed_is_not_served_without(
    site: LoopbackServer, tmp_path: object
) -> None:
    cache = WebCache(str(tmp_path))
    opened = LocalReader(ReaderConfig(allow_private_urls=True), cache=cache, page_ttl_s=600)
    guarded = LocalReader(ReaderConfig(allow_private_urls=False), cache=cache, page_ttl_s=600)
    try:
        page(await opened.read(site.url("/notes.md")))  # an intranet run fills the cache
        before = len(site.requests)
        blocked = failure(await guarded.read(site.url("/notes.md")))
        assert blocked.kind == "blocked"
        assert len(site.requests) == before
    finally:
        await opened.aclose()
        await guarded.aclose()
        cache.close()


async def test_per_host_concurrency_limit() -> None:
    import asyncio
    import threading

    from tests.fakes.web_server import _Handler

    lock, live, most, released = threading.Lock(), [0], [0], threading.Event()
    arrived = threading.Condition(lock)

    def counted(handler: _Handler) -> None:
        """Requests in flight at the server, counted (not timed), held until released."""
        with lock:
            live[0] += 1
            most[0] = max(most[0], live[0])
            arrived.notify_all()
        released.wait(10)
        with lock:
            live[0] -= 1
        body = (
            b"<html><body><article><p>"
            + b"Counted content. " * 40
            + b"</p></article></body></html>"
        )
        handler.send_body(200, body, "text/html; charset=utf-8")

    def until(condition: Callable[[], bool], timeout_s: float) -> None:
        with lock:
            arrived.wait_for(condition, timeout_s)

    routes = {f"/counted/{i}": counted for i in range(4)}
    r = make_reader(per_host_concurrency=2, global_concurrency=8)
    try:
        with LoopbackServer(routes=routes) as server:
            reads = asyncio.gather(*(r.read(server.url(f"/counted/{i}")) for i in range(4)))
            # Two are held at the server; a third, if let through, would come meanwhile.
            await asyncio.to_thread(until, lambda: most[0] >= 2, 10)
            await asyncio.to_thread(until, lambda: most[0] >= 3, 0.1)
            released.set()
            results = await reads
    finally:
        await r.aclose()
    assert all(isinstance(x, Page) for x in results)
    assert most[0] <= 2, "two at a time per host"


async def test_a_page_cached_in_the_old_markdown_format_is_not_served(
    site: LoopbackServer, tmp_path: object
) -> None:
    from deepsearch.web.cache import cache_key
    from deepsearch.web.urls import normalize_url

    cache = WebCache(str(tmp_path))
    url = site.url("/article")
    stale = {"url": url, "final_url": url, "text": "[old](https://x.org) markdown"}
    cache.set(cache_key("page", normalize_url(url) or url), stale | {"fetched_at": "x"}, ttl_s=600)
    r = LocalReader(ReaderConfig(allow_private_urls=True), cache=cache, page_ttl_s=600)
    try:
        fresh = page(await r.read(url))
    finally:
        await r.aclose()
        cache.close()
    assert "highest tides in the world" in fresh.text and "markdown" not in fresh.text


async def test_read_is_a_fetch_then_an_extraction(
    site: LoopbackServer, reader: LocalReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prefetch stops after fetch_raw: no extraction until extract_raw."""
    import deepsearch.web.extract as extract
    from deepsearch.web.types import RawPage

    calls: list[str] = []
    real = extract.extract_body

    def counting(body: bytes, content_type: str | None, url: str) -> object:
        calls.append(url)
        return real(body, content_type, url)

    monkeypatch.setattr(extract, "extract_body", counting)
    fetched = await reader.fetch_raw(site.url("/article"))
    assert isinstance(fetched, RawPage) and b"Bay of Fundy" in fetched.body and not calls
    extracted = page(await reader.extract_raw(fetched))
    assert calls == [site.url("/article")]
    assert extracted == page(await reader.read(site.url("/article")))
    assert failure(await reader.fetch_raw(site.url("/missing"))).status == 404


async def test_the_extractor_imports_start_once_beside_the_first_fetch(
    site: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepsearch.web import warmup

    started: list[int] = []
    monkeypatch.setattr(warmup, "start", lambda: started.append(1))
    fresh = make_reader()
    assert not started
    await fresh.fetch_raw(site.url("/article"))
    await fresh.read(site.url("/article"))
    assert started == [1]
    await fresh.aclose()
    warmup.import_extractors()  # never raises, whatever is installed


def test_parallel_extractions_wait_for_one_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from deepsearch.web import warmup

    calls: list[str] = []
    go = threading.Event()

    def warm_up() -> None:
        calls.append("warm-up")
        go.wait(2)

    monkeypatch.setattr(warmup, "_DONE", [])
    monkeypatch.setattr(warmup, "warm_up", warm_up)
    threads = [threading.Thread(target=warmup.ensure) for _ in range(5)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(5)
    assert calls == ["warm-up"]


async def test_the_reader_extracts_after_the_warm_up(
    site: LoopbackServer, reader: LocalReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deepsearch.web.extract as extract
    from deepsearch.web import warmup

    order: list[str] = []
    real = extract.extract_body
    monkeypatch.setattr(warmup, "start", lambda: None)  # only the extraction's own call
    monkeypatch.setattr(warmup, "ensure", lambda: order.append("warm-up"))

    def extract_body(*args: Any) -> Any:
        order.append("extract")
        return real(*args)

    monkeypatch.setattr(extract, "extract_body", extract_body)
    page(await reader.read(site.url("/article")))
    assert order == ["warm-up", "extract"]
