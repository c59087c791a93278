"""Body -> text: content-type dispatch, charset detection, HTML/PDF extraction.

Everything here is synchronous and CPU-bound; the reader runs it in a thread.
"""

from __future__ import annotations

import codecs
import io
import re
from typing import Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

from pydantic import BaseModel, Field

Kind = Literal["html", "pdf", "text", "json"]

# trafilatura takes ~0.8 s per MB; article content sits well inside the first MBs.
MAX_HTML_CHARS = 3_000_000
MAX_LINKS = 500

_TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown", "text/csv"}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


class Extracted(BaseModel):
    title: str = ""
    text: str
    published: str | None = None
    links: list[tuple[str, str]] = Field(default_factory=list)


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


# ---------------------------------------------------------------- charsets


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_body(body: bytes, header_charset: str | None, *, html: bool) -> str:
    """Header charset, then BOM, then <meta charset>, then strict UTF-8, then detection."""
    codec = _known_codec(header_charset)
    if codec:
        return body.decode(codec, errors="replace")
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    if html:
        match = _META_CHARSET.search(body[:8192])
        codec = _known_codec(match.group(1).decode("ascii", "ignore")) if match else None
        if codec:
            return body.decode(codec, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    return body.decode(best.encoding if best else "latin-1", errors="replace")


# ---------------------------------------------------------------- HTML


def _clean_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def extract_links(tree: object, base_url: str) -> list[tuple[str, str]]:
    """(anchor, absolute http(s) URL) pairs in page order, deduplicated by URL."""
    bases = tree.xpath("//base/@href")  # type: ignore[attr-defined]
    base = urljoin(base_url, bases[0].strip()) if bases else base_url
    own = _clean_url(base_url)
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for anchor in tree.xpath("//a[@href]"):  # type: ignore[attr-defined]
        href = anchor.get("href", "").strip()
        if not href or href.startswith("#"):
            continue
        try:
            absolute = _clean_url(urljoin(base, href))
        except ValueError:
            continue
        if urlsplit(absolute).scheme not in ("http", "https") or absolute == own:
            continue
        if absolute in seen:
            continue
        seen.add(absolute)
        text = " ".join(anchor.text_content().split())
        links.append((text[:200], absolute))
        if len(links) >= MAX_LINKS:
            break
    return links


def _fallback_text(tree: object) -> str:
    """Visible text when trafilatura finds no main content (e.g. link hubs, tiny pages)."""
    for bad in tree.xpath("//script|//style|//noscript|//template|//head"):  # type: ignore[attr-defined]
        bad.drop_tree()
    blocks: list[str] = []
    for node in tree.xpath(
        "//body//*[self::p or self::h1 or self::h2 or self::h3 or self::h4 or self::li or self::td or self::pre or self::blockquote]"
    ):  # type: ignore[attr-defined]
        text = " ".join(node.text_content().split())
        if text and (not blocks or blocks[-1] != text):
            blocks.append(text)
    if not blocks:
        body = tree.xpath("//body")  # type: ignore[attr-defined]
        root = body[0] if body else tree
        blocks = [" ".join(root.text_content().split())]  # type: ignore[attr-defined]
    return "\n\n".join(b for b in blocks if b)


def _html_title(tree: object) -> str:
    titles = tree.xpath("//title/text()")  # type: ignore[attr-defined]
    return " ".join(titles[0].split()) if titles else ""


def html_to_markdown(html: str, url: str | None = None) -> Extracted:
    """Main-content markdown (tables and links kept), title, date and in-page links."""
    import lxml.html
    import trafilatura

    html = html[:MAX_HTML_CHARS]
    document = None
    try:
        document = trafilatura.extract_with_metadata(
            html,
            url=url,
            output_format="markdown",
            include_links=True,
            include_tables=True,
            include_comments=False,
            # Dates from the page's metadata only: scanning the body turned "the 2000
            # census" into a publication date, which the freshness check then trusts.
            date_extraction_params={"extensive_search": False, "original_date": True},
        )
    except Exception:  # trafilatura/lxml on hostile markup: fall back below
        document = None
    text = _FRONT_MATTER.sub("", document.text or "").strip() if document else ""
    try:
        tree = lxml.html.fromstring(html)
    except Exception:  # empty or unparseable document
        tree = None
    links = extract_links(tree, url) if tree is not None and url else []
    title = (document.title if document else None) or ""
    if tree is not None:
        title = title or _html_title(tree)
        if not text:
            text = _fallback_text(tree)
    return Extracted(
        title=title.strip(),
        text=text.strip(),
        published=(document.date if document else None) or None,
        links=links,
    )


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_SYNTAX = re.compile(
    r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+\.\s+)|^\|?[\s:|-]+\|[\s:|-]*$|[*_`|]", re.M
)


def markdown_to_plain(markdown: str) -> str:
    """Strip the markdown we produce (links, emphasis, headings, table pipes)."""
    text = _MD_LINK.sub(r"\1", markdown)
    return _MD_SYNTAX.sub(" ", text)


# ---------------------------------------------------------------- PDF and dispatch


def pdf_to_text(body: bytes) -> Extracted:
    import logging

    from pypdf import PdfReader

    # pypdf logs recoverable damage ("EOF marker not found") straight to the terminal.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    reader = PdfReader(io.BytesIO(body))
    pages = [(page.extract_text() or "").strip() for page in reader.pages]
    title = ""
    if reader.metadata is not None and reader.metadata.title:
        title = str(reader.metadata.title)
    return Extracted(title=title.strip(), text="\n\n".join(p for p in pages if p))


def extract_body(body: bytes, content_type: str | None, url: str) -> Extracted | Unsupported:
    """Dispatch on the content type (sniffing only unlabelled bodies)."""
    mime, charset = split_content_type(content_type)
    kind = classify(mime, body[:4096])
    if kind is None:
        return Unsupported(content_type=mime or "unknown")
    if kind == "pdf":
        try:
            return pdf_to_text(body)
        except Exception:  # pypdf raises many types on corrupt files
            return Extracted(text="")
    text = decode_body(body, charset, html=kind == "html")
    if kind == "html":
        return html_to_markdown(text, url)
    return Extracted(text=text.strip())
