"""Outside mutation audit (issue 37): behaviours of the streaming call, its limits and
the structured-output ladder that no other test pinned. Numbers are the ones the docs
print (docs/reliability.md, README.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from deepsearch.llm.call_limits import CallLimits
from deepsearch.llm.streaming import (
    CallTimedOut,
    StallGuard,
    StreamCutOff,
    StreamedReply,
    collect,
)
from tests.fakes.clock import FakeClock


def test_a_chunk_after_the_finish_keeps_the_finish_reason() -> None:
    """Servers send a last chunk (usage, an empty delta) after `finish_reason`: the
    reply is still complete."""
    reply = StreamedReply()
    reply.add({"choices": [{"index": 0, "delta": {"content": "done"}}]})
    reply.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    reply.add({"choices": [{"index": 0, "delta": {}}], "usage": {"total_tokens": 3}})
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == "done"


def test_a_stalled_server_gets_at_most_30_s_to_its_first_token_never_more() -> None:
    """docs/reliability.md: after a first-token timeout, later calls get at most 30 s;
    an allowance already shorter stays as it was."""
    guard = StallGuard()
    guard.saw(CallTimedOut("first token", 600))
    assert guard.limits(CallLimits(600.0, 900.0)) == CallLimits(30.0, 900.0)
    assert guard.limits(CallLimits(10.0, 900.0)) == CallLimits(10.0, 900.0)


def test_a_rate_limit_is_no_stall_and_an_answer_ends_one() -> None:
    """A first-token timeout while the server kept answering 429 is a rate limit, not a
    hung server; a stalled server that answers again gets its whole allowance back."""
    limits = CallLimits(600.0, 900.0)
    limited = CallTimedOut("first token", 600)
    limited.answered = 429
    guard = StallGuard()
    guard.saw(limited)
    assert guard.limits(limits) == limits
    guard.saw(CallTimedOut("first token", 600))
    assert guard.limits(limits).first_token_s == 30.0
    guard.saw(None)
    assert guard.limits(limits) == limits


class _Opens:
    """Each open of the stream plays the next list of steps: a chunk (dict), a wait on
    the fake clock (float) or an exception raised mid-stream."""

    def __init__(self, clock: FakeClock, *attempts: list[Any]) -> None:
        self.clock, self.attempts = clock, list(attempts)

    async def open(self) -> _Opens.Stream:
        return _Opens.Stream(self.clock, self.attempts.pop(0))

    class Stream:
        def __init__(self, clock: FakeClock, steps: list[Any]) -> None:
            self.clock, self.steps = clock, steps

        async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
            for step in self.steps:
                if isinstance(step, float):
                    await self.clock.sleep(step)
                    for _ in range(5):
                        await asyncio.sleep(0)
                elif isinstance(step, BaseException):
                    raise step
                else:
                    yield step

        async def close(self) -> None:
            return None


def _piece(text: str, finish: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"index": 0, "delta": {"content": text}}
    if finish:
        part["finish_reason"] = finish
    return {"choices": [part]}


async def _again(_: StreamCutOff) -> bool:
    return True


async def test_a_stream_cut_off_and_sent_again_keeps_only_the_new_reply() -> None:
    clock = FakeClock()
    opens = _Opens(
        clock, [_piece("half a rep"), StreamCutOff("dropped")], [_piece("whole", "stop")]
    )
    reply = await collect(opens.open, CallLimits(10.0, 100.0), clock, retry=_again)
    assert reply.choices[0].message.content == "whole"


async def test_a_server_that_generated_before_a_cut_off_is_timed_as_the_whole_reply() -> None:
    """Once a chunk came, the server was generating: a later silent retry that runs out
    of time hit the whole-call limit, not the first-token one."""
    clock = FakeClock()
    opens = _Opens(
        clock,
        [_piece("a"), StreamCutOff("dropped")],
        [StreamCutOff("dropped again")],
        [200.0],
    )
    with pytest.raises(CallTimedOut) as caught:
        await collect(opens.open, CallLimits(10.0, 100.0), clock, retry=_again)
    assert caught.value.limit == "whole reply"


async def test_a_schema_the_dialect_cannot_express_is_never_sent_natively() -> None:
    """native=False: no rung that sends the schema for the server to enforce, not even
    llama-cpp-python's json_object + schema, and nothing remembered for the model."""
    from deepsearch.config import ModelSettings
    from deepsearch.llm.base import Completion, CompletionRequest, Message, OutputMode
    from deepsearch.llm.output_modes import OutputModeLadder

    sent: list[OutputMode] = []

    async def send(mode: OutputMode) -> Completion:
        sent.append(mode)
        return Completion(text="{}", mode=mode)

    ladder = OutputModeLadder(("json_schema", "json_object_schema", "json_object", "prompted"))
    request = CompletionRequest(
        tool="agent", settings=ModelSettings(model="m1"), system="s",
        messages=[Message(role="user", content="q")], json_schema={"type": "object"},
    )  # fmt: skip
    await ladder.complete(request, send, native=False)
    assert sent == ["json_object"]
    assert ladder.remembered == {}


def test_a_demoted_rung_is_kept_for_a_day_then_re_checked(tmp_path: Path) -> None:
    """rung_memory's docstring: a demotion is kept a day (24 hours), then the next run
    climbs from the top again."""
    from deepsearch.llm.rung_memory import RungMemory

    now = [1_000_000.0]
    memory = RungMemory(tmp_path / "output-modes.json", now=lambda: now[0])
    memory.put("http://llm:8080/v1", "m", "json_object", "refuses json_schema", demoted=True)
    now[0] += 23 * 3600
    kept = memory.get("http://llm:8080/v1", "m")
    assert kept is not None and kept.mode == "json_object"
    now[0] += 3600 + 1
    assert memory.get("http://llm:8080/v1", "m") is None
