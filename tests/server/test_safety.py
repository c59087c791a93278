"""Safe to run: bearer auth, a concurrency limit answered with 429, a client that hangs
up stops its run's LLM calls, bad knobs are 400 before anything is spent, a failed run
is a 500 carrying its partial answer, and the request log holds no secret."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepsearch.server.state import ServerConfig
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    SECRET,
    router,
    schema_name,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.server.conftest import _STOPPING, RunningServer, Serve, settings_for, start_server

# `import openai` is in each test that names it: collection (every worker) must not pay
# the SDK's ~1 s import, only the worker that runs these tests.
USER = [{"role": "user", "content": QUESTION}]
KEY = "srv-key-0123456789abcdef"


def test_a_key_is_required_when_set_and_accepted_when_right(serve: Serve) -> None:
    import openai

    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm, api_key=KEY)
        for wrong in ("nope", KEY + "x", KEY[:-1]):
            with pytest.raises(openai.AuthenticationError) as caught:
                server.client(wrong).chat.completions.create(model="deepsearch", messages=USER)
            assert caught.value.code == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            server.client("nope").models.list()
        bare = httpx.post(server.base_url + "/chat/completions", json={"messages": USER})
        assert bare.status_code == 401 and "error" in bare.json()
        assert llm.chat_requests == [], "a rejected request spends nothing"
        right = server.client(KEY)
        assert [m.id for m in right.models.list()] == ["deepsearch"]
        done = right.chat.completions.create(model="deepsearch", messages=USER)
    assert "Stephen King" in (done.choices[0].message.content or "")
    server.wait_log("status=200")  # the run's line comes after its response
    assert all(KEY not in line and "nope" not in line for line in server.log)
    assert sum("status=401" in line for line in server.log) == 5


def test_a_full_server_answers_429_with_retry_after_and_frees_the_slot(serve: Serve) -> None:
    import openai

    release = threading.Event()

    def slow(body: dict[str, Any]) -> Any:
        if schema_name(body) == "AgentStep":
            release.wait(10)
        return base(body)

    base = router([ANSWER_STEP, ANSWER_STEP])  # the first run, and the one after it
    with FakeOpenAIServer(slow) as llm:
        server = serve(llm, max_concurrent=1)
        client = server.client()
        first: dict[str, Any] = {}
        worker = threading.Thread(
            target=lambda: first.update(
                done=client.chat.completions.create(model="deepsearch", messages=USER)
            )
        )
        worker.start()
        deadline = time.monotonic() + 30  # a bound on waiting, not a timing
        while not any(schema_name(r.body) == "AgentStep" for r in llm.chat_requests):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="deepsearch", messages=USER)
        assert caught.value.response.headers["retry-after"] == "5"
        release.set()
        worker.join(10)
        assert first["done"].choices[0].finish_reason == "stop"
        again = client.chat.completions.create(model="deepsearch", messages=USER)
    assert again.choices[0].message.content, "the slot is free again once a run is over"


def llm_calls(llm: FakeOpenAIServer, schema: str | None = None) -> int:
    """Chat requests the fake received whole. A call cut off by the cancellation may
    show up late with no body: it began before the disconnect, so it does not count."""
    bodies = [r.body for r in llm.chat_requests if isinstance(r.body, dict)]
    return sum(schema is None or schema_name(b) == schema for b in bodies)


def test_a_client_that_disconnects_mid_stream_stops_its_llm_calls(serve: Serve) -> None:
    # Step 1 is quick; the decision of step 2 is held back until the server has logged
    # the hang-up (its run cancelled and awaited): the client hangs up meanwhile. A run
    # left running would then get that decision, search and ask for step 3 (which
    # nothing scripts) and the query rewriter, at once: no wall-clock delay to wait out.
    hung_up, deciding = threading.Event(), threading.Event()
    script = router([SEARCH, SEARCH])
    steps: list[int] = []

    def route(body: dict[str, Any]) -> Any:
        if schema_name(body) == "AgentStep":
            steps.append(1)
            if len(steps) == 2:
                deciding.set()
                hung_up.wait(30)  # longer than the server's own wait for a cancelled run
        return script(body)

    with FakeOpenAIServer(route) as llm:
        server = serve(llm)
        stream = server.client().chat.completions.create(
            model="deepsearch", messages=USER, stream=True
        )
        for chunk in stream:
            if (chunk.choices[0].delta.model_extra or {}).get("reasoning_content"):
                # Step 1 is done; once step 2's decision is asked for (step 2 may first
                # wait for the sandbox's probe), hang up.
                assert deciding.wait(30)
                break
        stream.close()
        try:
            assert "run=cancelled" in server.wait_log("status=499")
            at_close = llm_calls(llm)
        finally:
            hung_up.set()
        time.sleep(0.2)  # a run still alive asks for step 3 within this
        assert llm_calls(llm) == at_close, "no LLM call after the client went away"
    assert llm_calls(llm, "AgentStep") == 2


def test_a_whole_request_whose_client_times_out_is_cancelled_too(serve: Serve) -> None:
    # Step 1 is decided only once the client has given up and the server has logged it
    # (its run cancelled and awaited). Left running, the run would search and ask for
    # step 2, which nothing scripts. The client gives up as one whose timeout expires
    # (the SDK's did, after 1.5 s of waiting): it closes its connection, here as soon as
    # step 1 is asked for, so no timeout is waited out.
    asked, gave_up = threading.Event(), threading.Event()
    script = router([SEARCH])

    def route(body: dict[str, Any]) -> Any:
        if schema_name(body) == "AgentStep":
            asked.set()
            gave_up.wait(30)  # longer than the server's own wait for a cancelled run
        return script(body)

    with FakeOpenAIServer(route) as llm:
        server = serve(llm)
        body = json.dumps({"model": "deepsearch", "messages": USER}).encode()
        request = (
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode() + body
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
            client.sendall(request)
            assert asked.wait(30)
        try:
            assert "run=cancelled" in server.wait_log("status=499")
        finally:
            gave_up.set()
        time.sleep(0.2)  # a run still alive asks for step 2 within this
        assert llm_calls(llm, "AgentStep") == 1


Refusing = tuple[RunningServer, FakeOpenAIServer, Any]


@pytest.fixture(scope="module")
def refusing() -> Iterator[Refusing]:
    """One server, its fake LLM and one SDK client for every bad knob below: each is
    refused before a run could start (the fake scripts no step): while the server
    refuses them, no case leaves anything behind for the next (one that started a run
    fails, and the next ones see its LLM request). A server and a client per case were
    most of their CPU."""
    with FakeSearchServers() as search, FakeOpenAIServer(router([])) as llm:
        settings = settings_for(llm, search)
        server = start_server(ServerConfig(settings=settings, max_budget=200_000))
        try:
            yield server, llm, server.client()
        finally:
            server.server.should_exit = True
            _STOPPING.append(server)  # joined once, at the end of the session


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"budget_tokens": 5}, "budget_tokens"),
        ({"budget_tokens": "lots"}, "budget_tokens"),
        ({"max_completion_tokens": 100}, "max_completion_tokens"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"bad_hostnames": ["not a host"]}, "bad_hostnames"),
        ({"only_hostnames": "example.com"}, "only_hostnames"),
        ({"boost_hostnames": [3]}, "boost_hostnames"),
        ({"max_returned_urls": 0}, "max_returned_urls"),
        ({"max_annotations": 99}, "max_annotations"),
        ({"no_direct_answer": "yes"}, "no_direct_answer"),
        ({"language_code": "xx"}, "language_code"),
        ({"stream": "sometimes"}, "stream"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "  "}]}, "messages"),
        ({"messages": [{"role": "user", "content": "x" * 100_001}]}, "messages"),
    ],
)
def test_bad_knobs_are_400_and_spend_nothing(
    refusing: Refusing, body: dict[str, Any], param: str
) -> None:
    import openai

    server, llm, client = refusing
    lines = len(server.log)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="deepsearch", messages=USER, extra_body=body)
    assert llm.chat_requests == []
    error = caught.value.body
    assert isinstance(error, dict) and error["type"] == "invalid_request_error"
    assert param in error["message"] and (error["param"] or param).startswith(param)
    # A refusal's line is written before its response: there, and only this one.
    assert len(server.log) == lines + 1 and "status=400" in server.log[-1]


def test_a_body_that_is_not_json_is_400(serve: Serve) -> None:
    with FakeOpenAIServer(router([])) as llm:  # no run starts: no step is scripted
        server = serve(llm)
        url, json_type = server.base_url + "/chat/completions", {"content-type": "application/json"}
        reply = httpx.post(url, content=b"{nope", headers=json_type)
        missing = httpx.get(server.base_url + "/nowhere")
        huge = httpx.post(url, content=b" " * (2 * 2**20 + 1), headers=json_type)
        chunked = httpx.post(url, content=iter([b" " * 2**20] * 3), headers=json_type)
    assert reply.status_code == 400 and "not valid JSON" in reply.json()["error"]["message"]
    for big in (huge, chunked):
        assert big.status_code == 400 and "larger than" in big.json()["error"]["message"]
    assert "content-length" not in chunked.request.headers
    assert missing.status_code == 404 and "error" in missing.json()


def test_a_failed_run_is_500_with_its_partial_answer(serve: Serve) -> None:
    # Step 1 answers (rejected: no direct answer, strict check fails), then the
    # provider rejects the key: a configuration failure with an answer in hand.
    import openai

    steps = [ANSWER_STEP, Reply.error(401, "Incorrect API key provided", code="invalid_api_key")]
    with FakeOpenAIServer(router(steps, strict_pass=False)) as llm:
        server = serve(llm)
        with pytest.raises(openai.InternalServerError) as caught:
            server.client().chat.completions.create(
                model="deepsearch", messages=USER, extra_body={"no_direct_answer": True}
            )
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "research_failed"
    assert "Stephen King" in error["partial_answer"]
    assert SECRET not in json.dumps(error)
    server.wait_log("status=500")  # written once the response is out: wait for it


def test_a_secret_in_the_reason_of_a_500_is_masked(serve: Serve) -> None:
    # The provider masks its own key in its errors, not the others: here a proxy's
    # "no such model" reply quotes the server's key (any configured key would do).
    # Only the server's mask stands between it and the 500 body.
    import openai

    echo = Reply.error(404, f"no model for the key {KEY}", code="model_not_found")
    with FakeOpenAIServer(router([echo])) as llm:
        server = serve(llm, api_key=KEY)
        with pytest.raises(openai.InternalServerError) as caught:
            server.client(KEY).chat.completions.create(model="deepsearch", messages=USER)
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "research_failed"
    assert "no model for the key ****" in error["message"], error["message"]
    assert KEY not in json.dumps(error)
    assert KEY not in server.wait_log("status=500")


def test_one_log_line_per_request_without_secret_or_question(serve: Serve, tmp_path: Path) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP, ANSWER_STEP])) as llm:  # one run per server
        server = serve(llm)
        server.client().chat.completions.create(model="deepsearch", messages=USER)
        traced = serve(llm, trace=tmp_path / "trace.jsonl")
        done = traced.client().chat.completions.create(model="deepsearch", messages=USER)
    # Each line is written once its response is out: wait for it, then check it is the only one.
    line = server.wait_log("status=200")
    assert server.log == [line]
    assert line.startswith("deepsearch serve: chatcmpl-") and "status=200" in line
    assert "run=answered" in line and "tokens=" in line and "seconds=" in line
    assert QUESTION not in line and SECRET not in line
    with_trace = traced.wait_log("status=200")
    assert traced.log == [with_trace]
    assert QUESTION in with_trace and SECRET not in with_trace
    trace = (tmp_path / "trace.jsonl").read_text("utf-8")
    assert "llm_request" in trace and SECRET not in trace
    records = [json.loads(line) for line in trace.splitlines()]
    assert records[0]["kind"] == "run_start" and records[0]["question"] == QUESTION
    assert {r["request_id"] for r in records} == {done.id}, "concurrent runs share the file"


def test_a_stream_whose_run_fails_ends_with_the_error_event(serve: Serve) -> None:
    import openai

    steps = [ANSWER_STEP, Reply.error(401, "Incorrect API key provided", code="invalid_api_key")]
    with FakeOpenAIServer(router(steps, strict_pass=False)) as llm:
        server = serve(llm)
        stream = server.client().chat.completions.create(
            model="deepsearch", messages=USER, stream=True, extra_body={"no_direct_answer": True}
        )
        seen: list[str] = []
        with pytest.raises(openai.APIError) as caught:
            for chunk in stream:
                seen.append((chunk.choices[0].delta.model_extra or {}).get("reasoning_content", ""))
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "research_failed"
    assert "Stephen King" in error["partial_answer"]
    assert "Step 1 · answer" in "".join(seen), "the steps came before the error"
