"""The MCP server on the official SDK's low-level `Server`: one tool, `research`, each
call a deepsearch.session.ResearchSession (as the CLI's run), over stdio or streamable
HTTP.

- Progress: with a progress token, one notifications/progress per finished step, its
  message the live view's step line, sent in order before the result.
- Cancellation: the SDK cancels the call's task on notifications/cancelled; the
  cancellation reaches the LLM call in flight (no call after it) and the server goes on.
- Errors are tool results with isError and one line, never a crash of the server.
- Tasks (a tools/call with a `task` field): tasks.py; at most `max_concurrent`
  researches at once, plain calls and tasks together.
- stdio: only JSON-RPC on stdout (anything else printed goes to stderr); the server
  ends when stdin closes.
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server.lowlevel import Server

from deepsearch.agent.events import AgentEvent, StepFinished
from deepsearch.errors import ConfigError, DeepsearchError
from deepsearch.mcp_server import tool
from deepsearch.mcp_server.call_log import log_call
from deepsearch.mcp_server.tasks import Sender, TaskRunner
from deepsearch.version import __version__

if TYPE_CHECKING:
    from starlette.applications import Starlette


@dataclass
class McpConfig:
    options: dict[str, Any]  # the server's research options (the flags), provider pinned
    max_budget: int
    api_key: str | None = None
    secrets: list[str] = field(default_factory=list)
    max_concurrent: int = 4  # researches at once (tasks.py)
    task_ttl: float = 3600.0  # seconds a finished task is kept, at most

    def mask(self, text: str) -> str:
        from deepsearch.config import redact_secrets  # the one rule: length, order, mask

        return redact_secrets(text, self.secrets)


def step_line(event: StepFinished) -> str:
    """The live view's step line, as plain text (frontend/live.py renders it)."""
    from rich.console import Console

    from deepsearch.frontend.live import LiveView

    view = LiveView(quiet=True, console=Console(file=io.StringIO()))
    return view.step_lines(event, None)[0].plain


class Progress:
    """Sends one notifications/progress per finished step, in order, from the run's
    (synchronous) events; nothing without a progress token."""

    def __init__(self, send: Callable[[int, str], Any] | None) -> None:
        self._send = send
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.count = 0

    def __call__(self, event: AgentEvent) -> None:
        if self._send is not None and isinstance(event, StepFinished):
            self._queue.put_nowait(step_line(event))

    async def __aenter__(self) -> Progress:
        if self._send is not None:
            self._task = asyncio.create_task(self._drain())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self._task is None:
            return
        if kind is None:  # the run is over: the last steps go out before the result
            self._queue.put_nowait(None)
            await self._task
        else:
            self._task.cancel()

    async def _drain(self) -> None:
        assert self._send is not None
        while (line := await self._queue.get()) is not None:
            self.count += 1
            try:
                await self._send(self.count, line)
            except Exception:  # a client gone mid-run must not break the run
                return


