"""Where the research stands: one notion of "relevant", shared by the progress rule
(`agent/progress.py`), the prompt's evidence choice (`evidence.py`) and URL ranking
(`ranking.py`).

A multi-hop question names its first hop only: "the year the engineer who designed
the Port Calder Lighthouse was born" shares its words with the lighthouse's page, not
with the engineer's. The engineer's name (the bridge) is learned on the way. So a
passage or a link is relevant to the research when it

- covers the original question (its content words, as before: `covers`), or
- covers an open sub-question, or
- names a bridge term: a term the run has learned, with the hop it was learned at.

Bridge terms are learned without an extra LLM call, from two signals that must agree:

1. what the model wrote since the last step: its search queries, its sub-questions
   and accepted sub-answers, the names and figures in its `think` (capitalised words
   and numbers only: free prose there would match anything), and the anchors of the
   links inside a read page's prose it chose to read. Not navigation it read: a stuck
   model reads menus and navboxes, and their titles are names too;
2. a passage of a page the run read that is itself relevant (as above) and holds that
   term as a name or a figure (a capitalised word that does not open a sentence, or a
   number, in the passage).

Neither alone is trusted: a name the model invents is on no page, and a page's names
are many until the model follows one. A passage or title names a bridge only where it
writes it as a name or a figure: "the Western Shore" names the bridge "Shore", "a walk
along the shore" does not, so that no generic word carries relevance from page to page. A weak model that never reflects still
searches for the next hop's name or picks the link that carries it, which is enough.
The term is a bridge from then on: the passage it was found in answered a hop (the
prompt keeps it, `PageEvidence.chain`), pages and links that name it are relevant to
the next hop, and the evidence choice looks for it (`hop_queries`).

Words of the question itself are never bridges, so pages that only share the
question's vocabulary stay what they were: relevant, but no step of the chain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from deepsearch.agent.retrieval.evidence import PageEvidence, chunk_stems, stems_of

# A passage is relevant to a question when it holds at least RELEVANT_SHARE of the
# question's content words, and at least MIN_RELEVANT_WORDS of them.
RELEVANT_SHARE = 0.4
MIN_RELEVANT_WORDS = 2
# Bridge terms the evidence choice and the ranking look for: the newest hops' only.
MAX_BRIDGES = 40
# A name or a figure: a capitalised word, or a number of at least two digits.
_NAME = re.compile(r"(?<![\w'])(?:[A-ZÀ-ÖØ-Þ][\w'-]*|\d{2,}[\w]*)")
_SENTENCE_END = ".!?|•·"  # what ends a sentence or a list item

Touch = str  # "bridge", "sub" or "question"


def covers(query: frozenset[str], text: frozenset[str]) -> bool:
    """Does a passage (its stems) hold enough of a question's content words? A question
    without any ("Who?") cannot tell: novelty alone decides."""
    if not query:
        return True
    found = len(query & text)
    return found >= min(MIN_RELEVANT_WORDS, len(query)) and found >= RELEVANT_SHARE * len(query)


def _names(text: str) -> list[str]:
    """The text's names and figures: capitalised words not opening a sentence (there
    any word is: "Local records ...", "Now I search ..."), and numbers."""
    found = []
    for match in _NAME.finditer(text):
        word, before = match.group(), text[: match.start()].rstrip()
        if word[0].isdigit() or (before and before[-1] not in _SENTENCE_END):
            found.append(word)
    return found


def names_in(text: str) -> str:
    """The text's names and figures, space-separated."""
    return " ".join(_names(text))


@lru_cache(maxsize=16_384)
def name_stems(text: str) -> frozenset[str]:
    """The stems of the text's names and figures (cached: every URL's title and snippet
    is scored at every step)."""
    return stems_of(names_in(text))


@dataclass
class Bridge:
    """A learned term: its stem, the word as the passage wrote it, where it was found."""

    stem: str
    word: str
    url: str
    chunk: int
    hop: int


