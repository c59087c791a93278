"""MCP Tasks on `deepsearch mcp`, spoken to by the Python SDK's own client (its
experimental tasks API) over in-memory streams: the server's stdio session
(app.serve_streams) in front of the loopback fakes. Closing the client's stream is
stdin closing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli.test_end_to_end import QUESTION, SECRET
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.mcp_server.conftest import HELD, SLOW, Script, requests_for, wait_for

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.experimental.tasks import ExperimentalClientFeatures
    from mcp.types import GetTaskResult

    from deepsearch.mcp_server.app import McpConfig
    from deepsearch.mcp_server.tasks import TaskRunner

# The SDK marks its experimental tasks API deprecated for mcp 2.0 (pinned below 2).
pytestmark = pytest.mark.filterwarnings("ignore:The experimental tasks API:DeprecationWarning")


@pytest.fixture
def config(
    llm: FakeOpenAIServer, search: FakeSearchServers, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> McpConfig:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("HOME", str(tmp_path))
    from deepsearch.mcp_server.app import McpConfig

    options: dict[str, Any] = {
        "llm_provider": "openai", "search_provider": "searxng",
        "searxng_url": search.base_url("searxng"), "allow_private_urls": True,
        "no_cache": True, "budget": 200_000,
    }  # fmt: skip
    return McpConfig(options=options, max_budget=200_000, secrets=[SECRET])


def runner(max_concurrent: int = 4, max_ttl: float = 600, **kw: Any) -> TaskRunner:
    from deepsearch.mcp_server.tasks import TaskRunner

    return TaskRunner(max_concurrent=max_concurrent, max_ttl=max_ttl, **kw)


@asynccontextmanager
async def serving(
    config: McpConfig,
    tasks: TaskRunner,
    request_timeout: float | None = None,
    notes: list[Any] | None = None,
) -> AsyncIterator[ClientSession]:
    """A client session on the server's stdio session; on leaving, the client's stream
    closes (stdin) and the server's session ends."""
    import anyio
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from deepsearch.mcp_server.app import serve_streams

    wait = timedelta(seconds=request_timeout) if request_timeout else None
    async with create_client_server_memory_streams() as (client, server):
        async with anyio.create_task_group() as group:
            group.start_soon(serve_streams, config, *server, tasks)

            async def note(message: Any) -> None:
                if notes is not None:
                    notes.append(message)

            async with ClientSession(
                *client, read_timeout_seconds=wait, message_handler=note
            ) as session:
                await session.initialize()
                yield session
            await client[1].aclose()  # stdin closes


def tasks_of(session: ClientSession) -> ExperimentalClientFeatures:
    return session.experimental


async def until(
    session: ClientSession, task_id: str, done: Callable[[GetTaskResult], bool]
) -> GetTaskResult:
    for _ in range(1500):
        status = await tasks_of(session).get_task(task_id)
        if done(status):
            return status
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never got there: {status}")


def step_of(status: GetTaskResult) -> list[str]:
    return (status.statusMessage or "").split()[:2]


async def result_of(session: ClientSession, task_id: str) -> Any:
    from mcp.types import CallToolResult

    return await tasks_of(session).get_task_result(task_id, CallToolResult)


@pytest.mark.timeout(60)
async def test_a_run_longer_than_the_request_timeout_completes_as_a_task(
    config: McpConfig, llm: FakeOpenAIServer, script: Script
) -> None:
    import deepsearch.agent.loop
    import deepsearch.runtime  # noqa: F401 - a run's first imports are not the timeout's

    timeout = 0.5  # the client's request timeout, standing in for a host's limit
    notes: list[Any] = []
    async with serving(config, runner(), request_timeout=timeout, notes=notes) as session:
        [tool] = (await session.list_tools()).tools
        assert tool.execution is not None and tool.execution.taskSupport == "optional"
        capabilities = session.get_server_capabilities()
        assert capabilities and capabilities.tasks and capabilities.tasks.requests
        assert capabilities.tasks.requests.tools and capabilities.tasks.cancel

        started = time.monotonic()
        created = await tasks_of(session).call_tool_as_task(
            "research", {"question": HELD}, meta={"progressToken": "p"}
        )
        assert created.task.status == "working"
        task_id = created.task.taskId
        await wait_for(script.blocked)  # the run is held at its second step
        working = await until(session, task_id, lambda s: step_of(s) == ["1", "search"])
        assert working.status == "working"
        await asyncio.sleep(max(0, started + timeout * 1.2 - time.monotonic()))  # past it
        assert (await tasks_of(session).get_task(task_id)).status == "working"
        script.release.set()
        done = await until(session, task_id, lambda s: s.status != "working")
        assert done.status == "completed" and time.monotonic() - started > timeout

        first, again = await result_of(session, task_id), await result_of(session, task_id)
        assert first.model_dump(exclude={"meta"}) == again.model_dump(exclude={"meta"})
        assert not first.isError and "Stephen King" in first.content[0].text
        assert "[^1]:" in first.content[0].text
        structured = first.structuredContent or {}
        assert structured["status"] == "answered" and structured["references"]
        listed = (await tasks_of(session).list_tasks()).tasks
        assert [(t.taskId, t.status) for t in listed] == [(task_id, "completed")]
    progress = [n.root.params for n in notes if n.root.method == "notifications/progress"]
    assert {p.progressToken for p in progress} == {"p"}  # for a client that listens
    assert [p.message.split()[1] for p in progress] == ["search", "visit", "answer"]


