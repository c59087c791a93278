"""Extraction helpers: dispatch, charsets, links, markdown stripping (no network)."""

from __future__ import annotations

from urllib.parse import urlsplit

import lxml.html
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from deepsearch.web.charset import decode_body
from deepsearch.web.extract import (
    Extracted,
    Unsupported,
    extract_body,
    html_to_text,
    split_content_type,
)
from deepsearch.web.markdown_plain import markdown_to_plain
from deepsearch.web.page_links import extract_links

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
    """Only a PDF parser may raise on garbage (the reader reports it as `extract`)."""
    try:
        result = extract_body(body, content_type, "https://example.com/page")
    except Exception:
        assert content_type == "application/pdf" or body.startswith(b"%PDF-")
        return
    assert isinstance(result, Extracted | Unsupported)


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="cp1251"), min_size=1, max_size=200),
)
def test_header_charset_wins_over_detection(text: str) -> None:
    body = text.encode("cp1251")
    try:
        body.decode("utf-8")
        assume(False)  # valid UTF-8 wins over any declaration (next tests)
    except UnicodeDecodeError:
        pass
    assert decode_body(body, "windows-1251", html=False) == text


UTF8_CHINESE = "北京是中华人民共和国的首都，也是全国的政治和文化中心。"


def test_valid_utf8_wins_over_a_contradicting_meta_charset() -> None:
    html = f'<html><head><meta charset="gb2312"></head><body><p>{UTF8_CHINESE}</p></body></html>'
    assert UTF8_CHINESE in decode_body(html.encode("utf-8"), None, html=True)


def test_valid_utf8_wins_over_a_contradicting_header_charset() -> None:
    body = f"Le café était fermé. {UTF8_CHINESE}".encode()
    assert decode_body(body, "iso-8859-1", html=False) == f"Le café était fermé. {UTF8_CHINESE}"
    assert UTF8_CHINESE in decode_body(body, "gb2312", html=True)


def test_a_declared_charset_still_decodes_what_is_not_utf8() -> None:
    html = f'<meta charset="gb2312"><p>{UTF8_CHINESE}</p>'
    assert UTF8_CHINESE in decode_body(html.encode("gb2312"), None, html=True)
    assert UTF8_CHINESE in decode_body(UTF8_CHINESE.encode("gb2312"), "gb2312", html=False)


def test_utf16_declared_without_bom_is_believed() -> None:
    """UTF-16 of ASCII text is valid UTF-8 byte for byte; the declaration must win there."""
    assert decode_body("plain words".encode("utf-16-le"), "utf-16-le", html=False) == (
        "plain words"
    )


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


@settings(max_examples=40, deadline=None)
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
    assert html_to_text(html, "https://example.com/").links == [
        ("X", "https://cdn.example.net/docs/x.html")
    ]


def test_fallback_when_trafilatura_finds_nothing() -> None:
    html = "<html><head><title>Hub</title></head><body><ul><li>Alpha</li><li>Beta</li></ul></body></html>"
    result = html_to_text(html, "https://example.com/")
    assert result.title == "Hub"
    assert "Alpha" in result.text and "Beta" in result.text


@pytest.mark.parametrize(
    ("markdown", "plain_words"),
    [
        ("See [the report](https://x.org/r.pdf) now", "See the report now"),
        ("# Title\n\n**bold** and _it_", "Title bold and it"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "| a | b | | 1 | 2 |"),
        ("- item one\n1. item two", "- item one - item two"),
    ],
)
def test_markdown_to_plain(markdown: str, plain_words: str) -> None:
    assert markdown_to_plain(markdown).split() == plain_words.split()
