"""The Python API (deepsearch.research / aresearch) against the loopback fakes: the
OpenAI-compatible LLM, SearXNG and the HotpotQA pages of tests/cli/test_end_to_end.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import deepsearch
from deepsearch.agent.events import StepFinished
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    SECRET,
    VISIT,
    Router,
    router,
    schema_name,
)
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.ports import refused_port
from tests.fakes.search_servers import FakeSearchServers


def options(search: FakeSearchServers) -> dict[str, Any]:  # noqa: F811
    return {
        "llm_provider": "openai",
        "search_provider": "searxng",
        "searxng_url": search.base_url("searxng"),
        "allow_private_urls": True,
        "no_cache": True,
        "budget": 200_000,
    }


def per_question(steps: list[dict[str, Any]]) -> Router:
    """`router(steps)` for each question on its own: concurrent runs of different
    questions each get the whole script."""
    routers: dict[str, Router] = {}

    def route(body: dict[str, Any]) -> Any:
        key = body["messages"][-1]["content"] if schema_name(body) == "AgentStep" else ""
        if key not in routers:  # built on a question's first call: each one is checked
            routers[key] = router(steps if key else [])  # "": the checks, no step
        return routers[key](body)

    return route


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    # No step scripted: a test that runs research scripts its own (`llm.handler`).
    with FakeOpenAIServer(router([])) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("DEEPSEARCH_CACHE_DIR", str(tmp_path / "cache"))
        yield server


def test_research_answers_with_references_and_prints_nothing(
    llm: FakeOpenAIServer,
    search: FakeSearchServers,  # noqa: F811
    capfd: pytest.CaptureFixture[str],
) -> None:
    llm.handler = router([SEARCH, VISIT, ANSWER_STEP])
    events: list[Any] = []
    result = deepsearch.research(QUESTION, on_event=events.append, **options(search))
    assert isinstance(result, deepsearch.ResearchResult)
    assert result.status == "answered" and "Stephen King" in result.answer
    assert result.references and result.references[0].url.startswith("http://127.0.0.1")
    assert 0 < result.usage.total_tokens <= 200_000
    steps = [e.action for e in events if isinstance(e, StepFinished)]
    assert steps == ["search", "visit", "answer"]  # the live view's step events
    assert capfd.readouterr() == ("", "")  # nothing printed, on either stream


async def test_two_concurrent_calls_both_answer(
    llm: FakeOpenAIServer,
    search: FakeSearchServers,  # noqa: F811
) -> None:
    llm.handler = per_question([SEARCH, VISIT, ANSWER_STEP])
    first, second = await asyncio.gather(
        deepsearch.aresearch(QUESTION, **options(search)),
        deepsearch.aresearch(f"{QUESTION} Name him.", **options(search), max_references=1),
    )
    assert "Stephen King" in first.answer and "Stephen King" in second.answer
    assert len(second.references) == 1 < len(first.references)  # its own options only


def test_an_unknown_option_is_a_type_error_before_any_call(llm: FakeOpenAIServer) -> None:
    with pytest.raises(TypeError, match="'budgett'"):
        deepsearch.research(QUESTION, budgett=1000)
    with pytest.raises(TypeError, match="'as_json'"):  # terminal output: not an option here
        deepsearch.research(QUESTION, as_json=True)
    with pytest.raises(TypeError, match="'max_steps' must be int"):
        asyncio.run(deepsearch.aresearch(QUESTION, max_steps="3"))
    assert llm.chat_requests == []


def test_configuration_errors_raise_their_own_class(
    llm: FakeOpenAIServer,
    search: FakeSearchServers,  # noqa: F811
) -> None:
    with pytest.raises(deepsearch.ConfigError, match="budget"):
        deepsearch.research(QUESTION, **{**options(search), "budget": 10})
    with pytest.raises(deepsearch.ConfigError, match="effort"):
        deepsearch.research(QUESTION, **options(search), effort="extreme")
    assert llm.chat_requests == []
    llm.api_key = "another-key"  # the provider rejects ours: only the user can fix it
    with pytest.raises(deepsearch.ConfigError, match="OPENAI_API_KEY"):
        deepsearch.research(QUESTION, **options(search))
    assert issubclass(deepsearch.ConfigError, deepsearch.DeepsearchError)
    assert not issubclass(deepsearch.ConfigError, SystemExit)


def test_a_run_that_could_not_go_on_raises_with_its_result(
    search: FakeSearchServers,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    port = refused_port()  # held by this process: no other worker's server gets it
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("HOME", str(tmp_path))
    from deepsearch.llm import openai_wire

    # Every refused connection is retried: with 5 ms pauses, not 0.5 s doubling.
    monkeypatch.setattr(openai_wire, "INITIAL_RETRY_DELAY_S", 0.005)
    with pytest.raises(deepsearch.ResearchFailed) as caught:
        deepsearch.research(QUESTION, **options(search))
    assert caught.value.result.error_kind == "fatal" and caught.value.result.answer == ""
    with pytest.raises(deepsearch.UsageError):
        deepsearch.research("   ")


async def test_research_inside_an_event_loop_says_to_await_aresearch() -> None:
    with pytest.raises(deepsearch.UsageError, match="aresearch"):
        deepsearch.research(QUESTION)


def test_python_c_prints_the_answer_and_nothing_else(
    llm: FakeOpenAIServer,
    search: FakeSearchServers,  # noqa: F811
) -> None:
    llm.handler = router([SEARCH, VISIT, ANSWER_STEP])
    code = (
        f"import deepsearch; print(deepsearch.research({QUESTION!r}, **{options(search)!r}).answer)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("The film was Maximum Overdrive") and "[^1]:" in done.stdout
    assert done.stderr == ""


def test_the_public_surface_is_declared() -> None:
    assert {"research", "aresearch", "ResearchResult", "ConfigError"} <= set(deepsearch.__all__)
    for name in deepsearch.__all__:
        assert getattr(deepsearch, name) is not None
    assert (Path(deepsearch.__file__).parent / "py.typed").is_file()
    with pytest.raises(AttributeError):
        deepsearch.no_such_name  # noqa: B018
