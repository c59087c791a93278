"""SIGTERM/SIGHUP unwind a run the way Ctrl-C does inside asyncio.run: the main task is
cancelled (its clean-up runs: background reads closed, partial state kept), instead of a
KeyboardInterrupt landing in whichever task happens to run (seen: a background page
read mid-connect printed an exception-group traceback)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from deepsearch.commands.signals import signals_interrupt


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_in_a_background_task_cancels_the_main_task(signum: int) -> None:
    seen: list[str] = []

    async def background() -> None:
        await asyncio.sleep(0.01)
        try:
            signal.raise_signal(signum)  # delivered while this task is the one running
        except BaseException as exc:  # what a library's task group would wrap and print
            seen.append(f"background got {type(exc).__name__}")
            raise
        await asyncio.sleep(5)

    async def main() -> None:
        task = asyncio.create_task(background())
        try:
            await asyncio.sleep(5)
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
