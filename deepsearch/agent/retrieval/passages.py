"""Query-aware passage selection for long pages (instead of cutting the head).

A page longer than `keep_whole_below` characters is split into chunks of about
300-600 characters on paragraph and sentence boundaries. Every chunk is scored
against the current question; windows of consecutive chunks of at most
`window_chars` are scored by their mean chunk score, and the best
non-overlapping windows are kept -- max(2, min(max_windows, len // window_chars))
of them, as in the reference -- and returned in page order joined by SEPARATOR.
Every window is an exact slice of the page, so quotes taken from the selection
are still verbatim in the page.

`chunk_spans` is what page evidence (`evidence.py`) is cut into; the visit action
no longer shows windows. `page_passages`, the former per-visit selection: a long page is cut into windows of
about `WINDOW_CHARS` (6,000) characters; the best-scoring ones are kept in page
order, at most `MAX_WINDOWS` (5) of them and never more than fit the per-page
budget `limit_chars` -- so with the default budget of 12,000 characters that is 2
windows (windows shrink slightly so the separators between them fit too). Below
12,000 the page still gets two windows (`select_passages` always takes at least
two), each half the budget.
"""

from __future__ import annotations

import re

from deepsearch.agent.retrieval.similarity import Similarity

SEPARATOR = "\n\n[...]\n\n"
CHUNK_MIN = 300
CHUNK_MAX = 600
WINDOW_CHARS = 6000
MAX_WINDOWS = 5

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n")


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split text[start:end] into spans no longer than CHUNK_MAX, at sentence ends
    when possible, else at whitespace, else hard."""
    if end - start <= CHUNK_MAX:
        return [(start, end)]
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.end() > cursor:
            spans.append((cursor, match.end()))
            cursor = match.end()
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


def _windows(spans: list[tuple[int, int]], window_chars: int) -> list[tuple[int, int]]:
    """For each start chunk, the longest run of chunks fitting in window_chars
    (at least one chunk)."""
    out = []
    j = 0
    for i in range(len(spans)):
        j = max(j, i + 1)
        while j < len(spans) and spans[j][1] - spans[i][0] <= window_chars:
            j += 1
        out.append((i, j))  # chunks i..j-1
    return out


def num_windows(length: int, window_chars: int, max_windows: int) -> int:
    return max(2, min(max_windows, length // window_chars))


async def select_passages(
    text: str,
    question: str,
    sim: Similarity,
    *,
    window_chars: int = 6000,
    max_windows: int = 5,
    keep_whole_below: int = 12000,
) -> str:
    """The parts of a long page most relevant to `question`, in page order."""
    if len(text) < keep_whole_below:
        return text
    spans = chunk_spans(text)
    chunk_scores = await sim.scores(question, [text[a:b] for a, b in spans])
    prefix = [0.0]
    for score in chunk_scores:
        prefix.append(prefix[-1] + score)
    candidates = []
    for i, j in _windows(spans, window_chars):
        mean = (prefix[j] - prefix[i]) / (j - i)
        candidates.append((mean, i, j))
    # Best mean first; ties go to the earlier window (a question-less call keeps the head).
    candidates.sort(key=lambda c: (-c[0], c[1]))
    wanted = num_windows(len(text), window_chars, max_windows)
    chosen: list[tuple[int, int]] = []
    for _, i, j in candidates:
        if len(chosen) == wanted:
            break
        if all(j <= a or i >= b for a, b in chosen):
            chosen.append((i, j))
    chosen.sort()
    parts = [text[spans[i][0] : spans[j - 1][1]].strip() for i, j in chosen]
    return SEPARATOR.join(p for p in parts if p)


def trim_to_budget(text: str, max_chars: int, marker: str = " […]") -> str:
    """`text` cut to at most `max_chars` (marker included), at a paragraph, sentence
    or word boundary when one lies in the last fifth of the budget."""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(marker):
        return text[:max_chars]
    room = max_chars - len(marker)
    head = text[:room]
    floor = int(room * 0.8)
    for pattern in ("\n\n", ". ", "\n", " "):
        cut = head.rfind(pattern, floor)
        if cut > 0:
            keep = cut + (1 if pattern == ". " else 0)
            return head[:keep].rstrip() + marker
    return head + marker


def window_plan(limit_chars: int) -> tuple[int, int]:
    """(window size, number of windows) for a per-page budget of `limit_chars`."""
    count = max(2, min(MAX_WINDOWS, limit_chars // WINDOW_CHARS))
    room = limit_chars - (count - 1) * len(SEPARATOR)
    return max(1, min(WINDOW_CHARS, room // count)), count


async def page_passages(text: str, question: str, sim: Similarity, limit_chars: int) -> str:
    """The parts of a page most relevant to `question`, in page order, within `limit_chars`.

    Short pages are kept whole; long ones are cut by relevance, not by position.
    """
    if len(text) <= limit_chars:
        return text
    window, count = window_plan(limit_chars)
    selected = await select_passages(
        text,
        question,
        sim,
        window_chars=window,
        max_windows=count,
        keep_whole_below=limit_chars,
    )
    return trim_to_budget(selected, limit_chars)
