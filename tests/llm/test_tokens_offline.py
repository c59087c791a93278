"""Token counting works with no network and no tiktoken cache (in a fresh process, with
every connect refused: tests/test_fresh_process.py), and the first request of a run
does not wait for the vocabulary."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.llm import tokens
from deepsearch.llm.tokens import count_tokens, get_encoding
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.scripted_llm import offline_settings
from tests.llm.helpers import ASK, Answer, openai_client


def test_both_bundled_vocabularies_give_tiktoken_s_own_ids() -> None:
    """Built with every outside connect refused (tests/conftest.py); the build in a fresh
    process with an empty tiktoken cache is tests/test_fresh_process.py's (cl100k)."""
    # ids as produced by tiktoken with its downloaded files
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert count_tokens("The quick brown fox jumps over the lazy dog.", model="gpt-4o") == 10
    assert count_tokens("hello world", model="gpt-4") == 2  # gpt-4 counts in cl100k


def test_count_empty_and_short() -> None:
    assert count_tokens("") == 0
    text = "one two three four five six"
    assert count_tokens(text, model="gpt-4o") == len(get_encoding("o200k_base").encode(text))


# ---------------------------------------------------------------- off the critical path


# 20 examples (60 before): they catch the same mutants of upper_bound_tokens (characters
# counted instead of UTF-8 bytes; half the bytes) and miss none the 60 caught.
@settings(max_examples=20, deadline=None)
@given(st.text(max_size=3000) | st.lists(st.text(max_size=400), max_size=12).map("\n\n".join))
def test_the_upper_bound_is_never_below_the_count(text: str) -> None:
    assert tokens.upper_bound_tokens(text) >= count_tokens(text, model="gpt-4o")


@pytest.fixture
def unbuilt_vocabulary(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[list[str], threading.Event]]:
    """A fresh process's state: no encoding built. The build blocks until `release`
    is set (or 2 s pass), and logs "built" (or "build timed out") in `events`."""
    events: list[str] = []
    release = threading.Event()
    # The worker's own encodings (restored afterwards): one these tests ask for is built
    # for real once per worker, and one they never ask for (cl100k) not at all.
    built, real_build = tokens._ENCODINGS, tokens._build

    def slow_build(name: str):  # type: ignore[no-untyped-def]
        events.append("built" if release.wait(2) else "build timed out")
        if name not in built:
            built[name] = real_build(name)
        return built[name]  # the real encoding, without paying for a rebuild

    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    monkeypatch.setattr(tokens, "_build", slow_build)
    tokens._count_block.cache_clear()
    yield events, release
    tokens._count_block.cache_clear()


async def test_first_request_is_sent_before_the_vocabulary_is_built(
    openai_server: FakeOpenAIServer, unbuilt_vocabulary: tuple[list[str], threading.Event]
) -> None:
    events, release = unbuilt_vocabulary

    def handler(body: dict) -> Reply:
        events.append("request")
        release.set()
        return Reply(content='{"answer": "42", "confidence": 0.5}', usage=None)

    openai_server.handler = handler
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Answer, "Be exact.", ASK)
    assert events == ["request", "built"]
    # The request is the one an exact count gives (the full output cap), and the
    # usage recorded for it is the exact count, not the byte bound.
    wanted = client.settings.tool_settings("openai", "agent").max_tokens
    assert openai_server.chat_requests[0].body["max_tokens"] == wanted
    body = openai_server.chat_requests[0].body
    sent_text = "".join(m["content"] for m in body["messages"])
    schema_text = json.dumps(Answer.model_json_schema())
    assert result.usage.prompt_tokens == count_tokens(sent_text + schema_text)
    assert result.usage.prompt_tokens < tokens.upper_bound_tokens(sent_text + schema_text) / 2


