"""What a run tells of its LLM calls' waits (llm/call_watch.py).

- To the live view: each change of a call's phase is an `LlmPhase` event, the call named
  as the view names it (`call_purpose`: the evaluator's first call classifies the
  question), so the spinner can say "no first token yet" or "rate limited, retrying in
  4 s" (frontend/live.py).
- In the result: a run whose time limit ran out while an LLM call waited for its first
  token, or for a retry after an error status, names that in `error` ("time limit of
  600 s reached: the LLM server sent no first token in 540 s (limit 600 s to the first
  token)"; a 429 is named as a rate limit, never as a slow server), with `error_kind`
  "runtime": the status still decides the exit code (3 or 4, as for any run a limit
  ended; an answer accepted before the time ran out is left alone). A call that was generating when the time ran out (a model writing until the
  limit) is no stalled server: that run's `error` stays null, its `stop_reason` says
  "time limit reached". The session applies it for every front end (session.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deepsearch.agent.events import AgentEvent, LlmPhase, safe_emit
from deepsearch.llm.call_watch import CallState, CallWatch, Moved

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun
    from deepsearch.agent.result import ResearchResult
    from deepsearch.clock import Clock

# An LLM call named by its reply's schema where the tool alone would mislead the live
# view (the evaluator's first call classifies the question; it evaluates no answer).
CALL_PURPOSES = {"QuestionEval": "classifier"}


def call_purpose(tool: str, schema: str) -> str:
    return CALL_PURPOSES.get(schema, tool)


def call_watch(clock: Clock, emit: Callable[[AgentEvent], None]) -> CallWatch:
    """The run's watch: each phase a call enters is an LlmPhase event."""

    def tell(call: CallState, phase: Moved) -> None:
        event = LlmPhase(
            tool=call_purpose(call.tool, call.schema), phase=phase,
            limit_s=call.limit_s, status=call.status, wait_s=call.wait_s,
        )  # fmt: skip
        safe_emit(emit, event)

    return CallWatch(clock, on_change=tell)


def refusal_words(status: int | None, requests: int) -> str:
    """`rate limited the call (HTTP 429 to 3 requests in a row)` and its kin: what the
    server answered the call's `requests` requests, each retried."""
    times = f" to {requests} requests in a row" if requests > 1 else ""
    if status == 429:
        return f"rate limited the call (HTTP 429{times})"
    if status is None:
        return f"could not be reached (no answer{times})"
    return f"answered HTTP {status}{times}"


def stalled_words(call: CallState) -> str:
    """What the call was waiting for when it was cut."""
    if call.phase == "retrying":
        return f"the LLM server {refusal_words(call.status, call.refused)}"
    waited = (call.cut_at or call.since) - call.since
    limit = f" (limit {call.limit_s:g} s to the first token)" if call.limit_s else ""
    text = f"the LLM server sent no first token in {waited:.0f} s{limit}"
    if call.refused:
        text += f", after it {refusal_words(call.status, call.refused)}"
    return text


def timeout_cause(cut: list[CallState], time_up_at: float) -> str | None:
    """The first call cut once the time was up (at `time_up_at` or later), in words."""
    for call in cut:
        if call.cut_at is not None and call.cut_at >= time_up_at:
            return stalled_words(call)
    return None


# The endings a limit gives a run (an accepted answer was not ended by the time).
LIMITED = ("forced", "not_found")


def with_timeout_cause(result: ResearchResult, run: ResearchRun) -> ResearchResult:
    """`result`, its `error` naming the stalled call when the run's time limit cut one
    and left it forced or not found (see the module doc); an error the run already
    reports is kept."""
    from deepsearch.agent.loop import LOOP_TIME_SHARE

    watch, timeout = run.deps.calls, run.options.timeout_s
    if result.error is not None or result.status not in LIMITED:
        return result
    if watch is None or timeout is None:
        return result
    cause = timeout_cause(watch.cut, run.deadline.started + timeout * LOOP_TIME_SHARE)
    if cause is None:
        return result
    error = f"time limit of {timeout:g} s reached: {cause}"
    return result.model_copy(update={"error": error, "error_kind": "runtime"})
