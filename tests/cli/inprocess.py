"""Run a `deepsearch` command line in this process, as the console script would.

`run_cli_in_process(argv)` calls `deepsearch.cli.run(argv)` (routing, the error
boundary, exit codes: everything `main()` does but `sys.exit`) with stdin, stdout and
stderr replaced by in-memory streams, the environment overlaid for the call only, and
Rich's width pinned (COLUMNS) so output is deterministic. Spawning the installed
script costs ~1-2 s of interpreter start and imports per test; this costs
milliseconds. Two golden paths still run the real script (tests/cli/test_end_to_end.py).

An in-process run must leave the process as it found it: `cli.run` installs signal
handlers and `asyncio.run` makes an event loop. Both are checked after every call; a
leak fails the test that caused it (and is repaired, so it does not fail the next).
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple, TextIO

COLUMNS = "100"  # Rich reads it when the stream is not a terminal
WATCHED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Outcome(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class _Stdin(io.StringIO):
    """Piped text, or a terminal (isatty) with nothing typed."""

    def __init__(self, text: str, *, tty: bool) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@contextmanager
def overlaid_environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update({"COLUMNS": COLUMNS, **env})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class _ThreadStream(io.TextIOBase):
    """sys.stdout/sys.stderr during a run: the command's own thread writes to the
    capture; every other thread (a fake server's handler printing a reset
    connection) to the stream that was there before, as if it were another process."""

    encoding = "utf-8"  # Click and Rich read it to choose how to write

    def __init__(self, capture: TextIO, other: TextIO) -> None:
        self._owner = threading.get_ident()
        self._capture, self._other = capture, other

    def _target(self) -> TextIO:
        return self._capture if threading.get_ident() == self._owner else self._other

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def fileno(self) -> int:
        return self._target().fileno()

    def isatty(self) -> bool:
        return self._target().isatty()


@contextmanager
def swapped_streams(stdin: _Stdin, out: TextIO, err: io.StringIO) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = stdin
    sys.stdout, sys.stderr = _ThreadStream(out, saved[1]), _ThreadStream(err, saved[2])
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextmanager
def process_left_clean() -> Iterator[None]:
    """Fail if the block leaves a signal handler, a set event loop or a thread behind."""
    handlers = {sig: signal.getsignal(sig) for sig in WATCHED_SIGNALS}
    threads = set(threading.enumerate())
    yield
    leaked = [sig.name for sig, old in handlers.items() if signal.getsignal(sig) is not old]
    for sig, old in handlers.items():
        signal.signal(sig, old)  # repaired either way: the next test starts clean
    assert not leaked, f"the command left signal handlers installed: {leaked}"
    assert asyncio._get_running_loop() is None, "the command left an event loop running"
    extra = [t for t in threading.enumerate() if t not in threads and not t.daemon]
    for thread in extra:
        thread.join(timeout=2)  # a worker finishing its last item is not a leak
    alive = [t.name for t in extra if t.is_alive()]
    assert not alive, f"the command left threads running: {alive}"


def run_cli_in_process(
    *argv: str,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    tty: bool = False,
    stdout: TextIO | None = None,
    stderr: io.StringIO | None = None,
) -> Outcome:
    """One command line, as `deepsearch ARGV` with `env` overlaid on os.environ (which
    tests/conftest.py already made hermetic) and `stdin` piped (or a terminal).
    `stdout` replaces the captured buffer (a file on /dev/full, a pipe's write end):
    the outcome's stdout is then empty. `stderr` lets another thread watch the
    command's messages while it runs (a server's banner)."""
    from deepsearch.cli import run

    out = stdout if stdout is not None else io.StringIO()
    err = stderr if stderr is not None else io.StringIO()
    with process_left_clean(), overlaid_environ(env or {}):
        with swapped_streams(_Stdin(stdin, tty=tty), out, err):
            code = run(list(argv))
    printed = out.getvalue() if isinstance(out, io.StringIO) else ""
    return Outcome(code, printed, err.getvalue())
