"""Body -> plain text: content-type dispatch, charset detection, HTML/PDF extraction.

Every kind of body comes out as the plain text the LLM reads: one block (heading,
paragraph, list item, table row) a line, table cells separated by " | ", no link
targets and no markdown syntax or escapes. Links are harvested separately with their
anchor text, those inside the main content first. Everything here is synchronous and
CPU-bound; the reader runs it in a thread.
"""

from __future__ import annotations

import copy
import io
import re
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

from pydantic import BaseModel, Field

from deepsearch.web.charset import decode_body
from deepsearch.web.markdown_plain import (
    markdown_to_plain_with_links,
    table_row,
)

Kind = Literal["html", "pdf", "text", "json"]
# An lxml element: lxml ships no type stubs (none are installed), so it is Any here.
Element = Any

# trafilatura takes ~0.8 s per MB; article content sits well inside the first MBs.
MAX_HTML_CHARS = 3_000_000
MAX_LINKS = 500

_TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown", "text/csv"}
_MARKDOWN_TYPES = {"text/markdown", "text/x-markdown"}
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_HTML_TYPES = {"text/html", "application/xhtml+xml"}


class Extracted(BaseModel):
    title: str = ""
    text: str
    published: str | None = None
    links: list[tuple[str, str]] = Field(default_factory=list)
    content_links: int = 0  # the first N of `links` sit inside the main content


class Unsupported(BaseModel):
    content_type: str


# ---------------------------------------------------------------- dispatch


def split_content_type(header: str | None) -> tuple[str, str | None]:
    """('text/html', 'utf-8') from 'text/html; charset=UTF-8'."""
    if not header:
        return "", None
    mime, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return mime.strip().lower(), charset


def classify(mime: str, head: bytes) -> Kind | None:
    """Which extractor handles a body; None means refuse it."""
    if mime in _HTML_TYPES:
        return "html"
    if mime == "application/pdf":
        return "pdf"
    if mime in _TEXT_TYPES:
        return "text"
    if mime == "application/json" or mime.endswith("+json"):
        return "json"
    if mime in ("", "application/octet-stream", "binary/octet-stream"):
        return _sniff(head, allow_text=not mime)
    return None


def _sniff(head: bytes, *, allow_text: bool) -> Kind | None:
    """Servers mislabel; trust only unmistakable signatures."""
    start = head[:1024].lstrip().lower()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if start.startswith((b"<!doctype html", b"<html")) or b"<html" in start:
        return "html"
    if allow_text and b"\x00" not in head[:4096]:
        return "text"
    return None


# ---------------------------------------------------------------- HTML


def _clean_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def absolute_links(pairs: list[tuple[str, str]], base: str, own_url: str) -> list[tuple[str, str]]:
    """(anchor, href) -> (anchor, absolute http(s) URL), deduplicated, own page left out."""
    own = _clean_url(own_url)
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for text, href in pairs:
        href = href.strip()
        if not href or href.startswith("#"):
            continue
        try:
            absolute = _clean_url(urljoin(base, href))
        except ValueError:
            continue
        if (
            urlsplit(absolute).scheme not in ("http", "https")
            or absolute == own
            or absolute in seen
        ):
            continue
        seen.add(absolute)
        links.append((text[:200], absolute))
    return links


def extract_links(tree: Element, base_url: str) -> list[tuple[str, str]]:
    """(anchor, absolute http(s) URL) pairs in page order, deduplicated by URL."""
    bases = tree.xpath("//base/@href")
    base = urljoin(base_url, bases[0].strip()) if bases else base_url
    pairs = [
        (" ".join(anchor.text_content().split()), anchor.get("href", ""))
        for anchor in tree.xpath("//a[@href]")
    ]
    return absolute_links(pairs, base, base_url)


