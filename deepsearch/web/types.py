"""Plain data types and protocols of the web layer (what the agent depends on)."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

TimeFilter = Literal["h", "d", "w", "m", "y"]


class SearchQuery(BaseModel):
    q: str
    time_filter: TimeFilter | None = None
    sites: list[str] = Field(default_factory=list, description="site: restriction (OR)")
    language: str | None = None  # e.g. "en"
    region: str | None = None  # e.g. "us-en"
    limit: int = 10


class SearchResult(BaseModel):
    title: str
    url: str  # normalized
    snippet: str = ""
    date: str | None = None
    provider: str


class Page(BaseModel):
    url: str
    final_url: str
    title: str = ""
    # Plain text, exactly what the LLM reads: one block (heading, paragraph, list item,
    # table row with cells joined by " | ") a line; no link targets, no markdown syntax.
    text: str
    published: str | None = None
    # (anchor, absolute url), deduplicated: the main content's links first, in reading
    # order, then the page's other links (navigation, footers) in page order.
    links: list[tuple[str, str]] = Field(default_factory=list)
    content_links: int = 0  # how many of `links`, from the start, sit in the main content
    content_type: str = "text/html"
    fetched_at: str  # ISO 8601 UTC


class RawPage(BaseModel):
    """A fetched body not yet extracted (see `TwoPhaseReader`)."""

    url: str  # as asked for
    final_url: str  # after redirects
    content_type: str
    body: bytes


ReadFailureKind = Literal[
    "timeout",
    "http_status",
    "too_large",
    "unsupported_type",
    "blocked",
    "dns",
    "tls",
    "refused",
    "network",
    "invalid_url",
    "empty",
    "extract",  # the body arrived but extracting its text failed (detail says why)
]


class ReadFailure(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    url: str
    kind: ReadFailureKind
    detail: str = ""
    status: int | None = None

    @property
    def host_is_dead(self) -> bool:
        """DNS/TLS/refused: every URL of this host will fail the same way."""
        return self.kind in ("dns", "tls", "refused")


@runtime_checkable
class SearchProvider(Protocol):
    name: str

    async def search(self, query: SearchQuery) -> list[SearchResult]: ...


@runtime_checkable
class Reader(Protocol):
    async def read(self, url: str) -> Page | ReadFailure: ...


@runtime_checkable
class TwoPhaseReader(Reader, Protocol):
    """A reader whose `read` is `fetch_raw` then `extract_raw`: a background read can
    stop after the fetch, and the extraction (the CPU-bound half) runs only for a
    page that is actually read."""

    async def fetch_raw(self, url: str) -> RawPage | Page | ReadFailure: ...

    async def extract_raw(self, fetched: RawPage) -> Page | ReadFailure: ...
