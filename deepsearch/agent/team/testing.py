"""A multi-part question world for team-mode tests and the team benchmark (offline).

"Compare the 2020 populations of Alpha, Beta and Gamma" is three questions at once.
Each part's figure is on its own page, found by searching that part's name; search
snippets never carry the figure, so only reading it (or a child's answer) does. The
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
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.testing import FakeReader, FakeSearch
from deepsearch.web.types import SearchQuery, SearchResult

FIGURES = {"alpha": "1,204,000", "beta": "873,500", "gamma": "2,310,900"}
QUESTION = "Compare the 2020 populations of Alpha, Beta and Gamma."
_URL_LINE = re.compile(r"\[(\d+)\][^\n]*?(https?://\S+)")
Planner = Callable[[CompletionRequest], dict[str, Any]]


def page_url(part: str) -> str:
    return f"https://stats.example.org/{part}-census"


def page_text(part: str) -> str:
    name = part.capitalize()
    return (
        f"{name} census results\n\n"
        f"The national statistics office published the 2020 census of {name} in spring. "
        f"{name} had a population of {FIGURES[part]} in 2020, according to the census. "
        f"The count was carried out door to door over six weeks.\n\n"
        f"Earlier counts in {name} were made in 2010 and 2000; the method changed little."
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
    noise = SearchResult(
        title="Census methods",
        url="https://methods.example.net/census",
        snippet="How national censuses are carried out.",
        provider="fake",
    )
    return [*found, noise]


def web(*, search_delay_s: float = 0.0, read_delay_s: float = 0.0) -> tuple[FakeSearch, FakeReader]:
    pages: dict[str, str] = {page_url(p): page_text(p) for p in FIGURES}
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
    action = (request.json_schema or {}).get("properties", {}).get("action", {})
    return set(action.get("enum") or [action.get("const")])


def _answer(known: list[str]) -> dict[str, Any]:
    text = " ".join(f"{p.capitalize()} had {FIGURES[p]} people in 2020." for p in known)
    return {"think": "all parts known", "action": "answer", "answer": {"answer": text}}


def _fallback_move(allowed: set[str], listed: dict[str, int], known: list[str]) -> dict[str, Any]:
    """What to do when the wanted move is not allowed this step."""
    if "visit" in allowed and listed:
        return {
            "think": "read",
            "action": "visit",
            "visit": {"url_indices": [min(listed.values())]},
        }
    if "search" in allowed:
        query = "census 2020 " + " ".join(known or list(FIGURES))
        return {"think": "search", "action": "search", "search": {"queries": [query]}}
    if "reflect" in allowed:
        return {"think": "think", "action": "reflect", "reflect": {"questions": []}}
    return _answer(known)


def agent_step(request: CompletionRequest) -> dict[str, Any]:
    """Research the first unknown part of the current question: read its page when it
    is listed, else search for it; answer once every part's figure is in the prompt."""
    needed = parts_in(request.messages[0].content) or list(FIGURES)
    known = [p for p in needed if FIGURES[p] in request.system]
    allowed = _allowed(request)
    listed = {url: int(i) for i, url in _URL_LINE.findall(request.system)}
    if len(known) == len(needed):
        return _answer(known) if "answer" in allowed else _fallback_move(allowed, listed, known)
    missing = [p for p in needed if p not in known]
    target = listed.get(page_url(missing[0]))
    if target is not None and "visit" in allowed:
        return {"think": "read it", "action": "visit", "visit": {"url_indices": [target]}}
    if "search" in allowed:
        query = missing[0].capitalize()  # a name alone: template words would read as duplicates
        return {"think": "look it up", "action": "search", "search": {"queries": [query]}}
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
