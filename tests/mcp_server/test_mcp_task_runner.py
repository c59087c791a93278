"""The task runner (tasks.py) at the unit level, with stand-in researches and a stand-in
request context (no client, no session): a task's status line, a client gone mid-run,
the stderr line of a task cut short (counts only), a cancel of no such task."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from deepsearch.mcp_server.tasks import TaskRunner

pytestmark = pytest.mark.filterwarnings("ignore:The experimental tasks API:DeprecationWarning")


def _server(progress: Any = None, ttl: int = 60_000) -> Any:
    """What TaskRunner.start reads of the SDK's server: the request's context."""
    from mcp.types import TaskMetadata

    session = SimpleNamespace(experimental=SimpleNamespace(task_session_scope=None))
    session.send_progress_notification = progress
    ctx = SimpleNamespace(
        session=session,
        experimental=SimpleNamespace(task_metadata=TaskMetadata(ttl=ttl)),
        meta=SimpleNamespace(progressToken="p") if progress else None,
    )
    return SimpleNamespace(request_context=ctx)


def _result(text: str, *, error: bool = False, structured: Any = None) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    content = [TextContent(type="text", text=text)]
    return CallToolResult(content=content, isError=error, structuredContent=structured)


async def _finished(runner: TaskRunner, task_id: str) -> Any:
    for _ in range(1000):
        task = await runner.store.get_task(task_id)
        if task is not None and task.status != "working":
            return task
        await asyncio.sleep(0)
    raise AssertionError(f"task {task_id} still working")


async def _run(runner: TaskRunner, result: CallToolResult, progress: Any = None) -> Any:
    async def research(send: Any, why: Any) -> CallToolResult:
        await send(1, "1 search  the first step")
        return result

    created = await runner.start(_server(progress), research)
    return await _finished(runner, created.task.taskId)


async def test_a_tasks_status_line_is_done_or_its_errors_first_line() -> None:
    from deepsearch.mcp_server.tasks import TaskRunner

    runner = TaskRunner()
    done = await _run(runner, _result("Paris.\n\n[^1]: A — https://a.example"))
    assert (done.status, done.statusMessage) == ("completed", "done")
    failed = await _run(runner, _result("error: LLM down\n\nHalf an answer.", error=True))
    assert (failed.status, failed.statusMessage) == ("failed", "error: LLM down")
    long = await _run(runner, _result("error: " + "x" * 300, error=True))
    assert long.statusMessage == "error: " + "x" * 193  # 200 characters at most
    assert runner._runs == {}  # a finished task leaves nothing running behind


async def test_a_client_gone_mid_run_does_not_stop_its_task() -> None:
    from deepsearch.mcp_server.tasks import TaskRunner

    sent: list[Any] = []

    async def gone(token: Any, count: int, message: str = "") -> None:
        sent.append((token, count, message))
        raise ConnectionResetError("client gone")

    done = await _run(TaskRunner(), _result("Paris."), progress=gone)
    assert done.status == "completed"
    assert sent == [("p", 1, "1 search  the first step")]


async def test_a_task_cut_short_logs_what_it_had_found_in_counts() -> None:

    from deepsearch.mcp_server.tasks import TaskRunner

    lines: list[str] = []
    runner = TaskRunner(max_concurrent=1, log=lines.append)
    started = asyncio.Event()
    partial = {"answer": "Half.", "references": [{"url": "u"}, {"url": "v"}],
               "usage": {"total_tokens": 90}}  # fmt: skip

    async def research(send: Any, why: Any) -> CallToolResult:
        try:
            started.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # as call_research: what it found so far
            return _result(f"error: {why()}", error=True, structured=partial)
        raise AssertionError("never ends by itself")

    first = await runner.start(_server(), research)
    await started.wait()
    queued = await runner.start(_server(), research)  # waits for the one slot
    await asyncio.sleep(0)
    assert await runner.shutdown("stdin closed") == 2
    kept = "deepsearch mcp: stdin closed: task …{} cancelled, its partial result kept: {}"
    assert sorted(lines) == sorted([
        kept.format(first.task.taskId[-8:], "5 characters of answer, 2 references, 90 tokens"),
        kept.format(queued.task.taskId[-8:], "0 characters of answer, 0 references, 0 tokens"),
    ])  # fmt: skip
    result: Any = await runner.store.get_result(first.task.taskId)
    assert result.content[0].text == "error: cancelled: stdin closed"
    status = await runner.store.get_task(first.task.taskId)
    assert status is not None and status.statusMessage == "cancelled: stdin closed"
    never: Any = await runner.store.get_result(queued.task.taskId)  # still a result
    assert never.isError
    assert never.content[0].text == "error: cancelled: stdin closed before the research began"


async def test_cancelling_no_such_task_is_an_invalid_params_error() -> None:
    from mcp.shared.exceptions import McpError
    from mcp.types import INVALID_PARAMS

    from deepsearch.mcp_server.tasks import TaskRunner

    with pytest.raises(McpError) as caught:
        await TaskRunner().cancel("no-such-task")
    assert caught.value.error.code == INVALID_PARAMS
    assert caught.value.error.message == "Task not found: no-such-task"


def test_a_tasks_ttl_is_the_clients_within_the_servers_maximum() -> None:
    from deepsearch.mcp_server.tasks import TaskRunner

    runner = TaskRunner(max_ttl=600)  # --task-ttl 600 (seconds); TTLs in milliseconds
    asked = {None: 600_000, 0: 600_000, -5: 600_000, 1: 1, 599_999: 599_999, 600_001: 600_000}
    assert {ttl: runner.ttl_ms(ttl) for ttl in asked} == asked


async def test_a_finished_task_is_forgotten_its_ttl_after_on_the_runners_clock() -> None:
    from deepsearch.mcp_server.tasks import TaskRunner
    from tests.fakes.clock import FakeClock

    clock = FakeClock()
    runner = TaskRunner(max_ttl=60, clock=clock)
    done = await _run(runner, _result("Paris."))  # its client asked 60,000 ms
    clock.advance(59.5)
    assert await runner.store.get_task(done.taskId) is not None
    clock.advance(0.5)
    assert await runner.store.get_task(done.taskId) is None


async def test_without_a_log_a_cut_short_task_is_one_line_on_stderr_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import sys

    from deepsearch.mcp_server.tasks import TaskRunner
    from tests.mcp_server.test_mcp_mutants import _Raw

    pipe = io.BytesIO()
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BufferedWriter(_Raw(pipe))))
    runner = TaskRunner()

    async def hold(send: Any, why: Any) -> CallToolResult:
        await asyncio.Event().wait()
        raise AssertionError("cut short first")

    created = await runner.start(_server(), hold)
    await asyncio.sleep(0)
    assert await runner.shutdown("the server stopped") == 1
    assert pipe.getvalue().decode() == (
        f"deepsearch mcp: the server stopped: task …{created.task.taskId[-8:]} cancelled, "
        "its partial result kept: 0 characters of answer, 0 references, 0 tokens\n"
    )


async def test_a_task_forgotten_as_it_is_cut_short_does_not_stop_the_shutdown() -> None:
    """A client may ask a TTL of 1 ms: the task is gone by the time its cancel looks
    it up again; the other running tasks are still cut short and logged."""
    from deepsearch.mcp_server.tasks import TaskRunner
    from tests.fakes.clock import FakeClock

    lines: list[str] = []
    runner = TaskRunner(clock=FakeClock(tick=0.01), log=lines.append)  # 10 ms a reading

    async def hold(send: Any, why: Any) -> CallToolResult:
        await asyncio.Event().wait()
        raise AssertionError("cut short first")

    await runner.start(_server(ttl=1), hold)
    kept = await runner.start(_server(), hold)
    await asyncio.sleep(0)
    assert await runner.shutdown("stdin closed") == 1
    assert [line.split(",")[0] for line in lines] == [
        f"deepsearch mcp: stdin closed: task …{kept.task.taskId[-8:]} cancelled"
    ]
