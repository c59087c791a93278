"""Honest outcomes applied to the run: the rules of agent/judging/honesty.py, read
from the run's state and written into its result (the answer it reports, the search
record of a not-found answer, the confidence and `--min-confidence`)."""

from __future__ import annotations

from collections.abc import Iterable

from deepsearch.agent.judging import honesty
from deepsearch.agent.judging.confidence import ConfidenceBasis, confidence
from deepsearch.agent.judging.injection import instructions_in
from deepsearch.agent.result import ResearchResult
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Status


def reported_answer(state: AgentState, status: Status) -> tuple[str | None, Status]:
    """The answer text the run reports and its status (None: there is none)."""
    return honesty.reported_answer(
        state.final_answer, state.candidate_answer, state.not_found_note, status
    )


# An answer that cites nothing rests on what was read: the newest pages, each up to
# this much of its text (a bound on the scan's CPU, once a run).
UNCITED_PAGES, UNCITED_CHARS = 10, 100_000


def instructed_sources(state: AgentState, result: ResearchResult) -> dict[str, tuple[str, ...]]:
    """The answer's support whose text addresses the model (url -> the passages,
    `judging.injection.instructions_in`): its cited sources (pages read, snippets
    seen), or for an answer that cites none, the newest pages the run read (a claim
    reworded from a page anchors no quote, but came from it all the same)."""
    cited = list(dict.fromkeys(ref.url for ref in result.references))
    urls = cited or state.read_urls[-UNCITED_PAGES:]
    found: dict[str, tuple[str, ...]] = {}
    for url in urls:
        source = state.pages.get(url) or state.snippets.get(url)
        if source is None:
            continue
        text = source.text if cited else source.text[:UNCITED_CHARS]
        if signals := instructions_in(source.title + "\n" + text):
            found[url] = signals
    return found


def confidence_basis(
    state: AgentState, result: ResearchResult, instructed: Iterable[str] = ()
) -> ConfidenceBasis:
    """The run's own signals about the answer it reports."""
    return honesty.confidence_basis(
        result.status,
        has_answer=bool(state.final_answer or state.candidate_answer),
        trivial=state.trivial,
        uncertain=state.answer_uncertain,
        cited_urls=(ref.url for ref in result.references),
        instructed_urls=instructed,
    )


def with_confidence(state: AgentState, result: ResearchResult) -> ResearchResult:
    """The confidence and its basis; a warning when the answer's support instructs the
    model. Judged afresh on every call (a snapshot is judged before its references)."""
    result.answer, result.warnings = honesty.without_instructed_warning(
        result.answer, result.warnings
    )
    instructed = instructed_sources(state, result)
    result.confidence_basis = confidence_basis(state, result, instructed)
    result.confidence = confidence(result.confidence_basis)
    basis = result.confidence_basis
    if not basis.supported:  # not found, failed: no claim to warn about
        return result
    unsupported = basis.instructed_sources >= basis.sources  # no clean source left
    warning = honesty.instructed_warning(instructed, cited=basis.sources)
    if warning is not None:
        result.warnings.append(warning)
        if unsupported and result.answer:  # every front end shows the answer: it says so
            result.answer = honesty.UNVERIFIED_HEAD + result.answer
    return result


def what_was_searched(state: AgentState) -> str:
    return honesty.what_was_searched(state.searched_queries, len(state.read_urls))


def with_search_record(state: AgentState, result: ResearchResult) -> ResearchResult:
    """A not-found answer says what was looked for and what was read."""
    if result.status == "not_found":
        result.answer = honesty.not_found_text(result.answer, what_was_searched(state))
    return result


def apply_min_confidence(
    state: AgentState, result: ResearchResult, threshold: float | None
) -> ResearchResult:
    """A forced answer below `threshold` becomes `not_found`; its text then says what
    was looked for and what was found (the unconfirmed answer, references kept)."""
    if threshold is None or not honesty.below_min_confidence(  # None: the option is off
        result.status, result.confidence, threshold
    ):
        return result
    head = honesty.not_confirmed_text(what_was_searched(state), result.confidence, threshold)
    result.answer = head + result.answer
    result.status = "not_found"
    return result