def masked(value: Any, mask: Callable[[str], str]) -> Any:
    """`value` (JSON data) with `mask` applied to every string in it: the structured
    result carries the same answer and error as the text, so it is masked the same."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: masked(item, mask) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item, mask) for item in value]
    return value


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], isError=True
    )


async def call_research(
    config: McpConfig,
    arguments: Mapping[str, Any] | None,
    progress: Progress,
    on_cancel: Callable[[], str] | None = None,
) -> types.CallToolResult:
    """One call: validated arguments, the run, its result; every failure a result. With
    `on_cancel` (a task), a cancellation gives what was found so far, its error that."""
    from deepsearch.session import ResearchSession

    try:
        question, knobs = tool.parse_arguments(arguments)
        settings = tool.call_settings(config.options, knobs, config.max_budget)
        earlier = tool.earlier(settings, knobs)
    except (tool.ArgumentError, DeepsearchError) as exc:
        log_call(
            None,
            rejected="bad arguments" if isinstance(exc, tool.ArgumentError) else "configuration",
        )
        return error_result(config.mask(f"error: {exc}"))
    session = ResearchSession(question, settings, emit=progress, earlier=earlier)
    try:
        async with progress:
            result = await session.execute()
    except ConfigError as exc:
        result = session.refused(exc)
    except asyncio.CancelledError:
        if on_cancel is None:
            raise
        result = session.cut_short("interrupted", on_cancel())
    for warning in session.warnings:  # the history could not keep the run (stderr: a log)
        sys.stderr.write(f"deepsearch mcp: warning: {warning}\n")
    log_call(result)
    structured = masked(tool.output(result).model_dump(mode="json"), config.mask)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=config.mask(tool.text(result)))],
        structuredContent=structured,
        isError=tool.is_error(result),
    )


def build_server(config: McpConfig, runner: TaskRunner | None = None) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("deepsearch", version=__version__)
    runner = runner or runner_for(config)
    runner.enable(server)
    research_tool = types.Tool(
        name=tool.TOOL_NAME,
        title="Deep research",
        description=(
            "Research a question on the web (search, read, reason, check) and return one "
            "answer with numbered, verbatim-quoted references. Takes minutes; reports "
            "progress per step."
        ),
        inputSchema=tool.input_schema(),
        outputSchema=tool.output_schema(),
        execution=types.ToolExecution(taskSupport="optional"),
    )

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [research_tool]

    @server.call_tool(validate_input=False)
    async def call_tool(
        name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | types.CreateTaskResult:
        if runner.requested(server):  # a task: answered now, run in the background

            async def research(send: Sender, why: Callable[[], str]) -> types.CallToolResult:
                return await guarded_call(config, name, arguments, Progress(send), why)

            return await runner.start(server, research)
        async with runner.slot():
            return await guarded_call(config, name, arguments, Progress(_sender(server)))

    return server


def runner_for(config: McpConfig) -> TaskRunner:
    return TaskRunner(max_concurrent=config.max_concurrent, max_ttl=config.task_ttl)


async def guarded_call(
    config: McpConfig,
    name: str,
    arguments: Mapping[str, Any] | None,
    progress: Progress,
    on_cancel: Callable[[], str] | None = None,
) -> types.CallToolResult:
    if name != tool.TOOL_NAME:
        return error_result(f"error: unknown tool {name!r} (this server has {tool.TOOL_NAME!r})")
    try:
        return await call_research(config, arguments, progress, on_cancel)
    except Exception as exc:  # a bug: one line for the client, the server goes on
        return error_result(config.mask(f"error: internal error: {type(exc).__name__}: {exc}"))


def _sender(server: Server[Any, Any]) -> Callable[[int, str], Any] | None:
    ctx = server.request_context
    token = ctx.meta.progressToken if ctx.meta is not None else None
    if token is None:
        return None

    async def send(count: int, message: str) -> None:
        await ctx.session.send_progress_notification(
            token, count, message=message, related_request_id=str(ctx.request_id)
        )

    return send


async def serve_stdio(config: McpConfig) -> None:
    """Until stdin closes (running tasks are then cancelled). stdout is the protocol's
    alone: `print` goes to stderr."""
    import anyio
    from mcp.server.stdio import stdio_server

    protocol = anyio.wrap_file(io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    sys.stdout = sys.stderr
    async with stdio_server(stdout=protocol) as (read, write):
        await serve_streams(config, read, write)


async def serve_streams(
    config: McpConfig, read: Any, write: Any, runner: TaskRunner | None = None
) -> None:
    """One session until its input ends; its running tasks are then cancelled."""
    runner = runner or runner_for(config)
    server = build_server(config, runner)
    why = "stdin closed"
    try:
        await server.run(read, write, server.create_initialization_options())
    except asyncio.CancelledError:  # Ctrl-C
        why = "interrupted"
        raise
    finally:
        await runner.shutdown(why)


def closed_stream_noise(record: logging.LogRecord) -> bool:
    """False for the SDK's traceback when a client ends its session normally (its
    standalone SSE writer finds the stream closed: anyio.ClosedResourceError), which
    says nothing wrong; every other record passes."""
    import anyio

    error = record.exc_info[1] if record.exc_info else None
    return not isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


def http_app(
    config: McpConfig,
    *,
    loopback: bool,
    port: int | None = None,
    runner: TaskRunner | None = None,
) -> Starlette:
    """The streamable HTTP endpoint at /mcp, behind serve's bearer-key check and its
    guard (server/guard.py: on a loopback address a loopback Host name, an Origin only
    of this server's own `port`, JSON POSTs only, no body past MAX_BODY_BYTES or
    nested past MAX_JSON_DEPTH: the SDK would read any size and recurse)."""
    import contextlib
    from collections.abc import AsyncIterator

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send

    from deepsearch.server.app import MAX_BODY_BYTES, authorized, unauthorized
    from deepsearch.server.guard import RequestGuard

    own = "*" if port is None else str(port)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[f"http://{name}:{own}" for name in ("127.0.0.1", "localhost", "[::1]")],
    )
    runner = runner or runner_for(config)
    manager = StreamableHTTPSessionManager(
        app=build_server(config, runner), security_settings=security
    )
    logging.getLogger("mcp.server.streamable_http").addFilter(closed_stream_noise)

    class Endpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if not authorized(Request(scope), config.api_key):
                await unauthorized()(scope, receive, send)
                return
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            await runner.shutdown("the server stopped")

    guard = Middleware(RequestGuard, loopback=loopback, max_body=MAX_BODY_BYTES)
    return Starlette(
        routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan, middleware=[guard]
    )
