"""The clock's timeouts (deepsearch/clock.py): a FakeClock's expire when the clock
passes them, whichever thread moves it, and never before; the system clock's are
asyncio's own, addressed in monotonic seconds."""

from __future__ import annotations

import asyncio
import threading

import pytest

from deepsearch.clock import SystemClock
from tests.fakes.clock import FakeClock


async def _hang() -> None:
    await asyncio.Event().wait()


async def test_a_fake_timeout_expires_when_the_clock_passes_it_and_not_before() -> None:
    clock = FakeClock()
    done: list[str] = []

    async def block() -> None:
        async with clock.timeout_at(10.0):
            done.append("entered")
            await _hang()

    task = asyncio.create_task(block())
    await asyncio.sleep(0)
    clock.advance(9.0)
    for _ in range(5):
        await asyncio.sleep(0)
    assert done == ["entered"] and not task.done(), "not before the clock reaches it"
    clock.advance(1.0)
    with pytest.raises(TimeoutError):
        await task


async def test_another_thread_moving_the_clock_cuts_the_block() -> None:
    clock = FakeClock()
    with pytest.raises(TimeoutError):
        async with clock.timeout_at(5.0):
            threading.Thread(target=clock.advance, args=(6.0,)).start()
            await _hang()


async def test_a_rescheduled_or_past_expiry_and_none() -> None:
    clock = FakeClock()
    async with clock.timeout_at(None) as timer:
        clock.advance(100.0)
        await asyncio.sleep(0)  # None: never
        timer.reschedule(200.0)
        clock.advance(50.0)
        await asyncio.sleep(0)
    with pytest.raises(TimeoutError):  # an expiry already passed cuts at the first await
        async with clock.timeout_at(clock.reading() - 1):
            await _hang()
    with pytest.raises(TimeoutError):  # ticks (clock readings) move it too
        ticking = FakeClock(tick=1.0)
        async with ticking.timeout_at(3.0):
            while True:
                ticking.monotonic()
                await asyncio.sleep(0)


async def test_the_system_clock_times_out_in_its_monotonic_seconds() -> None:
    clock = SystemClock()
    with pytest.raises(TimeoutError):
        async with clock.timeout_at(clock.monotonic()):
            await _hang()
    async with clock.timeout_at(clock.monotonic() + 3600) as timer:
        timer.reschedule(None)
        await asyncio.sleep(0)
