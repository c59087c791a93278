"""The tests' offline settings (tests/fakes/scripted_llm.py): the shipped defaults are
loaded once per process, and every call still gets settings of its own, equal to a
fresh load; a user config file in the test's HOME is read as a fresh load reads it."""

from __future__ import annotations

import json
from pathlib import Path

from deepsearch.config import load_config
from tests.fakes.scripted_llm import offline_settings


def test_each_call_gets_its_own_copy_of_the_shipped_defaults() -> None:
    first = offline_settings()
    assert first == load_config(environ={}, config_file=None).settings
    first.search.providers.append("changed")
    first.agent.max_steps = 3
    second = offline_settings()
    assert second is not first
    assert second.search.providers == ["duckduckgo"] and second.agent.max_steps == 100


def test_a_user_config_in_home_is_read_as_a_fresh_load_reads_it() -> None:
    offline_settings()  # the defaults loaded before the file exists
    config = Path("~/.config/deepsearch/config.json").expanduser()
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"agent": {"max_steps": 7}}), encoding="utf-8")
    assert offline_settings().agent.max_steps == 7
