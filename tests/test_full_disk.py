"""A full disk or an unwritable folder (issue 36, item 7; the `.build-*` leftovers of
item 25): the corpus index falls back to memory and says why, naming the folder;
errors name the file they concern, not stdout; a failed write leaves no temporary file;
`--trace -` is refused instead of writing a file named "-"; a folder a killed index
build left behind is removed once stale."""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path

import pytest

from deepsearch import files
from deepsearch.llm.rung_memory import RungMemory
from deepsearch.web.search.local import LocalCorpus
from deepsearch.web.search.local_store import STALE_BUILD_S
from deepsearch.web.types import SearchQuery
from tests.cli.inprocess import run_cli_in_process
from tests.evaluation.helpers import write_questions


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Basalt\n\nMagma cools into basalt.", "utf-8")
    return notes


def test_a_corpus_index_that_cannot_be_saved_is_kept_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", "utf-8")  # the index root cannot be created under it
    with caplog.at_level(logging.WARNING, logger="deepsearch.web.search.local"):
        corpus = LocalCorpus(_notes(tmp_path), index_root=blocker / "index")
        found = corpus.search(SearchQuery(q="basalt magma"))
    assert [r.title for r in found] == ["Basalt"]
    assert "corpus index not saved (cannot write" in caplog.text
    assert str(blocker) in caplog.text and "Not a directory" in caplog.text
    assert "kept in memory for this run" in caplog.text


def test_a_stale_build_folder_is_removed_and_a_fresh_one_kept(tmp_path: Path) -> None:
    corpus = LocalCorpus(_notes(tmp_path), index_root=tmp_path / "index")
    corpus.index_home.mkdir(parents=True)
    stale, fresh = corpus.index_home / ".build-killed", corpus.index_home / ".build-running"
    stale.mkdir()
    fresh.mkdir()
    old = time.time() - STALE_BUILD_S - 60
    os.utime(stale, (old, old))
    corpus.ensure_index()
    assert not stale.exists() and fresh.exists()


def test_an_unwritable_eval_folder_is_named_not_stdout(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", "utf-8")
    questions = write_questions(tmp_path / "q.jsonl", n=1)
    done = run_cli_in_process("eval", str(questions), "--out", str(blocker / "out"), "--quiet")
    assert done.returncode != 0
    assert str(blocker / "out") in done.stderr and "stdout" not in done.stderr


def test_trace_dash_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = run_cli_in_process("q?", "--trace", "-", env={"HOME": str(tmp_path)})
    assert done.returncode == 2 and "--trace -: give a file name" in done.stderr
    assert not Path("-").exists()


def test_a_failed_output_modes_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    RungMemory(tmp_path / "output-modes.json").put("http://a/v1", "m", "json_object", "why")
    assert os.listdir(tmp_path) == []
