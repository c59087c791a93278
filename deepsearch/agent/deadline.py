"""The run's wall clock: how much of --timeout is left, enforced with real timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from deepsearch.clock import Clock


@dataclass
class Deadline:
    clock: Clock
    timeout_s: float | None
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock.monotonic()

    def elapsed(self) -> float:
        return self.clock.monotonic() - self.started

    def remaining(self, share: float) -> float | None:
        """Seconds until `share` of --timeout is used up (None: no --timeout)."""
        if self.timeout_s is None:
            return None
        return max(0.0, self.started + self.timeout_s * share - self.clock.monotonic())

    @asynccontextmanager
    async def limit(self, share: float) -> AsyncIterator[None]:
        """Cancel the block when `share` of --timeout is used up. `remaining` reads the
        injected clock but asyncio.timeout counts real (event-loop) time, so a FakeClock's
        advance() inside the block does not move this deadline; the loop's checks between
        steps do."""
        remaining = self.remaining(share)
        if remaining is None:
            yield
            return
        async with asyncio.timeout(remaining):
            yield
