"""The LLM layer's edges that a fresh `make mutate` found unpinned on today's main
(issue 37, re-check): which limit a call resent after a cut-off stream ran into, what
the retry hook is told, and which timeouts make a server "stalled"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepsearch.llm.call_limits import CallLimits
from deepsearch.llm.rung_memory import RungMemory
from deepsearch.llm.streaming import CallTimedOut, StallGuard, StreamCutOff, collect
from tests.fakes.clock import FakeClock
from tests.llm.test_streaming_edges import _chunk, _Script

LIMITS = CallLimits(first_token_s=120.0, total_s=300.0)


class _Resent:
    """Each open() gives the next script; the retry hook records what it was told."""

    def __init__(self, clock: FakeClock, *attempts: list[Any]) -> None:
        self.scripts = [_Script(clock, steps) for steps in attempts]
        self.told: list[StreamCutOff] = []

    async def open(self) -> _Script:
        return self.scripts.pop(0)

    async def retry(self, cut: StreamCutOff) -> bool:
        self.told.append(cut)
        return True


async def test_a_resent_call_whose_first_attempt_had_begun_answering_runs_into_the_whole_limit() -> (
    None
):
    """The server was generating (a chunk came) before the stream was cut: the call is
    under its whole-call limit from then on, and a timeout of the resend says so."""
    clock = FakeClock()
    cut = StreamCutOff("no finish_reason")
    calls = _Resent(clock, [_chunk("a"), cut], [400.0, _chunk("late")])
    with pytest.raises(CallTimedOut) as caught:
        await collect(calls.open, LIMITS, clock, retry=calls.retry)
    assert (caught.value.limit, caught.value.seconds) == ("whole reply", 300.0)
    assert calls.told == [cut]  # the hook is told what cut the stream


async def test_a_resent_call_that_never_got_a_chunk_runs_into_the_first_token_limit() -> None:
    clock = FakeClock()
    calls = _Resent(clock, [StreamCutOff("cut before any chunk")], [130.0, _chunk("late")])
    with pytest.raises(CallTimedOut) as caught:
        await collect(calls.open, LIMITS, clock, retry=calls.retry)
    assert str(caught.value) == "first token not within 120 s"


def test_only_a_first_token_timeout_without_an_answer_marks_a_server_stalled() -> None:
    """A server that began its reply and ran past the whole-call limit is slow, not
    stuck: the next call keeps its full first-token allowance. One that sent nothing
    gets 30 s until a call of it answers (StallGuard)."""
    local = CallLimits(first_token_s=600.0, total_s=900.0)
    guard = StallGuard()
    guard.saw(CallTimedOut("whole reply", 900.0))
    assert guard.limits(local) == local
    busy = CallTimedOut("first token", 600.0)
    busy.answered = 429  # a rate limit retried until the limit: it answers
    guard.saw(busy)
    assert guard.limits(local) == local
    guard.saw(CallTimedOut("first token", 600.0))
    assert guard.limits(local) == CallLimits(30.0, 900.0)
    guard.saw(None)
    assert guard.limits(local) == local


def test_a_demoted_rung_is_kept_for_a_day_to_the_second(tmp_path: Path) -> None:
    """A rung below the top is re-checked after a day (24 h), not before."""
    clock = [1_000_000.0]
    memory = RungMemory(tmp_path / "output-modes.json", now=lambda: clock[0])
    memory.put("http://a/v1", "m1", "json_object", "refuses json_schema (HTTP 500)", demoted=True)
    clock[0] += 24 * 3600
    assert memory.get("http://a/v1", "m1") is not None
    clock[0] += 1
    assert memory.get("http://a/v1", "m1") is None
