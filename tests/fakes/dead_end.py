"""A 2-hop question on the link-dense loopback wiki, answerable or not, and a model
that does not give up (issue 18).

The world is tests/agent/test_multihop_e2e.py's (the Port Calder Lighthouse, whose
page names its engineer, whose page has her birth year), plus readable off-topic
pages for the navbox links every page carries. The unanswerable variant removes the
last hop: the engineer's page is missing from search and answers 404.

`PersistentModel` acts on its prompt like the reading model of the multi-hop test,
and where that one would be stuck it keeps busy the way the issue saw real runs do:
new rephrasings of the dead-end query, visits to navbox links (off-topic pages),
the same small program again, the same sub-question again. It answers only when
both hops are in its prompt's knowledge, or when nothing else is allowed.
"""

from __future__ import annotations

import re
from typing import Any

from deepsearch.agent.schema import allowed_actions
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import evaluator_reply
from tests.agent.test_multihop_e2e import ARTICLES, QUESTION
from tests.fakes.memory_web import FakeSearch
from tests.fakes.web_server import NAVBOX_TITLES, LoopbackServer, Route, wiki_routes, wiki_slug

__all__ = ["QUESTION", "CountingSandbox", "PersistentModel", "engine", "routes"]

GOLD = "1851"
LAST_HOP = "Miriam Vosk"
_NAME = re.compile(r"designed by the engineer ([A-Z]\w+ [A-Z]\w+)")
_BORN = re.compile(r"born (\d{4})")
_URL_LINE = re.compile(r"^\[(\d+)\] \(score [^)]*\) (\S+)", re.M)
REPHRASINGS = [
    "{name} birth year",
    "{name} engineer biography",
    "{name} civil engineer born",
    "when was {name} born",
    "{name} early life",
    "{name} lighthouse engineer",
    "{name} Western Shore engineer",
    "{name} obituary",
    "{name} family history",
    "{name} Northern Lights Board",
]


def off_topic(title: str) -> list[str]:
    """A navbox page: real prose, nothing about the lighthouse's engineer."""
    place, kind = title.split(" ", 1)
    return [
        f"The {title} is a {kind.lower()} in [[{place}]], a small town on the coast. "
        f"Local records describe its history and its role in the town's trade.",
        f"Visitors to {place} come for the walks along the shore and the museum, which "
        f"keeps photographs of the {kind.lower()} and of the town's old market.",
    ]


def routes(*, answerable: bool) -> dict[str, Route]:
    articles = dict(ARTICLES)
    if not answerable:
        articles.pop(LAST_HOP)  # its URL answers 404
    articles.update({t: off_topic(t) for t in NAVBOX_TITLES})
    return wiki_routes(articles)


def engine(wiki: LoopbackServer, *, answerable: bool) -> FakeSearch:
    """Lighthouse queries find the first hop's pages; only a query naming the engineer
    finds hers, and in the unanswerable world nothing does."""

    def result(title: str, snippet: str) -> SearchResult:
        url = wiki.url(f"/wiki/{wiki_slug(title)}")
        return SearchResult(title=title, url=url, snippet=snippet, provider="fake")

    def search(query: SearchQuery) -> list[SearchResult]:
        q = query.q.lower()
        if "vosk" in q:
            return [result(LAST_HOP, "Miriam Vosk was a civil engineer.")] if answerable else []
        if "lighthouse" in q:
            return [
                result("Port Calder Lighthouse", "A lighthouse on Calder Head, first lit 1894."),
                result("Lighthouses of the Western Shore", "More than twenty lighthouses."),
                result("Calder Head", "A headland near Port Calder."),
            ]
        return []

    return FakeSearch(search)


def routine_reply(request: CompletionRequest, gold: str) -> Any:
    """Every call but the agent's: a coder, a finalizer that keeps the answer, a plain
    error analysis, no rewritten queries, and a strict judge that passes only `gold`."""
    if request.tool == "coder":
        return {"think": "count", "code": "print(len('hello world'))"}
    if request.tool == "finalizer":
        return request.messages[-1].content
    if request.tool == "error_analyzer":
        return {"recap": "r", "blame": "b", "improvement": "i"}
    if request.tool == "query_rewriter":
        return {"think": "", "queries": []}
    reply = evaluator_reply(request)
    if "pass" in reply:
        answer = request.messages[-1].content.split("<answer>")[-1]
        reply = {**reply, "pass": gold in answer}
    return reply


