"""files.write_atomic / atomic_writer (issue 36, item 20): a kept file is written whole
or not at all, the temporary file never stays behind, and a failure names the file and
its cause."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from deepsearch import files
from deepsearch.files import FileWriteError, atomic_writer, describe, write_atomic


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "kept.json"
    write_atomic(path, "old\n")
    write_atomic(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert os.listdir(tmp_path) == ["kept.json"]


def test_a_full_disk_keeps_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "llm.jsonl"
    path.write_text("line 1\nline 2\n", "utf-8")
    _disk_full(monkeypatch)
    with pytest.raises(FileWriteError) as caught:
        write_atomic(path, "line 2\nline 1\n")
    assert path.read_text("utf-8") == "line 1\nline 2\n", "never truncated"
    assert os.listdir(tmp_path) == ["llm.jsonl"], "the temporary file is removed"
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)


def test_an_exception_inside_the_writer_removes_the_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    with pytest.raises(RuntimeError), atomic_writer(path) as out:
        out.write("half")
        raise RuntimeError("killed")
    assert not path.exists() and os.listdir(tmp_path) == []


def test_a_missing_folder_is_named() -> None:
    path = Path("/nonexistent-folder-for-a-test/x.json")
    with pytest.raises(FileWriteError, match=f"cannot write {path}: No such file or directory"):
        write_atomic(path, "x")
    assert describe(PermissionError(13, "Permission denied", "/ro/f")) == (
        "cannot write /ro/f: Permission denied"
    )
