"""The MCP server under test, in front of the usual loopback fakes (the
OpenAI-compatible LLM, SearXNG and the HotpotQA pages of tests/cli/test_end_to_end.py).
The client is the SDK's own (`mcp.ClientSession`)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    SEARCH,
    VISIT,
    Router,
    router,
    schema_name,
)
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers

if TYPE_CHECKING:  # the SDK loads when a test talks to the server, not to collect
    from mcp import ClientSession

SLOW = "Which slow question will the client give up on?"
HELD = "Which held question outlasts the client's request timeout?"


def server_flags(search: FakeSearchServers) -> list[str]:  # noqa: F811
    return [
        "--llm-provider", "openai", "--search-provider", "searxng",
        "--searxng-url", search.base_url("searxng"), "--allow-private-urls", "--no-cache",
        "--budget", "200000",
    ]  # fmt: skip


class Script:
    """Each question gets its own strict script, built when it is first asked: the
    whole SEARCH, VISIT, ANSWER; SLOW's second step blocks (the fake holds the
    request) until `release` is set, and its run is cancelled there: no third step.
    HELD's second step blocks the same way, then its run goes on to the answer."""

    def __init__(self) -> None:
        self.routers: dict[str, Router] = {}
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.slow_steps = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        key = body["messages"][-1]["content"] if schema_name(body) == "AgentStep" else ""
        if key in (SLOW, HELD):
            self.slow_steps += 1
            if self.slow_steps == 2:
                self.blocked.set()
                self.release.wait(20)
        if key not in self.routers:  # "": the checks, no step
            steps = [SEARCH, VISIT] if key == SLOW else [SEARCH, VISIT, ANSWER_STEP]
            self.routers[key] = router(steps if key else [])
        return self.routers[key](body)


@pytest.fixture
def script() -> Iterator[Script]:
    script = Script()
    yield script
    script.release.set()


@pytest.fixture
def llm(script: Script) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(script) as server:
        yield server


def requests_for(llm: FakeOpenAIServer, question: str) -> int:
    """LLM requests whose prompt carries `question` (a run's every call does)."""
    return sum(question in json.dumps(r.body) for r in llm.chat_requests)


async def wait_for(flag: threading.Event) -> None:
    for _ in range(2000):
        if flag.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the fake never saw the blocking request")


async def cancel_mid_run(
    session: ClientSession, script: Script, llm: FakeOpenAIServer
) -> tuple[int, int]:
    """Start SLOW, cancel it while its LLM call is held, then release the fake: the
    (requests for SLOW when cancelled, requests for SLOW after a whole other call)."""
    import mcp.types as types
    from mcp.shared.exceptions import McpError

    request_id = session._request_id  # the id the next request gets
    call = asyncio.create_task(session.call_tool("research", {"question": SLOW}))
    await wait_for(script.blocked)
    cancel = types.CancelledNotification(
        params=types.CancelledNotificationParams(requestId=request_id, reason="gave up")
    )
    await session.send_notification(types.ClientNotification(cancel))
    with pytest.raises(McpError, match="cancelled"):
        await call
    at_cancel = requests_for(llm, SLOW)
    script.release.set()  # the held reply goes out: an uncancelled run would go on
    after = await session.call_tool("research", {"question": "Who directed it, again?"})
    assert not after.isError, after.content  # the server goes on serving
    return at_cancel, requests_for(llm, SLOW)


Progress = Callable[[float, float | None, str | None], Any]


def progress_sink(messages: list[str]) -> Progress:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    return on_progress
