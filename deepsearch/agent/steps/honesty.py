"""Honest outcomes applied to the run: the rules of agent/judging/honesty.py, read
from the run's state and written into its result (the answer it reports, the search
record of a not-found answer, the confidence and `--min-confidence`)."""

from __future__ import annotations

from deepsearch.agent.judging import honesty
from deepsearch.agent.judging.confidence import ConfidenceBasis, confidence
from deepsearch.agent.result import ResearchResult
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Status


def reported_answer(state: AgentState, status: Status) -> tuple[str | None, Status]:
    """The answer text the run reports and its status (None: there is none)."""
    return honesty.reported_answer(
        state.final_answer, state.candidate_answer, state.not_found_note, status
    )


def confidence_basis(state: AgentState, result: ResearchResult) -> ConfidenceBasis:
    """The run's own signals about the answer it reports."""
    return honesty.confidence_basis(
        result.status,
        has_answer=bool(state.final_answer or state.candidate_answer),
        trivial=state.trivial,
        uncertain=state.answer_uncertain,
        cited_urls=(ref.url for ref in result.references),
    )


def with_confidence(state: AgentState, result: ResearchResult) -> ResearchResult:
    result.confidence_basis = confidence_basis(state, result)
    result.confidence = confidence(result.confidence_basis)
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
