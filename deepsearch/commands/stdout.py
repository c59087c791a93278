"""No traceback on a full disk or a closed pipe: a write error on stdout ends the command
with one line on stderr (full disk) or, for a closed pipe (`| head -1`), quietly with
141 = 128 + SIGPIPE, as a shell would."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from deepsearch.errors import CommandFailed

EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real fd (a test runner's buffer)
        pass


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run the block's writes to stdout (and a final flush) with write errors handled."""
    try:
        yield
        sys.stdout.flush()
    except OSError as exc:
        if exc.filename is not None:  # a file the command uses, not stdout: name it
            raise CommandFailed(f"{exc.filename}: {exc.strerror or exc}") from None
        _silence_stdout()
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        reason = exc.strerror or type(exc).__name__
        raise CommandFailed(f"cannot write the output to stdout: {reason}") from None
