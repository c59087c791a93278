"""The request fields a client of OpenAI's API relies on (issue 22, item 6): an unknown
`model` is 404 `model_not_found` as OpenAI answers it (the ids of /v1/models are the
names served), `n` above 1 is refused, and `stream_options.include_usage` puts the
usage in a last chunk of its own with `choices: []`, as OpenAI documents it."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, router
from tests.fakes.openai_server import FakeOpenAIServer
from tests.server.conftest import Serve

# `import openai` is in each test that names it: collection (every worker) must not pay
# the SDK's ~1 s import, only the worker that runs these tests.
USER = [{"role": "user", "content": QUESTION}]


def test_an_unknown_model_is_404_model_not_found_and_no_run_starts(serve: Serve) -> None:
    import openai

    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm)
        listed = [m.id for m in server.client().models.list()]
        with pytest.raises(openai.NotFoundError) as caught:
            server.client().chat.completions.create(model="gpt-4", messages=USER)  # type: ignore[arg-type]
        assert not llm.chat_requests, "no run for a model that is not served"
        ok = server.client().chat.completions.create(model=listed[0], messages=USER)  # type: ignore[arg-type]
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "model_not_found", error
    assert error["param"] == "model" and "gpt-4" in error["message"]
    assert ok.choices[0].message.content
    assert "status=404" in server.wait_log("status=404")


def test_more_than_one_choice_is_refused_with_a_400(serve: Serve) -> None:
    import openai

    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm)
        with pytest.raises(openai.BadRequestError) as caught:
            server.client().chat.completions.create(model="deepsearch", messages=USER, n=3)  # type: ignore[arg-type]
        one = server.client().chat.completions.create(model="deepsearch", messages=USER, n=1)  # type: ignore[arg-type]
    error = caught.value.body
    assert isinstance(error, dict) and error["param"] == "n" and "not supported" in error["message"]
    assert len(one.choices) == 1


def test_include_usage_sends_the_usage_in_a_last_chunk_without_choices(serve: Serve) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm)
        body = {"model": "deepsearch", "messages": USER, "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip
        with httpx.stream("POST", server.base_url + "/chat/completions", json=body) as reply:
            events = [line for line in reply.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in events[:-1]]
    last = chunks[-1]
    assert last["choices"] == [] and last["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1]), "null on every other chunk"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