async def test_a_task_result_is_what_a_plain_call_returns(config: McpConfig) -> None:
    async with serving(config, runner()) as session:
        plain = await session.call_tool("research", {"question": "Question one?"})
        created = await tasks_of(session).call_tool_as_task(
            "research", {"question": "Question two?"}
        )
        await until(session, created.task.taskId, lambda s: s.status != "working")
        task = await result_of(session, created.task.taskId)
        assert task.meta["io.modelcontextprotocol/related-task"]["taskId"] == created.task.taskId
        # The same shape and content; each run has its own run_id (the history's key).
        task_dump, plain_dump = (
            task.model_dump(exclude={"meta"}),
            plain.model_dump(exclude={"meta"}),
        )
        assert task_dump["structuredContent"].pop("run_id") != plain_dump["structuredContent"].pop(
            "run_id"
        )
        assert task_dump == plain_dump

        bad = await tasks_of(session).call_tool_as_task("research", {"question": "q?", "x": 1})
        failed = await until(session, bad.task.taskId, lambda s: s.status != "working")
        assert failed.status == "failed" and "x: unknown argument" in (failed.statusMessage or "")
        assert (await result_of(session, bad.task.taskId)).isError


@pytest.mark.timeout(60)
async def test_cancel_stops_the_research_and_keeps_what_it_found(
    config: McpConfig, llm: FakeOpenAIServer, script: Script
) -> None:
    async with serving(config, runner()) as session:
        created = await tasks_of(session).call_tool_as_task("research", {"question": SLOW})
        task_id = created.task.taskId
        await wait_for(script.blocked)
        cancelled = await tasks_of(session).cancel_task(task_id)
        assert cancelled.status == "cancelled"
        at_cancel = requests_for(llm, SLOW)
        script.release.set()  # the held reply goes out: an uncancelled run would go on
        after = await session.call_tool("research", {"question": QUESTION})
        assert not after.isError
        assert requests_for(llm, SLOW) == at_cancel, "an LLM call after the cancel"

        status = await tasks_of(session).get_task(task_id)
        assert status.status == "cancelled" and "tasks/cancel" in (status.statusMessage or "")
        partial = await result_of(session, task_id)
        assert partial.isError and partial.content[0].text.startswith("error: cancelled by the client")  # fmt: skip
        assert (partial.structuredContent or {})["status"] == "interrupted"
        from mcp.shared.exceptions import McpError

        with pytest.raises(McpError, match="terminal state 'cancelled'"):
            await tasks_of(session).cancel_task(task_id)


async def test_an_unknown_task_or_another_sessions_is_not_found(config: McpConfig) -> None:
    from mcp.shared.exceptions import McpError

    tasks = runner()
    async with serving(config, tasks) as session:
        for ask in (
            tasks_of(session).get_task, tasks_of(session).cancel_task,
            lambda i: result_of(session, i),
        ):  # fmt: skip
            with pytest.raises(McpError, match="Task not found: no-such-task"):
                await ask("no-such-task")
        created = await tasks_of(session).call_tool_as_task("research", {"question": QUESTION})
        mine = created.task.taskId
        await until(session, mine, lambda s: s.status != "working")
        async with serving(config, tasks) as other:  # the same server, another session
            with pytest.raises(McpError, match="Task not found"):
                await tasks_of(other).get_task(mine)
            with pytest.raises(McpError, match="Task not found"):
                await result_of(other, mine)
            with pytest.raises(McpError, match="Task not found"):
                await tasks_of(other).cancel_task(mine)
            assert (await tasks_of(other).list_tasks()).tasks == []