def _fallback_text(tree: Element) -> str:
    """Visible text when trafilatura finds no main content (e.g. link hubs, tiny pages),
    one block a paragraph; within the page's <article> (else <main>) when it has one."""
    for bad in tree.xpath("//script|//style|//noscript|//template|//head"):
        bad.drop_tree()
    scope = next(
        (found[0] for xp in ("//article", "//main") if (found := tree.xpath(xp))),
        tree,
    )
    blocks: list[str] = []
    for node in scope.xpath(
        ".//*[self::p or self::h1 or self::h2 or self::h3 or self::h4 or self::li or self::td or self::pre or self::blockquote]"
    ):
        text = " ".join(node.text_content().split())
        if text and (not blocks or blocks[-1] != text):
            blocks.append(text)
    if not blocks:
        body = tree.xpath("//body")
        root = body[0] if body else tree
        blocks = [" ".join(root.text_content().split())]
    return "\n\n".join(b for b in blocks if b)


def _single_block(document: object) -> bool:
    """The body is one paragraph and nothing else (the shape of trafilatura's baseline)."""
    body = getattr(document, "body", None)
    return body is not None and len(body) == 1 and body[0].tag == "p"


def _same_text_in_blocks(single: str, blocks_text: str) -> str | None:
    """`blocks_text` when its blocks are (80%, by length) pieces of `single`, else None
    (a page whose one paragraph is real content: its other blocks are navigation)."""
    blocks = [b for b in blocks_text.split("\n\n") if b]
    if len(blocks) < 2:
        return None
    inside = sum(len(b) for b in blocks if b in single)
    return blocks_text if inside >= 0.8 * sum(len(b) for b in blocks) else None


def _html_title(tree: Element) -> str:
    titles = tree.xpath("//title/text()")
    return " ".join(titles[0].split()) if titles else ""


_TABLE_RULE_LINE = re.compile(r"^\|(?:---\|)+$")
_TABLE_ROW_LINE = re.compile(r"^\| (.*?) \|\s*$")


def _compact_tables(text: str) -> str:
    """trafilatura's '| a | b | ' rows -> '| a | b |'; its '|---|' head rules dropped."""
    lines = []
    for line in text.split("\n"):
        if _TABLE_RULE_LINE.match(line):
            continue
        row = _TABLE_ROW_LINE.match(line)
        # trafilatura escapes a pipe inside a cell as "\|"
        cells = row.group(1).replace("\\|", "¦").split(" | ") if row else []
        lines.append(table_row(cells) if row else line)
    return "\n".join(lines)


def _render_blocks(body: Element) -> str:
    """Each top-level block rendered on its own, blocks separated by a blank line."""
    from lxml import etree
    from trafilatura.xml import xmltotxt

    blocks = [(body.text or "").strip()]
    for child in list(body):
        wrapper = etree.Element("body")
        wrapper.append(child)  # moved out of the (copied) tree, with its tail
        blocks.append(_compact_tables(xmltotxt(wrapper, False)).strip())
    return "\n\n".join(block for block in blocks if block)


def _main_content(html: str, url: str | None) -> tuple[object | None, str]:
    """(trafilatura's document, its plain text) with the links cut out of the text.

    One extraction with links kept in the tree: their targets tell which page links
    sit in the main content, then the <ref> tags are dissolved (anchor text stays)
    before the tree is rendered as plain text. Hostile markup that breaks trafilatura
    yields (None, ""); a missing module (ImportError) is not hidden.
    """
    import trafilatura
    from lxml import etree

    try:
        document = trafilatura.bare_extraction(
            html,
            url=url,
            with_metadata=True,
            include_links=True,
            include_tables=True,
            include_comments=False,
            # Dates from the page's metadata only: scanning the body turned "the 2000
            # census" into a publication date, which the freshness check then trusts.
            date_extraction_params={"extensive_search": False, "original_date": True},
            as_dict=False,
        )
    except (ImportError, MemoryError):
        raise
    except Exception:  # trafilatura/lxml on hostile markup: the caller falls back
        return None, ""
    body = getattr(document, "body", None)
    if document is None or body is None:
        return document, ""
    plain = copy.deepcopy(body)
    etree.strip_tags(plain, "ref")
    _collapse_source_whitespace(plain)
    return document, _render_blocks(plain)


_WHITESPACE = re.compile(r"\s+")


