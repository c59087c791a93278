"""The session's edges that a fresh `make mutate` found unpinned on today's main
(issue 37, re-check)."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deepsearch import history
from deepsearch.agent.events import Notice
from deepsearch.agent.handover import Carryover
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.steps import follow_up
from deepsearch.cassettes import Player
from deepsearch.config import load_config
from deepsearch.session import ResearchSession, empty_result, foreign_cassette, question_share


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


def _session(**kwargs: Any) -> ResearchSession:
    settings = load_config(environ={}).settings
    earlier = Carryover(run_id="r-1", question="Who directed The Shining?", answer="Kubrick.")
    return ResearchSession("and who wrote it?", settings, earlier=earlier, **kwargs)


@pytest.mark.parametrize(
    ("rewritten", "said"),
    [
        ("Who wrote The Shining?", "continuing run r-1: researching 'Who wrote The Shining?'"),
        ("and who wrote it?", "continuing run r-1"),
    ],
)
async def test_a_follow_up_says_which_run_it_continues_and_what_it_researches(
    monkeypatch: pytest.MonkeyPatch, rewritten: str, said: str
) -> None:
    async def standalone(llm: Any, earlier_q: str, earlier_a: str, question: str) -> str:
        return rewritten

    monkeypatch.setattr(follow_up, "standalone_question", standalone)
    events: list[Any] = []
    session = _session(emit=events.append)
    deps = SimpleNamespace(llm=None)  # the rewrite is stubbed: no call is made
    assert await session._standalone(deps) == rewritten  # type: ignore[arg-type]
    assert [e.text for e in events if isinstance(e, Notice)] == [said]


def test_a_run_that_never_started_is_kept_as_printed_with_what_it_continued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The history keeps the result as the front end prints it, and a follow-up of a
    run that never started starts where it would have (the earlier run's carry-over)."""
    kept: dict[str, Any] = {}

    def keep_run(settings: Any, result: Any, **parts: Any) -> None:
        kept.update(parts)

    monkeypatch.setattr(history, "keep_run", keep_run)
    session = _session(present=lambda r: r.model_copy(update={"answer": "as printed"}))
    result = empty_result("q", session.settings, "failed", "no key")
    session._keep(result)
    assert json.loads(kept["output_json"])["answer"] == "as printed"
    assert kept["carry"] is session.earlier and kept["asked"] == "and who wrote it?"
    assert kept["finished_at"].tzinfo is UTC and kept["started_at"] <= kept["finished_at"]


async def test_the_runs_events_go_to_the_front_ends_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the run says (notices, steps) reaches the view the front end gave."""
    runs: list[ResearchRun] = []

    async def stop(run: ResearchRun) -> Any:
        runs.append(run)
        run.deps.emit(Notice(text="from inside the run"))
        return run.snapshot("not_found")

    monkeypatch.setattr(ResearchRun, "run", stop)
    events: list[Any] = []
    base = {
        "llm.provider": "openai",
        "search.providers": ["searxng"],
        "cache.enabled": False,
        "search.searxng_url": "http://127.0.0.1:9",
    }
    environ = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    settings = load_config(overrides=base, environ=environ).settings
    await ResearchSession("Q?", settings, emit=events.append, keep=False).execute()
    assert [e.text for e in events if isinstance(e, Notice)] == ["from inside the run"]
