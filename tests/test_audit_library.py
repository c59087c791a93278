"""Outside mutation audit (issue 37): library behaviours no other test pinned. Each
call stops at its options, before any client is built."""

from __future__ import annotations

from pathlib import Path

import pytest

import deepsearch
from deepsearch.errors import UsageError


def test_a_file_is_no_corpus(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder", "utf-8")
    with pytest.raises(UsageError, match="corpus must be a directory"):
        deepsearch.research("What is in my notes?", corpus=str(notes))


def test_a_question_of_100000_characters_is_taken_and_one_more_refused(tmp_path: Path) -> None:
    """The cap every front end shares (README: 100,000 characters). A file as corpus
    stops the call right after the question's checks."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder", "utf-8")
    with pytest.raises(UsageError, match="corpus must be a directory"):
        deepsearch.research("x" * 100_000, corpus=str(notes))
    with pytest.raises(UsageError, match="longer than 100,000 characters"):
        deepsearch.research("x" * 100_001, corpus=str(notes))
