"""SIGTERM/SIGHUP unwind a run the way Ctrl-C does inside asyncio.run: the main task is
cancelled (its clean-up runs: background reads closed, partial state kept), instead of a
KeyboardInterrupt landing in whichever task happens to run (seen: a background page
read mid-connect printed an exception-group traceback)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from deepsearch.commands.signals import signals_interrupt


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_in_a_background_task_cancels_the_main_task(signum: int) -> None:
    seen: list[str] = []
    # asyncio.run installs its Ctrl-C handler only over the default one: a handler left
    # by an earlier test would change what this test sees (tests/conftest.py checks).
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    async def background(main_waiting: asyncio.Event) -> None:
        await main_waiting.wait()  # no sleep: ordered by events, whatever the load
        try:
            signal.raise_signal(signum)  # delivered while this task is the one running
        except BaseException as exc:  # what a library's task group would wrap and print
            seen.append(f"background got {type(exc).__name__}")
            raise
        await asyncio.Event().wait()  # until cancelled

    async def main() -> None:
        main_waiting = asyncio.Event()
        task = asyncio.create_task(background(main_waiting))
        try:
            main_waiting.set()
            await asyncio.Event().wait()  # only the signal's cancellation ends this
        except asyncio.CancelledError:
            seen.append("main cancelled")
            task.cancel()
            raise
        finally:
            seen.append("clean-up ran")

    with signals_interrupt() as caught, pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert caught.exit_code() == 128 + signum
    assert seen == ["main cancelled", "clean-up ran"]


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGHUP])
def test_a_second_signal_during_the_clean_up_is_ignored(second: int) -> None:
    """`timeout` and `docker stop` may signal twice: the second, arriving while the run
    unwinds, must neither cut the clean-up short (the partial answer is printed there)
    nor change the exit code the first one set."""
    seen: list[str] = []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # a real signal to this process
            await asyncio.Event().wait()  # only the signal's cancellation ends this
        except asyncio.CancelledError:
            seen.append("main cancelled")
            os.kill(os.getpid(), second)  # delivered mid clean-up
            await asyncio.sleep(0)  # the clean-up goes on across a suspension point
            seen.append("clean-up finished")
            raise

    with signals_interrupt() as caught, pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert seen == ["main cancelled", "clean-up finished"]
    assert caught.exit_code() == 128 + signal.SIGTERM, "the first signal decides"


def test_outside_an_event_loop_a_signal_interrupts_at_once() -> None:
    """Before the run's loop starts (options, configuration), nothing is in flight: the
    signal ends the command there, as Ctrl-C does."""
    seen: list[str] = []
    with signals_interrupt() as caught, pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGTERM)
        seen.append("ran on")
    assert seen == [] and caught.exit_code() == 143


def test_a_signal_as_asyncio_run_installs_its_handler_is_a_keyboard_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio.run sets its Ctrl-C handler, then resets its count of interrupts, then
    runs its loop: a signal handed to that handler in between ended the run as a bare
    CancelledError (a traceback), not as the interrupt the command expects."""
    import functools

    real = signal.signal
    sent: list[bool] = []

    def install(sig: int, handler: object) -> object:
        old = real(sig, handler)  # type: ignore[arg-type]
        if sig == signal.SIGINT and isinstance(handler, functools.partial) and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
        return old

    async def main() -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(signal, "signal", install)
    try:
        with signals_interrupt() as caught, pytest.raises(KeyboardInterrupt):
            asyncio.run(main())
    finally:
        # Interrupted before its try block, asyncio.run leaves its handler (of a closed
        # runner: a later Ctrl-C raises KeyboardInterrupt, as the default does); the
        # command exits next, a test does not.
        real(signal.SIGINT, signal.default_int_handler)
    assert sent and caught.exit_code() == 143
