"""Where each LLM call in flight stands, told to whoever watches the run.

A call is sent (`LLMClient._call`: `watched_call`); on an OpenAI-compatible wire it then
waits for its first token (`waiting`, with the first-token limit it runs under,
`streaming.collect`), may be answered an error status and paused before a retry
(`retry_pause`: the status and the pause, `openai_wire`), and generates once its first
token arrives (`first_token`). Each change goes to the run's `CallWatch` (runtime.py
sets one per run, the way `waits.listening` is set): the live view's spinner says "no
first token yet after 40 s (limit 600 s)" or "rate limited, retrying in 4 s" from it.

A call cut from outside (a cancellation: the run's --timeout) while it waited for its
first token or for a retry is kept in `CallWatch.cut`, with when: a run that ended
because its time ran out names it as its error (agent/stalls.py). A call cut while
generating is not: a model writing until the limit is no stalled server. A call of a
provider that does not stream (Gemini) never leaves `sent`: nothing is claimed of it.

A context variable rather than a parameter, as in waits.py: the wire is built once per
provider, deep below the run; each call runs in a task of its own (or one after the
other in one task), so the call in flight is the context's. Without a watch, nothing
happens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from deepsearch.llm.waits import announce, retry_words

if TYPE_CHECKING:
    from deepsearch.clock import Clock

Moved = Literal["waiting", "retrying", "generating"]  # the phases a call is moved to
Phase = Literal["sent", Moved]


@dataclass
class CallState:
    """One call: its tool and reply schema, and where it stands (times on the watch's clock)."""

    tool: str
    schema: str
    started: float  # when it was sent
    phase: Phase = "sent"
    since: float = 0.0  # when the phase began
    limit_s: float | None = None  # "waiting": its limit to the first token
    status: int | None = None  # the last error status answered (None: no answer at all)
    refused: int = 0  # requests answered an error status (or none) and retried
    wait_s: float = 0.0  # "retrying": the pause before the next request
    cut_at: float | None = None  # when a cancellation cut it


@dataclass
class CallWatch:
    """The calls of one run: each change is told to `on_change`; the calls cut while
    stalled (waiting, retrying) are kept in `cut`."""

    clock: Clock
    on_change: Callable[[CallState, Moved], None] | None = None
    cut: list[CallState] = field(default_factory=list)

    def move(self, call: CallState, phase: Moved) -> None:
        call.phase, call.since = phase, self.clock.monotonic()
        if self.on_change is not None:
            try:
                self.on_change(call, phase)
            except Exception:  # a listener's failure never fails the call
                pass


_watch: ContextVar[CallWatch | None] = ContextVar("llm_call_watch", default=None)
_call: ContextVar[CallState | None] = ContextVar("llm_call", default=None)


@contextmanager
def watching(watch: CallWatch) -> Iterator[None]:
    """Within the block (and the tasks started in it), calls are told to `watch`."""
    token = _watch.set(watch)
    try:
        yield
    finally:
        _watch.reset(token)


@contextmanager
def watched_call(tool: str, schema: str) -> Iterator[None]:
    """One call, sent within the block; a cancellation that cuts it while it is stalled
    is kept (`CallWatch.cut`)."""
    watch = _watch.get()
    if watch is None:
        yield
        return
    now = watch.clock.monotonic()
    call = CallState(tool=tool, schema=schema, started=now, since=now)
    token = _call.set(call)
    try:
        yield
    except asyncio.CancelledError:
        if call.phase in ("waiting", "retrying"):
            call.cut_at = watch.clock.monotonic()
            watch.cut.append(call)
        raise
    finally:
        _call.reset(token)


def _current() -> tuple[CallWatch, CallState] | None:
    watch, call = _watch.get(), _call.get()
    return None if watch is None or call is None else (watch, call)


def waiting(limit_s: float) -> None:
    """The request is sent over a stream: no first token yet, within `limit_s`."""
    if (current := _current()) is not None:
        watch, call = current
        call.limit_s = limit_s
        watch.move(call, "waiting")


def first_token() -> None:
    """The first token arrived: the server is generating."""
    if (current := _current()) is not None:
        current[0].move(current[1], "generating")


@contextmanager
def retry_pause(status: int | None, wait_s: float) -> Iterator[None]:
    """The pause before a retry (the block): told as a notice (waits.py) and as the
    call's phase; after it, the retried request waits for its first token again."""
    announce(retry_words(status, wait_s))
    current = _current()
    if current is not None:
        watch, call = current
        call.status, call.wait_s = status, wait_s
        call.refused += 1
        watch.move(call, "retrying")
    yield
    if current is not None:
        current[0].move(current[1], "waiting")
