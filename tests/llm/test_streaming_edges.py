"""`llm/streaming.collect` and `call_limits` at their edges, on a scripted stream and
the fake clock (no server, no real time): the stream is closed however the call ends,
the whole-call limit counts from sending, a timeout after a chunk is the whole-call
limit's, only choice 0 is the reply, a refusal keeps every piece. The limits are the
numbers README.md prints (its "Transport" table), written here as those numbers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from deepsearch.config import load_config
from deepsearch.llm.call_limits import CallLimits, call_limits, capped, is_local_endpoint
from deepsearch.llm.streaming import CallTimedOut, StreamedReply, collect
from tests.fakes.clock import FakeClock


def _chunk(content: str | None = None, **extra: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"index": extra.pop("index", 0), "delta": {}}
    if content is not None:
        part["delta"]["content"] = content
    if "refusal" in extra:
        part["delta"]["refusal"] = extra.pop("refusal")
    if "finish_reason" in extra:
        part["finish_reason"] = extra.pop("finish_reason")
    return {"choices": [part], **extra}


class _Script:
    """A stream whose steps are chunks, waits on the clock (`float`) or an exception."""

    def __init__(self, clock: FakeClock, steps: list[Any], *, open_wait: float = 0.0) -> None:
        self.clock, self.steps, self.open_wait = clock, steps, open_wait
        self.closed = 0

    async def open(self) -> _Script:
        await self._wait(self.open_wait)
        return self

    async def _wait(self, seconds: float) -> None:
        if seconds:
            await self.clock.sleep(seconds)
            for _ in range(5):  # a limit the wait passed cuts the call here
                await asyncio.sleep(0)

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for step in self.steps:
            if isinstance(step, float | int):
                await self._wait(float(step))
            elif isinstance(step, BaseException):
                raise step
            else:
                yield step

    async def close(self) -> None:
        self.closed += 1


async def _run(script: _Script, limits: CallLimits) -> StreamedReply:
    return await collect(script.open, limits, script.clock)


async def test_a_reply_is_assembled_from_choice_zero_only() -> None:
    clock = FakeClock()
    script = _Script(
        clock,
        [
            _chunk("Par"),
            _chunk("OTHER", index=1),
            {"choices": ["not a dict"]},
            _chunk("is", refusal=None),
            _chunk(None, finish_reason="stop", usage={"total_tokens": 7}),
            {"choices": None, "usage": None},
        ],
    )
    reply = await _run(script, CallLimits(10.0, 20.0))
    assert reply.choices[0].message.content == "Paris"
    assert reply.choices[0].message.refusal is None
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage == {"total_tokens": 7}  # a later chunk without usage keeps it
    assert reply.chunks == 6 and len(reply.choices) == 1
    assert script.closed == 1


async def test_a_chunk_without_an_index_is_choice_zero() -> None:
    reply = StreamedReply()
    reply.add(
        {"choices": [{"delta": {"content": "a"}}, {"index": None, "delta": {"content": "b"}}]}
    )
    assert reply.choices[0].message.content == "ab"


async def test_a_streamed_refusal_keeps_every_piece() -> None:
    clock = FakeClock()
    script = _Script(clock, [_chunk(refusal="I can"), _chunk(refusal="not help.")])
    reply = await _run(script, CallLimits(10.0, 20.0))
    assert reply.choices[0].message.refusal == "I cannot help."
    assert reply.choices[0].message.content == ""


async def test_no_first_chunk_in_time_is_the_first_token_limit() -> None:
    clock = FakeClock()
    script = _Script(clock, [130.0, _chunk("late")])
    with pytest.raises(CallTimedOut) as caught:
        await _run(script, CallLimits(first_token_s=120.0, total_s=300.0))
    assert (caught.value.limit, caught.value.seconds) == ("first token", 120.0)
    assert str(caught.value) == "first token not within 120 s"
    assert script.closed == 1


async def test_a_slow_open_is_the_first_token_limit() -> None:
    clock = FakeClock()
    script = _Script(clock, [_chunk("x")], open_wait=121.0)
    with pytest.raises(CallTimedOut, match="first token not within 120 s"):
        await _run(script, CallLimits(first_token_s=120.0, total_s=300.0))


async def test_a_timeout_after_one_chunk_is_the_whole_call_limit() -> None:
    clock = FakeClock()
    script = _Script(clock, [_chunk("a"), 400.0, _chunk("b")])
    with pytest.raises(CallTimedOut) as caught:
        await _run(script, CallLimits(first_token_s=120.0, total_s=300.0))
    assert (caught.value.limit, caught.value.seconds) == ("whole reply", 300.0)
    assert str(caught.value) == "whole reply not within 300 s"
    assert script.closed == 1


async def test_the_whole_call_limit_counts_from_sending_not_from_the_first_chunk() -> None:
    # First chunk at 100 s, then chunks every 50 s: 300 s after sending the call is cut,
    # although only 200 s passed since the first chunk.
    clock = FakeClock()
    steps: list[Any] = [100.0, _chunk("a")]
    for _ in range(6):
        steps += [50.0, _chunk("b")]
    script = _Script(clock, steps)
    with pytest.raises(CallTimedOut, match="whole reply"):
        await _run(script, CallLimits(first_token_s=120.0, total_s=300.0))
    assert 300.0 <= clock.reading() < 350.0
    assert script.closed == 1


async def test_a_long_reply_within_the_whole_call_limit_passes_the_first_token_limit() -> None:
    # Each chunk comes quickly but the reply takes longer than the first-token allowance.
    clock = FakeClock()
    script = _Script(clock, [_chunk("a"), 90.0, _chunk("b"), 90.0, _chunk("c")])
    reply = await _run(script, CallLimits(first_token_s=120.0, total_s=300.0))
    assert reply.choices[0].message.content == "abc"


async def test_the_stream_is_closed_when_reading_it_fails() -> None:
    clock = FakeClock()
    script = _Script(clock, [_chunk("a"), ConnectionResetError("gone")])
    with pytest.raises(ConnectionResetError):
        await _run(script, CallLimits(10.0, 20.0))
    assert script.closed == 1


async def test_the_stream_is_closed_when_the_call_is_cancelled() -> None:
    clock = FakeClock()
    entered = asyncio.Event()

    class _Hanging(_Script):
        async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
            yield _chunk("a")
            entered.set()
            await asyncio.Event().wait()
            yield _chunk("never")

    script = _Hanging(clock, [])
    task = asyncio.create_task(_run(script, CallLimits(10.0, 20.0)))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert script.closed == 1


def test_the_documented_limits_and_local_names() -> None:
    """README's "Transport" table: hosted 120 s / 300 s, local 600 s / 900 s."""
    llm = load_config(environ={}).settings.llm
    assert call_limits(llm, "openai", None) == CallLimits(120.0, 300.0)
    assert call_limits(llm, "openai", "https://api.example.com/v1") == CallLimits(120.0, 300.0)
    assert call_limits(llm, "ollama", None) == CallLimits(600.0, 900.0)
    assert call_limits(llm, "openai", "http://box.internal:8000/v1") == CallLimits(600.0, 900.0)
    for host in ("box.local", "box.lan", "box.internal", "LOCALHOST", "a.localhost", "x.home.arpa"):
        assert is_local_endpoint("openai", f"http://{host}:8000/v1"), host
    for host in ("internal.example.com", "example.lan.com", "169.254.1.1"):
        expected = host == "169.254.1.1"  # link-local: on the user's own network
        assert is_local_endpoint("openai", f"http://{host}/v1") is expected, host
    assert not is_local_endpoint("openai", "http://[::1/v1")  # unparsable: not local
    assert not is_local_endpoint("openai", "")


def test_a_configured_limit_wins_and_the_first_token_never_exceeds_the_whole() -> None:
    llm = load_config(environ={}).settings.llm
    only_total = llm.model_copy(update={"timeout_s": 60.0})
    assert call_limits(only_total, "openai", None) == CallLimits(60.0, 60.0)
    only_first = llm.model_copy(update={"first_token_timeout_s": 30.0})
    assert call_limits(only_first, "ollama", None) == CallLimits(30.0, 900.0)
    assert capped(CallLimits(120.0, 300.0), 200.0) == CallLimits(120.0, 200.0)
    assert capped(CallLimits(120.0, 300.0), 5.0) == CallLimits(5.0, 5.0)
    assert CallLimits(120.0, 300.0).sdk_read_timeout_s == 330.0


def test_another_choice_first_in_a_chunk_does_not_hide_choice_zero() -> None:
    reply = StreamedReply()
    reply.add(
        {
            "choices": [
                {"index": 1, "delta": {"content": "other"}},
                {"index": 0, "delta": {"content": "mine"}, "finish_reason": "stop"},
            ]
        }
    )
    assert reply.choices[0].message.content == "mine"
    assert reply.choices[0].finish_reason == "stop"
