"""The library's edges that a fresh `make mutate` found unpinned on today's main
(issue 37, re-check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.errors import UsageError
from deepsearch.library import research


def test_a_question_of_exactly_100000_characters_is_within_the_cap(tmp_path: Path) -> None:
    """The cap is 100,000 characters (docs/reliability.md): that many pass the length
    check (here the run then stops at a corpus that is no folder), one more does not."""
    corpus = tmp_path / "no-such-folder"
    with pytest.raises(UsageError, match="corpus must be a directory"):
        research("x" * 100_000, corpus=corpus)
    with pytest.raises(UsageError, match=r"^the question is longer than 100,000 characters$"):
        research("x" * 100_001, corpus=corpus)
