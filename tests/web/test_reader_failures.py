"""Failure kinds that must not be confused, and the guard with a caller's own HTTP client."""

from __future__ import annotations

import httpx
import pytest

from deepsearch.config import ReaderConfig
from deepsearch.web import extract
from deepsearch.web.reader import LocalReader
from deepsearch.web.ssrf import SSRFGuard
from deepsearch.web.types import Page, ReadFailure

ARTICLE = (
    "<html><body><article><p>"
    + "A public article that the reader extracts without trouble at all. " * 6
    + "</p></article></body></html>"
).encode()
PUBLIC = {"public.test": ["93.184.216.34"], "other.test": ["93.184.216.35"]}
PRIVATE = {"intranet.test": ["10.0.0.5"]}


def resolver_for(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


class MockWeb:
    """An httpx MockTransport standing in for the internet; records every request."""

    def __init__(self) -> None:
        self.requested: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        self.requested.append(url)
        path = request.url.path
        if path == "/to-private":
            return httpx.Response(302, headers={"Location": "http://intranet.test/admin"})
        if path == "/to-loopback":
            return httpx.Response(302, headers={"Location": "http://127.0.0.1:8080/admin"})
        if path == "/to-public":
            return httpx.Response(302, headers={"Location": "http://other.test/article"})
        if path == "/broken.pdf":
            return httpx.Response(200, content=b"%PDF-1.4 truncated", headers=_type("pdf"))
        return httpx.Response(200, content=ARTICLE, headers=_type("html"))


def _type(kind: str) -> dict[str, str]:
    return {"Content-Type": "application/pdf" if kind == "pdf" else "text/html; charset=utf-8"}


def guarded_reader_with_client(web: MockWeb) -> tuple[LocalReader, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(web.handle))
    guard = SSRFGuard(resolver=resolver_for(PUBLIC | PRIVATE))
    return LocalReader(ReaderConfig(), guard=guard, http_client=client), client


@pytest.mark.parametrize("path", ["/to-private", "/to-loopback"])
async def test_a_callers_client_still_gets_every_redirect_hop_checked(path: str) -> None:
    """Our pinned transport is not in play: the per-hop check is the only guard left."""
    web = MockWeb()
    reader, client = guarded_reader_with_client(web)
    try:
        followed = await reader.read("http://public.test/to-public")
        refused = await reader.read(f"http://public.test{path}")
    finally:
        await reader.aclose()
        await client.aclose()
    assert isinstance(followed, Page) and followed.final_url == "http://other.test/article"
    assert isinstance(refused, ReadFailure) and refused.kind == "blocked", refused
    assert not any("/admin" in url for url in web.requested)  # never contacted
    assert reader._client is client  # the caller's client is kept, not closed or replaced


async def test_an_exception_in_extraction_is_an_extract_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """E.g. a plain `pip install` missing lxml_html_clean: not a network failure."""

    def broken(*args: object) -> object:
        raise ImportError(
            "lxml.html.clean module is now a separate project lxml_html_clean.\n"
            "Install lxml[html-clean] or lxml_html_clean directly."
        )

    monkeypatch.setattr(extract, "extract_body", broken)
    web = MockWeb()
    reader, client = guarded_reader_with_client(web)
    try:
        result = await reader.read("http://public.test/article")
    finally:
        await reader.aclose()
        await client.aclose()
    assert isinstance(result, ReadFailure)
    assert result.kind == "extract"
    assert result.detail == (
        "ImportError: lxml.html.clean module is now a separate project lxml_html_clean. "
        "Install lxml[html-clean] or lxml_html_clean directly."
    )
    assert not result.host_is_dead


async def test_a_corrupt_pdf_is_an_extract_failure_with_the_reason() -> None:
    web = MockWeb()
    reader, client = guarded_reader_with_client(web)
    try:
        result = await reader.read("http://public.test/broken.pdf")
    finally:
        await reader.aclose()
        await client.aclose()
    assert isinstance(result, ReadFailure) and result.kind == "extract", result
    assert "Pdf" in result.detail or "EOF" in result.detail
