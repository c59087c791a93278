"""Self-check of page extraction: read a page shipped with the package, for real.

`deepsearch doctor` calls `check_page_extraction()`. The page
(deepsearch/web/data/selfcheck.html) goes through `LocalReader.read` exactly like a
web page — guard, fetch, body cap, charset decoding, extraction in a worker thread —
only the socket is replaced by an in-memory httpx transport, so the check needs no
network. An install missing a parser's dependency fails here with the reason,
instead of every page of a run failing.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import NamedTuple

SELFCHECK_URL = "https://selfcheck.deepsearch.invalid/selfcheck.html"
# A documentation address: the guard approves it, nothing ever connects to it.
_SELFCHECK_ADDRESS = "192.0.2.1"
EXPECTED_LINES = (
    "Self-check of page extraction",
    "| Alpha | 1901 |",
    "| Béta | 1903 |",
)
EXPECTED_PHRASES = (
    "the anchor text of the extraction guide stays, its address does not.",
    "in 1900 ``in order to allow the through running of trains'', as",
    "read as written — 北京.",
)
EXPECTED_LINK = ("the extraction guide", "https://example.org/guide")


class SelfCheck(NamedTuple):
    ok: bool
    detail: str


def selfcheck_html() -> bytes:
    return (resources.files("deepsearch.web") / "data" / "selfcheck.html").read_bytes()


def verify_text(text: str, links: list[tuple[str, str]]) -> str | None:
    """What is wrong with the extracted page, or None when it is as expected."""
    lines = text.split("\n")
    missing = [line for line in EXPECTED_LINES if line not in lines]
    missing += [phrase for phrase in EXPECTED_PHRASES if phrase not in text]
    if missing:
        return f"expected text missing: {missing[0]!r}"
    if "http" in text or "\\" in text:
        return "link targets or markdown escapes left in the text"
    if EXPECTED_LINK not in links:
        return f"link {EXPECTED_LINK[1]} not harvested"
    return None


async def check_page_extraction() -> SelfCheck:
    """Read the shipped page through the real reader and check what came out."""
    import httpx

    from deepsearch.config import ReaderConfig
    from deepsearch.web.reader import LocalReader
    from deepsearch.web.ssrf import SSRFGuard
    from deepsearch.web.types import ReadFailure

    body = selfcheck_html()

    def serve(request: httpx.Request) -> httpx.Response:
        if str(request.url) != SELFCHECK_URL:
            return httpx.Response(404)
        return httpx.Response(200, content=body, headers={"Content-Type": "text/html"})

    async def resolve(host: str, port: int) -> list[str]:
        return [_SELFCHECK_ADDRESS] if host == "selfcheck.deepsearch.invalid" else []

    # The guard keeps its rules; only this one host is given an (unroutable) address.
    guard = SSRFGuard(resolver=resolve, is_allowed=lambda ip: str(ip) == _SELFCHECK_ADDRESS)
    client = httpx.AsyncClient(transport=httpx.MockTransport(serve))
    reader = LocalReader(ReaderConfig(), http_client=client, guard=guard)
    started = time.perf_counter()
    try:
        result = await reader.read(SELFCHECK_URL)
    finally:
        await reader.aclose()
        await client.aclose()
    elapsed = time.perf_counter() - started
    if isinstance(result, ReadFailure):
        return SelfCheck(False, f"failed: {result.kind}: {result.detail}"[:300])
    problem = verify_text(result.text, result.links)
    if problem:
        return SelfCheck(False, f"failed: {problem}")
    detail = f"{len(result.text)} chars of plain text, {len(result.links)} links, {elapsed:.2f}s"
    return SelfCheck(True, detail)
