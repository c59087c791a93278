"""The session's edges that a fresh `make mutate` found unpinned on today's main
(issue 37, re-check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deepsearch.cassettes import Player
from deepsearch.session import foreign_cassette, question_share


def test_a_question_of_10_percent_of_the_budget_or_more_is_noticed_as_docs_say() -> None:
    """docs/reliability.md: a question that alone takes 10% or more of the token budget
    gets a notice; ~4 characters a token."""
    assert question_share("x" * 4_000, 10_000) == (
        "the question alone is ~1,000 tokens, 10% of the 10,000-token budget, and every "
        "step sends it again: shorten it or raise --budget"
    )
    assert question_share("x" * 3_999, 10_000) is None  # 999 tokens: 9.99%
    assert question_share("x" * 40, 1) is not None  # any budget at all
    assert question_share("x" * 40, 0) is None  # no budget to share


def _player(tmp_path: Path, run: dict[str, Any], *, lenient: bool = True) -> Player:
    directory = tmp_path / "c"
    directory.mkdir(exist_ok=True)
    run = {"started_at": "2026-01-01T00:00:00+00:00", "options": {}, **run}
    (directory / "run.json").write_text(json.dumps(run), "utf-8")
    return Player(directory, options={}, lenient=lenient)


def test_a_lenient_replay_of_another_questions_cassette_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    player = _player(tmp_path, {"question": "What is the capital of France?"})
    assert foreign_cassette(player, "What is the capital of Peru?") == (
        "--replay-lenient: this cassette was recorded for another question ('What is the "
        "capital of France?'); its answers are that question's, not this one's"
    )


def test_the_same_question_however_spaced_or_no_recorded_question_is_no_notice(
    tmp_path: Path,
) -> None:
    player = _player(tmp_path, {"question": "What is  the capital\nof France?"})
    assert foreign_cassette(player, " What is the capital of   France? ") is None
    assert foreign_cassette(_player(tmp_path, {}), "What is the capital of Peru?") is None
    strict = _player(tmp_path, {"question": "Another?"}, lenient=False)
    assert foreign_cassette(strict, "What is the capital of Peru?") is None  # it misses
    assert foreign_cassette(None, "What is the capital of Peru?") is None