def _collapse_source_whitespace(tree: Element) -> None:
    """Line breaks of the HTML source are spaces (a <br> stays a line break; code stays)."""
    code = {node for block in tree.iter("code") for node in block.iter()}
    for element in tree.iter():
        if element.text and element not in code:
            element.text = _WHITESPACE.sub(" ", element.text)
        # a tail belongs to the parent: inside a code block unless this is the block itself
        tail_in_code = element in code and element.tag != "code"
        if element.tail and not tail_in_code:
            element.tail = _WHITESPACE.sub(" ", element.tail)


def _content_refs(document: object | None) -> list[tuple[str, str]]:
    """(anchor, target) of the links inside the main content, in reading order."""
    body = getattr(document, "body", None)
    if body is None:
        return []
    return [
        (" ".join("".join(ref.itertext()).split()), (ref.get("target") or "").strip())
        for ref in body.iter("ref")
    ]


def _order_links(
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
            url = _clean_url(target)
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


def html_to_text(html: str, url: str | None = None) -> Extracted:
    """Main-content plain text (one block a line, tables compact), title, date, links."""
    import lxml.html

    html = html[:MAX_HTML_CHARS]
    document, text = _main_content(html, url)
    try:
        tree = lxml.html.fromstring(html)
    except Exception:  # empty or unparseable document
        tree = None
    page_links = extract_links(tree, url) if tree is not None and url else []
    content_links = _content_refs(document)
    links, in_content = _order_links(content_links, page_links)
    title = getattr(document, "title", None) or ""
    if tree is not None:
        title = title or _html_title(tree)
        if not text:
            text = _fallback_text(tree)
        elif _single_block(document):
            # trafilatura's baseline for a short page runs every block (heading,
            # tagline, paragraph, "See also") into one <p>, and a quote would span
            # them: take the same text split at its blocks, when that is what it is.
            text = _same_text_in_blocks(text, _fallback_text(tree)) or text
    return Extracted(
        title=title.strip(),
        text=text.strip(),
        published=getattr(document, "date", None) or None,
        links=links,
        content_links=in_content,
    )


# ---------------------------------------------------------------- PDF and dispatch


def pdf_to_text(body: bytes) -> Extracted:
    """Text of every page (a corrupt file raises: the reader reports it as `extract`)."""
    import logging

    from pypdf import PdfReader

    # pypdf logs recoverable damage ("EOF marker not found") straight to the terminal.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    reader = PdfReader(io.BytesIO(body))
    pages = [_plain_lines(page.extract_text() or "") for page in reader.pages]
    title = ""
    if reader.metadata is not None and reader.metadata.title:
        title = str(reader.metadata.title)
    return Extracted(title=title.strip(), text="\n\n".join(p for p in pages if p))


def _plain_lines(text: str) -> str:
    """Plain text tidied: no trailing spaces, no runs of blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def is_markdown(mime: str, url: str) -> bool:
    """Markdown by its type, or a .md file served as text/plain (as raw hosts do)."""
    path = urlsplit(url).path.lower()
    return mime in _MARKDOWN_TYPES or (mime == "text/plain" and path.endswith(_MARKDOWN_SUFFIXES))


def text_to_plain(text: str, mime: str, url: str) -> Extracted:
    """A text body: markdown converted (its links harvested), other text tidied."""
    if is_markdown(mime, url):
        plain, links = markdown_to_plain_with_links(text, url or None)
        return Extracted(
            text=plain, links=links[:MAX_LINKS], content_links=min(len(links), MAX_LINKS)
        )
    return Extracted(text=_plain_lines(text))


def extract_body(body: bytes, content_type: str | None, url: str) -> Extracted | Unsupported:
    """Dispatch on the content type (sniffing only unlabelled bodies).

    Raises on a failure of the extraction itself (corrupt PDF, missing module): the
    reader turns that into ReadFailure(kind="extract").
    """
    mime, charset = split_content_type(content_type)
    kind = classify(mime, body[:4096])
    if kind is None:
        return Unsupported(content_type=mime or "unknown")
    if kind == "pdf":
        return pdf_to_text(body)
    text = decode_body(body, charset, html=kind == "html")
    if kind == "html":
        return html_to_text(text, url)
    if kind == "text":
        return text_to_plain(text, mime, url)
    return Extracted(text=text.strip())
