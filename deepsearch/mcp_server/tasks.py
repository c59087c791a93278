"""MCP Tasks for the `research` tool, on the SDK's experimental task support (mcp 1.x:
`server.experimental.enable_tasks`, deprecated for 2.0, hence the pin below 2).

A tools/call with a `task` field gets its task back at once (CreateTaskResult) and the
research runs in the background, so no request timeout of the host cuts it:

- tasks/get: `working`, its status message the live view's line of the last finished
  step (or "waiting for a research slot"), then `completed`, `failed` (the result is an
  error result) or `cancelled`; tasks/list: the session's own tasks (the SDK's handlers
  on this module's store, task_store.py).
- tasks/result: exactly the CallToolResult a plain call returns, as often as asked while
  the task is kept (waits while it runs).
- tasks/cancel: the research is cancelled where it is (the LLM call in flight: no call
  after it) and the task's result is what it had found so far (status `interrupted`).
- Progress notifications go on with the call's progress token, for clients that listen.

Limits: at most `max_concurrent` researches run at once, plain calls and tasks together
(`--max-concurrent`); a task beyond waits for a slot. A finished task is kept for the
TTL its client asked for, never more than `--task-ttl` (the default when it asks none),
then forgotten; a running one is kept while it runs. When stdin closes or the server
stops, running tasks are cancelled and each gets its partial result and one stderr line.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server.experimental.task_scope import scoped_task_id
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError

from deepsearch.clock import Clock
from deepsearch.mcp_server.task_store import ResearchTaskStore

Sender = Callable[[int, str], Awaitable[None]]
# A research for a task: (its step sender, why it was cancelled) -> the call's result.
Research = Callable[[Sender, Callable[[], str]], Awaitable[types.CallToolResult]]

BY_CLIENT = "cancelled by the client (tasks/cancel)"


@dataclass
class _Run:
    task: asyncio.Task[None] | None = None
    reason: str = BY_CLIENT
    cancelled: bool = False
    finishing: bool = False  # the research returned: too late to cancel it


def _quiet(get: Callable[[], Any]) -> Any:
    """The SDK's experimental task API, without its deprecation warning (pinned < 2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return get()


