"""Is the run still learning anything? Progress is new relevant evidence, judged by
content, not by counts: after NO_PROGRESS_LIMIT steps in a row without any, the
research phase ends (Beast Mode then answers from what there is, or honestly says
it was not found) instead of running to the step limit or the budget.

What a step added is judged when the next step is about to start (`ProgressWatch.
stalled`). Progress is any of:

- a read page with a passage relevant to the question or to an open sub-question
  that no earlier page had (a mirror of a page read before adds nothing);
- a search result not seen before whose title and snippet are relevant;
- an accepted sub-answer; a new sub-question (reflect);
- a sandbox result not seen before;
- an answer a check rejected (the evaluator, or the re-check of high effort): the
  verdict is new information on the candidate, its lesson a new knowledge item, and
  such steps cannot keep a run going -- each spends one of a check's attempts
  (--max-bad-attempts) or one of the re-checks, and when they run out research ends
  on its own. A rejected answer's lesson counts too when no attempt was charged (a
  check the run does not apply), once per answer.

Nothing new: an off-topic page (its passages are navigation or share too few of the
questions' words), a repeated query (it is not even run), a repeated program (not
re-run either) or the same output from another, a reflect that only repeats.

Relevance is the word overlap the prompt's evidence choice uses (`retrieval/
evidence.py`: content words, crude stems) against the same research questions (the
original and the pending sub-questions), held to an absolute bar: at least
RELEVANT_SHARE of a question's content words, and MIN_RELEVANT_WORDS of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from deepsearch.agent.retrieval.evidence import chunk_stems, stems_of
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import WebUnreadable

NO_PROGRESS_LIMIT = 4
RELEVANT_SHARE = 0.4
MIN_RELEVANT_WORDS = 2


def no_progress_reason(steps: int) -> str:
    """The stop reason, as the live view and --json (`stop_reason`) show it."""
    return f"no new evidence in {steps} steps"


def covers(query: frozenset[str], text: frozenset[str]) -> bool:
    """Does a passage (its stems) hold enough of a question's content words? A question
    without any ("Who?") cannot tell: novelty alone decides, as `word_coverage` has it."""
    if not query:
        return True
    found = len(query & text)
    return found >= min(MIN_RELEVANT_WORDS, len(query)) and found >= RELEVANT_SHARE * len(query)


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class _Seen:
    """What the run had learned as of the last judgement."""

    knowledge: int
    questions: int
    urls: set[str]
    verdicts: int  # check attempts spent plus re-checks run
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


@dataclass
class ProgressWatch:
    """Counts consecutive steps that added no new relevant evidence."""

    limit: int = NO_PROGRESS_LIMIT
    idle_steps: int = 0
    _seen: _Seen | None = None

    def stalled(self, state: AgentState) -> bool:
        """Call before each step: True once `limit` steps in a row found nothing new."""
        if self._seen is None:
            self._seen = _Seen.of(state)
            return False
        self.idle_steps = 0 if self.judge(state) else self.idle_steps + 1
        return self.idle_steps >= self.limit

    def reason(self) -> str:
        return no_progress_reason(self.idle_steps)

    def judge(self, state: AgentState) -> bool:
        """Did what was added since the last judgement bring new relevant evidence?
        Everything added is recorded as seen either way."""
        seen = self._seen or _Seen.of(state)
        queries = [stems_of(q) for q in state.research_queries()]
        new_items = state.knowledge[seen.knowledge :]
        found = [self._item_is_new(state, item, queries, seen) for item in new_items]
        found.append(self._new_results(state, queries, seen))
        found.append(len(state.all_questions) > seen.questions)
        found.append(_verdicts(state) > seen.verdicts)
        seen.knowledge, seen.questions = len(state.knowledge), len(state.all_questions)
        seen.verdicts = _verdicts(state)
        self._seen = seen
        return any(found)

    def _item_is_new(
        self, state: AgentState, item: KnowledgeItem, queries: list[frozenset[str]], seen: _Seen
    ) -> bool:
        if item.type == "url":
            return self._page_is_new(state, item, queries, seen)
        if item.type == "coding":
            return _first(seen.outputs, _key(item.answer))
        if item.type == "qa" and item.pinned:
            return True  # an accepted sub-answer: a step of the chain
        if item.type == "qa":  # a rejection's lesson (its question names the answer)
            return _first(seen.answers, _key(item.question))
        return False  # search snippets are judged per result (_new_results)

    def _page_is_new(
        self, state: AgentState, item: KnowledgeItem, queries: list[frozenset[str]], seen: _Seen
    ) -> bool:
        evidence = state.evidence.get(item.references[0]) if item.references else None
        if evidence is not None:
            passages = list(zip(evidence.chunks, chunk_stems(evidence), strict=True))
        else:  # an item merged from a team child: its text is all there is
            passages = [(item.answer, stems_of(item.answer))]
        new = False
        for text, stems in passages:
            if any(covers(q, stems) for q in queries):
                new = _first(seen.passages, _key(text)) or new
        return new

    def _new_results(self, state: AgentState, queries: list[frozenset[str]], seen: _Seen) -> bool:
        """Search results (not harvested links) the run had not seen, relevant by their
        title and snippet."""
        new = False
        for url, record in state.url_pool.items():
            if url in seen.urls:
                continue
            seen.urls.add(url)
            if record.origin == "search":
                stems = stems_of(f"{record.title} {record.snippet}")
                new = new or any(covers(q, stems) for q in queries)
        return new


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
