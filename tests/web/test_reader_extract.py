"""Extraction helpers: dispatch, charsets, links, markdown stripping (no network)."""

from __future__ import annotations

from urllib.parse import urlsplit

import lxml.html
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepsearch.web.extract import (
    Extracted,
    Unsupported,
    decode_body,
    extract_body,
    extract_links,
    html_to_markdown,
    markdown_to_plain,
    split_content_type,
)

CONTENT_TYPES = st.sampled_from(
    [
        None,
        "",
        "text/html",
        "text/html; charset=utf-8",
        "text/html; charset=bogus-charset",
        "text/plain; charset=iso-8859-1",
        "application/json",
        "application/pdf",
        "application/octet-stream",
        "image/png",
        "text/markdown",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=2000), content_type=CONTENT_TYPES)
def test_any_body_is_handled_without_raising(body: bytes, content_type: str | None) -> None:
    result = extract_body(body, content_type, "https://example.com/page")
    assert isinstance(result, Extracted | Unsupported)


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="cp1251"), min_size=1, max_size=200),
)
def test_header_charset_wins(text: str) -> None:
    assert decode_body(text.encode("cp1251"), "windows-1251", html=False) == text


def test_charset_detection_order() -> None:
    body = '<meta charset="iso-8859-1"><p>café</p>'.encode("latin-1")
    assert "café" in decode_body(body, None, html=True)
    assert "café" in decode_body("<p>café</p>".encode(), None, html=True)  # strict UTF-8
    assert decode_body(b"\xef\xbb\xbfhello", None, html=False) == "hello"  # BOM


def test_split_content_type() -> None:
    assert split_content_type('Text/HTML; Charset="UTF-8"') == ("text/html", "UTF-8")
    assert split_content_type(None) == ("", None)


HREFS = st.one_of(
    st.sampled_from(
        [
            "/a",
            "b/c?x=1",
            "#frag",
            "mailto:a@b.c",
            "javascript:void(0)",
            "ftp://h/x",
            "//cdn.example.org/x",
            "https://other.example/y#z",
            "",
        ]
    ),
    st.text(alphabet="abc/?=#:.%", max_size=12),
)


@settings(max_examples=100, deadline=None)
@given(hrefs=st.lists(HREFS, max_size=15))
def test_links_are_absolute_http_and_unique(hrefs: list[str]) -> None:
    anchors = "".join(f'<a href="{h}">link {i}</a> ' for i, h in enumerate(hrefs))
    html = f"<html><body><p>{anchors}</p></body></html>"
    links = extract_links(lxml.html.fromstring(html), "https://example.com/dir/page")
    urls = [u for _, u in links]
    assert len(urls) == len(set(urls))
    for url in urls:
        parts = urlsplit(url)
        assert parts.scheme in ("http", "https") and parts.netloc and not parts.fragment


def test_base_href_is_honoured() -> None:
    html = '<html><head><base href="https://cdn.example.net/docs/"></head><body><a href="x.html">X</a></body></html>'
    assert html_to_markdown(html, "https://example.com/").links == [
        ("X", "https://cdn.example.net/docs/x.html")
    ]


def test_fallback_when_trafilatura_finds_nothing() -> None:
    html = "<html><head><title>Hub</title></head><body><ul><li>Alpha</li><li>Beta</li></ul></body></html>"
    result = html_to_markdown(html, "https://example.com/")
    assert result.title == "Hub"
    assert "Alpha" in result.text and "Beta" in result.text


@pytest.mark.parametrize(
    ("markdown", "plain_words"),
    [
        ("See [the report](https://x.org/r.pdf) now", "See the report now"),
        ("# Title\n\n**bold** and _it_", "Title bold and it"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a b 1 2"),
        ("- item one\n1. item two", "item one item two"),
    ],
)
def test_markdown_to_plain(markdown: str, plain_words: str) -> None:
    assert markdown_to_plain(markdown).split() == plain_words.split()
