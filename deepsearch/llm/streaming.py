"""One chat completion as a streamed request, under the call's two limits.

Why stream: a server can only notice that its client left when it writes to the
connection. A streamed reply writes every token, so closing it stops the generation
(llama.cpp's server, llama-cpp-python's, vLLM, Ollama); a non-streamed request keeps
generating after the client gave up, holding the server's only slot. Streaming also
tells a slow server (still reading the prompt) from a stuck one: the first chunk has
its own allowance, then the whole call its limit (`call_limits`).

`collect` returns the chunks (parsed JSON objects, `openai_wire.ChatStream`) assembled
into the shape of a non-streamed reply (`choices[0].message.content`, `finish_reason`,
`usage` as the server's object). No SDK is involved.

A stream that ends before the reply does (no `finish_reason`, no end marker: a
server killed mid-reply, a connection dropped) raises `StreamCutOff` where it is read;
such a stream is never an answer. `collect` asks its `retry` hook whether to send the
request again (a dropped connection is retried like one dropped before the headers),
inside the same call limits, and starts the reply afresh.

Where the call stands, waiting for its first token or generating, is told to the run's
watch (`call_watch`), for the spinner and for a run whose time limit cuts the call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from deepsearch.clock import Clock, SystemClock
from deepsearch.llm import call_watch
from deepsearch.llm.call_limits import CallLimits


class StreamCutOff(Exception):
    """The stream ended, or broke, before the reply was complete."""


class CallTimedOut(Exception):
    """A limit of `CallLimits` was reached; the stream was closed."""

    def __init__(self, limit: str, seconds: float) -> None:
        super().__init__(f"{limit} not within {seconds:g} s")
        self.limit = limit  # "first token" or "whole reply"
        self.seconds = seconds
        # Set by the wire: the error status the server kept answering (429, 5xx) while
        # the call was retried until the limit, and how many retries there were.
        self.answered: int | None = None
        self.retries = 0


@dataclass
class _Message:
    content: str = ""
    refusal: str | None = None


@dataclass
class _Choice:
    message: _Message = field(default_factory=_Message)
    finish_reason: str | None = None


@dataclass
class StreamedReply:
    """The assembled reply, shaped like a ChatCompletion where it is read."""

    choices: list[_Choice] = field(default_factory=lambda: [_Choice()])
    usage: Any = None  # the server's usage object (a dict), when it sent one
    chunks: int = 0

    def add(self, chunk: dict[str, Any]) -> None:
        """One streamed `chat.completion.chunk`, as parsed JSON (`openai_wire`)."""
        self.chunks += 1
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for part in chunk.get("choices") or []:
            if not isinstance(part, dict) or part.get("index", 0) not in (0, None):
                continue  # one reply (n=1); other indexes are not asked for
            choice = self.choices[0]
            delta = part.get("delta")
            if isinstance(delta, dict):
                choice.message.content += delta.get("content") or ""
                refusal = delta.get("refusal")
                if refusal:
                    choice.message.refusal = (choice.message.refusal or "") + refusal
            if part.get("finish_reason"):
                choice.finish_reason = part["finish_reason"]


@dataclass
class Attempts:
    """One call's retries (of every kind) and the last error status it was answered."""

    count: int = 0
    last_status: int | None = None


class StallGuard:
    """A server that sent no first token within the allowance is paid for once, not
    per call: until a call of it answers, later calls (the next step, Beast Mode) get
    a first-token allowance of at most STALLED_FIRST_TOKEN_S. (A hung server on
    loopback held a run 1,201 s: the 600 s local allowance, twice.)"""

    STALLED_FIRST_TOKEN_S = 30.0

    def __init__(self) -> None:
        self.stalled = False

    def limits(self, limits: CallLimits) -> CallLimits:
        if not self.stalled:
            return limits
        return CallLimits(min(limits.first_token_s, self.STALLED_FIRST_TOKEN_S), limits.total_s)

    def saw(self, timed_out: CallTimedOut | None) -> None:
        """A call's end: answered (None), or cut by a limit."""
        if timed_out is None:
            self.stalled = False
        elif timed_out.limit == "first token" and timed_out.answered is None:
            self.stalled = True  # no answer at all, not a rate limit being retried


Opener = Callable[[], Awaitable[Any]]
Retry = Callable[[StreamCutOff], Awaitable[bool]]


async def collect(
    open_stream: Opener,
    limits: CallLimits,
    clock: Clock | None = None,
    *,
    retry: Retry | None = None,
) -> StreamedReply:
    """Send the request (`open_stream` returns an async stream of chunks with an async
    `close()`) and read it to the end; raise CallTimedOut when the first chunk or the
    whole reply takes longer than allowed on `clock` (real time by default). A stream
    cut off before its end is sent again while `retry` says so (it pauses first), else
    its StreamCutOff is raised. The stream is closed however this ends (a cancellation
    included)."""
    clock = clock or SystemClock()
    started = clock.monotonic()
    reply = StreamedReply()
    generating = False
    try:
        async with clock.timeout_at(started + limits.first_token_s) as limit:
            while True:
                call_watch.waiting(limits.first_token_s)  # sent (again): no token yet
                try:
                    return await _read(await open_stream(), reply, limit, started + limits.total_s)
                except StreamCutOff as exc:
                    generating = generating or reply.chunks > 0
                    if retry is None or not await retry(exc):
                        raise
                    reply = StreamedReply()  # the cut-off reply is dropped whole
    except TimeoutError:
        if reply.chunks == 0 and not generating:
            raise CallTimedOut("first token", limits.first_token_s) from None
        raise CallTimedOut("whole reply", limits.total_s) from None


async def _read(stream: Any, reply: StreamedReply, limit: Any, ends_at: float) -> StreamedReply:
    try:
        async for chunk in stream:
            if reply.chunks == 0:  # the server is generating: the call's limit now
                limit.reschedule(ends_at)
                call_watch.first_token()
            reply.add(chunk)
    finally:
        await stream.close()
    return reply
