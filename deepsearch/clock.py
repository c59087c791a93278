"""The one clock seam: wall time, a monotonic timer and sleeping, injected everywhere.

Agent deps, the web cache (TTL deadlines), the reader (fetch times, Retry-After
waits), host limits, the search chain (rate limits, the retry pause) and the sandbox
(run durations) all take a `Clock`, so their timing is testable without waiting:
`FakeClock` moves only when told to, and its `sleep` advances it instead of waiting.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


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


class SystemClock:
    """Wall-clock time in UTC plus a monotonic timer for elapsed/timeout checks."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to (or by `tick` on every monotonic read).

    `sleep` records the wait in `sleeps` and advances both timers by it, yielding to
    the event loop once as a real sleep would.
    """

    def __init__(self, start: datetime | None = None, *, tick: float = 0.0) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self._tick = tick
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        self._mono += self._tick
        return self._mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._now += timedelta(seconds=seconds)