@pytest.mark.timeout(60)
async def test_tasks_beyond_max_concurrent_wait_for_a_slot(
    config: McpConfig, llm: FakeOpenAIServer, script: Script
) -> None:
    async with serving(config, runner(max_concurrent=1)) as session:
        slow = await tasks_of(session).call_tool_as_task("research", {"question": SLOW})
        await wait_for(script.blocked)
        second = await tasks_of(session).call_tool_as_task("research", {"question": QUESTION})
        waiting = await tasks_of(session).get_task(second.task.taskId)
        assert waiting.status == "working"
        assert waiting.statusMessage == "waiting for a research slot (all 1 busy)"
        assert requests_for(llm, QUESTION) == 0
        await tasks_of(session).cancel_task(slow.task.taskId)  # frees the slot
        script.release.set()
        done = await until(session, second.task.taskId, lambda s: s.status != "working")
        assert done.status == "completed" and requests_for(llm, QUESTION) > 0


async def test_the_ttl_is_the_clients_within_the_servers_maximum(config: McpConfig) -> None:
    async with serving(config, runner(max_ttl=600)) as session:
        asked = {1_000: 1_000, 10**9: 600_000}
        for ttl, kept in asked.items():
            created = await tasks_of(session).call_tool_as_task(
                "research", {"question": f"Kept {ttl}?"}, ttl=ttl
            )
            assert created.task.ttl == kept
            await until(session, created.task.taskId, lambda s: s.status != "working")


@pytest.mark.timeout(60)
async def test_closing_stdin_cancels_running_tasks_with_their_partial_results(
    config: McpConfig, llm: FakeOpenAIServer, script: Script
) -> None:
    lines: list[str] = []
    tasks = runner(log=lines.append)
    async with serving(config, tasks) as session:
        created = await tasks_of(session).call_tool_as_task("research", {"question": SLOW})
        await wait_for(script.blocked)
    # The session is over (the server's run returned): the task was cancelled there.
    at_close = requests_for(llm, SLOW)
    script.release.set()
    task = await tasks.store.get_task(created.task.taskId)
    assert task is not None and task.status == "cancelled"
    result: Any = await tasks.store.get_result(created.task.taskId)
    assert result.structuredContent["status"] == "interrupted"
    assert result.content[0].text.startswith("error: cancelled: stdin closed")
    [line] = lines
    assert line.startswith("deepsearch mcp: stdin closed: task …") and "references" in line
    assert SLOW not in line
    await asyncio.sleep(0.05)  # the held reply went out: nobody asks for more
    assert requests_for(llm, SLOW) == at_close


async def test_a_finished_task_is_kept_for_its_ttl_and_a_running_one_while_it_runs() -> None:
    from mcp.types import CallToolResult, TaskMetadata

    from deepsearch.mcp_server.task_store import ResearchTaskStore
    from tests.fakes.clock import FakeClock

    clock = FakeClock()
    store = ResearchTaskStore(clock)
    task = await store.create_task(TaskMetadata(ttl=10_000))
    clock.advance(3600)  # far past its TTL, still running: kept
    assert await store.get_task(task.taskId) is not None
    waiters = [asyncio.create_task(store.wait_for_update(task.taskId)) for _ in range(2)]
    await asyncio.sleep(0)
    await store.store_result(task.taskId, CallToolResult(content=[]))
    await store.update_task(task.taskId, status="completed")
    await asyncio.wait_for(asyncio.gather(*waiters), 5)  # both tasks/result requests wake
    clock.advance(9.9)
    assert (await store.list_tasks())[0][0].status == "completed"
    clock.advance(0.2)  # its TTL after it finished
    assert await store.get_task(task.taskId) is None and await store.list_tasks() == ([], None)


async def test_a_task_cancelled_before_it_began_is_cancelled() -> None:
    """Found in review: a cancel that came before the background task's first step left
    the task `working` for ever (its coroutine never ran to record anything)."""
    from types import SimpleNamespace

    from mcp.types import TaskMetadata

    async def research(*_: Any) -> Any:
        raise AssertionError("never started")

    tasks = runner()
    ctx = SimpleNamespace(
        session=SimpleNamespace(experimental=SimpleNamespace(task_session_scope=None)),
        experimental=SimpleNamespace(task_metadata=TaskMetadata(ttl=1000)),
        meta=None,
    )
    created = await tasks.start(SimpleNamespace(request_context=ctx), research)  # type: ignore[arg-type]
    reply = await tasks.cancel(created.task.taskId)  # before the loop ran the task
    assert reply.status == "cancelled"
    result: Any = await tasks.store.get_result(created.task.taskId)
    assert result.isError and "before it began" in result.content[0].text
    assert await tasks.shutdown("stdin closed") == 0  # nothing left running
