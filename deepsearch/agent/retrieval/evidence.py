"""What the prompt shows of each read page: its evidence, not its navigation.

A read page is cut into chunks (`passages.chunk_spans`); chunks that are link lists
(navboxes, "see also" lists, menus: mostly anchor text of the page's own links, or
many short unpunctuated items) are dropped for good. Before every prompt each page's
excerpt is recomputed from the chunks most relevant to the ORIGINAL question and the
PENDING sub-questions, within a per-page share of the knowledge allowance, so that
the first hop's page is still in view when a later hop's page is read and one long
page cannot crowd out the others.

Pinning: when an answer (a sub-answer or a candidate answer) is given, the shown
chunks that best support it are pinned: they stay in their page's excerpt, and the
page's knowledge item is always shown (`KnowledgeItem.pinned`).

Chain: a passage that answered a hop of the research (`focus.Focus.learn`) is shown
whatever the page's share, down to the smallest budget: without it the next hop's
page makes no sense. Its item is pinned, which the prompt's knowledge choice
shows first, even past the allowance (`context.PINNED_ROOM`).

Every excerpt is chunks of the page text joined by `SEPARATOR`; each chunk is an
exact slice of the page text, so quotes taken from an excerpt stay verbatim.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from deepsearch.agent.retrieval.lexical import content_words
from deepsearch.agent.retrieval.passages import SEPARATOR, chunk_spans
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.types import KnowledgeItem
from deepsearch.text import ends_sentence, numbers_in

# A chunk whose characters are at least this share anchor text is navigation.
LINK_TEXT_SHARE = 0.55
# Structural rule for text without known anchors: many short, unpunctuated items.
MIN_LIST_ITEMS = 6
SHORT_ITEM_WORDS = 5
SHORT_ITEM_SHARE = 0.8
MAX_ANCHORS = 400
# A chunk below this share of a question's best chunk on the page is no evidence for it.
RELEVANT_FRACTION = 0.35
CHARS_PER_TOKEN = 4
MIN_PAGE_CHARS = 700  # even with many pages, each keeps its best passage or two
PIN_PER_ANSWER = 2
# Lean prompts: a page shows at most this many passages per research question.
MAX_PASSAGES_PER_QUERY = 2
# Share of the knowledge allowance page evidence may take (the rest: answers, snippets).
EVIDENCE_SHARE = 0.7

STEM_CHARS = 6
LEAD_MIN_CHARS = 80
_BLOCK = re.compile(r"\n\s*\n")
_NON_WORD = re.compile(r"[^\w]+")
_ITEM_SPLIT = re.compile(r"\s*(?:\n|·|•|\||\u2022|\s[-–—]\s)\s*")


@dataclass
class PageEvidence:
    """A read page's evidence chunks and what the prompt shows of them."""

    url: str
    title: str
    chunks: list[str]
    item: KnowledgeItem
    scores: dict[str, list[float]] = field(default_factory=dict)  # query -> per chunk
    shown: list[int] = field(default_factory=list)  # chunk indices in the excerpt
    pinned: set[int] = field(default_factory=set)
    chain: set[int] = field(default_factory=set)  # passages that answered a hop (focus.py)
    links: list[tuple[str, str]] = field(default_factory=list)  # the prose's (anchor, URL)
    stems: list[frozenset[str]] | None = None  # per chunk (cached)
    last_key: tuple[object, ...] | None = None  # what the shown excerpt was chosen for


def _words_only(text: str) -> str:
    return " " + " ".join(_NON_WORD.sub(" ", text.casefold()).split()) + " "


def _anchor_share(chunk: str, anchors: Sequence[str]) -> float:
    """Share of the chunk's characters covered by whole-word occurrences of anchor
    texts (each character counted once, however many anchors cover it)."""
    text = _words_only(chunk)
    covered = bytearray(len(text))
    for anchor in anchors:
        needle = f" {anchor} "
        at = text.find(needle)
        while at >= 0:
            covered[at + 1 : at + len(needle) - 1] = b"\x01" * (len(needle) - 2)
            at = text.find(needle, at + 1)
    letters = len(text.strip())
    return sum(covered) / letters if letters else 0.0


def _short_items(chunk: str) -> bool:
    """Many items of a few words, without sentence punctuation or figures (a data
    row or an infobox line carries numbers; a menu or a list of titles does not)."""
    items = [i for i in _ITEM_SPLIT.split(chunk.strip()) if i]
    if len(items) < MIN_LIST_ITEMS:
        return False
    short = sum(
        1
        for i in items
        if len(i.split()) <= SHORT_ITEM_WORDS
        and not (ends_sentence(i) or i.endswith((":", ";")))
        and not numbers_in(i)
    )
    return short / len(items) >= SHORT_ITEM_SHARE


