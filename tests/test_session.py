"""The one runtime session (deepsearch/session.py): every front end gets the same
result for the same failure, because they all run the same session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepsearch.config import load_config
from deepsearch.errors import ConfigError
from deepsearch.server.research import RequestRun
from deepsearch.session import ResearchSession, empty_result

SECRET = "sk-session-secret-0123456789"


def settings(**overrides: Any) -> Any:
    base = {"llm.provider": "openai", "search.providers": ["searxng"], "cache.enabled": False}
    environ = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    return load_config(overrides={**base, **overrides}, environ=environ).settings


async def test_a_failure_before_the_run_is_fatal_for_every_front_end(tmp_path: Path) -> None:
    """Was "runtime" in the CLI and "fatal" in serve: now one session, one kind."""
    trace = tmp_path / "no such folder" / "trace.jsonl"
    cli = await ResearchSession("Q?", settings(), trace_path=trace).execute()
    serve = await RequestRun("Q?", [], settings(), trace_path=trace, on_text=print).execute()
    for result in (cli, serve):
        assert result.status == "failed" and result.error_kind == "fatal"
        assert result.error is not None and "no such folder" in result.error
        assert result.exit_code == 1 and result.answer == ""


async def test_a_configuration_error_is_raised_or_answered_with_its_kind(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "notes"
    empty.mkdir()
    config = settings(**{"search.providers": ["local"], "search.corpus_dir": str(empty)})
    with pytest.raises(ConfigError, match="no files to index"):
        await ResearchSession("Q?", config).execute()  # the CLI prints it, exit 2
    served = await RequestRun("Q?", [], config, trace_path=None, on_text=print).execute()
    assert served.error_kind == "configuration" and served.exit_code == 2


def test_the_empty_result_spends_nothing_and_says_its_kind() -> None:
    result = empty_result("Q?", settings(), "failed", "boom")
    assert result.error_kind == "fatal" and result.usage.total_tokens == 0
    assert empty_result("Q?", settings(), "interrupted").error_kind is None
