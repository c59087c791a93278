"""One corpus file to (title, text): encoding detected, binary files recognised.

Text files are UTF-8 when they decode as such (a BOM names UTF-8/16/32 outright);
otherwise charset-normalizer guesses the encoding (latin-1, cp1252, UTF-16 without a
BOM...). A file that no encoding reads as text — NUL bytes, or many control
characters after decoding — is binary: `extract_document` returns None for it, and
the index counts it as skipped instead of indexing garbage passages.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from deepsearch.text import sentence_breaks
from deepsearch.web.search.base import clean_text

PASSAGE_CHARS = 800
SNIPPET_CHARS = 300
SNIFF_BYTES = 64 * 1024
MAX_CONTROL_SHARE = 0.02  # of the decoded characters (tabs, newlines and CR excluded)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


# A terminal escape sequence is one ESC (or a BEL/backspace) among printable text: a
# note holding a few of them is still a note (they are stripped before printing).
_TERMINAL_CONTROLS = frozenset("\x1b\x07\x08")


def _mostly_controls(text: str) -> bool:
    sample = text[:SNIFF_BYTES]
    if not sample:
        return False
    if "\x00" in sample:
        return True
    controls = [c for c in _CONTROL.findall(sample) if c not in _TERMINAL_CONTROLS]
    return len(controls) / len(sample) > MAX_CONTROL_SHARE


def decode_text(raw: bytes) -> str | None:
    """The text of a file's bytes, or None when the bytes are not text."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return raw.decode(encoding, errors="replace")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        return None if _mostly_controls(text) else text
    from charset_normalizer import from_bytes

    best = from_bytes(raw[:SNIFF_BYTES]).best()
    if best is None:
        return None
    try:
        text = raw.decode(best.encoding, errors="replace")
    except LookupError:
        return None
    return None if _mostly_controls(text) else text


def utf8_name(name: str) -> bool:
    """A file name as os.walk gives it is UTF-8 unless it carries surrogate escapes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def title_from_markdown(text: str) -> str:
    match = re.search(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


MAX_TITLE_CHARS = 120
_UNDERLINE = re.compile(r"^\s*(?:=+|-+)\s*$")


def title_from_plain(text: str) -> str:
    """A plain-text file's title: its first line when that line reads as a heading
    (short, not a sentence's end, with more text after it: a blank line or an
    `===` / `---` underline between), else ""."""
    lines = text.lstrip("\ufeff").splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return ""
    first = " ".join(lines[start].split()).lstrip("#").strip()
    rest = lines[start + 1 :]
    if not first or len(first) > MAX_TITLE_CHARS or first[-1] in ".,;:":
        return ""
    if rest and _UNDERLINE.match(rest[0]):
        return first
    if len(rest) >= 2 and not rest[0].strip() and any(line.strip() for line in rest[1:]):
        return first
    return ""


def _extract_html(raw: str) -> tuple[str, str]:
    """The web reader's extraction (same caps and fallbacks), with the <title> text."""
    from deepsearch.web.extract import html_to_text

    match = re.search(r"<title[^>]*>(.*?)</title>", raw, re.IGNORECASE | re.DOTALL)
    title = clean_text(match.group(1)) if match else ""
    return title, html_to_text(raw).text


def _extract_pdf(path: Path) -> tuple[str, str]:
    from deepsearch.web.extract import pdf_to_text

    got = pdf_to_text(path.read_bytes())
    return got.title, got.text


def extract_document(path: Path) -> tuple[str, str] | None:
    """(title, text) of one corpus file (the title falls back to the file name), or
    None for a binary file."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        title, text = _extract_pdf(path)
    else:
        raw = decode_text(path.read_bytes())
        if raw is None:
            return None
        if suffix in (".html", ".htm"):
            title, text = _extract_html(raw)
        elif suffix == ".txt":
            title, text = title_from_plain(raw), raw
        else:  # markdown: the plain text a reader sees, as for web pages
            from deepsearch.web.markdown_plain import markdown_to_plain

            title, text = title_from_markdown(raw), markdown_to_plain(raw)
    return title or path.stem.replace("_", " ").replace("-", " "), text


def split_passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """Paragraph-packed passages of about `size` characters (long paragraphs cut)."""
    passages: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        if current and len(current) + len(para) + 1 > size:
            passages.append(current)
            current = ""
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            passages.append(para[:cut].strip())
            para = para[cut:].strip()
        current = f"{current} {para}".strip()
    if current:
        passages.append(current)
    return passages


def best_snippet(passage: str, terms: list[str], size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `passage`, starting a little before the first term."""
    if len(passage) <= size:
        return passage
    lowered = passage.lower()
    hits = [i for i in (lowered.find(t) for t in terms if t) if i >= 0]
    first = min(hits) if hits else 0
    start = max(0, first - size // 4)
    # Begin at the sentence (`deepsearch.text`) or line holding the first hit; the
    # break's lookahead must see the hit's first character.
    starts = [after for _, after in sentence_breaks(passage, start, first + 1)]
    newline = passage.rfind("\n", start, first)
    if newline >= 0:
        starts.append(newline + 1)
    if starts:
        start = max(starts)
    elif start > 0:
        space = passage.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    while start < len(passage) and passage[start].isspace():
        start += 1
    end = min(len(passage), start + size)
    if end < len(passage):
        space = passage.rfind(" ", start, end)
        end = space if space > start + size // 2 else end
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(passage) else ""
    return f"{prefix}{passage[start:end].strip()}{suffix}"
