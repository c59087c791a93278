"""Multi-hop chains on the link-dense loopback wiki, and a weak model that reads them
(issue 32).

`chain_world(seed, hops)` builds a question whose first hop is described by the
question and whose later hops are not: each hop's page names the next hop (the
bridge) in prose that shares at most one content word with the question, and links
to it inline, its title as the anchor, among ~150 other links (menu, "See also", a
120-link navbox, footer). The last page holds the answer (a year). Variants:

- `link_only`: no search finds the last hop's page; only the link in the page of the
  hop before leads there;
- `dead_end`: a middle hop's page is missing (404); searches for its name return
  other pages in the question's words, a new group for each rephrasing;
- distractors (always): searches in the question's words also return pages that
  share the question's words ("... Society", "Journal of ...", "President of ...")
  and answer nothing;
- `early` (4 hops or more): the question's search also finds the third hop's page,
  which is then read out of order.

`ChainModel` is a weak model that never reflects: it reads its prompt, answers once
every hop's page has been in its prompt's knowledge (the key sentence of each hop),
and otherwise reads the next hop's page when the URL list offers it, searches for the
next hop's name when it knows it (never, with `clicks_only`), or reads what is listed;
stuck, it rephrases, reads distractors and runs the same small program, as real runs do.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from deepsearch.agent.schema import allowed_actions
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery, SearchResult
from tests.fakes.dead_end import routine_reply
from tests.fakes.memory_web import FakeSearch
from tests.fakes.web_server import NAVBOX_TITLES, LoopbackServer, Route, wiki_routes, wiki_slug

_FIRST = (
    "Tomas Edda Ilse Marek Oona Piet Runa Saul Tilde Ulric Vera Wendel Yrsa Zeno Agna "
    "Bram Cato Dagny Emil Frey Greta Hakon Ines Jost Kaja Lenz Mira Nils Orm Pia"
).split()
_LAST = (
    "Brell Wyke Harrow Lindqvist Odell Parrin Quist Rhees Stavik Tolland Uhrin Vasko "
    "Wendt Ysolde Zarin Ambry Bostel Corran Delwyn Evrard Falk Gorrin Hesk Ivell Jorvik"
).split()
_PLACE = (
    "Harlow Kessel Norrby Ashwick Brennmoor Coldry Dunstable Elmsford Fennick Grayhaven "
    "Holloway Inchcape Jedburn Kirkwall Lowther Marrick Nethercote Oakhampton"
).split()
_LANDMARK = "Mill Bridge,Tide Mill,Corn Exchange,Clock Tower,Market Hall,Water Tower".split(",")
# (relation word in the question, the sentence on the page before: {s} this hop,
# {x} the next one, linked). Later sentences share no content word with the question.
_RELATIONS = [
    ("architect", "The {s}, first recorded in a town deed, was designed by the architect [[{x}]]."),
    ("mentor", "{s} learned the trade in the workshop of [[{x}]], far to the south."),
    ("patron", "Much of that work was paid for by [[{x}]], a wealthy shipowner."),
    ("benefactor", "In later life {s} relied on gifts from [[{x}]], an old friend."),
    ("teacher", "As a child {s} took lessons with [[{x}]] every winter."),
]
_FILLER = (
    "Letters kept in the county archive describe long journeys by coach, bad roads and "
    "the cost of lodging, and mention many visitors who stayed for a season."
)
_REPHRASE = ["{n} biography", "{n} life", "{n} records", "{n} archive", "{n} family"]
DISTRACTORS = 7  # per search
_URL_LINE = re.compile(r"^\[(\d+)\] \(score [^)]*\) (\S+)", re.M)
_KNOWLEDGE = re.compile(r"<knowledge>(.*?)</knowledge>", re.S)


@dataclass
class Chain:
    """One multi-hop question: its hops' titles, the sentence of each hop's page the
    model needs in view, and the answer."""

    question: str
    titles: list[str]
    keys: list[str]  # per hop: the sentence naming the next hop (the last: the year)
    gold: str
    articles: dict[str, list[str]]
    unsearchable: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    distractors: dict[str, list[str]] = field(default_factory=dict)
    early: bool = False  # the question's search also finds the third hop's page

    @property
    def answerable(self) -> bool:
        return not self.missing

    def routes(self) -> dict[str, Route]:
        pages = {t: p for t, p in self.articles.items() if t not in self.missing}
        pages.update(self.distractors)
        pages.update({t: _off_topic(t) for t in NAVBOX_TITLES})
        return wiki_routes(pages)

    def engine(self, wiki: LoopbackServer, *, delay_s: float = 0.0) -> FakeSearch:
        """The question's words find the first hop and the distractors; a query naming
        a later hop finds its page (unless it is unsearchable or missing)."""
        question = _words(self.question)

        def result(title: str) -> SearchResult:
            text = (self.articles.get(title) or self.distractors.get(title) or [""])[0]
            snippet = re.sub(r"\[\[([^\]|]+)\]\]", r"\1", text)[:160]
            url = wiki.url(f"/wiki/{wiki_slug(title)}")
            return SearchResult(title=title, url=url, snippet=snippet, provider="fake")

        def search(query: SearchQuery) -> list[SearchResult]:
            q = _words(query.q)
            titles = list(self.distractors)
            for title in self.titles[1:]:
                if _words(title.split()[-1]) <= q:
                    if title in self.missing:  # a dead end: pages in the question's words
                        group = sum(map(ord, query.q)) % (len(titles) // DISTRACTORS)
                        return [result(t) for t in titles[group * DISTRACTORS :][:DISTRACTORS]]
                    return [] if title in self.unsearchable else [result(title)]
            if len(q & question) >= 2:  # `early`: the third hop's page too, as engines do
                later = [result(self.titles[2])] if self.early and len(self.titles) >= 4 else []
                hits = [result(self.titles[0]), *later, *(result(t) for t in titles[:DISTRACTORS])]
                return [r for r in hits if r.title not in self.missing]
            return []

        return FakeSearch(search, delay_s=delay_s)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 2}


def _off_topic(title: str) -> list[str]:
    place, kind = title.split(" ", 1)
    return [
        f"The {title} is a {kind.lower()} in [[{place}]], a small town on the coast. "
        "Local records describe its past and its role in the town's trade.",
    ]


def chain_world(
    seed: int, hops: int, *, link_only: bool = False, dead_end: bool = False, early: bool = False
) -> Chain:
    """A `hops`-hop question (2..5) with its pages; deterministic per seed."""
    rng = random.Random(seed * 7919 + hops)
    place = rng.choice(_PLACE)
    landmark = f"{place} {rng.choice(_LANDMARK)}"
    people = [f"{a} {b}" for a, b in zip(rng.sample(_FIRST, 5), rng.sample(_LAST, 5), strict=True)]
    titles = [landmark, *people[: hops - 1]]
    elsewhere = [p for p in _PLACE if p != place]
    relations = [_RELATIONS[0], *rng.sample(_RELATIONS[1:], hops - 2)] if hops > 1 else []
    year = str(rng.randrange(1620, 1890))
    ask = " of the ".join(r for r, _ in reversed(relations))
    question = f"In which year was the {ask} of the {landmark} first recorded in a deed?"
    articles: dict[str, list[str]] = {}
    keys: list[str] = []
    for n, title in enumerate(titles):
        if n + 1 < len(titles):
            key = relations[n][1].format(s=title if n == 0 else title.split()[0], x=titles[n + 1])
        else:
            key = f"{title.split()[0]} is first named in a parish register of {year}."
        keys.append(re.sub(r"\[\[([^\]|]+)\]\]", r"\1", key))
        lead = (
            f"The {title} stands in the old town of [[{place}]] beside the river."
            if n == 0
            else f"{title} spent most of a long life in [[{rng.choice(elsewhere)}]]."
        )
        articles[title] = [lead, key, _FILLER]
    chain = Chain(question, titles, keys, year, articles, early=early)
    chain.distractors = _distractors(landmark, relations, rng)
    if link_only:
        chain.unsearchable.add(titles[-1])
    if dead_end:
        chain.missing.add(titles[rng.randrange(1, len(titles))])
    return chain


def _distractors(
    landmark: str, relations: list[tuple[str, str]], rng: random.Random
) -> dict[str, list[str]]:
    """Pages in the question's words that answer nothing (a wrong year each), in groups
    of DISTRACTORS: the question's search returns the first group, a search for a
    missing hop's name one of the others."""
    words = " and ".join(f"{r}s" for r, _ in relations) or "friends"
    pages = {}
    for where in ("", " of the North", " of the West", " of the Coast", " of the Valley"):
        for name in ("Society", "Trust", "Journal", "Friends", "Survey", "Guild", "Museum"):
            title = f"{landmark} {name}{where}"
            pages[title] = [
                f"The {title} was first recorded in a deed of {rng.randrange(1900, 1990)}. "
                f"Its members, among them {words}, meet every year to discuss the {landmark}.",
                f"The President of the {title} is elected each year; the deed of the "
                f"{landmark} is kept in its library.",
            ]
    return pages


