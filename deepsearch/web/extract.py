"""Body -> plain text: content-type dispatch, charset detection, HTML/PDF extraction.

Every kind of body comes out as the plain text the LLM reads: one block (heading,
paragraph, list item, table row) a line, table cells separated by " | ", no link
targets and no markdown syntax or escapes. Links are harvested separately with their
anchor text, those inside the main content first. Everything here is synchronous and
CPU-bound; the reader runs it in a thread.
"""

from __future__ import annotations

import functools
import io
import re
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from deepsearch.web.charset import decode_body
from deepsearch.web.page_links import (
    MAX_LINKS,
    content_refs,
    extract_links,
    order_links,
    page_base,
)

Kind = Literal["html", "pdf", "text", "json"]
# An lxml element: lxml ships no type stubs (none are installed), so it is Any here.
Element = Any

# trafilatura takes ~0.8 s per MB; article content sits well inside the first MBs.
MAX_HTML_CHARS = 3_000_000

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
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

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


def _single_block(body: Element) -> bool:
    """The body is one paragraph and nothing else (the shape of trafilatura's baseline)."""
    return len(body) == 1 and body[0].tag == "p"


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
    if "|" not in text:
        return text  # no table: the markdown module (~20 regexes) stays unloaded
    from deepsearch.web.markdown_plain import table_row

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


def _parse(html: str) -> tuple[Element | None, bool]:
    """(the page's tree, parsed once for every use; whether trafilatura takes it).

    trafilatura's own parse when its checks pass (it extracts from a copy, the links,
    title and fallback text come from the same tree); lxml's otherwise, for the links
    and the visible text. (None, False) for an empty or unparseable document.
    """
    import lxml.html
    from trafilatura import load_html

    try:
        tree = load_html(html)
    except (ImportError, MemoryError):
        raise
    except Exception:  # hostile markup: lxml's plain parse below
        tree = None
    if tree is not None:
        return tree, True
    try:
        return lxml.html.fromstring(html), False
    except Exception:  # empty or unparseable document
        return None, False


class _MainContent(NamedTuple):
    found: bool  # trafilatura took the page (its text may still be empty)
    text: str = ""
    links: list[tuple[str, str]] = []  # noqa: RUF012 - a NamedTuple default, never mutated
    single_block: bool = False  # the body is one paragraph (see html_to_text)


@functools.cache
def _options(fallbacks: bool) -> Any:
    """trafilatura's settings, built once (a ConfigParser read each call cost ~4% of a
    page): no URL, so its links' targets stay the page's hrefs (see content_refs)."""
    from trafilatura.settings import Extractor

    return Extractor(
        output_format="txt",  # "python" would render a text that is not used
        fast=not fallbacks,
        comments=False,
        links=True,
        tables=True,
    )


def _main_content(tree: Element, url: str | None, *, fallbacks: bool) -> _MainContent:
    """trafilatura's main content of the page's tree: plain text and content links.

    One extraction with links kept in the tree: their targets tell which page links
    sit in the main content, then the <ref> tags are dissolved (anchor text stays)
    before the tree is rendered as plain text. Without `fallbacks` trafilatura runs in
    its `fast` mode: no readability and justext comparisons, which changed 6 of the 181
    benchmark pages (3 better, 3 worse; two of each by far) for a third of a page's
    CPU and justext's ~0.1 s stoplist a process (bench/results/extraction.md). No
    metadata: the title and date come from `_title_and_date`. Hostile markup that
    breaks trafilatura counts as not found; a missing module (ImportError) is not hidden.
    """
    import trafilatura
    from lxml import etree

    try:
        # copied by trafilatura, the caller's tree stays as it was
        document = trafilatura.bare_extraction(tree, options=_options(fallbacks))
    except (ImportError, MemoryError):
        raise
    except Exception:  # trafilatura/lxml on hostile markup: the caller falls back
        return _MainContent(found=False)
    body = getattr(document, "body", None)
    if document is None or body is None:
        return _MainContent(found=document is not None)
    refs = content_refs(body, page_base(tree, url) if url else None)
    single = _single_block(body)
    etree.strip_tags(body, "ref")  # the document's own tree: nothing reads it after this
    _collapse_source_whitespace(body)
    return _MainContent(True, _render_blocks(body), refs, single)


def _title_and_date(tree: Element, url: str | None) -> tuple[str, str | None]:
    """The title and publication date trafilatura's `with_metadata` gives, without the
    rest of its metadata: its hostname loads the public-suffix list (~0.13 s of CPU a
    process) and author, site name, categories, tags and license took a fifth of a
    page's extraction, none of them used. The same steps as trafilatura's
    extract_metadata for these two fields (tests/web/test_page_meta.py)."""
    from htmldate import find_date
    from trafilatura.metadata import examine_meta, extract_meta_json, extract_title, extract_url

    meta = examine_meta(tree)
    try:
        meta = extract_meta_json(tree, meta)
    except Exception:  # noqa: S110 - trafilatura ignores its JSON-LD parser's bugs too
        pass
    meta.title = meta.title or extract_title(tree)
    # Dates from the page's metadata only: scanning the body turned "the 2000 census"
    # into a publication date, which the freshness check then trusts.
    meta.date = find_date(
        tree, extensive_search=False, original_date=True, url=meta.url or extract_url(tree, url)
    )
    meta.clean_and_trim()
    return meta.title or "", meta.date or None


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


def html_to_text(html: str, url: str | None = None, *, fallbacks: bool = False) -> Extracted:
    """Main-content plain text (one block a line, tables compact), title, date, links.

    `fallbacks`: trafilatura's readability and justext comparisons too (bench only)."""
    tree, extractable = _parse(html[:MAX_HTML_CHARS])
    main = (
        _main_content(tree, url, fallbacks=fallbacks) if extractable else _MainContent(found=False)
    )
    text = main.text
    title, published = _title_and_date(tree, url) if main.found else ("", None)
    page_links = extract_links(tree, url) if tree is not None and url else []
    links, in_content = order_links(main.links, page_links)
    if tree is not None:
        title = title or _html_title(tree)
        if not text:
            text = _fallback_text(tree)
        elif main.single_block:
            # trafilatura's baseline for a short page runs every block (heading,
            # tagline, paragraph, "See also") into one <p>, and a quote would span
            # them: take the same text split at its blocks, when that is what it is.
            text = _same_text_in_blocks(text, _fallback_text(tree)) or text
    return Extracted(
        title=title.strip(),
        text=text.strip(),
        published=published,
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
        from deepsearch.web.markdown_plain import markdown_to_plain_with_links

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
