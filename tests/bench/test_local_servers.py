"""The real-server harness (bench/local_servers.py, bench/local_relay.py) must not rot:
its rung labels, its schema check, the relay's counting against a loopback fake, and a
clean skip when no server is given. It never talks to a real server here."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import httpx
import pytest

from bench import local_servers
from bench.local_relay import Call, Relay, rung_of, schema_errors, schema_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search", "answer"]},
        "search": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"q": {"type": "string", "maxLength": 5}},
                    "required": ["q"],
                },
                {"type": "null"},
            ]
        },
    },
    "required": ["action", "search"],
    "additionalProperties": False,
}


def _strict(schema: dict[str, object], strict: bool = True) -> dict[str, object]:
    spec = {"name": "step", "strict": strict, "schema": schema}
    return {"response_format": {"type": "json_schema", "json_schema": spec}}


def test_rungs_are_told_apart_and_their_schema_found() -> None:
    llama_cpp_python = {"response_format": {"type": "json_object", "schema": SCHEMA}}
    assert rung_of(_strict(SCHEMA)) == "json_schema strict"
    assert rung_of(llama_cpp_python) == "json_object + schema"
    assert rung_of({"response_format": {"type": "json_object"}}) == "json_object"
    assert rung_of({"format": SCHEMA}) == "ollama format (schema)"
    assert rung_of({}) == "no response_format"
    assert schema_of(_strict(SCHEMA)) == schema_of(llama_cpp_python) == SCHEMA
    assert schema_of({"response_format": {"type": "json_object"}}) is None


@pytest.mark.parametrize(
    ("value", "broken"),
    [
        ({"action": "search", "search": {"q": "abc"}}, False),
        ({"action": "search", "search": None}, False),
        ({"action": "think", "search": None}, True),
        ({"action": "search"}, True),
        ({"action": "search", "search": {"q": "abcdef"}}, True),
        ({"action": "search", "search": None, "extra": 1}, True),
        ({"action": "search", "search": {"q": 3}}, True),
    ],
)
def test_schema_check(value: dict[str, object], broken: bool) -> None:
    assert bool(schema_errors(value, SCHEMA, SCHEMA)) is broken


def test_the_relay_counts_status_validity_and_tokens() -> None:
    with FakeOpenAIServer() as upstream:
        upstream.enqueue(
            '{"action": "answer", "search": null}',
            '{"action": "oops"',
            Reply(content='{"action": "search", "search": null}', finish_reason="length"),
            Reply.error(500, "Input should be 'text' or 'json_object'"),
        )
        with Relay(upstream.base_url.removesuffix("/v1")) as relay:
            url = relay.origin + "/v1/chat/completions"
            for _ in range(4):
                body = {"model": "m", "messages": [], "max_tokens": 9, **_strict(SCHEMA, False)}
                httpx.post(url, json=body, timeout=10)
            calls = relay.take()
    assert [c.status for c in calls] == [200, 200, 200, 500]
    assert [c.parsed for c in calls[:3]] == [True, False, True]
    assert [c.valid for c in calls[:3]] == [True, False, True]
    assert [c.ran_to_max for c in calls] == [True, True, True, False]  # 9 tokens of 9
    assert "json_object" in calls[3].error
    table = "\n".join(local_servers.rung_table(calls))
    assert "| json_schema | 4 | 200×3, 500×1 | 3 | 2 | 2/3 |" in table


def test_take_waits_for_a_call_whose_reply_has_already_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The relay records a call after its reply's last byte: the client can be ahead of
    # the record (under load it was, and a run's last call went missing).
    from bench import local_relay

    judge = local_relay.judge
    taking = threading.Event()

    def slow_judge(call: Call, content: str | None, schema: dict[str, object] | None) -> None:
        taking.wait(10)  # holds the record back, after the reply left, until take() waits
        judge(call, content, schema)

    monkeypatch.setattr(local_relay, "judge", slow_judge)
    with FakeOpenAIServer() as upstream:
        upstream.enqueue('{"action": "answer", "search": null}')
        with Relay(upstream.base_url.removesuffix("/v1")) as relay:
            wait_for = relay.lock.wait_for

            def waiting(*args: Any, **kwargs: Any) -> Any:
                taking.set()
                return wait_for(*args, **kwargs)

            monkeypatch.setattr(relay.lock, "wait_for", waiting)
            body = {"model": "m", "messages": [], **_strict(SCHEMA, False)}
            reply = httpx.post(relay.origin + "/v1/chat/completions", json=body, timeout=10)
            assert reply.status_code == 200
            calls = relay.take()
    assert [(c.status, c.parsed) for c in calls] == [(200, True)]


def test_calls_are_taken_in_the_order_they_arrived(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call is complete after its reply left: the next call can finish first (once in
    # 64 suite runs the table's rows came out of order). The first call's judgement is
    # held here until the second call is complete.
    from bench import local_relay

    judge, judged = local_relay.judge, []
    second_done = threading.Event()

    def held_judge(call: Call, content: str | None, schema: dict[str, object] | None) -> None:
        judged.append(call)
        if len(judged) == 1:
            second_done.wait(10)
        judge(call, content, schema)

    monkeypatch.setattr(local_relay, "judge", held_judge)
    with FakeOpenAIServer() as upstream:
        upstream.enqueue('{"action": "answer", "search": null}', '{"action": "oops"')
        with Relay(upstream.base_url.removesuffix("/v1")) as relay:
            record = relay.record

            def recorded(call: Call) -> None:
                record(call)
                if len(judged) == 2 and call is judged[1]:
                    second_done.set()

            monkeypatch.setattr(relay, "record", recorded)
            body = {"model": "m", "messages": [], **_strict(SCHEMA, False)}
            for _ in range(2):
                httpx.post(relay.origin + "/v1/chat/completions", json=body, timeout=10)
            calls = relay.take()
    assert [(c.status, c.parsed) for c in calls] == [(200, True), (200, False)]


def test_the_hang_up_watch_ends_quietly_when_the_server_closes_the_socket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server closes a finished request's socket while its watch may still be about
    # to select() on it: that ended the watch's thread with an exception (seen in a
    # suite run as EBADF; a socket closed before the select is the same path, for sure).
    import http.client
    import socket

    from bench.local_relay import _Watch

    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    ours, theirs = socket.socketpair()
    ours.close()  # closed before the watch's first select(), and no stop()
    watch = _Watch(ours, http.client.HTTPConnection("127.0.0.1", 9))
    watch.thread.join(timeout=5)
    theirs.close()
    assert not watch.thread.is_alive() and raised == [] and not watch.left


def test_a_client_that_hangs_up_closes_the_upstream_call() -> None:
    with FakeOpenAIServer() as upstream:
        upstream.enqueue(Reply(content="{}", delay_s=3.0))
        with Relay(upstream.base_url.removesuffix("/v1")) as relay:
            data = json.dumps({"model": "m", "messages": [], **_strict(SCHEMA, False)}).encode()
            host, port = relay.origin.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=10) as client:
                head = (
                    f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                )
                client.sendall(head.encode() + data)
                for _ in range(2000):  # polls, 5 ms apart: until the upstream was asked
                    if upstream.chat_requests:
                        break
                    threading.Event().wait(0.005)
                assert upstream.chat_requests, "the relay never forwarded the call"
            # The client hung up (as one whose timeout expired) while the reply is held.
            calls: list[Call] = []
            for _ in range(100):  # the relay notices within its 0.25 s poll
                calls += relay.take()
                if calls:
                    break
                threading.Event().wait(0.05)
    assert [(c.status, c.error) for c in calls] == [("no reply", "client hung up")]
    assert calls[0].parsed is None


def test_max_tokens_reached_only_when_used_up() -> None:
    assert not Call("r", 200, 0.0, 100, completion_tokens=99).ran_to_max
    assert Call("r", 200, 0.0, 100, completion_tokens=100).ran_to_max
    assert Call("r", 200, 0.0, None, finish_reason="length").ran_to_max


def test_without_a_server_it_skips(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(local_servers.ENV_SERVERS, raising=False)
    assert local_servers.main([]) == 0
    assert "skipped" in capsys.readouterr().err
    recorded = local_servers.RESULTS.read_text("utf-8") if local_servers.RESULTS.is_file() else ""
    assert local_servers.run() == (
        recorded or "## Real local servers\n\nSkipped: no server given.\n"
    )


def test_figures_replace_only_their_own_block() -> None:
    text = "intro\n\n<!-- figures:a -->\nold a\n<!-- /figures:a -->\n\nnotes\n"
    text = local_servers.replace_block(text, "a", "new a")
    text = local_servers.replace_block(text, "b", "new b")
    assert "old a" not in text and "new a" in text and "notes" in text
    assert text.index("new a") < text.index("notes") < text.index("new b")