class ChainModel:
    """A weak model that never reflects; a ScriptedProvider's reply function."""

    def __init__(self, chain: Chain, *, clicks_only: bool = False) -> None:
        self.chain = chain
        self.clicks_only = clicks_only  # never searches a name: follows links only
        self.turn = 0
        self.searched: set[str] = set()
        self.prompts: list[str] = []

    def __call__(self, request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return self.agent(request.system, allowed_actions(request.json_schema or {}))
        return routine_reply(request, self.chain.gold)

    def in_view(self, system: str) -> list[bool]:
        """Per hop: is its key sentence in the prompt's knowledge?"""
        match = _KNOWLEDGE.search(system)
        knowledge = " ".join((match.group(1) if match else "").split())
        return [key in knowledge for key in self.chain.keys]

    def agent(self, system: str, allowed: list[str]) -> dict[str, Any]:
        self.prompts.append(system)
        self.turn += 1
        seen = self.in_view(system)
        if all(seen) and "answer" in allowed:
            return _act("answer", {"answer": f"It was first recorded in {self.chain.gold}."})
        if allowed == ["answer"]:
            return _act("answer", {"answer": "Not found in the sources read.", "supported": False})
        # The first hop not in view: its name is known from the last (all in view but
        # answering not allowed now: the last hop again).
        hop = seen.index(False) if not all(seen) else len(seen) - 1
        title = self.chain.titles[hop]
        lines = _URL_LINE.findall(system)
        wanted = [int(i) for i, url in lines if url.endswith(f"/wiki/{wiki_slug(title)}")]
        if wanted and "visit" in allowed:
            return _act("visit", {"url_indices": wanted[:1]})
        query = self.chain.question if hop == 0 or self.clicks_only else title
        if "search" in allowed and query not in self.searched:
            self.searched.add(query)
            return _act("search", {"queries": [query]})
        name = self.chain.titles[0] if self.clicks_only else title
        return self._stuck(allowed, name, [int(i) for i, _ in lines])

    def _stuck(self, allowed: list[str], name: str, listed: list[int]) -> dict[str, Any]:
        """Keep busy: read what is listed, rephrase, run the same program."""
        fresh = [r.format(n=name) for r in _REPHRASE if r.format(n=name) not in self.searched]
        for move in ("visit", "search", "coding")[self.turn % 3 :] + ("visit", "search"):
            if move == "visit" and "visit" in allowed and listed:
                return _act("visit", {"url_indices": listed[:2]})
            if move == "search" and "search" in allowed and fresh:
                self.searched.add(fresh[0])
                return _act("search", {"queries": [fresh[0]]})
            if move == "coding" and "coding" in allowed:
                return _act("coding", {"problem": "count the letters of hello world"})
        if "answer" in allowed:
            return _act("answer", {"answer": "Not found in the sources read.", "supported": False})
        return _act(allowed[0], {"questions": [self.chain.question]})


def _act(action: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"think": f"next: {action}", "action": {action: payload}}
