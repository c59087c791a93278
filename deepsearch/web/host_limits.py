"""Per-host read limits that shrink when a host says it is overloaded (429/503)."""

from __future__ import annotations

import asyncio
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType

    from deepsearch.clock import Clock


class HostLimiter:
    """A semaphore whose size can be lowered while reads hold it.

    `throttled(since)` halves the limit (never below 1); reads already running
    finish, new ones wait until fewer than the new limit are in flight. Refusals of
    reads that started before the last lowering do not lower it again: one burst of
    429s is one signal, not one halving per refused read.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.active = 0
        self.generation = 0  # how many times the limit was lowered
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> HostLimiter:
        async with self._changed:
            await self._changed.wait_for(lambda: self.active < self.limit)
            self.active += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        async with self._changed:
            self.active -= 1
            self._changed.notify_all()

    def throttled(self, since: int) -> None:
        """A read that entered at generation `since` was refused for overload."""
        if since == self.generation:
            self.limit = max(1, self.limit // 2)
            self.generation += 1


def retry_after_s(header: str | None, clock: Clock) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date), or None."""
    if not header or not header.strip():
        return None
    value = header.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - clock.now()).total_seconds())
