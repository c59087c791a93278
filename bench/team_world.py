"""A multi-part question world for team-mode tests and the team benchmark (offline; in
bench/, not the wheel: tests/agent/team/ and bench/team.py import it).

"Compare the 2020 populations of Alpha, Beta and Gamma" is three questions at once.
Each part's figure is on its own page, found by searching that part's name; search
snippets never carry the figure, so only reading it (or a child's answer) does. With
`hops=2` a part takes two hops: its census page only names the yearbook (a made-up
word) whose page, found by searching that word, has the figure. The
scripted model is a policy, not a script: from the prompt it got it works out which
parts are still unknown and researches them one at a time (as agents tend to on a
comparison), then answers with every figure it found. Planner, evaluator, rewriter and
finalizer replies are scripted too; `planner` decides what the research planner says.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deepsearch.agent.judging.evaluator import QuestionEval
from deepsearch.agent.schema import allowed_actions
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery, SearchResult
from tests.fakes.memory_web import FakeReader, FakeSearch

FIGURES = {
    "alpha": "1,204,000",
    "beta": "873,500",
    "gamma": "2,310,900",
    "delta": "412,700",
    "epsilon": "3,045,100",
    "zeta": "658,200",
}
YEARBOOKS = {
    "alpha": "Korvath",
    "beta": "Mirelle",
    "gamma": "Tesquon",
    "delta": "Vandrim",
    "epsilon": "Olbaset",
    "zeta": "Pruvenka",
}
QUESTION = "Compare the 2020 populations of Alpha, Beta and Gamma."
# Multi-part questions of the team benchmark (bench/team.py).
QUESTIONS = [
    QUESTION,
    "Which had more people in 2020: Delta or Epsilon?",
    "Rank Zeta, Alpha and Delta by their 2020 population.",
    "What were the 2020 populations of Beta, Epsilon and Zeta?",
]
_URL_LINE = re.compile(r"\[(\d+)\][^\n]*?(https?://\S+)")
Planner = Callable[[CompletionRequest], dict[str, Any]]


def page_url(part: str) -> str:
    return f"https://stats.example.org/{part}-census"


def yearbook_url(part: str) -> str:
    return f"https://yearbook.example.com/{YEARBOOKS[part].lower()}"


def page_text(part: str, *, hops: int = 1) -> str:
    name = part.capitalize()
    fact = (
        f"{name} had a population of {FIGURES[part]} in 2020, according to the census."
        if hops == 1
        else f"The detailed 2020 count for {name} is published in the {YEARBOOKS[part]} yearbook."
    )
    return (
        f"{name} census results\n\n"
        f"The national statistics office published the 2020 census of {name} in spring. "
        f"{fact} The count was carried out door to door over six weeks.\n\n"
        f"Earlier counts in {name} were made in 2010 and 2000; the method changed little."
    )


def yearbook_text(part: str) -> str:
    name, book = part.capitalize(), YEARBOOKS[part]
    return (
        f"The {book} yearbook, 2020 edition\n\n"
        f"Table 1 of the {book} yearbook gives the final census count. "
        f"{name} had a population of {FIGURES[part]} in 2020, according to the census. "
        f"Figures are rounded to the nearest hundred.\n\n"
        f"The yearbook also lists births, deaths and migration for the year."
    )


def parts_in(text: str) -> list[str]:
    low = text.lower()
    return [part for part in FIGURES if part in low]


def _results(query: SearchQuery) -> list[SearchResult]:
    found = [
        SearchResult(
            title=f"{part.capitalize()} census 2020",
            url=page_url(part),
            snippet=f"Official census figures for {part.capitalize()}, 2020 edition.",
            provider="fake",
        )
        for part in parts_in(query.q)
    ]
    found += [
        SearchResult(
            title=f"The {book} yearbook",
            url=yearbook_url(part),
            snippet=f"The {book} statistical yearbook, 2020 edition.",
            provider="fake",
        )
        for part, book in YEARBOOKS.items()
        if book.lower() in query.q.lower()
    ]
    noise = SearchResult(
        title="Census methods",
        url="https://methods.example.net/census",
        snippet="How national censuses are carried out.",
        provider="fake",
    )
    return [*found, noise]


def web(
    *, hops: int = 1, search_delay_s: float = 0.0, read_delay_s: float = 0.0
) -> tuple[FakeSearch, FakeReader]:
    pages: dict[str, str] = {page_url(p): page_text(p, hops=hops) for p in FIGURES}
    pages |= {yearbook_url(p): yearbook_text(p) for p in FIGURES}
    pages["https://methods.example.net/census"] = "Censuses count people. " * 20
    return (
        FakeSearch(_results, delay_s=search_delay_s),
        FakeReader(pages, delay_s=read_delay_s),
    )


def split_planner(request: CompletionRequest) -> dict[str, Any]:
    """Splits into one sub-question per part named in the question."""
    question = request.messages[0].content
    parts = parts_in(question.split("<search-snippets>")[0])
    subs = [f"What was the population of {p.capitalize()} in 2020?" for p in parts]
    return {"think": "independent parts", "split": len(subs) > 1, "subproblems": subs}


def declining_planner(request: CompletionRequest) -> dict[str, Any]:
    """Lists the parts but says not to split: the "no" is what counts."""
    return {**split_planner(request), "think": "better researched as one", "split": False}


def _allowed(request: CompletionRequest) -> set[str]:
    return set(allowed_actions(request.json_schema or {}))


def _answer(known: list[str]) -> dict[str, Any]:
    text = " ".join(f"{p.capitalize()} had {FIGURES[p]} people in 2020." for p in known)
    return {"think": "all parts known", "action": {"answer": {"answer": text}}}


def _fallback_move(allowed: set[str], listed: dict[str, int], known: list[str]) -> dict[str, Any]:
    """What to do when the wanted move is not allowed this step."""
    if "visit" in allowed and listed:
        return {
            "think": "read",
            "action": {"visit": {"url_indices": [min(listed.values())]}},
        }
    if "search" in allowed:
        query = "census 2020 " + " ".join(known or list(FIGURES)[:1])
        return {"think": "search", "action": {"search": {"queries": [query]}}}
    if "reflect" in allowed:
        return {"think": "think", "action": {"reflect": {"questions": []}}}
    return _answer(known)


def _next_hop(part: str, system: str) -> tuple[str, str]:
    """(page to read, query to search) for the part: its yearbook once a read page
    named it, else its census page. A word alone as the query: shared template words
    would make the queries of different parts read as near-duplicates."""
    book = YEARBOOKS[part]
    if book in system:
        return yearbook_url(part), book
    return page_url(part), part.capitalize()


def agent_step(request: CompletionRequest) -> dict[str, Any]:
    """Research the first unknown part of the current question: read its page when it
    is listed, else search for it; answer once every part's figure is in the prompt."""
    needed = parts_in(request.messages[0].content) or list(FIGURES)[:1]
    known = [p for p in needed if FIGURES[p] in request.system]
    allowed = _allowed(request)
    listed = {url: int(i) for i, url in _URL_LINE.findall(request.system)}
    if len(known) == len(needed):
        return _answer(known) if "answer" in allowed else _fallback_move(allowed, listed, known)
    url, query = _next_hop([p for p in needed if p not in known][0], request.system)
    target = listed.get(url)
    if target is not None and "visit" in allowed:
        return {"think": "read it", "action": {"visit": {"url_indices": [target]}}}
    if "search" in allowed:
        return {"think": "look it up", "action": {"search": {"queries": [query]}}}
    return _fallback_move(allowed, listed, known)


def evaluator(request: CompletionRequest) -> dict[str, Any]:
    props = (request.json_schema or {}).get("properties", {})
    if "needs_definitive" in props:
        return QuestionEval().model_dump()
    if "consistent" in props:  # the re-check's verdict
        return {"think": "agrees", "consistent": True, "problem": ""}
    if "queries" in props:  # the re-check's queries
        return {"think": "verify", "queries": ["official census office 2020 release"]}
    if "improvement_plan" in props:
        return {"think": "ok", "pass": True, "improvement_plan": ""}
    return {"think": "fine", "pass": True}


@dataclass
class World:
    """Routes every call; `fail_questions` makes the agent raise for those questions."""

    planner: Planner = split_planner
    fail_questions: set[str] = field(default_factory=set)
    agent: Callable[[CompletionRequest], dict[str, Any]] = agent_step

    def __call__(self, request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            if request.messages[0].content in self.fail_questions:
                raise RuntimeError("the provider broke for this child")
            return self.agent(request)
        if request.tool == "research_planner":
            return self.planner(request)
        if request.tool == "evaluator":
            return evaluator(request)
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "query_rewriter":
            return {"think": "", "queries": []}
        raise AssertionError(f"unexpected tool {request.tool}")
