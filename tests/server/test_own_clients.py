"""`serve` answers only its own clients (issue 31): on loopback, a foreign Host (DNS
rebinding), a foreign Origin and a cross-site `text/plain` POST start no run; nested
JSON is a 400 with one clear message; slow clients are cut at the read deadline."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from deepsearch.server.state import ServerConfig
from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, router, schema_name
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.server.conftest import _STOPPING, RunningServer, settings_for, start_server

BODY = json.dumps({"model": "deepsearch", "messages": [{"role": "user", "content": QUESTION}]})
JSON = {"content-type": "application/json"}
MAX_JSON_DEPTH = 64  # deepsearch.server.guard's (Starlette is imported by tests that use it)


@pytest.fixture(scope="module")
def quiet_server() -> Iterator[tuple[RunningServer, FakeOpenAIServer]]:
    """A server whose model is scripted with no step: a run that started would fail on
    its first call, and `llm.chat_requests` shows whether one did (no test here may
    start one). Slow clients get 0.3 s to send a request. One for the module: uvicorn
    takes ~0.25 s to stop (waited for once, at the end of the session)."""
    with FakeSearchServers() as search, FakeOpenAIServer(router([])) as llm:
        config = ServerConfig(
            settings=settings_for(llm, search), max_budget=200_000, read_deadline_s=0.3
        )
        server = start_server(config)
        try:
            yield server, llm
        finally:
            server.server.should_exit = True
            _STOPPING.append(server)  # joined once, at the end of the session


def test_a_cross_site_text_plain_post_starts_no_run(
    quiet_server: tuple[RunningServer, FakeOpenAIServer],
) -> None:
    server, llm = quiet_server
    url = server.base_url + "/chat/completions"
    # What a page's `fetch(url, {method: "POST", body})` sends: no preflight needed.
    plain = httpx.post(url, content=BODY, headers={"content-type": "text/plain;charset=UTF-8"})
    form = httpx.post(url, content=BODY, headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    bare = httpx.post(url, content=BODY)
    for reply in (plain, form, bare):
        assert reply.status_code == 415, reply.text
        assert "Content-Type must be application/json" in reply.json()["error"]["message"]
    assert llm.chat_requests == [] and not any("chatcmpl" in line for line in server.log)


def test_a_foreign_host_or_origin_starts_no_run(
    quiet_server: tuple[RunningServer, FakeOpenAIServer],
) -> None:
    server, llm = quiet_server
    url, port = server.base_url + "/chat/completions", server.port
    rebinding = httpx.post(url, content=BODY, headers={**JSON, "host": f"evil.example:{port}"})
    assert rebinding.status_code == 421 and "localhost" in rebinding.json()["error"]["message"]
    for origin in ("https://evil.example", f"http://localhost:{port + 1}", "null"):
        refused = httpx.post(url, content=BODY, headers={**JSON, "origin": origin})
        assert refused.status_code == 403, origin
        assert origin in refused.json()["error"]["message"]
    assert llm.chat_requests == [] and not any("chatcmpl" in line for line in server.log)
    # Its own clients: a loopback Host under any loopback name, the page it serves itself.
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert httpx.get(server.base_url + "/models", headers={"host": host}).status_code == 200
    own = httpx.get(server.base_url + "/models", headers={"origin": f"http://localhost:{port}"})
    assert own.status_code == 200


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_nested_json_is_a_400_with_a_clear_message(
    quiet_server: tuple[RunningServer, FakeOpenAIServer], depth: int
) -> None:
    """100,000 levels was a RecursionError: a 500 and a traceback."""
    server, llm = quiet_server
    body = '{"model": "deepsearch", "x": ' + "[" * depth + "]" * depth + "}"
    reply = httpx.post(server.base_url + "/chat/completions", content=body, headers=JSON)
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == (
        f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels"
    )
    assert llm.chat_requests == []


def _slow_client(port: int, sent: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(sent)
    return sock


def test_slow_clients_are_cut_at_the_read_deadline(
    quiet_server: tuple[RunningServer, FakeOpenAIServer],
) -> None:
    """Half a request line, headers without their end, a body short of its length, 14
    of each: every connection is answered 408 and closed at the deadline (0.3 s here),
    while a client that sends its request in time is answered meanwhile."""
    server, llm = quiet_server
    head = f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\n"
    partial = [
        b"POST /v1/chat/comp",
        head.encode(),
        (head + f"content-type: application/json\r\ncontent-length: {len(BODY)}\r\n\r\n").encode()
        + BODY[:10].encode(),
    ] * 14  # 42 clients: the 40 were held open for 20 s
    started = time.monotonic()
    clients = [_slow_client(server.port, sent) for sent in partial]
    assert httpx.get(server.base_url + "/models").status_code == 200  # not held up
    replies = []
    for sock in clients:
        chunks = []
        while chunk := sock.recv(4096):  # until the server closes (5 s socket timeout)
            chunks.append(chunk)
        replies.append(b"".join(chunks))
        sock.close()
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 3, elapsed
    assert all(reply.startswith(b"HTTP/1.1 408 ") for reply in replies), replies
    assert llm.chat_requests == []


def test_a_request_read_in_time_is_never_cut_however_long_its_run() -> None:
    """The deadline is for reading the request: a run whose model takes longer than
    the deadline (0.4 s against 0.3 s) is answered in full."""
    answer = router([ANSWER_STEP])

    def slow(body: dict[str, object]) -> object:
        reply = answer(body)
        return (
            Reply(content=json.dumps(reply), delay_s=0.4)
            if schema_name(body) == "AgentStep"
            else reply
        )

    with FakeSearchServers() as search, FakeOpenAIServer(slow) as llm:
        config = ServerConfig(
            settings=settings_for(llm, search), max_budget=200_000, read_deadline_s=0.3
        )
        server = start_server(config)
        try:
            url = server.base_url + "/chat/completions"
            done = httpx.post(url, content=BODY, headers=JSON, timeout=20)
        finally:
            server.server.should_exit = True
            _STOPPING.append(server)  # joined once, at the end of the session
    assert done.status_code == 200, done.text
    assert "Stephen King" in done.json()["choices"][0]["message"]["content"]


def test_the_rules_in_parts() -> None:
    from deepsearch.server import guard
    from deepsearch.server.guard import is_loopback_name, origin_allowed

    assert guard.MAX_JSON_DEPTH == MAX_JSON_DEPTH
    assert all(
        map(is_loopback_name, ["localhost", "LOCALHOST.", "127.0.0.1", "127.9.9.9", "[::1]"])
    )
    assert not any(map(is_loopback_name, ["evil.example", "0.0.0.0", "localhost.evil.example"]))
    # Loopback: a loopback name with the server's own port only.
    assert origin_allowed("http://127.0.0.1:8000", "x", 8000, loopback=True)
    assert not origin_allowed("http://localhost:8001", "x", 8000, loopback=True)
    assert not origin_allowed("http://localhost", "x", 8000, loopback=True)  # port 80
    # Elsewhere: the request's own Host.
    assert origin_allowed("https://box.lan", "box.lan:443", 8000, loopback=False)
    assert not origin_allowed("https://evil.example", "box.lan:443", 8000, loopback=False)
