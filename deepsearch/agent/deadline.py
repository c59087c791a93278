"""The run's wall clock: how much of --timeout is left, enforced on the injected Clock."""

from __future__ import annotations

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
        """Cancel the block (TimeoutError) when `share` of --timeout is used up, on the
        same clock `remaining` reads: real time for a run, a FakeClock's time in a test
        (whose advance() past the limit cuts the block at once)."""
        if self.timeout_s is None:
            yield
            return
        async with self.clock.timeout_at(self.started + self.timeout_s * share):
            yield
