"""Is the run still learning anything? Progress is new information about where the
research stands (`retrieval/focus.py`), judged by content, not by counts. Two limits
end the research phase (Beast Mode then answers from what there is, or honestly says
it was not found) instead of running to the step limit or the budget:

- NO_PROGRESS_LIMIT steps in a row without anything new: "no new evidence in 4 steps";
- NO_HOP_LIMIT steps in a row without a new step of the chain: "no new step of the
  chain in 8 steps". Pages that only share the question's vocabulary keep a run
  going for a while, never past this. (A question without content words, "Who?",
  cannot tell a hop from anything else: only the first limit applies.)

What a step added is judged when the next step is about to start (`ProgressWatch.
stalled`), after the focus has learned from it (`Focus.learn`: the bridge terms the
model followed, grounded in a passage the run read). A step of the chain (a hop) is:

- a read passage, not seen before, that names a bridge term learned on another page
  (the next hop's page) or covers an open sub-question;
- a read passage, not seen before, that covers the question and holds a name or figure
  of the question no earlier such passage held: the chain's first page, or one part of
  a multi-part question ("Alpha, Beta and Gamma"); for a question without names, the
  first passage covering it;
- an accepted sub-answer;
- a verdict on an answer (the evaluator, or the re-check of high effort): such steps
  cannot keep a run going -- each spends one of a check's attempts (--max-bad-attempts)
  or one of the re-checks, and when they run out research ends on its own.

Other new information, which resets only the first limit:

- a bridge term learned: the model followed a name or figure a relevant passage gave
  (a lead: the hop is the page found with it);
- any other read passage, not seen before, that covers the question (a mirror of a
  page read before adds nothing);
- a search result not seen before whose title and snippet are relevant to the focus;
- a new sub-question (reflect); a sandbox result not seen before; a rejected
  answer's lesson when no attempt was charged (a check the run does not apply), once
  per answer.

Nothing new: an off-topic page (its passages are navigation or relevant to nothing
the research stands at), a repeated query (it is not even run), a repeated program
(not re-run either) or the same output from another, a reflect that only repeats.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from deepsearch.agent.retrieval.evidence import chunk_stems, stems_of
from deepsearch.agent.retrieval.focus import covers, name_stems, names_in
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import WebUnreadable

__all__ = ["NO_HOP_LIMIT", "NO_PROGRESS_LIMIT", "ProgressWatch", "ReadWatch", "covers"]

NO_PROGRESS_LIMIT = 4
NO_HOP_LIMIT = 8
News = Literal["hop", "lead"]


def no_progress_reason(steps: int) -> str:
    """The stop reason, as the live view and --json (`stop_reason`) show it."""
    return f"no new evidence in {steps} steps"


def no_hop_reason(steps: int) -> str:
    """The stop reason when evidence came but no step of the chain did."""
    return f"no new step of the chain in {steps} steps"


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class _Seen:
    """What the run had learned as of the last judgement."""

    knowledge: int
    questions: int
    urls: set[str]
    verdicts: int  # check attempts spent plus re-checks run
    queries: int = 0
    steps: int = 0
    visited: int = 0
    first_hop: bool = False  # a passage covering the question was read
    names: set[str] = field(default_factory=set)  # the question's names hop passages held
    passages: set[str] = field(default_factory=set)
    outputs: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, state: AgentState) -> _Seen:
        return cls(
            len(state.knowledge), len(state.all_questions), set(state.url_pool), _verdicts(state)
        )


def _verdicts(state: AgentState) -> int:
    """How many verdicts the run has spent: fewer attempts left, more re-checks run."""
    return state.rechecks - sum(m.attempts_left for m in state.metrics)


def _said(state: AgentState, seen: _Seen) -> str:
    """What the model wrote since the last judgement: queries, sub-questions and
    sub-answers, the names and figures in its reasoning, the anchors of the links in a
    page's prose it read (never navigation: a stuck model reads menus)."""
    parts = list(state.searched_queries[seen.queries :])
    parts += [names_in(record.think) for record in state.steps[seen.steps :]]
    for url in state.visited[seen.visited :]:  # a link in a page's prose it chose to read
        record = state.url_pool.get(url)
        parts.append(record.title if record is not None and record.passage else "")
    parts += state.all_questions[seen.questions :]
    parts += [
        f"{i.question} {i.answer}" for i in state.knowledge[seen.knowledge :] if i.type == "qa"
    ]
    seen.queries, seen.steps = len(state.searched_queries), len(state.steps)
    seen.visited = len(state.visited)
    return " ".join(parts)


