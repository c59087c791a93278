"""A cassette replayed for what it was not recorded for says so (issue 36, item 4): a
lenient replay of another question's cassette is noticed (its answers are that
question's); and where search looked (--corpus, the providers) is recorded, so a miss
can name it among the options that changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.cassettes import Player
from deepsearch.cassettes.record import prompt_options
from deepsearch.config import load_config
from tests.cassettes.conftest import World, record
from tests.cli.inprocess import run_cli_in_process


def test_a_lenient_replay_of_another_questions_cassette_is_noticed(
    capsys: pytest.CaptureFixture[str], world: World, tmp_path: Path
) -> None:
    cassette = tmp_path / "c"
    record(capsys, world, cassette)
    args = [a for a in world.args() if a != "--quiet"]
    done = run_cli_in_process(
        "What is the capital of Peru?", *args, "--replay-lenient", str(cassette)
    )
    assert "--replay-lenient: this cassette was recorded for another question" in done.stderr
    assert "its answers are that question's" in done.stderr


def test_the_corpus_is_a_recorded_option_a_miss_can_name(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    plain = prompt_options(load_config(overrides={}).settings)
    local = prompt_options(load_config(overrides={"search.corpus_dir": str(notes)}).settings)
    assert plain["search.corpus_dir"] is None and local["search.corpus_dir"] == "notes"
    assert str(tmp_path) not in repr(local), "no path of this machine in a cassette"

    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "run.json").write_text(
        '{"started_at": "2026-01-01T00:00:00+00:00", "options": {"search.corpus_dir": null}}',
        "utf-8",
    )
    player = Player(directory, options=local)
    assert "recorded with search.corpus_dir=None (now 'notes')" in player._hint(None)
