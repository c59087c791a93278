"""The library's argument checks and the error it raises for a result (deepsearch/
library.py), without running research: the options are checked before anything runs,
`config=` names a config file, and a result that could not go on raises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import deepsearch
from deepsearch.errors import ConfigError, UsageError
from deepsearch.library import ResearchFailed, check_options, load_settings, raise_for
from deepsearch.session import ResearchSession, empty_result
from tests.test_session import settings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_steps": True}, "argument 'max_steps' must be int, not bool"),
        ({"budget": None, "max_steps": True}, "argument 'max_steps' must be int, not bool"),
        ({"max_steps": "3"}, "argument 'max_steps' must be int, not str"),
        ({"budget": 1.5}, "argument 'budget' must be int, not float"),
        ({"min_confidence": "0.5"}, "argument 'min_confidence' must be float, not str"),
        ({"min_confidence": False}, "argument 'min_confidence' must be float, not bool"),
        ({"corpus": 3}, "argument 'corpus' must be Path, not int"),
        ({"no_cache": "yes"}, "argument 'no_cache' must be bool, not str"),
        ({"as_json": True}, "got an unexpected keyword argument 'as_json'"),
        ({"bogus": 1}, "got an unexpected keyword argument 'bogus'"),
    ],
)
def test_a_wrong_option_is_a_type_error_before_anything_runs(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        deepsearch.research("Q?", **options)
    assert str(caught.value) == f"research() {message}"
    with pytest.raises(TypeError) as again:
        asyncio.run(deepsearch.aresearch("Q?", **options))
    assert str(again.value) == f"aresearch() {message}"


def test_right_options_pass_the_check() -> None:
    check_options({"max_steps": 3, "no_cache": True, "budget": None, "corpus": Path(".")})
    check_options({"config": "my.json", "searxng_url": "http://x", "corpus": "notes"})
    check_options({"min_confidence": 1, "timeout": 2.5})  # an int is a float here


def test_config_names_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"agent": {"max_steps": 7}}), "utf-8")
    assert load_settings({"config": str(path)}).agent.max_steps == 7
    assert load_settings({"config": path, "max_steps": 9}).agent.max_steps == 9  # flag wins
    with pytest.raises(ConfigError) as caught:
        load_settings({"max_steps": 0})
    assert str(caught.value).startswith("max_steps: agent.max_steps: ")  # the option's name
    with pytest.raises(ConfigError) as labelled:
        load_settings({"max_steps": 0}, labels={"agent.max_steps": "steps"})
    assert str(labelled.value).startswith("steps: agent.max_steps: ")


def test_an_unset_flag_changes_nothing() -> None:
    plain = load_settings({})
    assert plain.cache.enabled is True and plain.reader.allow_private_urls is False
    assert plain.agent.direct_answer is True
    assert load_settings({"no_cache": True}).cache.enabled is False


def test_a_corpus_that_is_no_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="corpus must be a directory"):
        load_settings({"corpus": str(tmp_path / "missing")})


def test_an_empty_question_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        deepsearch.research("   ")
    assert str(caught.value) == "the question is empty"


async def test_research_inside_an_event_loop_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        deepsearch.research("Q?")
    assert str(caught.value) == (
        "research() cannot run inside an event loop: use await aresearch()"
    )


def test_the_options_reach_the_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[ResearchSession] = []

    async def execute(session: ResearchSession) -> Any:
        seen.append(session)
        return empty_result(session.question, session.settings, "answered")

    monkeypatch.setattr(ResearchSession, "execute", execute)
    events: list[object] = []
    run = deepsearch.aresearch(
        "  Who wrote\n  it? ",
        on_event=events.append,
        trace=str(tmp_path / "t.jsonl"),
        record=str(tmp_path / "c"),
        max_steps=4,
    )
    asyncio.run(run)
    session = seen[0]
    assert session.question == "Who wrote it?"
    assert session.emit == events.append
    assert session.trace_path == tmp_path / "t.jsonl"
    assert session.cassette_spec is not None and session.cassette_spec.mode == "record"
    assert session.cassette_spec.directory == tmp_path / "c"
    assert session.settings.agent.max_steps == 4
    deepsearch.research("Q?")  # no trace, no cassette
    assert seen[1].trace_path is None and seen[1].cassette_spec is None


def test_a_result_raises_the_error_its_kind_calls_for() -> None:
    base = empty_result("Q?", settings(), "answered")
    assert raise_for(base) is base
    forced = base.model_copy(update={"status": "forced", "error": "x", "error_kind": "runtime"})
    assert raise_for(forced) is forced  # a forced answer is a result
    fatal = base.model_copy(update={"status": "forced", "error": "LLM down", "error_kind": "fatal"})
    with pytest.raises(ResearchFailed, match="LLM down") as caught:
        raise_for(fatal)
    assert caught.value.result is fatal
    failed = base.model_copy(update={"status": "failed", "error": None, "error_kind": None})
    with pytest.raises(ResearchFailed) as empty:
        raise_for(failed)
    assert str(empty.value) == "the research failed"
    rejected = base.model_copy(update={"status": "failed", "error": None})
    rejected = rejected.model_copy(update={"error_kind": "configuration"})
    with pytest.raises(ConfigError) as config:
        raise_for(rejected)
    assert str(config.value) == "configuration error"