@dataclass
class ProgressWatch:
    """Counts consecutive steps without new information, and without a new hop."""

    limit: int = NO_PROGRESS_LIMIT
    hop_limit: int = NO_HOP_LIMIT
    idle_steps: int = 0
    steps_since_hop: int = 0
    _seen: _Seen | None = None
    _why: str = ""

    def stalled(self, state: AgentState) -> bool:
        """Call before each step: True once a limit is reached."""
        if self._seen is None:
            self._seen = _Seen.of(state)
            return False
        news = self.news(state)
        self.idle_steps = 0 if news else self.idle_steps + 1
        self.steps_since_hop = 0 if news == "hop" else self.steps_since_hop + 1
        if self.idle_steps >= self.limit:
            self._why = no_progress_reason(self.idle_steps)
        elif self.steps_since_hop >= self.hop_limit and state.focus.question:
            self._why = no_hop_reason(self.steps_since_hop)
        return bool(self._why)

    def reason(self) -> str:
        return self._why or no_progress_reason(self.idle_steps)

    def judge(self, state: AgentState) -> bool:
        """Did what was added since the last judgement bring new information?"""
        return self.news(state) is not None

    def news(self, state: AgentState) -> News | None:
        """What was added since the last judgement brought: a hop, other new
        information (a lead), or nothing. Everything added is recorded as seen."""
        seen = self._seen or _Seen.of(state)
        focus = state.focus
        focus.set_open(g for g in state.gaps if g != state.question)
        learned = focus.learn(_said(state, seen), list(state.evidence.values()))
        found: list[News | None] = ["lead" if learned else None]
        found += [self._item_news(state, item, seen) for item in state.knowledge[seen.knowledge :]]
        found.append("lead" if self._new_results(state, seen) else None)
        found.append("lead" if len(state.all_questions) > seen.questions else None)
        found.append("hop" if _verdicts(state) > seen.verdicts else None)
        seen.knowledge, seen.questions = len(state.knowledge), len(state.all_questions)
        seen.verdicts = _verdicts(state)
        self._seen = seen
        return "hop" if "hop" in found else "lead" if "lead" in found else None

    def _item_news(self, state: AgentState, item: KnowledgeItem, seen: _Seen) -> News | None:
        if item.type == "url":
            return self._page_news(state, item, seen)
        if item.type == "coding":
            return "lead" if _first(seen.outputs, _key(item.answer)) else None
        if item.type == "qa" and item.pinned:
            return "hop"  # an accepted sub-answer: a step of the chain
        if item.type == "qa":  # a rejection's lesson (its question names the answer)
            return "lead" if _first(seen.answers, _key(item.question)) else None
        return None  # search snippets are judged per result (_new_results)

    def _page_news(self, state: AgentState, item: KnowledgeItem, seen: _Seen) -> News | None:
        url = item.references[0] if item.references else ""
        evidence = state.evidence.get(url)
        if evidence is not None:
            passages = list(zip(evidence.chunks, chunk_stems(evidence), strict=True))
        else:  # an item merged from a team child: its text is all there is
            passages = [(item.answer, stems_of(item.answer))]
        names = state.focus.page_names(evidence) if evidence else [name_stems(item.answer)]
        news: News | None = None
        for (text, stems), named in zip(passages, names, strict=True):
            touch = state.focus.touches(stems, named, away_from=url)
            if touch is None or not _first(seen.passages, _key(text)):
                continue  # every relevant passage is recorded as seen, not only the first
            first = touch == "question" and _first_of_question(state, stems, seen)
            news = "hop" if touch != "question" or first or news == "hop" else "lead"
        return news

    def _new_results(self, state: AgentState, seen: _Seen) -> bool:
        """Search results (not harvested links) the run had not seen, relevant by their
        title and snippet."""
        new = False
        for url, record in state.url_pool.items():
            if url in seen.urls:
                continue
            seen.urls.add(url)
            if record.origin == "search":
                text = f"{record.title} {record.snippet}"
                new = new or state.focus.touches(stems_of(text), name_stems(text)) is not None
        return new


