"""The error of a run whose time limit cut a stalled LLM call (issue 36, item 25): what
the call waited for, in words; a 429 is a rate limit, never "no first token"; only a cut
at or after the time was up counts, and an error the run already has is kept."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from deepsearch.agent.result import UsageReport, result_so_far
from deepsearch.agent.stalls import stalled_words, timeout_cause, with_timeout_cause
from deepsearch.agent.types import Status
from deepsearch.llm.call_watch import CallState, CallWatch, Phase
from tests.fakes.clock import FakeClock


def _cut(phase: Phase, *, since: float = 0.0, at: float = 540.0, **more: Any) -> CallState:
    return CallState(tool="agent", schema="AgentStep", started=0.0, phase=phase, since=since,
                     cut_at=at, **more)  # fmt: skip


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            _cut("waiting", limit_s=600.0),
            "the LLM server sent no first token in 540 s (limit 600 s to the first token)",
        ),
        (
            _cut("waiting", since=500.0, limit_s=600.0, status=429, refused=2),
            "the LLM server sent no first token in 40 s (limit 600 s to the first token), "
            "after it rate limited the call (HTTP 429 to 2 requests in a row)",
        ),
        (_cut("waiting"), "the LLM server sent no first token in 540 s"),
        (
            _cut("retrying", status=429, refused=1),
            "the LLM server rate limited the call (HTTP 429)",
        ),
        (
            _cut("retrying", status=429, refused=3),
            "the LLM server rate limited the call (HTTP 429 to 3 requests in a row)",
        ),
        (
            _cut("retrying", status=503, refused=2),
            "the LLM server answered HTTP 503 to 2 requests in a row",
        ),
        (_cut("retrying", status=503, refused=1), "the LLM server answered HTTP 503"),
        (
            _cut("retrying", status=None, refused=1),
            "the LLM server could not be reached (no answer)",
        ),
        (
            _cut("retrying", status=None, refused=4),
            "the LLM server could not be reached (no answer to 4 requests in a row)",
        ),
    ],
)
def test_what_the_cut_call_waited_for(call: CallState, words: str) -> None:
    assert stalled_words(call) == words
    assert "slow server" not in words


def test_only_a_cut_once_the_time_was_up_counts_and_the_first_such() -> None:
    early = _cut("retrying", at=100.0, status=429, refused=1)  # cut by something else
    due = _cut("waiting", at=510.0, limit_s=600.0)
    later = _cut("retrying", at=600.0, status=429, refused=1)
    assert timeout_cause([early], 510.0) is None
    assert timeout_cause([early, due, later], 510.0) == stalled_words(due)
    assert timeout_cause([], 510.0) is None


def _run(
    cut: list[CallState], timeout_s: float | None, *, started: float = 10.0, unwatched: bool = False
) -> Any:
    """What with_timeout_cause reads of a ResearchRun."""
    watch = None if unwatched else CallWatch(FakeClock(), cut=cut)
    return SimpleNamespace(
        deps=SimpleNamespace(calls=watch),
        options=SimpleNamespace(timeout_s=timeout_s),
        deadline=SimpleNamespace(started=started),
    )


def _result(error: str | None = None, status: Status = "not_found") -> Any:
    usage = UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=1000)
    return result_so_far("q", status, usage, error=error, kind="runtime")


def test_a_run_cut_while_stalled_names_the_cause_as_a_runtime_error() -> None:
    # --timeout 600 from clock 10: research's share (85%) is up at 520.
    stalled = _cut("waiting", since=10.0, at=520.0, limit_s=600.0)
    result = with_timeout_cause(_result(), _run([stalled], 600.0))
    assert result.error == (
        "time limit of 600 s reached: the LLM server sent no first token in 510 s "
        "(limit 600 s to the first token)"
    )
    assert (result.error_kind, result.status, result.exit_code) == ("runtime", "not_found", 4)
    forced = with_timeout_cause(_result(status="forced"), _run([stalled], 600.0))
    assert (forced.error, forced.exit_code) == (result.error, 3)
    assert with_timeout_cause(_result(), _run([stalled], 600.0, started=11.0)).error is None


@pytest.mark.parametrize(
    ("result", "run"),
    [
        (_result("search failed"), _run([_cut("waiting", at=600.0)], 600.0)),  # its own error
        (_result(), _run([_cut("waiting", at=600.0)], None)),  # no time limit
        (_result(), _run([], 600.0, unwatched=True)),
        (_result(status="answered"), _run([_cut("waiting", at=600.0)], 600.0)),
    ],
    ids=["own-error", "no-timeout", "unwatched", "answered"],
)
def test_otherwise_the_result_is_as_it_was(result: Any, run: Any) -> None:
    assert with_timeout_cause(result, run) is result
