"""Closed standard streams (`deepsearch "q" >&-`, `2>&-`): Python starts with
`sys.stdout` / `sys.stderr` set to None, and the first write or flush was a traceback.

A closed stderr only silences what goes there (the live view, the summary, error
lines): fd 2 and `sys.stderr` are pointed at the null device, so the answer still
reaches stdout with its exit code. A closed stdout leaves nowhere for the answer (or
the help, the version) to go: the command is not run (nothing is spent), one line
says so on stderr, and the exit code is 141, a closed stdout's (as a reader that left
early). `serve` writes nothing to stdout and runs with it pointed at the null device.
"""

from __future__ import annotations

import io
import os
import sys

STDOUT_CLOSED = "stdout is closed: nothing could be printed, so nothing was run"
NEEDS_NO_STDOUT = frozenset({"serve"})


def closed(stream: object) -> bool:
    """`stream` is None or sits on a closed file descriptor (a stream without one, as a
    test runner's buffer, is open)."""
    if stream is None:
        return True
    try:
        os.fstat(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return False
    except OSError:
        return True
    return False


def _null_stream(fd: int) -> io.TextIOWrapper:
    """A text stream on the null device, on `fd` when that descriptor is free (so no
    file opened later lands on it and gets written to by mistake)."""
    null = os.open(os.devnull, os.O_WRONLY)
    if null != fd and _free(fd):
        os.dup2(null, fd)
        os.close(null)
        null = fd
    return io.TextIOWrapper(
        os.fdopen(null, "wb", buffering=0), encoding="utf-8", write_through=True
    )


def _free(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def mend(command: str | None) -> bool:
    """Make closed streams harmless (module doc); True when the command cannot run
    because stdout is closed."""
    if closed(sys.stderr):
        sys.stderr = _null_stream(2)
    if not closed(sys.stdout):
        return False
    if command in NEEDS_NO_STDOUT:
        sys.stdout = _null_stream(1)
        return False
    return True