def _first_of_question(state: AgentState, stems: frozenset[str], seen: _Seen) -> bool:
    """Is a passage covering the question the first to hold one of the question's own
    names (the first page of the chain, or of one part of a multi-part question)? A
    question without names: is it the first passage covering it at all?"""
    new = (state.focus.names & stems) - seen.names
    seen.names |= new
    first = not seen.first_hop and not state.focus.names
    seen.first_hop = True
    return bool(new) or first


def _first(seen: set[str], key: str) -> bool:
    """True the first time `key` is seen (and remember it)."""
    if key in seen:
        return False
    seen.add(key)
    return True


# ----------------------------------------------------------------- a web that cannot be read

UNREADABLE_STEPS = 2  # visits in a row whose every read was refused
REFUSED_HTTP = ("HTTP 401", "HTTP 403", "HTTP 407", "HTTP 451")
UNREACHABLE_KINDS = ("network", "timeout", "refused", "dns", "tls")
_GUARD_MARKS = ("non-public address", "is local")
Refusal = Literal["guard", "http", "network"]
# The one line that names the cause and the fix; {count} reads over {steps} visits.
_CAUSE: dict[Refusal, str] = {
    "guard": "every page read was refused by the address guard ({count} reads in {steps} "
    "visits): the pages are on private or local addresses; run with --allow-private-urls "
    "to read them",
    "http": "every page read was refused ({count} reads in {steps} visits, {detail}) while "
    "search works: the sites or the reader service turn this reader away; check the reader "
    "settings (reader.provider, JINA_API_KEY for the Jina reader)",
    "network": "no page could be fetched ({count} reads in {steps} visits, {detail}) while "
    "search works: check the network connection, a proxy, or the reader's URL",
}


def refusal(reason: str) -> Refusal | None:
    """Why a failed read (a `state.failed_urls` reason) was refused; None for a failure
    that says the web answered (a 404, an empty page, an unsupported type)."""
    kind, _, detail = reason.partition(": ")
    if kind == "blocked" and any(mark in detail for mark in _GUARD_MARKS):
        return "guard"
    if kind == "http_status" and detail.startswith(REFUSED_HTTP):
        return "http"
    return "network" if kind in UNREACHABLE_KINDS else None


@dataclass
class ReadWatch:
    """Ends the run when every read of UNREADABLE_STEPS visits in a row was refused
    while search works: no later step can read anything either, and Beast Mode would
    only guess from snippets. The error takes the path of a search that cannot work
    (a fatal RunError: the run stops, the cause is its error line)."""

    limit: int = UNREADABLE_STEPS
    refused_steps: int = 0
    refusals: list[tuple[Refusal, str]] = field(default_factory=list)
    _visited: int = 0

    def check(self, state: AgentState) -> None:
        """Call after each step; raises WebUnreadable at the limit."""
        attempted = state.visited[self._visited :]
        self._visited = len(state.visited)
        if not attempted:
            return  # not a read: neither counts nor resets
        reasons = [state.failed_urls.get(url, "") for url in attempted]
        kinds = [refusal(r) if r else None for r in reasons]
        searched = any(item.type == "side-info" for item in state.knowledge)
        if not searched or None in kinds:
            self.refused_steps, self.refusals = 0, []
            return
        self.refused_steps += 1
        self.refusals += [(k, r) for k, r in zip(kinds, reasons, strict=True) if k is not None]
        if self.refused_steps >= self.limit:
            raise self.error()

    def error(self) -> WebUnreadable:
        counts = Counter(kind for kind, _ in self.refusals)
        cause = counts.most_common(1)[0][0]
        details = Counter(
            r.partition(": ")[2][:40] if k == "http" else r.partition(":")[0]
            for k, r in self.refusals
            if k == cause
        )
        detail = ", ".join(f"{d} ×{n}" for d, n in details.most_common(3))
        line = _CAUSE[cause].format(
            count=len(self.refusals), steps=self.refused_steps, detail=detail
        )
        return WebUnreadable(line, configuration=cause == "guard" and len(counts) == 1)
