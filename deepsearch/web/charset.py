"""Bytes -> str for page bodies: BOM, valid UTF-8, the declared charset, detection."""

from __future__ import annotations

import codecs
import re

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


# Codecs that do not spell ASCII as ASCII: their bytes can pass as valid UTF-8 (UTF-16
# "h\x00i\x00", ISO-2022 escapes), so a declaration of one of them is believed first.
_NOT_ASCII_COMPATIBLE = ("utf-16", "utf-32", "utf_16", "utf_32", "iso2022", "utf-7", "hz")


def _declared_codec(body: bytes, header_charset: str | None, *, html: bool) -> str | None:
    """The charset the header, or else the page's <meta>, declares (known codecs only)."""
    codec = _known_codec(header_charset)
    if codec is None and html:
        match = _META_CHARSET.search(body[:8192])
        codec = _known_codec(match.group(1).decode("ascii", "ignore")) if match else None
    return codec


def decode_body(body: bytes, header_charset: str | None, *, html: bool) -> str:
    """BOM, then valid UTF-8, then the declared charset (header, <meta>), then detection.

    Valid UTF-8 wins over a contradicting declaration: servers and templates often
    claim gb2312 or latin-1 for pages written in UTF-8, while text in another charset
    is practically never valid UTF-8 once it holds a non-ASCII byte.
    """
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    declared = _declared_codec(body, header_charset, html=html)
    if declared and declared.startswith(_NOT_ASCII_COMPATIBLE):
        return body.decode(declared, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if declared:
        return body.decode(declared, errors="replace")
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    return body.decode(best.encoding if best else "latin-1", errors="replace")