def is_link_list(chunk: str, anchors: Sequence[str] = ()) -> bool:
    """Navigation, not evidence. With the page's anchor texts known: mostly anchor
    text. Without them (no links harvested): many short items without sentence
    punctuation or figures."""
    if not chunk.strip():
        return True
    if anchors:
        return _anchor_share(chunk, anchors) >= LINK_TEXT_SHARE
    return _short_items(chunk)


def anchor_texts(links: Iterable[tuple[str, str]]) -> list[str]:
    """Distinct anchor texts worth matching (word-normalised, longest first)."""
    seen = {" ".join(_NON_WORD.sub(" ", a.casefold()).split()) for a, _ in links}
    return sorted((a for a in seen if len(a) >= 3), key=len, reverse=True)[:MAX_ANCHORS]


def evidence_chunks(text: str, anchors: Sequence[str] = ()) -> list[str]:
    """The page's chunks that are not link lists, in page order (exact slices).

    Blocks (blank-line separated) are judged first, so a navbox is never merged with
    the paragraph next to it; each run of kept blocks -- one exact slice of the page
    -- is then chunked (a heading joins its paragraph), and each chunk judged again
    (a long block can end in a list)."""
    chunks: list[str] = []
    for a, b in _kept_runs(text, anchors):
        run = text[a:b]
        pieces = (run[x:y].strip() for x, y in chunk_spans(run))
        chunks.extend(c for c in pieces if c and not is_link_list(c, anchors))
    return chunks


