"""Files a run keeps, written whole or not at all: write-then-rename.

`write_atomic(path, data)` (and `atomic_writer(path)`, for a writer that streams)
writes to a temporary file in the same folder (`.<name>.<random>.tmp`), flushes and
fsyncs it, then renames it over `path`: a kill, a full disk or an exception at any
moment leaves either the old file or the new one, never a cut-off one, and the
temporary file is removed on failure. The rename is atomic on POSIX and on Windows
(`os.replace`) as long as the temporary file sits in the target's folder.

A failure raises `FileWriteError`, an OSError whose message names the file and the
cause ("cannot write /x/llm.jsonl: No space left on device"); `describe(exc, path)`
words any OSError the same way for a caller that catches its own.

Used by the cassettes, the traces' final files, the corpus index, the learned output
modes and the eval's files; meant for any other file a run keeps (a history store, a
cost ledger). Plain standard library: the bottom layer, importable from anywhere.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TEMP_SUFFIX = ".tmp"


class FileWriteError(OSError):
    """A kept file could not be written; the message names the file and the cause."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        number = getattr(cause, "errno", None)
        reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        super().__init__(number, reason, str(path))  # .errno, .strerror, .filename
        self.path = path

    def __str__(self) -> str:
        return describe(self)


def describe(exc: BaseException, path: Path | str | None = None) -> str:
    """ "cannot write PATH: CAUSE" for an OSError (its strerror, not its repr); the
    path is the one given, else the error's own filename."""
    name = path if path is not None else getattr(exc, "filename", None)
    cause = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"cannot write {name}: {cause}" if name else f"cannot write: {cause}"


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "w", *, encoding: str = "utf-8") -> Iterator[IO[Any]]:
    """An open temporary file ("w" text, "wb" bytes); on a clean exit it is fsynced and
    renamed over `path`, on any exception removed (module doc)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    except OSError as exc:
        raise FileWriteError(path, exc) from exc
    try:
        binary = "b" in mode
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, FileWriteError):
            raise FileWriteError(path, exc) from exc
        raise
    _sync_folder(path.parent)


def write_atomic(path: Path, data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Write `data` to `path` whole or not at all (module doc)."""
    if isinstance(data, bytes):
        with atomic_writer(path, "wb") as out:
            out.write(data)
    else:
        with atomic_writer(path, "w", encoding=encoding) as out:
            out.write(data)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the platform allows (POSIX)."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
