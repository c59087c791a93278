"""The library's argument checks and the error it raises for a result (deepsearch/
library.py), without running research: the options are checked before anything runs,
`config=` names a config file, and a result that could not go on raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import deepsearch
from deepsearch.errors import ConfigError, UsageError
from deepsearch.library import ResearchFailed, check_options, load_settings, raise_for
from deepsearch.session import empty_result
from tests.test_session import settings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_steps": True}, "argument 'max_steps' must be int, not bool"),
        ({"max_steps": "3"}, "argument 'max_steps' must be int, not str"),
        ({"budget": 1.5}, "argument 'budget' must be int, not float"),
        ({"no_cache": "yes"}, "argument 'no_cache' must be bool, not str"),
        ({"as_json": True}, "unexpected keyword argument 'as_json'"),
        ({"bogus": 1}, "unexpected keyword argument 'bogus'"),
    ],
)
def test_a_wrong_option_is_a_type_error_before_anything_runs(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        deepsearch.research("Q?", **options)
    with pytest.raises(TypeError, match=f"aresearch\\(\\) .*{message.split(' ')[0]}"):
        check_options(options, caller="aresearch")


def test_right_options_pass_the_check() -> None:
    check_options({"max_steps": 3, "no_cache": True, "budget": None, "corpus": Path(".")})
    check_options({"config": "my.json", "searxng_url": "http://x"})


def test_config_names_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"agent": {"max_steps": 7}}), "utf-8")
    assert load_settings({"config": str(path)}).agent.max_steps == 7
    assert load_settings({"config": path, "max_steps": 9}).agent.max_steps == 9  # flag wins
    with pytest.raises(ConfigError, match="max_steps"):
        load_settings({"max_steps": 0})


def test_a_corpus_that_is_no_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="corpus must be a directory"):
        load_settings({"corpus": str(tmp_path / "missing")})


def test_an_empty_question_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="the question is empty"):
        deepsearch.research("   ")


async def test_research_inside_an_event_loop_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="use await aresearch"):
        deepsearch.research("Q?")


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
    with pytest.raises(ResearchFailed, match="the research failed"):
        raise_for(failed)
    rejected = base.model_copy(update={"status": "failed", "error": None})
    rejected = rejected.model_copy(update={"error_kind": "configuration"})
    with pytest.raises(ConfigError, match="configuration error"):
        raise_for(rejected)
