"""A page's links: (anchor, absolute http(s) URL) pairs, those of the main content first.

A page carries a hundred links or more and each went through `urljoin`, `urlsplit` and
`urlunsplit` (a quarter of a short page's extraction CPU). The two shapes nearly every
href has (an absolute http(s) URL, a path from the site's root) are resolved with string
operations when they hold nothing those functions would rewrite; anything else takes
the standard library's path. Both give the same URL (tests/web/test_page_links.py).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

# An lxml element: lxml ships no type stubs (none are installed), so it is Any here.
Element = Any

MAX_LINKS = 500

# What urlsplit/urlunsplit and urljoin leave as it is: an ASCII host with no brackets, a
# path of unreserved characters without ';' (urlparse's "params") or dot segments, a
# non-empty query (an empty one is dropped). Fragments are cut off anyway.
_SAFE_PATH = r"[A-Za-z0-9\-._~!$&'()*+,=:@%/]*"
# A query of printable ASCII but '#': the class is written as its ranges ('!"', '$'-'~'),
# not as "[^#\x00-\x20\x7f-\U0010ffff]", whose compile walks 65k code points in Python
# (~5 ms of CPU a pattern at import; issue 21). Both match the same characters.
_SAFE_QUERY = r'(?:\?[!"$-~]+)?'
_ABSOLUTE = re.compile(rf"https?://[A-Za-z0-9.\-]+(?::[0-9]*)?(?:/{_SAFE_PATH})?{_SAFE_QUERY}")
_ROOTED = re.compile(rf"/(?!/){_SAFE_PATH}{_SAFE_QUERY}")
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|\?|\Z)")


def _plain(url: str, shape: re.Pattern[str]) -> bool:
    """The URL (fragment cut off) has `shape` and nothing a parser would normalise."""
    return shape.fullmatch(url) is not None and _DOT_SEGMENT.search(url) is None


def clean_url(url: str) -> str:
    """The URL without its fragment, as urlunsplit(urlsplit(url)) writes it."""
    head = url.partition("#")[0]
    if _plain(head, _ABSOLUTE):
        return head
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


class _Resolver:
    """`clean_url(urljoin(base, href))`, the common hrefs without parsing them."""

    def __init__(self, base: str) -> None:
        self.base = base
        parts = urlsplit(base)
        plain_base = parts.scheme in ("http", "https") and _plain(
            f"{parts.scheme}://{parts.netloc}", _ABSOLUTE
        )
        self.origin = f"{parts.scheme}://{parts.netloc}" if plain_base else ""

    def __call__(self, href: str) -> str:
        head = href.partition("#")[0]
        if _plain(head, _ABSOLUTE) and self.origin:
            return head  # urljoin keeps an absolute URL (base of the same scheme or not)
        if self.origin and _plain(head, _ROOTED):
            return self.origin + head
        return clean_url(urljoin(self.base, href))


def absolute_links(pairs: list[tuple[str, str]], base: str, own_url: str) -> list[tuple[str, str]]:
    """(anchor, href) -> (anchor, absolute http(s) URL), deduplicated, own page left out."""
    own = clean_url(own_url)
    resolve = _Resolver(base)
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for text, href in pairs:
        href = href.strip()
        if not href or href.startswith("#"):
            continue
        try:
            absolute = resolve(href)
        except ValueError:
            continue
        # the scheme is what precedes the first ':' (urlunsplit wrote it lower-cased)
        if absolute.split(":", 1)[0] not in ("http", "https") or absolute == own:
            continue
        if absolute in seen:
            continue
        seen.add(absolute)
        links.append((text[:200], absolute))
    return links


def page_base(tree: Element, url: str) -> str:
    """What the page's relative links resolve against: its <base href>, else its URL."""
    bases = tree.xpath("//base/@href")
    return urljoin(url, bases[0].strip()) if bases else url


def extract_links(tree: Element, base_url: str) -> list[tuple[str, str]]:
    """(anchor, absolute http(s) URL) pairs in page order, deduplicated by URL."""
    base = page_base(tree, base_url)
    pairs = [
        (" ".join(anchor.text_content().split()), anchor.get("href", ""))
        for anchor in tree.xpath("//a[@href]")
    ]
    return absolute_links(pairs, base, base_url)


def content_refs(body: Element, base: str | None) -> list[tuple[str, str]]:
    """(anchor, target) of trafilatura's <ref> links in its main content, in reading order.

    trafilatura is given no URL, so its targets are the page's own hrefs (it would
    resolve every link of the page, navigation included, against the site's root, a
    third of a short page's CPU): the few in the content are resolved here, against
    the same base as the page's links, so that they match those by URL.
    """
    resolve = _Resolver(base) if base else None
    refs = []
    for ref in body.iter("ref"):
        target = (ref.get("target") or "").strip()
        try:
            target = resolve(target) if resolve and target else target
        except ValueError:  # an href the parser refuses: matched by its anchor text
            target = ""
        refs.append((" ".join("".join(ref.itertext()).split()), target))
    return refs


def order_links(
    content: list[tuple[str, str]], page: list[tuple[str, str]]
) -> tuple[list[tuple[str, str]], int]:
    """The page's links, those the main content holds first; (links, how many are content).

    A content link is matched to a page link by URL, else by anchor text: trafilatura
    resolves some hrefs differently (fragments, relative paths), and a link must
    never be invented, only reordered.
    """
    urls = {url for _, url in page}
    by_anchor: dict[str, list[str]] = {}
    for text, url in page:
        by_anchor.setdefault(text, []).append(url)
    taken: dict[str, None] = {}
    for text, target in content:
        try:
            url = clean_url(target)
        except ValueError:
            url = ""
        if url not in urls:
            url = next((u for u in by_anchor.get(text, []) if u not in taken), "")
        if url:
            taken[url] = None
    anchors = {url: text for text, url in reversed(page)}
    first = [(anchors[url], url) for url in taken][:MAX_LINKS]
    rest = [(text, url) for text, url in page if url not in taken]
    return (first + rest)[:MAX_LINKS], len(first)
