"""The run's reader routes by scheme: a web page to the web reader, a file: URL to the
local corpus (refused without --corpus). A web run never loads the corpus module: its
imports cost every run ~3 ms of CPU that only a --corpus run needs."""

from __future__ import annotations

import sys

import pytest

from deepsearch.runtime import RoutingReader
from deepsearch.web.types import Page, ReadFailure

CORPUS_MODULE = "deepsearch.web.search.local"


class Recorder:
    """A web reader (or a corpus: `read` is called by both routes) that names its reads."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.urls: list[str] = []

    async def read(self, url: str) -> Page:
        return self.sync_read(url)

    def sync_read(self, url: str) -> Page:  # LocalCorpus.read is synchronous
        self.urls.append(url)
        text = f"read by the {self.name}"
        return Page(url=url, final_url=url, text=text, fetched_at="2026-12-05T00:00:00Z")


async def test_a_web_page_is_read_by_the_web_reader_without_the_corpus_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, CORPUS_MODULE, raising=False)
    web = Recorder("web")
    page = await RoutingReader(web, None).read("https://example.org/a")
    assert isinstance(page, Page) and page.text == "read by the web"
    assert web.urls == ["https://example.org/a"]
    assert CORPUS_MODULE not in sys.modules


@pytest.mark.parametrize("url", ["file:///srv/notes/a.md", "FILE:///srv/notes/a.md"])
async def test_a_file_url_without_a_corpus_is_refused_and_never_fetched(url: str) -> None:
    web = Recorder("web")
    failure = await RoutingReader(web, None).read(url)
    assert isinstance(failure, ReadFailure) and failure.kind == "blocked"
    assert failure.detail == "local files are readable only with --corpus"
    assert web.urls == []


async def test_a_file_url_is_read_from_the_corpus() -> None:
    web, corpus = Recorder("web"), Recorder("corpus")
    corpus.read = corpus.sync_read  # type: ignore[method-assign,assignment]
    page = await RoutingReader(web, corpus).read("File:///srv/notes/a.md")  # type: ignore[arg-type]
    assert isinstance(page, Page) and page.text == "read by the corpus"
    assert corpus.urls == ["File:///srv/notes/a.md"] and web.urls == []
