"""`deepsearch serve` answers the OpenAI SDK: a cited answer whole or streamed with its
research as reasoning first, conversation turns the agent sees, and the budget cap."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import httpx
import pytest

from tests.cli.test_end_to_end import (
    ANSWER,
    ANSWER_STEP,
    FIXTURE,
    QUESTION,
    SEARCH,
    VISIT,
    normalized,
    router,
    schema_name,
    slug,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.web_server import LoopbackServer
from tests.server.conftest import Serve

USER = [{"role": "user", "content": QUESTION}]
SENTENCES = [normalized(s) for s in re.split(r"(?<=\.)(?:\[\^\d\])*\s+", ANSWER)]


def page_texts(web: LoopbackServer) -> dict[str, str]:
    return {web.url(f"/wiki/{slug(t)}"): normalized(p) for t, p in FIXTURE["paragraphs"].items()}


def definitions(content: str) -> dict[int, tuple[str, str]]:
    """n -> (quote, url) from the `[^n]: "quote" — [title](url) (host)` lines."""
    found = re.findall(
        r'^\[\^(\d+)\]: "(.*)" — \[.*\]\((\S*)\)(?: \(.*\))?$', content, re.MULTILINE
    )
    return {int(n): (quote, url) for n, quote, url in found}


def test_a_whole_answer_with_annotations_on_its_markers(serve: Serve, web: LoopbackServer) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        server = serve(llm)
        done = server.client().chat.completions.create(
            model="deepsearch", messages=USER, extra_body={"with_images": True, "temperature": 0.2}
        )
    message = done.choices[0].message
    content = message.content or ""
    assert done.object == "chat.completion" and done.model == "deepsearch"
    assert done.choices[0].finish_reason == "stop"
    assert "Stephen King" in content and message.annotations
    pages, defined = page_texts(web), definitions(content)
    for n, note in enumerate(message.annotations, start=1):
        cite = note.url_citation
        assert note.type == "url_citation"
        # The span is exactly the marker, right after the sentence its quote supports.
        assert content[cite.start_index : cite.end_index] == f"[^{n}]"
        before = normalized(content[: cite.start_index])
        assert any(before.endswith(s) for s in SENTENCES), before[-120:]
        quote, url = defined[n]
        assert cite.url == url and quote in pages[url] and cite.title
    extra = done.model_extra or {}
    assert set(extra["readURLs"]) <= set(extra["visitedURLs"]) and extra["readURLs"]
    assert extra["status"] == "answered" and extra["numURLs"] >= len(extra["readURLs"])
    assert done.usage is not None and 0 < done.usage.total_tokens <= extra["budget"]
    assert "Step 1 · search" in (message.model_extra or {})["reasoning_content"]


def test_a_stream_shows_the_research_live_before_the_answer(serve: Serve) -> None:
    reasoning: list[str] = []
    seen_live = threading.Event()
    base = router([SEARCH, VISIT, ANSWER_STEP])
    steps: list[int] = []

    def route(body: dict[str, Any]) -> Any:
        if schema_name(body) == "AgentStep":
            steps.append(1)
            if len(steps) == 3:  # the answer step: steps 1 and 2 must be on screen already
                deadline = time.monotonic() + 15  # a bound on waiting, not a timing
                while "Step 2" not in "".join(reasoning) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if "Step 2" in "".join(reasoning):
                    seen_live.set()
        return base(body)

    with FakeOpenAIServer(route) as llm:
        server = serve(llm)
        stream = server.client().chat.completions.create(
            model="deepsearch", messages=USER, stream=True
        )
        kinds: list[str] = []
        content, last = "", None
        for chunk in stream:
            delta = chunk.choices[0].delta
            thought = (delta.model_extra or {}).get("reasoning_content")
            if thought:
                reasoning.append(thought)
                kinds.append("reasoning")
            if delta.content:
                content += delta.content
                kinds.append("content")
            last = chunk
    assert seen_live.is_set(), "the steps reached the client while the run went on"
    assert kinds.index("content") > kinds.index("reasoning")
    assert "reasoning" not in kinds[kinds.index("content") :], "the answer comes last"
    assert "Step 1 · search" in reasoning[0]
    assert content.startswith("The film was Maximum Overdrive")
    assert last is not None and last.choices[0].finish_reason == "stop"
    assert last.usage is not None and last.usage.total_tokens > 0
    notes = (last.choices[0].delta.model_extra or {})["annotations"]
    assert notes, "the final chunk carries the annotations"
    for n, note in enumerate(notes, start=1):
        cite = note["url_citation"]
        assert content[cite["start_index"] : cite["end_index"]] == f"[^{n}]"


def test_the_raw_stream_is_sse_chunks_then_done(serve: Serve) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:  # a direct answer at step 1
        server = serve(llm)
        body = {"model": "deepsearch", "messages": USER, "stream": True}
        # httpx's default 5 s read timeout is a wall-clock limit a loaded machine can
        # exceed before the run's first event: the SDK clients' 20 s, as elsewhere.
        url = server.base_url + "/chat/completions"
        with httpx.stream("POST", url, json=body, timeout=20) as reply:
            assert reply.headers["content-type"].startswith("text/event-stream")
            events = [line for line in reply.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events)
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and "usage" in chunks[-1]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)


def test_earlier_turns_reach_the_agent_as_knowledge(serve: Serve) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Which 1986 film was shot in Leland, North Carolina?"},
        {"role": "assistant", "content": "<think>hmm</think>Maximum Overdrive."},
        {"role": "user", "content": [{"type": "text", "text": "Who directed it?"}]},
    ]
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm)
        server.client().chat.completions.create(model="deepsearch", messages=messages)
        steps = [r.body for r in llm.chat_requests if schema_name(r.body) == "AgentStep"]
    system = steps[0]["messages"][0]["content"]
    assert "Earlier in this conversation the user asked: Which 1986 film" in system
    assert "Maximum Overdrive." in system and "hmm" not in system
    assert steps[0]["messages"][-1]["content"] == "Who directed it?"
    assert "You are terse." not in json.dumps(steps)


@pytest.mark.parametrize(
    ("knobs", "budget"),
    [
        ({"budget_tokens": 10**9}, 50_000),  # never above --max-budget
        ({"reasoning_effort": "low"}, 50_000),  # its preset 100k is capped too
        ({"budget_tokens": 20_000}, 20_000),  # a request may lower it
        ({"max_completion_tokens": 30_000}, 30_000),
        ({}, 50_000),  # the server's own 200k default is capped too
    ],
)
def test_the_budget_is_capped_by_max_budget(
    serve: Serve, knobs: dict[str, Any], budget: int
) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm, max_budget=50_000)
        done = server.client().chat.completions.create(
            model="deepsearch", messages=USER, extra_body=knobs
        )
    assert (done.model_extra or {})["budget"] == budget
    assert done.usage is not None and done.usage.total_tokens <= budget


def test_the_servers_step_limit_forces_the_answer_as_for_the_cli(serve: Serve) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        server = serve(llm, max_steps=2)
        done = server.client().chat.completions.create(model="deepsearch", messages=USER)
    assert done.choices[0].finish_reason == "length", "a forced answer is not a stop"
    assert (done.model_extra or {})["status"] == "forced"
    assert "Stephen King" in (done.choices[0].message.content or "")
    assert "Beast Mode" in (done.choices[0].message.model_extra or {})["reasoning_content"]
