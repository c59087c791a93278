"""`deepsearch mcp --transport http` in process: the ASGI app driven by httpx's
ASGITransport, its lifespan run by hand (no uvicorn, no port), a stubbed session
(test_mcp_blindspots.py). Who is answered (every loopback name with the server's own
port; a public server under its own name), progress on the call's own stream before its
result, the SDK's closed-stream traceback not logged."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from deepsearch.session import ResearchSession
from tests.mcp_server.test_mcp_blindspots import OPTIONS, Run, _result, _step
from tests.mcp_server.test_mcp_blindspots import run as run  # noqa: F401 - a fixture

KEY = "mcp-inprocess-key-0123456789"
ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip


@asynccontextmanager
async def served(
    *, loopback: bool, port: int | None, api_key: str | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    from deepsearch.mcp_server.app import McpConfig, http_app

    config = McpConfig(options=OPTIONS, max_budget=200_000, api_key=api_key)
    app = http_app(config, loopback=loopback, port=port)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            yield c


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body."""
    lines = response.text.splitlines()
    return [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]


@pytest.mark.parametrize("port", [8000, None])  # None: the app built before its port is known
async def test_a_loopback_server_answers_each_loopback_name_from_its_own_port(
    port: int | None,
) -> None:
    async with served(loopback=True, port=port) as client:
        for name in ("127.0.0.1", "localhost", "[::1]"):
            for origin in (None, f"http://{name}:8000"):
                headers = {"host": f"{name}:8000", "accept": ACCEPT}
                headers |= {"origin": origin} if origin else {}
                reply = await client.post("/mcp", json=INIT, headers=headers)
                assert reply.status_code == 200, (name, origin, reply.text)
                assert _events(reply)[0]["result"]["serverInfo"]["name"] == "deepsearch"
        other_name = {"host": "127.0.0.1:8000", "origin": "http://localhost:8000", "accept": ACCEPT}
        assert (await client.post("/mcp", json=INIT, headers=other_name)).status_code == 200


async def test_on_loopback_the_sdks_own_host_check_is_on_too() -> None:
    """Behind the guard (any 127.0.0.0/8 address, `localhost.`), the SDK's DNS-rebinding
    check answers only the names it lists: 127.0.0.1, localhost, [::1]."""
    async with served(loopback=True, port=8000) as client:
        for host in ("127.0.0.2:8000", "localhost.:8000"):
            reply = await client.post("/mcp", json=INIT, headers={"host": host, "accept": ACCEPT})
            assert reply.status_code == 421, (host, reply.text)
            assert reply.text == "Invalid Host header"


async def test_a_public_server_answers_under_its_own_name() -> None:
    """Not on loopback (a key required): any Host, and an Origin that is that Host."""
    headers = {
        "host": "mcp.example.org:8000", "origin": "http://mcp.example.org:8000",
        "accept": ACCEPT, "authorization": f"Bearer {KEY}",
    }  # fmt: skip
    async with served(loopback=False, port=8000, api_key=KEY) as client:
        reply = await client.post("/mcp", json=INIT, headers=headers)
    assert reply.status_code == 200, reply.text


async def test_progress_comes_on_the_calls_own_stream_before_its_result(run: list[Run]) -> None:
    async def steps(session: ResearchSession) -> Any:
        session.emit(_step(1, "search"))
        session.emit(_step(2, "visit"))
        return _result(session, answer="Paris.")

    run.append(steps)
    headers = {"host": "127.0.0.1:8000", "accept": ACCEPT}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "research", "arguments": {"question": "Where?"},
        "_meta": {"progressToken": "p"}}}  # fmt: skip
    async with served(loopback=True, port=8000) as client:
        hello = await client.post("/mcp", json=INIT, headers=headers)
        headers["mcp-session-id"] = hello.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post("/mcp", json=done, headers=headers)
        reply = await client.post("/mcp", json=call, headers=headers)
    events = _events(reply)
    progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["message"].split()[1]) for p in progress] == [
        ("p", 1, "search"),
        ("p", 2, "visit"),
    ]
    assert events[-1]["id"] == 2 and events[-1]["result"]["content"][0]["text"] == "Paris."


def test_a_closed_stream_traceback_of_the_sdk_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A client ending its session normally made the SDK log an 11-line traceback."""
    import anyio

    from deepsearch.mcp_server.app import McpConfig, http_app

    http_app(McpConfig(options=OPTIONS, max_budget=1), loopback=True, port=8000)
    logger = logging.getLogger("mcp.server.streamable_http")
    for error in (anyio.ClosedResourceError(), RuntimeError("a real failure")):
        try:
            raise error
        except Exception:
            logger.exception("Error in standalone SSE writer")
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [RuntimeError]