def _allowed(request: CompletionRequest) -> list[str]:
    return allowed_actions(request.json_schema or {})


def _knowledge(system: str) -> str:
    match = re.search(r"<knowledge>(.*?)</knowledge>", system, re.S)
    return match.group(1) if match else ""


def _done_queries(system: str) -> str:
    return system.split("<queries-done>")[-1].lower() if "<queries-done>" in system else ""


class PersistentModel:
    """Callable as a ScriptedProvider's reply function; `detour` idle moves after the
    first search (the same program, query or question again) show that a slow start
    loses no answerable run."""

    def __init__(self, *, detour: int = 0) -> None:
        self.detour = detour
        self.turn = 0
        self.prompts: list[str] = []

    def __call__(self, request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return self.agent(request.system, _allowed(request))
        return routine_reply(request, GOLD)

    def agent(self, system: str, allowed: list[str]) -> dict[str, Any]:
        self.prompts.append(system)
        self.turn += 1
        seen = _knowledge(system)
        name, born = _NAME.search(seen), _BORN.search(seen)
        if name and born and "answer" in allowed:
            text = f"The lighthouse was designed by {name.group(1)}, born in {born.group(1)}."
            return _act("answer", {"answer": text})
        done = _done_queries(system)
        if done and self.detour > 0:
            self.detour -= 1
            return self._idle(allowed)
        if name and "search" in allowed and name.group(1).lower() not in done:
            return _act("search", {"queries": [f"{name.group(1)} engineer born"]})
        if "search" in allowed and not done:
            return _act("search", {"queries": ["Port Calder Lighthouse designer"]})
        lines = _URL_LINE.findall(system)
        if "visit" in allowed and lines:
            wanted = [int(i) for i, url in lines if name and wiki_slug(name.group(1)) in url]
            # Stuck, it reads what looks like an article before what looks like a list.
            listed = sorted(
                (int(i) for i, _ in lines), key=lambda i: "/List_of_" in lines[i - 1][1]
            )
            return _act("visit", {"url_indices": (wanted or listed)[:3]})
        return self._keep_busy(allowed, name.group(1) if name else LAST_HOP, done)

    def _idle(self, allowed: list[str]) -> dict[str, Any]:
        """A move that finds nothing new: the same program, query or sub-question."""
        if "coding" in allowed:
            return _act("coding", {"problem": "count the letters of hello world"})
        if "search" in allowed:
            return _act("search", {"queries": ["Port Calder Lighthouse designer"]})
        return _act("reflect", {"questions": [QUESTION]})

    def _keep_busy(self, allowed: list[str], name: str, done: str) -> dict[str, Any]:
        """Stuck: rotate through what a persistent model tries."""
        fresh = [
            r.format(name=name) for r in REPHRASINGS if r.format(name=name).lower() not in done
        ]
        moves = ["search", "coding", "reflect"]
        for offset in range(len(moves)):
            move = moves[(self.turn + offset) % len(moves)]
            if move not in allowed:
                continue
            if move == "search":
                query = fresh[0] if fresh else "Port Calder Lighthouse designer"
                return _act("search", {"queries": [query]})
            if move == "coding":
                return _act("coding", {"problem": "count the letters of hello world"})
            return _act("reflect", {"questions": [f"When was {name} born?"]})
        if "answer" in allowed:
            return _act("answer", {"answer": "Not found in the sources read.", "supported": False})
        return _act(allowed[0], {})


class CountingSandbox:
    """Runs nothing: every program prints 11 (the issue's `print(len('hello world'))`);
    counts the programs it was given."""

    def __init__(self) -> None:
        self.programs: list[str] = []

    def availability(self) -> tuple[bool, str]:
        return True, "fake"

    async def run(self, code: str, data: dict[str, Any]) -> Any:
        from deepsearch.sandbox.runner import SandboxResult

        self.programs.append(code)
        return SandboxResult(
            ok=True, stdout="11\n", stderr="", result=None, error=None, duration_s=0.0
        )


def _act(action: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"think": f"next: {action}", "action": {action: payload}}
