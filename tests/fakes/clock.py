"""The test clock: `FakeClock` moves only when told to, its `sleep` advances it
instead of waiting, and its timeouts expire when it passes them (a 10 s `--timeout` in
no real time). It satisfies `deepsearch.clock.Clock`; tests and bench use it, the
package never does, so it lives here and not in the wheel."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from deepsearch.clock import Timer


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
