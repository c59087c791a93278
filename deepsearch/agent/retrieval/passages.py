"""Page chunks: contiguous spans of about 300-600 characters on paragraph and sentence
boundaries.

`chunk_spans` is what page evidence (`evidence.py`) is cut into and scored by; every
span is an exact slice of the page, so quotes taken from chunks are verbatim in it.
`SEPARATOR` joins non-adjacent excerpts of one page.
"""

from __future__ import annotations

import re

from deepsearch.text import sentence_breaks

SEPARATOR = "\n\n[...]\n\n"
CHUNK_MIN = 300
CHUNK_MAX = 600

_PARAGRAPH = re.compile(r"\n\s*\n")


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split text[start:end] into spans no longer than CHUNK_MAX, at sentence ends
    (`deepsearch.text`) and line breaks when possible, else at whitespace, else hard."""
    if end - start <= CHUNK_MAX:
        return [(start, end)]
    spans: list[tuple[int, int]] = []
    cursor = start
    for cut in _cuts(text, start, end):
        if cut > cursor:
            spans.append((cursor, cut))
            cursor = cut
    if cursor < end:
        spans.append((cursor, end))
    out: list[tuple[int, int]] = []
    for a, b in spans:
        while b - a > CHUNK_MAX:
            cut = text.rfind(" ", a + CHUNK_MIN, a + CHUNK_MAX)
            cut = cut + 1 if cut > a else a + CHUNK_MAX
            out.append((a, cut))
            a = cut
        out.append((a, b))
    return out


def _cuts(text: str, start: int, end: int) -> list[int]:
    """Where a piece may end: after a sentence's trailing whitespace, after a newline."""
    cuts = {after for _, after in sentence_breaks(text, start, end)}
    newline = text.find("\n", start, end)
    while newline >= 0:
        cuts.add(newline + 1)
        newline = text.find("\n", newline + 1, end)
    return sorted(cuts)


def chunk_spans(text: str) -> list[tuple[int, int]]:
    """Contiguous (start, end) spans covering `text`, each about 300-600 chars.

    Paragraphs are split into sentence-bounded pieces, then small neighbours are
    merged until a chunk reaches CHUNK_MIN (never beyond CHUNK_MAX).
    """
    if not text:
        return []
    bounds = [0]
    bounds.extend(m.end() for m in _PARAGRAPH.finditer(text))
    bounds.append(len(text))
    pieces: list[tuple[int, int]] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b > a:
            pieces.extend(_pieces(text, a, b))
    merged: list[tuple[int, int]] = []
    for a, b in pieces:
        if merged and (
            merged[-1][1] - merged[-1][0] < CHUNK_MIN and b - merged[-1][0] <= CHUNK_MAX
        ):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged
