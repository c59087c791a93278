"""After an answer is accepted (or forced), the plain part of finalizing: markdown
repair, links to unseen pages unlinked, and references anchored to verbatim quotes
from what the run actually read (`anchor_answer`). The editor's LLM pass and reading
the run's state are the loop's step (agent/steps/finalize.py).

Nothing the LLM wrote about its sources survives unchecked: its own citation
markers and definition lines are always removed (also with `max_references <= 0`
and for direct answers, via `clean_unanchored`), and a link or bare URL whose
URL the run never saw (URL pool, pages read, snippets) becomes plain text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from deepsearch.agent.citations.markdown import length_guard, outside_code, repair_markdown
from deepsearch.agent.citations.quote_text import strip_markers
from deepsearch.agent.citations.references import SourceText, build_references
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.types import Reference
from deepsearch.web.urls import url_key

# The editor may polish but not cut: below this share of the original, it stands.
MIN_EDIT_RATIO = 0.85
# A one-paragraph answer this short has nothing to polish: no editor call.
EDIT_MIN_CHARS = 300

_MD_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]\n]*)\]\(<?(?P<url>https?://[^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\)"
)
_AUTOLINK = re.compile(r"<(?P<url>https?://[^>\s]+)>")
_BARE_URL = re.compile(r"(?<![\w(<\[/=\"'])(?P<url>https?://[^\s<>()\[\]\"']+)")


def _plain_url(url: str) -> str:
    """A URL as text no markdown renderer links: no scheme, no "www."."""
    return re.sub(r"^https?://(www\.)?", "", url)


def unlink_unseen(text: str, seen_urls: Collection[str]) -> str:
    """Links and bare URLs to pages the run never saw become plain text: the
    anchor text of a link stays, a bare URL loses its scheme (so it is not linked).
    "Saw" is page identity (`web.urls.url_key`); a bare URL's trailing sentence
    punctuation is no part of it."""
    seen = {url_key(u) for u in seen_urls}

    def link(match: re.Match[str]) -> str:
        if url_key(match.group("url")) in seen:
            return match.group(0)
        return match.group("text") or _plain_url(match.group("url"))

    def bare(match: re.Match[str]) -> str:
        url = match.group("url")
        trail = len(url) - len(url.rstrip(".,;:!?"))
        url, tail = url[: len(url) - trail], url[len(url) - trail :]
        return match.group(0) if url_key(url) in seen else _plain_url(url) + tail

    def fix(part: str) -> str:
        part = _MD_LINK.sub(link, part)
        part = _AUTOLINK.sub(
            lambda m: bare(m) if url_key(m.group("url")) not in seen else m.group(0), part
        )
        # Bare URLs outside markdown links (those were handled just above).
        pieces, last = [], 0
        for m in _MD_LINK.finditer(part):
            pieces.append(_BARE_URL.sub(bare, part[last : m.start()]))
            pieces.append(m.group(0))
            last = m.end()
        pieces.append(_BARE_URL.sub(bare, part[last:]))
        return "".join(pieces)

    return outside_code(text, fix)


def clean_unanchored(text: str, seen: Collection[str] | None = None) -> str:
    """An answer that gets no references (e.g. a direct step-1 answer): markdown
    repaired, the LLM's own citation markers and definition lines removed. With
    `seen`, links to URLs outside it become plain text (`()` unlinks every URL)."""
    text = repair_markdown(text)
    if seen is not None:
        text = unlink_unseen(text, seen)
    return strip_markers(text).strip() + "\n"


def worth_editing(answer: str) -> bool:
    """A one-paragraph answer shorter than EDIT_MIN_CHARS has nothing to polish (one
    LLM call saved on the critical path)."""
    return len(answer.strip()) >= EDIT_MIN_CHARS or "\n" in answer.strip()


def kept_edit(answer: str, edited: str) -> str:
    """The editor may polish but not cut: `edited` unless it is shorter than
    MIN_EDIT_RATIO of `answer`."""
    return length_guard(answer, edited.strip(), min_ratio=MIN_EDIT_RATIO)


async def anchor_answer(
    text: str,
    sources: Sequence[SourceText],
    similarity: Similarity,
    *,
    seen: Collection[str],
    max_refs: int,
    only_hostnames: Iterable[str] = (),
) -> tuple[str, list[Reference]]:
    """Markdown repaired, links to URLs outside `seen` unlinked, then the references
    anchored in `sources` (none with `max_refs <= 0`: the markers are removed)."""
    text = unlink_unseen(repair_markdown(text), seen).strip()
    if max_refs <= 0:
        return strip_markers(text).strip(), []
    return await build_references(
        text, sources, similarity, max_refs=max_refs, only_hostnames=only_hostnames
    )