@dataclass
class Focus:
    """The question, the open sub-questions and the bridge terms learned so far."""

    question: frozenset[str] = frozenset()
    # The question's own names and figures: each part of a
    # multi-part question ("Alpha, Beta and Gamma") is a hop of its own.
    names: frozenset[str] = frozenset()
    open: list[frozenset[str]] = field(default_factory=list)
    bridges: dict[str, Bridge] = field(default_factory=dict)
    hops: int = 0
    _names: dict[str, list[frozenset[str]]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, question: str) -> Focus:
        return cls(question=stems_of(question), names=name_stems(question))

    def set_open(self, sub_questions: Iterable[str]) -> None:
        self.open = [s for s in (stems_of(q) for q in sub_questions) if s]

    def touches(
        self, stems: frozenset[str], names: frozenset[str] = frozenset(), *, away_from: str = ""
    ) -> Touch | None:
        """How a passage (its stems, and the stems of its names) is relevant: it names a
        bridge (as a name or figure; learned from a page other than `away_from`), covers
        an open sub-question, or the question; None."""
        if any(b.url != away_from for s in names if (b := self.bridges.get(s)) is not None):
            return "bridge"
        if any(covers(q, stems) for q in self.open if q != self.question):
            return "sub"
        if covers(self.question, stems):  # a question without content words: any
            return "question"
        return None

    def names_bridge(self, text: str) -> bool:
        """Does the text name a bridge term (as a name or a figure)?"""
        return bool(self.bridges) and any(s in self.bridges for s in name_stems(text))

    def score(self, text: str) -> float:
        """0..1: a title or snippet naming the newest hop's bridge scores 1, an older
        hop's less, one naming none 0 (the question's words are the ranking's own
        similarity term already)."""
        if not self.bridges:
            return 0.0
        hops = [b.hop for s in name_stems(text) if (b := self.bridges.get(s)) is not None]
        return 0.5 + 0.5 * max(hops) / max(1, self.hops) if hops else 0.0

    def hop_queries(self) -> list[str]:
        """One query per learned hop (its bridge words), newest last: what the evidence
        choice looks for besides the question and the sub-questions."""
        by_hop: dict[int, list[str]] = {}
        for bridge in list(self.bridges.values())[-MAX_BRIDGES:]:
            by_hop.setdefault(bridge.hop, []).append(bridge.word)
        return [" ".join(words) for _, words in sorted(by_hop.items())]

    def learn(self, said: str, pages: Sequence[PageEvidence]) -> list[Bridge]:
        """Bridge terms from what the model said (`said`) that a relevant passage of a
        read page holds as a name or a figure; the passage is marked as a step of the
        chain. Returns the new bridges (one hop for all of them)."""
        wanted = stems_of(said) - self.question - set(self.bridges)
        if not wanted:
            return []
        found: list[Bridge] = []
        for ev in pages:
            names = self.page_names(ev)
            for i, stems in enumerate(chunk_stems(ev)):
                hits = wanted & names[i]
                if not hits or self.touches(stems, names[i]) is None:
                    continue
                for stem, word in _in_order(ev.chunks[i], hits):
                    found.append(Bridge(stem, word, ev.url, i, self.hops + 1))
                wanted -= hits
                ev.chain.add(i)
                ev.item.pinned = True
            if not wanted:
                break
        if found:
            self.hops += 1
            self.bridges.update((b.stem, b) for b in found)
        return found

    def near_links(self, pages: Iterable[PageEvidence]) -> set[str]:
        """The URLs of links inside read passages relevant to where the research stands
        now (a passage may become relevant when a later hop names it), and of every link
        in the prose of a read page such a link leads to (a page of the chain read out of
        order, before the model named it)."""
        by_url = {ev.url: ev for ev in pages if ev.links}
        near: set[str] = set()
        for ev in by_url.values():
            names = self.page_names(ev)
            for i, stems in enumerate(chunk_stems(ev)):
                if self.touches(stems, names[i]) is not None:
                    text = " ".join(ev.chunks[i].split()).casefold()
                    near.update(u for a, u in ev.links if " ".join(a.split()).casefold() in text)
        todo, done = list(near), set()
        while todo:  # pages the chain links to: their prose leads on
            url = todo.pop()
            if url in done or url not in by_url:
                continue
            done.add(url)
            for _, link in by_url[url].links:
                if link not in near:
                    near.add(link)
                    todo.append(link)
        return near

    def page_names(self, ev: PageEvidence) -> list[frozenset[str]]:
        names = self._names.get(ev.url)
        if names is None or len(names) != len(ev.chunks):
            names = self._names[ev.url] = [name_stems(c) for c in ev.chunks]
        return names


def _in_order(text: str, stems: frozenset[str]) -> list[tuple[str, str]]:
    """(stem, the passage's own spelling) of each of `stems`, in the passage's order."""
    out: dict[str, str] = {}
    for word in _names(text):
        for stem in stems_of(word) & stems:
            out.setdefault(stem, word)
    return list(out.items())
