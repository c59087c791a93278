"""SIGTERM and SIGHUP end a run the way Ctrl-C does: what was found is printed (the JSON
object with status "interrupted"), then the shell's exit code for the signal (128+n).

`timeout`, a CI job limit, `docker stop` and a closed terminal send these; without a
handler Python dies on the spot and stdout stays empty.
"""

from __future__ import annotations

import signal
import threading
import traceback
import warnings
from collections.abc import Iterator
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
    if threading.current_thread() is not threading.main_thread():
        yield caught  # signal handlers can only be installed from the main thread
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if caught.signum is not None:
            return
        caught.signum = signum
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint) and on_sigint is not signal.default_int_handler:
            # asyncio.run's own Ctrl-C handler: it cancels the main task, so the run
            # unwinds cleanly and asyncio.run raises KeyboardInterrupt afterwards. A
            # KeyboardInterrupt raised here would land in whatever task is running
            # (a background page read mid-connect) and print its traceback.
            on_sigint(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in HANDLED}
    try:
        yield caught
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def served_until_signal() -> Iterator[Caught]:
    """A server's whole command (preflight, bind, start-up, banner, serving) under
    `signals_interrupt`: Ctrl-C, SIGTERM and SIGHUP end it with the signal's exit code
    (130/143/129) from the moment the command runs. A supervisor may stop the server
    the moment it reads "listening": before, such a SIGTERM killed the process (-15) or
    ended it as a Ctrl-C (130). uvicorn re-raises the signal it caught once it has shut
    down; that lands here too. (While Python still imports the command's modules, ~0.3 s,
    a signal still has its default effect.)"""
    import typer

    with warnings.catch_warnings(), signals_interrupt() as caught:
        # A signal between uvicorn making its coroutine and running it: Python would say
        # "coroutine 'Server.serve' was never awaited" on the way out, which is noise.
        warnings.filterwarnings("ignore", "coroutine 'Server.serve' was never", RuntimeWarning)
        try:
            yield caught
        except KeyboardInterrupt as stop:
            traceback.clear_frames(stop.__traceback__)  # frees that coroutine here, now
            raise typer.Exit(caught.exit_code()) from None
