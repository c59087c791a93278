"""The clock is an injected dependency so runs (and their timeouts) are testable."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...
    def monotonic(self) -> float: ...


class SystemClock:
    """Wall-clock time in UTC plus a monotonic timer for elapsed/timeout checks."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to (or by `tick` on every monotonic read)."""

    def __init__(self, start: datetime | None = None, *, tick: float = 0.0) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self._tick = tick

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        self._mono += self._tick
        return self._mono

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self._mono += seconds
        self._now += timedelta(seconds=seconds)
