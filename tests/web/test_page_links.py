"""Link resolution by string operations gives what the standard library gives."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit, urlunsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.web.page_links import absolute_links, clean_url


def _reference_clean(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _reference_links(
    pairs: list[tuple[str, str]], base: str, own_url: str
) -> list[tuple[str, str]]:
    """The parser-only resolution every href took before (the oracle)."""
    own = _reference_clean(own_url)
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for text, href in pairs:
        href = href.strip()
        if not href or href.startswith("#"):
            continue
        try:
            absolute = _reference_clean(urljoin(base, href))
        except ValueError:
            continue
        if urlsplit(absolute).scheme not in ("http", "https") or absolute in (own, *seen):
            continue
        seen.add(absolute)
        links.append((text[:200], absolute))
    return links


# Pieces that the parsers treat specially (dot segments, params, empty queries,
# brackets, whitespace, case, ports, userinfo, other schemes) beside plain ones.
PIECES = st.sampled_from(
    [
        *("/", "//", "/./", "/../", ".", "..", "?", "#", ";", ":", "@", "[", "]", "\\"),
        *(" ", "\t", "\n", "%20", "é", "~", "'", "=", "&", "+", "a", "B", "0", "x.org"),
        *("http://", "https://", "HTTP://", "http:", "mailto:", "//cdn.example", ":8080"),
        *("www.example.com", "/wiki/", "?q=1", "#top", "user@"),
    ]
)
HREFS = st.lists(PIECES, max_size=8).map("".join)
BASES = st.sampled_from(
    [
        "https://example.com/dir/page",
        "http://127.0.0.1:8123/wiki/A",
        "https://a.example/",
        "https://a.example",
        "HTTPS://A.example/x/",
        "http://[::1]:80/x",
        "https://user@host.example/p",
        "https://h.example:/p;x?y#z",
        "ftp://x.example/y",
        "",
    ]
)


@settings(max_examples=150, deadline=None)
@given(base=BASES, hrefs=st.lists(HREFS, max_size=6))
def test_links_resolve_as_urljoin_resolves_them(base: str, hrefs: list[str]) -> None:
    pairs = [(f"anchor {i}", href) for i, href in enumerate(hrefs)]
    own = "https://example.com/dir/page"
    assert absolute_links(pairs, base, own) == _reference_links(pairs, base, own)


@settings(max_examples=150, deadline=None)
@given(url=HREFS)
def test_clean_url_is_urlunsplit_of_urlsplit(url: str) -> None:
    try:
        expected: str | None = _reference_clean(url)
    except ValueError:
        expected = None
    try:
        got: str | None = clean_url(url)
    except ValueError:
        got = None
    assert got == expected


def test_the_common_shapes_take_no_parser() -> None:
    """The two shapes the fast path is for, with the cases it must leave to the parser."""
    base = "http://127.0.0.1:8123/wiki/Page"
    pairs = [
        ("a", "/wiki/Other_page#History"),
        ("b", "https://elsewhere.example/x?y=1"),
        ("c", "/wiki/a/../b"),
        ("d", "/wiki/x?"),
        ("e", "relative"),
        ("f", "/wiki/Page"),  # the page itself
        ("g", "/wiki/params;"),  # urlparse's empty ";params" is dropped
        ("h", "https://elsewhere.example/y;"),  # ... but only by a base of its scheme
        ("i", "http://elsewhere.example/z;"),
    ]
    assert absolute_links(pairs, base, base) == [
        ("a", "http://127.0.0.1:8123/wiki/Other_page"),
        ("b", "https://elsewhere.example/x?y=1"),
        ("c", "http://127.0.0.1:8123/wiki/b"),
        ("d", "http://127.0.0.1:8123/wiki/x"),
        ("e", "http://127.0.0.1:8123/wiki/relative"),
        ("g", "http://127.0.0.1:8123/wiki/params"),
        ("h", "https://elsewhere.example/y;"),
        ("i", "http://elsewhere.example/z"),
    ]


def test_content_links_match_the_page_s_links_by_their_own_resolution() -> None:
    """A relative href resolves against the page's directory (or <base>), as the page's
    links do: matched by URL, not by an anchor text a navigation link shares; an
    in-page anchor never makes the site's home a content link."""
    from deepsearch.web.extract import html_to_text

    words = "Some words of the article body about the tides of the bay. " * 12
    html = (
        '<html><head><base href="https://example.com/docs/"></head><body>'
        '<nav><a href="https://example.com">Home</a> <a href="old.html">the notes</a></nav>'
        "<article><p>"
        f'{words}<a href="notes.html">the notes</a>, <a href="#top">back to the top</a>'
        f' and <a href="/about">about us</a>.</p><p>{words}</p></article></body></html>'
    )
    page = html_to_text(html, "https://example.com/docs/page")
    assert page.links[: page.content_links] == [
        ("the notes", "https://example.com/docs/notes.html"),
        ("about us", "https://example.com/about"),
    ]
    assert page.links[page.content_links :] == [
        ("Home", "https://example.com"),
        ("the notes", "https://example.com/docs/old.html"),
    ]
