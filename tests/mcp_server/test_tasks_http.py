"""MCP Tasks over `deepsearch mcp --transport http`: the app on uvicorn in a thread, the
SDK's client with the bearer key; a task's whole life, and a running task cut short
when the server stops."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from tests.cli.test_end_to_end import QUESTION, SECRET
from tests.fakes.openai_server import FakeOpenAIServer
from tests.mcp_server.conftest import SLOW, Script, requests_for, wait_for
from tests.mcp_server.test_http import KEY, connected
from tests.mcp_server.test_tasks import config as config  # noqa: F401 - a fixture
from tests.mcp_server.test_tasks import result_of, runner, tasks_of, until

pytestmark = pytest.mark.filterwarnings("ignore:The experimental tasks API:DeprecationWarning")


def start(app: Any) -> tuple[Any, threading.Thread, str]:
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, f"http://127.0.0.1:{port}/mcp"


@pytest.mark.timeout(60)
async def test_tasks_over_http_and_a_running_one_cut_short_when_the_server_stops(
    config: Any,
    llm: FakeOpenAIServer,
    script: Script,  # noqa: F811
) -> None:
    from deepsearch.mcp_server.app import http_app

    config.api_key, config.secrets = KEY, [SECRET, KEY]
    lines: list[str] = []
    tasks = runner(log=lines.append)
    server, thread, url = start(http_app(config, loopback=True, runner=tasks))
    try:
        async with httpx.AsyncClient() as client:  # the key is asked of tasks/* too
            bare = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list"}
            assert (await client.post(url, json=bare)).status_code == 401
        async with connected(url) as session:
            created = await tasks_of(session).call_tool_as_task("research", {"question": QUESTION})
            done = await until(session, created.task.taskId, lambda s: s.status != "working")
            assert done.status == "completed"
            answer = await result_of(session, created.task.taskId)
            assert "Stephen King" in answer.content[0].text
            slow = await tasks_of(session).call_tool_as_task("research", {"question": SLOW})
            await wait_for(script.blocked)
        # The client is gone, its task runs on; then the server stops.
        assert (await tasks.store.get_task(slow.task.taskId)).status == "working"  # type: ignore[union-attr]
        server.should_exit = True
        thread.join(timeout=20)
        assert not thread.is_alive()
    finally:
        server.should_exit = True
        script.release.set()
    at_stop = requests_for(llm, SLOW)
    stopped = await tasks.store.get_task(slow.task.taskId)
    assert stopped is not None and stopped.status == "cancelled"
    [line] = lines
    assert line.startswith("deepsearch mcp: the server stopped: task …")
    await asyncio.sleep(0.05)  # the held reply went out: nobody asks for more
    assert requests_for(llm, SLOW) == at_stop
