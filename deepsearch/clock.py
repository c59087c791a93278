"""The one clock seam: wall time, a monotonic timer, sleeping and timeouts, injected
everywhere.

Agent deps (the run's --timeout, `agent/deadline.py`), the LLM call limits, the web
cache (TTL deadlines), the reader (fetch times, Retry-After waits), host limits, the
search chain (rate limits, the retry pause) and the sandbox (run durations) all take a
`Clock`, so their timing is testable without waiting: the tests' `FakeClock`
(tests/fakes/clock.py, not shipped) moves only when told to, its `sleep` advances it
instead of waiting, and its timeouts expire when it passes them (a 10 s limit in no
real time).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Protocol


class Timer(Protocol):
    def reschedule(self, when: float | None) -> None:
        """Move the expiry to `when` on the clock's monotonic timer (None: never)."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware wall-clock time (UTC): dates, fetch times, cache deadlines."""
        ...

    def monotonic(self) -> float:
        """Seconds on a timer that never goes back: elapsed time and timeouts."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` (rate limits, retry pauses)."""
        ...

    def timeout_at(self, when: float | None) -> AbstractAsyncContextManager[Timer]:
        """Cancel the block with TimeoutError once `monotonic()` reaches `when` (None:
        not until rescheduled), like `asyncio.timeout_at` on this clock's timer."""
        ...


class _LoopTimer:
    """An `asyncio.Timeout` addressed in `time.monotonic()` seconds."""

    def __init__(self, timeout: asyncio.Timeout, loop: asyncio.AbstractEventLoop) -> None:
        self._timeout, self._loop = timeout, loop

    def reschedule(self, when: float | None) -> None:
        self._timeout.reschedule(_loop_time(self._loop, when))


def _loop_time(loop: asyncio.AbstractEventLoop, when: float | None) -> float | None:
    # The event loop's clock is its own (monotonic, not necessarily the same origin).
    return None if when is None else loop.time() + (when - time.monotonic())


class SystemClock:
    """Wall-clock time in UTC plus a monotonic timer for elapsed/timeout checks."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    @asynccontextmanager
    async def timeout_at(self, when: float | None) -> AsyncIterator[Timer]:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(_loop_time(loop, when)) as timeout:
            yield _LoopTimer(timeout, loop)
