"""The one clock seam: wall time, a monotonic timer, sleeping and timeouts, injected
everywhere.

Agent deps (the run's --timeout, `agent/deadline.py`), the LLM call limits, the web
cache (TTL deadlines), the reader (fetch times, Retry-After waits), host limits, the
search chain (rate limits, the retry pause) and the sandbox (run durations) all take a
`Clock`, so their timing is testable without waiting: `FakeClock` moves only when told
to, its `sleep` advances it instead of waiting, and its timeouts expire when it passes
them (a 10 s limit in no real time).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
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


class _FakeTimer:
    """A timeout on a FakeClock: expires (on its event loop's thread) when the clock
    passes `when`, whichever thread moved it."""

    def __init__(self, clock: FakeClock, timeout: asyncio.Timeout, when: float | None) -> None:
        self._clock, self._timeout, self.when = clock, timeout, when
        self._loop = asyncio.get_running_loop()
        self.active, self._fired = True, False

    def reschedule(self, when: float | None) -> None:
        self.when, self._fired = when, False
        self.check(self._clock.reading())

    def check(self, now: float) -> None:
        if self._due(now) and not self._fired:
            self._fired = True
            with contextlib.suppress(RuntimeError):  # its loop closed: nothing to cut
                self._loop.call_soon_threadsafe(self._expire)

    def _due(self, now: float) -> bool:
        return self.when is not None and now >= self.when

    def _expire(self) -> None:
        # Still due (not rescheduled meanwhile) and the block not left: cancel it now.
        if self.active and self._due(self._clock.reading()) and not self._timeout.expired():
            self._timeout.reschedule(self._loop.time())


class FakeClock:
    """A clock that only moves when told to (or by `tick` on every monotonic read).

    `sleep` records the wait in `sleeps` and advances both timers by it, yielding to
    the event loop once as a real sleep would. A `timeout_at` block is cancelled when
    the clock reaches its expiry (`advance` may be called from another thread: a test
    driving the run from outside).
    """

    def __init__(self, start: datetime | None = None, *, tick: float = 0.0) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self._tick = tick
        self.sleeps: list[float] = []
        self._timers: list[_FakeTimer] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        if self._tick:
            self._moved(self._tick)
        return self._mono

    def reading(self) -> float:
        """The monotonic time without a tick (what timers compare against)."""
        return self._mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._moved(seconds)

    def _moved(self, seconds: float) -> None:
        with self._lock:
            self._mono += seconds
            now, timers = self._mono, list(self._timers)
        for timer in timers:
            timer.check(now)

    @asynccontextmanager
    async def timeout_at(self, when: float | None) -> AsyncIterator[Timer]:
        async with asyncio.timeout(None) as timeout:
            timer = _FakeTimer(self, timeout, when)
            with self._lock:
                self._timers.append(timer)
            try:
                timer.check(self._mono)
                yield timer
            finally:
                timer.active = False
                with self._lock:
                    self._timers.remove(timer)
