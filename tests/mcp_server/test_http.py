"""`deepsearch mcp --transport http`: the app on uvicorn in a thread, the SDK's client
over streamable HTTP with the bearer key; serve's auth and loopback rules."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import QUESTION, SECRET
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.mcp_server.conftest import Script, cancel_mid_run, progress_sink

KEY = "mcp-server-key-0123456789"


@pytest.fixture
def endpoint(
    llm: FakeOpenAIServer, search: FakeSearchServers, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[str]:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("HOME", str(tmp_path))
    options: dict[str, Any] = {
        "llm_provider": "openai", "search_provider": "searxng",
        "searxng_url": search.base_url("searxng"), "allow_private_urls": True,
        "no_cache": True, "budget": 200_000,
    }  # fmt: skip
    import uvicorn  # the server stack and the SDK load when a test uses them, not to collect

    from deepsearch.mcp_server.app import McpConfig, http_app
    from deepsearch.server.deadline import read_deadline_protocol

    config = McpConfig(options=options, max_budget=200_000, api_key=KEY, secrets=[SECRET])
    server = uvicorn.Server(
        uvicorn.Config(http_app(config, loopback=True), host="127.0.0.1", port=0,
                       http=read_deadline_protocol(), log_level="warning", lifespan="on")
    )  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True  # the reaper below waits for it
    _STOPPING.append(thread)


# uvicorn needs ~0.2 s to stop: it stops in its own thread while the next tests run,
# and is still required to have stopped, once, at the end of the session.
_STOPPING: list[threading.Thread] = []


@pytest.fixture(scope="session", autouse=True)
def servers_reaped() -> Iterator[None]:
    yield
    for thread in _STOPPING:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in _STOPPING), "an MCP server over HTTP did not stop"


@asynccontextmanager
async def connected(url: str) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@pytest.mark.timeout(120)
async def test_the_sdk_client_over_http(
    endpoint: str, llm: FakeOpenAIServer, script: Script
) -> None:
    async with connected(endpoint) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["research"]
        messages: list[str] = []
        result = await session.call_tool(
            "research", {"question": QUESTION, "effort": "low"},
            progress_callback=progress_sink(messages),
        )  # fmt: skip
        assert not result.isError, result.content
        structured = result.structuredContent or {}
        assert "Stephen King" in structured["answer"] and structured["references"]
        assert [m.split()[1] for m in messages] == ["search", "visit", "answer"]

        bad = await session.call_tool("research", {"question": "q?", "team_size": 99})
        assert bad.isError and "team_size" in bad.content[0].text  # type: ignore[union-attr]
        unknown = await session.call_tool("research", {"question": "q?", "model": "x"})
        assert unknown.isError and "model" in unknown.content[0].text  # type: ignore[union-attr]

        at_cancel, later = await cancel_mid_run(session, script, llm)
        assert later == at_cancel, "an LLM call after the cancellation"


async def test_a_request_without_the_key_is_refused(endpoint: str) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401


async def test_only_its_own_clients_are_answered(endpoint: str, llm: FakeOpenAIServer) -> None:
    """Issue 31: the Origin check took http://localhost on any port; nested JSON was a
    RecursionError. Each refusal comes before the key is even looked at."""
    port = int(endpoint.split(":")[2].split("/")[0])
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    auth = {"authorization": f"Bearer {KEY}", "accept": "application/json, text/event-stream"}
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": ' + "[" * 50_000
    async with httpx.AsyncClient(headers=auth) as client:
        other_port = await client.post(endpoint, json=ping, headers={"origin": f"http://localhost:{port + 1}"})  # fmt: skip
        rebinding = await client.post(endpoint, json=ping, headers={"host": f"evil.example:{port}"})
        plain = await client.post(endpoint, content=b"{}", headers={"content-type": "text/plain"})
        nested = await client.post(
            endpoint,
            content=deep + "]" * 50_000 + "}}",
            headers={"content-type": "application/json"},
        )
        huge = await client.post(
            endpoint, content=b" " * (2 * 2**20 + 1), headers={"content-type": "application/json"}
        )
        own = await client.post(endpoint, json=ping, headers={"origin": f"http://localhost:{port}"})
    assert other_port.status_code == 403 and rebinding.status_code == 421
    assert plain.status_code == 415
    assert nested.status_code == 400 and "deeper than 64 levels" in nested.text
    assert huge.status_code == 413 and "larger than" in huge.text  # the SDK read any size
    assert own.status_code != 403 and "origin" not in own.text.lower()
    assert llm.chat_requests == []


def test_a_public_address_without_a_key_is_refused_at_start(tmp_path: Path) -> None:
    done = run_cli_in_process(
        "mcp", "--transport", "http", "--host", "0.0.0.0", env={"HOME": str(tmp_path)}
    )
    assert done.returncode == 2 and "without an API key" in done.stderr
    bad = run_cli_in_process("mcp", "--transport", "sse", env={"HOME": str(tmp_path)})
    assert bad.returncode == 2 and "--transport" in bad.stderr
