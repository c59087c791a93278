"""SIGTERM and SIGHUP end a run the way Ctrl-C does: what was found is printed (the JSON
object with status "interrupted"), then the shell's exit code for the signal (128+n).

`timeout`, a CI job limit, `docker stop` and a closed terminal send these; without a
handler Python dies on the spot and stdout stays empty.

A server (`serve`, `mcp --transport http`) takes them differently: see
`served_until_signal`.
"""

from __future__ import annotations

import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from deepsearch.errors import EXIT_INTERRUPTED

HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@dataclass
class Caught:
    """The first handled signal received, if any."""

    signum: int | None = None

    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports it; Ctrl-C's 130 otherwise."""
        return 128 + self.signum if self.signum is not None else EXIT_INTERRUPTED


@contextmanager
def signals_interrupt() -> Iterator[Caught]:
    """Within the block, SIGTERM/SIGHUP raise KeyboardInterrupt (once: a second signal
    during the clean-up is ignored, so the partial answer still gets printed)."""
    caught = Caught()

    def handler(signum: int, frame: FrameType | None) -> None:
        if caught.signum is not None:
            return
        caught.signum = signum
        if _cancel_the_running_loop(frame):
            return
        raise KeyboardInterrupt

    with _handling(handler):
        yield caught


def _cancel_the_running_loop(frame: FrameType | None) -> bool:
    """Hand the signal to asyncio.run's own Ctrl-C handler when an event loop runs here
    (True if handed): it cancels the main task, so the run unwinds cleanly and
    asyncio.run raises KeyboardInterrupt afterwards. A KeyboardInterrupt raised here
    would land in whatever task is running (a background page read mid-connect) and
    print its traceback."""
    on_sigint = signal.getsignal(signal.SIGINT)
    if not callable(on_sigint) or on_sigint is signal.default_int_handler:
        return False
    asyncio = sys.modules.get("asyncio")
    if asyncio is None or asyncio._get_running_loop() is None:
        # asyncio.run installs its handler before its loop runs: cancelled then, the
        # main task ends as a bare CancelledError (the runner resets its count of
        # interrupts in between), not as the KeyboardInterrupt its caller expects.
        return False
    main = getattr(on_sigint, "keywords", {}).get("main_task")
    if main is not None and main.done():
        return False  # the runner would raise KeyboardInterrupt here, mid-clean-up
    on_sigint(signal.SIGINT, frame)
    return True


@contextmanager
def _handling(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = {sig: signal.signal(sig, handler) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def served_until_signal() -> Iterator[Caught]:
    """A server's whole command (preflight, bind, start-up, banner, serving): Ctrl-C,
    SIGTERM and SIGHUP end it with the signal's exit code (130/143/129) from the moment
    the command runs. A supervisor may stop the server the moment it reads "listening".

    SIGTERM and SIGHUP are never raised into the code the way Ctrl-C is: an exception
    raised wherever the signal lands was lost or broke the exit when it landed inside
    logging's handler lock (uvicorn configuring its logging: "cannot release
    un-acquired lock", exit 1), in the instant asyncio.run installs its Ctrl-C handler
    (a CancelledError traceback), or in code that swallows it (the server kept serving
    and the next SIGTERM was ignored). The signal is recorded; where an event loop runs,
    it is cancelled as Ctrl-C cancels it; otherwise the command stops at its next safe
    point: `checkpoint()`, uvicorn taking over the signals (`EarlySignalStops`), or the
    end of the block. A second signal before the first took effect is raised at once.
    (While Python still imports the command's modules, ~0.3 s, a signal still has its
    default effect.)"""
    import typer

    caught = Caught()

    def handler(signum: int, frame: FrameType | None) -> None:
        if caught.signum is not None:
            raise KeyboardInterrupt  # a second signal: the first was not enough
        caught.signum = signum
        _cancel_the_running_loop(frame)

    with warnings.catch_warnings(), _handling(handler):
        # A signal between uvicorn making its coroutine and running it: Python would say
        # "coroutine 'Server.serve' was never awaited" on the way out, which is noise.
        warnings.filterwarnings("ignore", "coroutine 'Server.serve' was never", RuntimeWarning)
        _PENDING.append(caught)
        try:
            yield caught
            checkpoint()  # a signal taken after the last safe point
        except KeyboardInterrupt as stop:
            traceback.clear_frames(stop.__traceback__)  # frees that coroutine here, now
            raise typer.Exit(caught.exit_code()) from None
        finally:
            _PENDING.remove(caught)


_PENDING: list[Caught] = []  # the served commands in this process (signals are per process)


def checkpoint() -> None:
    """A safe point of a served command: stop here (KeyboardInterrupt) if it took a
    signal that has not stopped it yet. Nothing outside `served_until_signal`."""
    if _PENDING and _PENDING[-1].signum is not None:
        raise KeyboardInterrupt


class EarlySignalStops:
    """A uvicorn.Server mixin: a signal the command took before uvicorn's own handlers
    were installed stops the server as if uvicorn had caught it (it starts up, then
    shuts down at once); after that, uvicorn's handlers take the signals."""

    caught: Caught
    should_exit: bool

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():  # type: ignore[misc]
            if self.caught.signum is not None:
                self.should_exit = True
            yield