def _kept_runs(text: str, anchors: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of consecutive blocks that are not link lists."""
    runs: list[tuple[int, int]] = []
    run_start: int | None = None
    start = 0
    for end in [*(m.start() for m in _BLOCK.finditer(text)), len(text)]:
        block = text[start:end]
        if not block.strip():
            pass  # blank: neither ends nor starts a run
        elif is_link_list(block, anchors):
            if run_start is not None:
                runs.append((run_start, start))
            run_start = None
        elif run_start is None:
            run_start = start
        start = end
    if run_start is not None:
        runs.append((run_start, len(text)))
    return runs


def _stem(word: str) -> str:
    """A crude stem: designed/designer, lighthouse/lighthouses meet."""
    return word[:STEM_CHARS] if len(word) > STEM_CHARS else word


def stems_of(text: str) -> frozenset[str]:
    """The text's content words, stemmed: what relevance is measured on."""
    return frozenset(_stem(w) for w in content_words(text))


def chunk_stems(ev: PageEvidence) -> list[frozenset[str]]:
    if ev.stems is None:
        ev.stems = [stems_of(c) for c in ev.chunks]
    return ev.stems


def word_scores(ev: PageEvidence, query: str) -> list[float]:
    """IDF-weighted share of the query's content words (stemmed) each chunk holds.
    Word sets are computed once per page: this runs for every page and question."""
    stems = chunk_stems(ev)
    wanted = {_stem(w) for w in content_words(query)}
    if not wanted or not stems:
        return [0.0] * len(stems)
    df = {w: sum(1 for c in stems if w in c) for w in wanted}
    idf = {w: math.log(1 + len(stems) / df[w]) if df[w] else 0.0 for w in wanted}
    total = sum(math.log(1 + len(stems)) for _ in wanted)
    return [sum(idf[w] for w in wanted if w in c) / total for c in stems]


async def _chunk_scores(ev: PageEvidence, query: str, sim: Similarity) -> list[float]:
    """Word-overlap scores (free, cached per query): excerpts are re-chosen before
    every prompt, and embedding every chunk of every page per question would spend
    tokens each time. Only when no word of the query is on the page (e.g. another
    language) does the run's embedding backend score it, once per (page, query)."""
    if query not in ev.scores:
        scores = word_scores(ev, query)
        if scores and max(scores) <= 0 and sim.name == "embedding":
            scores = await sim.scores(query, ev.chunks)
        ev.scores[query] = scores
    return ev.scores[query]


async def _ranked_per_query(
    ev: PageEvidence, queries: Sequence[str], sim: Similarity
) -> list[list[int]]:
    """For each query, its relevant chunks best first: score above 0 and at least
    RELEVANT_FRACTION of that query's best (backends differ in scale), at most
    MAX_PASSAGES_PER_QUERY."""
    ranked: list[list[int]] = []
    for query in dict.fromkeys(q for q in queries if q.strip()):
        scores = await _chunk_scores(ev, query, sim)
        top = max(scores, default=0.0)
        if top <= 0:
            continue
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        ranked.append(
            [i for i in order if scores[i] >= RELEVANT_FRACTION * top][:MAX_PASSAGES_PER_QUERY]
        )
    return ranked


async def choose_chunks(
    ev: PageEvidence, queries: Sequence[str], sim: Similarity, max_chars: int
) -> list[int]:
    """The chain's chunks (always), pinned chunks, then each query's best chunk, then
    each one's second best..., within max_chars; in page order. A page no query
    matches shows its lead."""
    ranked = await _ranked_per_query(ev, queries, sim)
    first = [*sorted(ev.chain), *sorted(ev.pinned)]
    wanted = list(dict.fromkeys([*first, *_round_robin(ranked)])) or [_lead(ev)]
    chosen: list[int] = []
    spent = 0
    for i in wanted:
        if i >= len(ev.chunks):
            continue
        cost = len(ev.chunks[i]) + len(SEPARATOR)
        if chosen and spent + cost > max_chars and i not in ev.chain:
            continue  # the first chunk always shows: a page is never reduced to nothing
        chosen.append(i)
        spent += cost
    return sorted(chosen)


def _lead(ev: PageEvidence) -> int:
    """The first chunk that is more than a heading: what the page is about."""
    return next((i for i, c in enumerate(ev.chunks) if len(c) >= LEAD_MIN_CHARS), 0)


def _round_robin(ranked: list[list[int]]) -> list[int]:
    out: list[int] = []
    for rank in range(max((len(r) for r in ranked), default=0)):
        out.extend(r[rank] for r in ranked if rank < len(r))
    return out


def render_excerpt(ev: PageEvidence, indices: Sequence[int], max_chars: int) -> str:
    """The chunks joined; cut at max_chars, never inside the chain's chunks."""
    text, chain_end = "", 0
    for i in indices:
        text += (SEPARATOR if text else "") + ev.chunks[i]
        chain_end = len(text) if i in ev.chain else chain_end
    return text[: max(max_chars, chain_end)]


async def refresh_page(
    ev: PageEvidence, queries: Sequence[str], sim: Similarity, max_chars: int
) -> None:
    """Recompute the page's excerpt; the item's caches are reset when it changed.
    Nothing is recomputed while the questions, the share and the pins stay the same."""
    key = (tuple(queries), max_chars, tuple(sorted(ev.pinned)), tuple(sorted(ev.chain)))
    if key == ev.last_key:
        return
    ev.last_key = key
    indices = await choose_chunks(ev, queries, sim, max_chars)
    if indices == ev.shown and ev.item.answer:
        return
    ev.shown = indices
    ev.item.answer = render_excerpt(ev, indices, max_chars) or "(no readable text)"
    ev.item.tokens = None
    ev.item.words = None
    ev.item.relevance_to = {}


def page_share_chars(evidence_tokens: int, pages: int, page_chars: int) -> int:
    """Each page's share of the evidence allowance, in characters."""
    if pages <= 0:
        return page_chars
    share = evidence_tokens * CHARS_PER_TOKEN // pages
    return max(min(MIN_PAGE_CHARS, page_chars), min(page_chars, share))


async def refresh_all(
    pages: Sequence[PageEvidence],
    queries: Sequence[str],
    sim: Similarity,
    *,
    evidence_tokens: int,
    page_chars: int,
) -> None:
    share = page_share_chars(evidence_tokens, len(pages), page_chars)
    for ev in pages:
        await refresh_page(ev, queries, sim, share)


async def pin_support(pages: Sequence[PageEvidence], answer: str, sim: Similarity) -> int:
    """Pin the shown chunks that best support `answer`; how many were pinned."""
    shown = [(ev, i) for ev in pages for i in ev.shown]
    if not answer.strip() or not shown:
        return 0
    scores = await sim.scores(answer, [ev.chunks[i] for ev, i in shown])
    ranked = sorted(range(len(shown)), key=lambda k: -scores[k])
    pinned = 0
    for k in ranked[:PIN_PER_ANSWER]:
        if scores[k] <= 0:
            break
        ev, i = shown[k]
        ev.pinned.add(i)
        ev.item.pinned = True
        pinned += 1
    return pinned
