"""A local corpus document is named by a file: URL, in any case; nothing else is one
(the run's reader sends those to the corpus, everything else to the web)."""

from __future__ import annotations

import pytest

from deepsearch.web.urls import is_local_url


@pytest.mark.parametrize("url", ["file:///srv/a.md", "FILE:///srv/a.md", "File:a.md", "file:"])
def test_a_file_url_is_local(url: str) -> None:
    assert is_local_url(url)


@pytest.mark.parametrize(
    "url", ["https://example.org/file:", "filex:///a", "fil:///a", " file:///a", "", "/srv/a.md"]
)
def test_anything_else_is_not(url: str) -> None:
    assert not is_local_url(url)