class TaskRunner:
    """One server's research slots and tasks (for HTTP: all its sessions')."""

    def __init__(
        self,
        *,
        max_concurrent: int = 4,
        max_ttl: float = 3600.0,
        clock: Clock | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.store = ResearchTaskStore(clock)
        self.max_concurrent = max_concurrent
        self.max_ttl_ms = int(max_ttl * 1000)
        self._slots: asyncio.Semaphore | None = None
        self._runs: dict[str, _Run] = {}
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))

    def ttl_ms(self, requested: int | None) -> int:
        """The client's TTL within the server's maximum (the maximum when it asks none)."""
        if requested is None or requested <= 0:
            return self.max_ttl_ms
        return min(requested, self.max_ttl_ms)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One of the `max_concurrent` research slots, waited for."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrent)
        async with self._slots:
            yield

    def enable(self, server: Server[Any, Any]) -> None:
        """Task support on `server`: the SDK's handlers (and capability) on this store, and
        a tasks/cancel that stops the research."""
        _quiet(lambda: server.experimental.enable_tasks(store=self.store))
        check = server.request_handlers[types.GetTaskRequest]  # not found, not this session's

        async def cancel(request: types.CancelTaskRequest) -> types.ServerResult:
            task_id = request.params.taskId
            await check(types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task_id)))
            return types.ServerResult(await self.cancel(task_id))

        server.request_handlers[types.CancelTaskRequest] = cancel

    @staticmethod
    def requested(server: Server[Any, Any]) -> bool:
        """Whether the current tools/call asks to run as a task."""
        return bool(server.request_context.experimental.is_task)

    async def start(self, server: Server[Any, Any], research: Research) -> types.CreateTaskResult:
        """The task, created now; its research goes on in the background."""
        ctx = server.request_context
        scope = _quiet(lambda: ctx.session.experimental.task_session_scope)
        asked = ctx.experimental.task_metadata
        metadata = types.TaskMetadata(ttl=self.ttl_ms(asked.ttl if asked else None))
        task = await self.store.create_task(metadata, scoped_task_id(scope) if scope else None)
        run = self._runs[task.taskId] = _Run()
        run.task = asyncio.create_task(self._run(task.taskId, research, _notifier(ctx), run))
        return types.CreateTaskResult(task=task)

    async def _run(
        self, task_id: str, research: Research, notify: Sender | None, run: _Run
    ) -> None:
        async def send(count: int, line: str) -> None:
            await self.store.update_task(task_id, status_message=line)
            if notify is not None:
                with suppress(Exception):  # a client gone must not stop the run
                    await notify(count, line)

        try:
            if self._slots is not None and self._slots.locked():
                busy = f"waiting for a research slot (all {self.max_concurrent} busy)"
                await self.store.update_task(task_id, status_message=busy)
            async with self.slot():
                result = await research(send, lambda: run.reason)
                run.finishing = True
        except asyncio.CancelledError:  # before its research began
            result = _error(f"error: {run.reason} before the research began")
        await self._finish(task_id, run, result)

    async def _finish(self, task_id: str, run: _Run, result: types.CallToolResult) -> None:
        self._runs.pop(task_id, None)
        status: types.TaskStatus = (
            "cancelled" if run.cancelled else "failed" if result.isError else "completed"
        )
        message = run.reason if run.cancelled else _first_line(result)
        await self.store.store_result(task_id, result)  # before the status: waiters read it
        await self.store.update_task(task_id, status=status, status_message=message)

    async def cancel(self, task_id: str, reason: str = BY_CLIENT) -> types.CancelTaskResult:
        """Stop a running task's research; its partial result is stored when this returns."""
        run = self._runs.get(task_id)
        if run is not None and run.task is not None:
            if not run.finishing:
                run.cancelled, run.reason = True, reason
                run.task.cancel()
            await asyncio.wait({run.task})
            if run.task.cancelled():  # so early that not a line of it ran
                await self._finish(task_id, run, _error(f"error: {run.reason} before it began"))
        task = await self.store.get_task(task_id)
        if task is None:
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Task not found: {task_id}"))  # fmt: skip
        if run is None or not run.cancelled:
            message = f"Cannot cancel task in terminal state '{task.status}'"
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=message))
        return types.CancelTaskResult(**task.model_dump())

    async def shutdown(self, reason: str) -> int:
        """Cancel every running task (stdin closed, the server stops), each reported in
        one stderr line with what it had found; how many there were."""
        ids = list(self._runs)
        await asyncio.gather(*(self.cancel(i, f"cancelled: {reason}") for i in ids), return_exceptions=True)  # fmt: skip
        stopped = [
            i for i in ids if (t := await self.store.get_task(i)) and t.status == "cancelled"
        ]
        for task_id in stopped:
            result = await self.store.get_result(task_id)
            self._log(f"deepsearch mcp: {reason}: task …{task_id[-8:]} cancelled, {_found(result)}")
        return len(stopped)


def _notifier(ctx: Any) -> Sender | None:
    """Progress notifications on the call's token, after the call's own response."""
    token = ctx.meta.progressToken if ctx.meta is not None else None
    if token is None:
        return None
    session = ctx.session

    async def notify(count: int, line: str) -> None:
        await session.send_progress_notification(token, count, message=line)

    return notify


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)


def _first_line(result: types.CallToolResult) -> str:
    first = result.content[0] if result.content else None
    text = first.text if isinstance(first, types.TextContent) else ""
    return (text.splitlines() or ["done"])[0][:200] if result.isError else "done"


def _found(result: types.Result | None) -> str:
    """What a cut-short task had found, in counts (never the question or the answer)."""
    data = getattr(result, "structuredContent", None) or {}
    refs, answer = len(data.get("references") or []), len(data.get("answer") or "")
    tokens = (data.get("usage") or {}).get("total_tokens", 0)
    return f"its partial result kept: {answer} characters of answer, {refs} references, {tokens} tokens"
