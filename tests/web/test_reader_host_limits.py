"""Per-host parallel reads: more than 2 at once, backing off when the host says 429/503."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from deepsearch.config import ReaderConfig
from deepsearch.web.host_limits import HostLimiter, retry_after_s
from deepsearch.web.reader import LocalReader
from deepsearch.web.types import Page, ReadFailure
from tests.fakes.clock import FakeClock
from tests.fakes.throttling_host import CountingHost
from tests.fakes.web_server import LoopbackServer


def reader(clock: FakeClock | None = None, **overrides: object) -> LocalReader:
    config = ReaderConfig(allow_private_urls=True, **overrides)  # type: ignore[arg-type]
    return LocalReader(config, clock=clock or FakeClock())


async def read_all(r: LocalReader, server: LoopbackServer, n: int) -> list[Page | ReadFailure]:
    try:
        return await asyncio.gather(*(r.read(server.url(f"/page?n={i}")) for i in range(n)))
    finally:
        await r.aclose()


async def test_five_pages_on_one_host_are_read_in_one_wave() -> None:
    counter = CountingHost(capacity=100, gather=5, serve_ms=0)
    with LoopbackServer(routes={"/page": counter.route}) as server:
        results = await read_all(reader(), server, 5)
    assert all(isinstance(r, Page) for r in results)
    assert counter.peak == 5  # the default allows more than 2 per host: one wave, not three


async def test_the_shipped_configuration_reads_five_pages_of_one_host_in_one_wave() -> None:
    """What a user runs with: config.json (not the model's default) sets the limit."""
    from deepsearch.config import load_config

    shipped = load_config(environ={}).settings.reader
    counter = CountingHost(capacity=100, gather=5, serve_ms=0)
    with LoopbackServer(routes={"/page": counter.route}) as server:
        config = shipped.model_copy(update={"allow_private_urls": True})
        results = await read_all(LocalReader(config, clock=FakeClock()), server, 5)
    assert all(isinstance(r, Page) for r in results)
    assert counter.peak == 5


async def test_429_backs_off_retries_once_and_lowers_the_host_limit() -> None:
    # The first three are served once the other three were refused: a wave of six
    # overloads the host however slowly a loaded machine sends it.
    counter = CountingHost(capacity=3, hold_until_refused=3, serve_ms=0)
    with LoopbackServer(routes={"/page": counter.route}) as server:
        await _overload_then_read_again(server, counter)


async def _overload_then_read_again(server: LoopbackServer, counter: CountingHost) -> None:
    r = reader(per_host_concurrency=6)
    results = await read_all(r, server, 6)
    assert all(isinstance(x, Page) for x in results), results
    assert counter.refused == 3  # the first wave: 6 sent, 3 over capacity
    assert counter.served == 6  # each refused read was retried once and served
    assert r.host_limit("127.0.0.1") == 3  # halved for the rest of the run
    assert counter.peak <= 3
    # later reads of the same host stay under its capacity: no new refusal
    more = await read_all(r, server, 6)
    assert all(isinstance(x, Page) for x in more)
    assert counter.refused == 3


async def test_a_second_refusal_is_a_failure_not_a_loop() -> None:
    counter = CountingHost(capacity=0, status=503)
    with LoopbackServer(routes={"/page": counter.route}) as server:
        r = reader()
        (result,) = await read_all(r, server, 1)
    assert isinstance(result, ReadFailure)
    assert (result.kind, result.status) == ("http_status", 503)
    assert counter.refused == 2  # the read and its one retry
    assert r.host_limit("127.0.0.1") == 1


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    counter = CountingHost(capacity=0, retry_after="3600")
    clock = FakeClock()
    with LoopbackServer(routes={"/page": counter.route}) as server:
        r = reader(clock)
        r.max_retry_wait_s = 0.3
        await read_all(r, server, 1)
    assert clock.sleeps == [0.3]  # waited the cap, not an hour
    assert counter.refused == 2  # and then retried once


async def test_without_retry_after_the_default_wait_applies() -> None:
    counter = CountingHost(capacity=0, retry_after=None)
    clock = FakeClock()
    with LoopbackServer(routes={"/page": counter.route}) as server:
        r = reader(clock)
        r.default_retry_wait_s = 0.3
        await read_all(r, server, 1)
    assert clock.sleeps == [0.3]
    assert counter.refused == 2


def test_retry_after_forms() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    later = (clock.now() + timedelta(seconds=7)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert retry_after_s("2", clock) == 2.0
    assert retry_after_s(later, clock) == 7.0
    assert retry_after_s("-4", clock) == 0.0
    assert retry_after_s("soon", clock) is None
    assert retry_after_s(None, clock) is None


async def test_host_limiter_shrinks_while_held() -> None:
    limiter = HostLimiter(4)
    entered = 0

    released = asyncio.Event()

    async def hold() -> None:
        nonlocal entered
        async with limiter:
            entered += 1
            await released.wait()

    limiter.throttled(since=0)
    limiter.throttled(since=0)  # the same burst: lowered once
    assert limiter.limit == 2
    tasks = [asyncio.create_task(hold()) for _ in range(4)]
    for _ in range(10):  # every task runs as far as it can
        await asyncio.sleep(0)
    assert entered == 2  # the lowered limit holds new reads back
    released.set()
    await asyncio.gather(*tasks)
    assert entered == 4 and limiter.active == 0
    for _ in range(5):
        limiter.throttled(since=limiter.generation)
    assert limiter.limit == 1  # never below one