async def test_a_tight_budget_counts_exactly_before_sending(
    openai_server: FakeOpenAIServer, unbuilt_vocabulary: tuple[list[str], threading.Event]
) -> None:
    events, release = unbuilt_vocabulary
    release.set()  # the build may run at once: it must happen before the request

    def handler(body: dict) -> dict:
        events.append("request")
        return {"answer": "42", "confidence": 0.5}

    openai_server.handler = handler
    # The byte bound would cap the output below the wanted cap; the exact count does not.
    wanted = offline_settings().tool_settings("openai", "agent").max_tokens
    client, _ = openai_client(openai_server.base_url, budget=wanted + 150)
    await client.generate_object("agent", Answer, "Be exact.", ASK)
    assert events == ["built", "request"]
    assert openai_server.chat_requests[0].body["max_tokens"] == wanted


def test_preload_builds_in_the_background_once(
    unbuilt_vocabulary: tuple[list[str], threading.Event],
) -> None:
    events, release = unbuilt_vocabulary
    thread = tokens.preload("o200k_base")
    assert thread is not None and not tokens.is_loaded("o200k_base")
    release.set()
    thread.join(5)
    assert tokens.is_loaded("o200k_base") and events == ["built"]
    assert tokens.preload("o200k_base") is None
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]


# ---------------------------------------------------------------- only when needed

_ANSWER = '{"answer": "42", "confidence": 0.5}'


async def test_a_server_that_reports_usage_never_needs_the_vocabulary(
    openai_server: FakeOpenAIServer, unbuilt_vocabulary: tuple[list[str], threading.Event]
) -> None:
    events, release = unbuilt_vocabulary
    release.set()  # a build would not block: it must not happen at all

    def handler(body: dict) -> Reply:
        events.append("request")
        return Reply(content=_ANSWER, usage={"prompt_tokens": 90, "completion_tokens": 10})

    openai_server.handler = handler
    client, _ = openai_client(openai_server.base_url)
    for _ in range(3):
        result = await client.generate_object("agent", Answer, "Be exact.", ASK)
        assert result.usage.prompt_tokens == 90 and not result.usage.estimated
    assert events == ["request"] * 3 and not tokens.is_loaded("o200k_base")
    wanted = client.settings.tool_settings("openai", "agent").max_tokens
    assert [r.body["max_tokens"] for r in openai_server.chat_requests] == [wanted] * 3


async def test_the_calibration_owed_is_settled_before_an_exact_count_is_used(
    openai_server: FakeOpenAIServer, unbuilt_vocabulary: tuple[list[str], threading.Event]
) -> None:
    """Calls sent on the bound are counted later, before anything needs the exact
    ratio: the tracker learns what it would have learnt counting each when sent."""
    _, release = unbuilt_vocabulary
    release.set()
    openai_server.handler = lambda body: Reply(
        content=_ANSWER, usage={"prompt_tokens": 80, "completion_tokens": 10}
    )
    client, _ = openai_client(openai_server.base_url)
    await client.generate_object("agent", Answer, "Be exact.", ASK)
    assert not tokens.is_loaded("o200k_base")
    body = openai_server.chat_requests[0].body
    sent = "".join(m["content"] for m in body["messages"]) + json.dumps(Answer.model_json_schema())
    client.settle_calibration()
    assert client.tracker.prompt_ratio == pytest.approx(80 / count_tokens(sent) + 0.02)


async def test_a_server_counting_beyond_the_bound_has_every_call_counted(
    openai_server: FakeOpenAIServer, unbuilt_vocabulary: tuple[list[str], threading.Event]
) -> None:
    events, release = unbuilt_vocabulary
    release.set()

    def handler(body: dict) -> Reply:
        events.append("request")
        sent = sum(len(m["content"].encode()) for m in body["messages"])
        return Reply(content=_ANSWER, usage={"prompt_tokens": 50 * sent, "completion_tokens": 1})

    openai_server.handler = handler
    client, _ = openai_client(openai_server.base_url)
    await client.generate_object("agent", Answer, "Be exact.", ASK)
    assert events == ["request", "built"]  # the bound proved unsafe: counted at once
    await client.generate_object("agent", Answer, "Be exact.", ASK)
    assert events == ["request", "built", "request"]
    assert client.tracker.prompt_ratio > 10  # learnt from both calls
