"""Quote-anchored references: every citation points at words that stand on a page.

`build_references` splits the answer into sentences and the sources (pages the
run read, snippets it saw) into candidate quotes, scores the pairs with the
similarity backend, and keeps the best pairs above the threshold one-to-one
(each sentence and each quote at most once), at most `max_refs`.

Quotes are cut from each source's own (plain) text and checked against it -- never
assumed -- so a quote is always a span of what the page says; a pair is
dropped unless the quote carries the sentence's numbers (and, lexically, half its
words). What "the same text" means lives in `quote_text`.

Markers the LLM wrote itself are removed first (`quote_text.strip_markers`); a marker
the run cannot anchor is never left dangling. Our markers `[^n]` go right after the supported sentence's closing
punctuation and are numbered 1..n in order of appearance.

With the lexical backend a cheap word-overlap prefilter picks the candidates;
with embeddings every quote is scored (a paraphrase sharing no word -- e.g. in
another language -- must still be citable).

Suggested finalizer order: editor pass -> `markdown.length_guard` ->
`markdown.repair_markdown(text)` (keeps markers) ->
`build_references` (strips the LLM's markers, anchors its own) over the full
texts of the pages read plus the snippets seen.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel

from deepsearch.agent.citations.quote_text import (
    MIN_WORD_COVERAGE,
    is_verbatim,
    normalize_ws,
    numbers_supported,
    strip_markers,
)
from deepsearch.agent.retrieval.lexical import content_words, word_coverage
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.types import Reference
from deepsearch.text import cjk_count, sentence_breaks
from deepsearch.web.urls import host_matches_any, hostname

MIN_QUOTE = 60
MAX_QUOTE = 300
MIN_SENTENCE = 20
CANDIDATES_PER_SENTENCE = 20

_FENCE = re.compile(r"^\s*(```|~~~)")
_SOURCE_MARK = re.compile(r"\[(?:\d{1,3}|[a-z]|citation needed|note \d+)\]", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s*)")


class SourceText(BaseModel):
    """Text the run actually saw: a read page or a search snippet."""

    url: str
    title: str = ""
    text: str
    date: str | None = None
    kind: Literal["page", "snippet"] = "page"


class Sentence(NamedTuple):
    start: int
    end: int  # marker insertion point (after closing punctuation)
    text: str


# --------------------------------------------------------------------- answer side


def _outside_fences(text: str) -> list[tuple[int, str]]:
    """(offset, line) for every line not inside a fenced code block."""
    out, offset, fenced = [], 0, False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append((offset, line))
        offset += len(line)
    return out


def answer_sentences(answer: str) -> list[Sentence]:
    """Sentences of prose, list items and quotes; code, tables and headings skipped."""
    sentences = []
    for offset, line in _outside_fences(answer):
        body = line.rstrip("\n")
        stripped = body.strip()
        if not stripped or stripped.startswith(("|", "#", "[^")):
            continue
        bullet = _BULLET.match(body)
        begin = bullet.end() if bullet else 0
        cursor = begin
        parts = [cut for cut, _ in sentence_breaks(body, begin)] + [len(body)]
        for cut in parts:
            text = body[cursor:cut].strip()
            if text_weight(text) >= MIN_SENTENCE:
                end = offset + cursor + len(body[cursor:cut].rstrip())
                sentences.append(Sentence(start=offset + cursor, end=end, text=text))
            cursor = cut
            while cursor < len(body) and body[cursor].isspace():
                cursor += 1
    return sentences


# --------------------------------------------------------------------- source side


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)
    return text[: space if space > limit // 2 else limit].rstrip()


def candidate_quotes(
    text: str, *, min_chars: int = MIN_QUOTE, max_chars: int = MAX_QUOTE
) -> list[str]:
    """Sentences or short sentence groups of one source's text, each verbatim in it
    (whitespace-normalised). Table rows (" | "-separated cells) are no prose to quote.

    Citation marks of the source itself ("[12]", "[citation needed]") end a
    segment and are never part of a quote: they would read as our own markers.
    """
    quotes: list[str] = []
    for raw in _logical_lines(text):
        line = normalize_ws(raw)
        if _is_table_row(line) or "[^" in line:
            continue
        bullet = _BULLET.match(line)
        line = line[bullet.end() :] if bullet else line
        for segment in _SOURCE_MARK.split(line):
            quotes.extend(_segment_quotes(segment, min_chars, max_chars))
    return quotes


def _is_table_row(line: str) -> bool:
    """A markdown table row or a plain one (cells joined by " | ")."""
    return line.startswith("|") or " | " in line


def _logical_lines(text: str) -> list[str]:
    """Lines with hard wraps undone: a paragraph's wrapped lines are one line (a
    sentence must not be cut at a line break), while headings, table rows, bullet
    items and blank lines still separate. Whitespace-normalised verbatim is kept."""
    out: list[str] = []
    buffer: list[str] = []

    def flush() -> None:
        if buffer:
            out.append(" ".join(buffer))
            buffer.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or _is_table_row(line):
            flush()
            if line:
                out.append(line)
        elif _BULLET.match(line):
            flush()
            buffer.append(line)  # an item may wrap too
        else:
            buffer.append(line)
    flush()
    return out


def _segment_quotes(line: str, min_chars: int, max_chars: int) -> list[str]:
    # Groups are slices of the line, never re-joined strings: they stay verbatim.
    quotes = []
    ends = [cut for cut, _ in sentence_breaks(line)] + [len(line)]
    start = 0
    for end in ends:
        group = line[start:end].strip()
        if text_weight(group) >= min_chars:
            quotes.append(_cut(group, max_chars))
            start = end
    group = line[start:].strip()
    if (
        start < len(line)
        and text_weight(group) >= min_chars // 2
        and sum(ch.isalpha() for ch in group) >= min_chars // 3
    ):
        quotes.append(_cut(group, max_chars))
    return quotes


class _Quote(NamedTuple):
    source: int
    text: str


def _collect_quotes(sources: Sequence[SourceText], only_hostnames: Iterable[str]) -> list[_Quote]:
    only = list(only_hostnames)
    seen: set[str] = set()
    out = []
    for index, source in enumerate(sources):
        if only and not host_matches_any(hostname(source.url), only):
            continue
        haystack = normalize_ws(source.text)  # once per source: pages can be long
        for quote in candidate_quotes(source.text):
            key = quote.casefold()
            # The invariant: a quote that is not verbatim in its source never leaves here.
            if key in seen or normalize_ws(quote) not in haystack:
                continue
            seen.add(key)
            out.append(_Quote(source=index, text=quote))
    return out


def _index_terms(text: str) -> set[str]:
    """Content words (single characters for Han/kana)."""
    return set(content_words(text))


def text_weight(text: str) -> int:
    """Length with CJK characters counted twice (one carries about a word's worth)."""
    return len(text) + cjk_count(text)


def _prefilter(sentences: list[Sentence], quotes: list[_Quote], per: int) -> list[int]:
    """Indices of quotes sharing content words with some sentence (top `per` each),
    so the similarity backend sees hundreds of candidates, not the whole corpus."""
    index: dict[str, list[int]] = {}
    for qi, quote in enumerate(quotes):
        for word in _index_terms(quote.text):
            index.setdefault(word, []).append(qi)
    chosen: set[int] = set()
    for sentence in sentences:
        hits: Counter[int] = Counter()
        for word in _index_terms(sentence.text):
            hits.update(index.get(word, ()))
        chosen.update(qi for qi, _ in sorted(hits.items(), key=lambda h: (-h[1], h[0]))[:per])
    return sorted(chosen)


# --------------------------------------------------------------------- assembly


def render_reference_definitions(refs: Sequence[Reference], start: int = 1) -> str:
    """`[^n]: "quote" — [title](url) (host)`: the host is named unless the title
    already does, since the title is the page's own word (a page may call itself
    anything) and a rendered link hides its address."""
    lines = []
    for n, ref in enumerate(refs, start=start):
        host = hostname(ref.url)
        title = (ref.title or host or ref.url).replace("[", "(").replace("]", ")")
        title = normalize_ws(title)
        # Parentheses or blanks in the URL would end the markdown link early.
        url = ref.url.replace("(", "%28").replace(")", "%29").replace(" ", "%20")
        named = f" ({host})" if host and host.casefold() not in title.casefold() else ""
        lines.append(f'[^{n}]: "{normalize_ws(ref.quote)}" — [{title}]({url}){named}')
    return "\n".join(lines)


def _insert_markers(answer: str, positions: list[tuple[int, int]]) -> str:
    """Insert `[^n]` at each (offset, n); offsets are processed right to left."""
    out = answer
    for offset, n in sorted(positions, reverse=True):
        out = f"{out[:offset]}[^{n}]{out[offset:]}"
    return out


def _one_to_one(pairs: list[tuple[float, int, int]], limit: int) -> list[tuple[int, int]]:
    """Best-scoring (sentence, quote) pairs first, each sentence and each quote at most
    once, at most `limit`; returned in the answer's order."""
    used_s: set[int] = set()
    used_q: set[int] = set()
    chosen: list[tuple[int, int]] = []
    for _, si, qi in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if len(chosen) >= limit:
            break
        if si in used_s or qi in used_q:
            continue
        used_s.add(si)
        used_q.add(qi)
        chosen.append((si, qi))
    return sorted(chosen)


async def build_references(
    answer: str,
    sources: Sequence[SourceText],
    sim: Similarity,
    *,
    max_refs: int = 10,
    threshold: float | None = None,
    only_hostnames: Iterable[str] = (),
    with_definitions: bool = True,
) -> tuple[str, list[Reference]]:
    """The answer with anchored `[^n]` markers (plus definitions) and the references."""
    clean = strip_markers(answer)
    sentences = answer_sentences(clean)
    quotes = _collect_quotes(sources, only_hostnames)
    if not sentences:
        pool: list[int] = []
    elif sim.name == "embedding":
        pool = list(range(len(quotes)))  # no word overlap needed (see module doc)
    else:
        pool = _prefilter(sentences, quotes, CANDIDATES_PER_SENTENCE)
    if not pool or max_refs <= 0:
        return clean, []
    grid = await sim.matrix([s.text for s in sentences], [quotes[q].text for q in pool])
    limit = sim.cite_threshold if threshold is None else threshold
    pairs = [
        (score, si, pool[pj])
        for si, row in enumerate(grid)
        for pj, score in enumerate(row)
        if score >= limit
        and numbers_supported(sentences[si].text, quotes[pool[pj]].text)
        and (
            sim.name == "embedding"  # cross-lingual support shares no words by design
            or word_coverage(sentences[si].text, quotes[pool[pj]].text) >= MIN_WORD_COVERAGE
        )
    ]
    refs: list[Reference] = []
    positions: list[tuple[int, int]] = []
    for si, qi in _one_to_one(pairs, max_refs):
        quote, source = quotes[qi], sources[quotes[qi].source]
        if not is_verbatim(quote.text, source.text):  # belt and braces: never invent
            continue
        refs.append(
            Reference(url=source.url, title=source.title, quote=quote.text, date=source.date)
        )
        positions.append((sentences[si].end, len(refs)))
    text = _insert_markers(clean, positions)
    if with_definitions and refs:
        text = text.rstrip() + "\n\n" + render_reference_definitions(refs) + "\n"
    return text, refs
