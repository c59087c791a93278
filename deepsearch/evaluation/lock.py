"""One eval at a time per `--out` folder: a second `deepsearch eval` on the same folder
would run every unfinished question again beside the first (40 lines for 20 questions,
at double the cost). The first holds an advisory lock on DIR/.eval.lock for as long as
it runs (`fcntl.flock`: released by the system when the process ends, even killed);
the second is refused at once, naming the folder and the holder's process id. Where
there is no `fcntl` (Windows) the folder is not locked."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from deepsearch.errors import UsageError

LOCK_FILE = ".eval.lock"


@contextlib.contextmanager
def out_folder_lock(out: Path) -> Iterator[None]:
    """Hold `out`'s lock for the block; UsageError when another eval holds it."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: run unlocked
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise UsageError(
                f"{out}: another deepsearch eval is running on this folder (process "
                f"{holder}); wait for it to finish, or give another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
