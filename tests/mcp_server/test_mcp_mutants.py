"""The MCP server's rules that mutation testing (`make mutate M=deepsearch/mcp_server`)
found unpinned, with a stubbed session (tests/mcp_server/test_mcp_blindspots.py): each
call's stderr line, written at once; serve_stdio in process (stdout JSON-RPC only, in
UTF-8 under an ASCII locale); Ctrl-C's line for a running task; the history's warning;
`continue_from` reaching the research; --max-concurrent and --task-ttl reaching the
tasks."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from deepsearch.agent.result import UsageReport
from deepsearch.session import ResearchSession
from tests.mcp_server.test_mcp_blindspots import Run, _result, client
from tests.mcp_server.test_mcp_blindspots import run as run  # noqa: F401 - a fixture


async def test_a_finished_call_logs_its_status_and_tokens(
    run: list[Run], capsys: pytest.CaptureFixture[str]
) -> None:
    usage = UsageReport(prompt_tokens=900, completion_tokens=34, total_tokens=934, budget=10**5)

    async def answer(session: ResearchSession) -> Any:
        return _result(session, answer="Paris.", usage=usage, elapsed_s=2.5)

    run.append(answer)
    async with client() as session:
        await session.call_tool("research", {"question": "Where?"})
    [line] = [x for x in capsys.readouterr().err.splitlines() if "deepsearch mcp: call" in x]
    assert line.endswith(" status=answered tokens=934 seconds=2.50"), line


def test_the_call_line_is_on_a_piped_stderr_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe is block-buffered: a line not flushed would wait for 8 KiB of others."""
    from deepsearch.mcp_server.call_log import log_call

    pipe = io.BytesIO()
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BufferedWriter(_Raw(pipe))))
    log_call(None, rejected="bad arguments")
    assert pipe.getvalue().decode().endswith("status=rejected (bad arguments) tokens=0 seconds=0.00\n")  # fmt: skip
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    log_call(None, rejected="bad arguments")  # a closed stderr: no error, the call goes on


class _Raw(io.RawIOBase):
    def __init__(self, sink: io.BytesIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self.sink.write(bytes(data))


class _Stdin(io.RawIOBase):
    """The client's lines, then open (no end of input) until the replies are out: the
    SDK drops a reply still in flight when stdin ends."""

    def __init__(self, data: bytes, until: threading.Event) -> None:
        self.data, self.until = data, until

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.data:
            self.until.wait(5)
            return 0
        size = min(len(buffer), len(self.data))
        buffer[:size], self.data = self.data[:size], self.data[size:]
        return size


class _Stdout(io.BytesIO):
    def __init__(self, replies: int, done: threading.Event) -> None:
        super().__init__()
        self.replies, self.done = replies, done

    def write(self, data: Any) -> int:
        written = super().write(data)
        if self.getvalue().count(b"\n") >= self.replies:
            self.done.set()
        return written

    def close(self) -> None:  # the server's wrapper closes it; the test still reads it
        pass


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """The C locale's ASCII as the default encoding (a container without LANG)."""
    import locale

    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


async def test_stdio_in_process_stdout_is_json_rpc_only_in_utf_8(
    run: list[Run],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ascii_locale: None,
) -> None:
    """serve_stdio in process (test_stdio.py is the real pipe): what the run prints
    goes to stderr, the protocol's JSON lines alone to stdout, in UTF-8 whatever the
    locale, and the server ends when its input does."""
    import asyncio
    import json
    from types import SimpleNamespace

    from deepsearch.mcp_server.app import McpConfig, serve_stdio
    from tests.mcp_server.test_mcp_blindspots import OPTIONS

    async def chatty(session: ResearchSession) -> Any:
        print("a stray print of the run")
        return _result(session, answer="Köln — 東京.")

    run.append(chatty)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "research", "arguments": {"question": "Where?"}}},
    ]  # fmt: skip
    lines = "".join(json.dumps(m) + "\n" for m in messages).encode()
    answered = threading.Event()
    out = _Stdout(2, answered)
    stdin = io.BufferedReader(_Stdin(lines, answered))
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=stdin))
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(buffer=out))
    await asyncio.wait_for(serve_stdio(McpConfig(options=OPTIONS, max_budget=200_000)), 20)
    replies = [json.loads(line) for line in out.getvalue().decode("utf-8").splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["content"][0]["text"] == "Köln — 東京."
    assert "東京".encode() in out.getvalue()  # UTF-8, not escaped
    assert "a stray print of the run" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:The experimental tasks API:DeprecationWarning")
async def test_ctrl_c_cuts_a_running_task_short_as_interrupted(run: list[Run]) -> None:
    import asyncio

    import anyio
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from deepsearch.mcp_server.app import McpConfig, serve_streams
    from deepsearch.mcp_server.tasks import TaskRunner
    from tests.mcp_server.test_mcp_blindspots import OPTIONS

    started = asyncio.Event()

    async def hold(session: ResearchSession) -> Any:
        started.set()
        await asyncio.Event().wait()

    run.append(hold)
    lines: list[str] = []
    tasks = TaskRunner(log=lines.append)
    config = McpConfig(options=OPTIONS, max_budget=200_000)
    async with create_client_server_memory_streams() as (client, server):
        serving = asyncio.create_task(serve_streams(config, *server, tasks))
        async with ClientSession(*client) as session:
            await session.initialize()
            created = await session.experimental.call_tool_as_task("research", {"question": "Q?"})
            await started.wait()
            serving.cancel()  # Ctrl-C
            with pytest.raises(asyncio.CancelledError):
                await serving
            with anyio.fail_after(5):
                task = await tasks.store.get_task(created.task.taskId)
    assert task is not None and task.status == "cancelled"
    [line] = lines
    assert line.startswith(
        f"deepsearch mcp: interrupted: task …{created.task.taskId[-8:]} cancelled"
    )


async def test_a_history_warning_and_a_refused_configuration_are_logged(
    run: list[Run], capsys: pytest.CaptureFixture[str]
) -> None:
    async def warned(session: ResearchSession) -> Any:
        session.warnings.append("run not kept in the history: disk full")
        return _result(session, answer="Paris.")

    run.append(warned)
    async with client() as session:
        kept = await session.call_tool("research", {"question": "Where?"})
        refused = await session.call_tool("research", {"question": "Where?", "effort": "max"})
    assert not kept.isError and refused.isError
    err = capsys.readouterr().err.splitlines()
    assert "deepsearch mcp: warning: run not kept in the history: disk full" in err
    [line] = [x for x in err if "status=rejected" in x]
    assert line.endswith(" status=rejected (configuration) tokens=0 seconds=0.00"), line


async def test_continue_from_hands_the_earlier_run_to_the_research(
    run: list[Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history's carry-over for `continue_from` (tests/history has the real one)."""
    import deepsearch.history
    from deepsearch.mcp_server import tool
    from tests.mcp_server.test_mcp_blindspots import OPTIONS

    carried = object()
    asked: list[Any] = []

    def earlier_run(settings: Any, run_id: str | None) -> Any:
        asked.append((run_id, settings.agent.max_steps))  # the history of the call's settings
        return carried

    monkeypatch.setattr(deepsearch.history, "earlier_run", earlier_run)
    seen: list[Any] = []

    async def record(session: ResearchSession) -> Any:
        seen.append(session.earlier)
        return _result(session, answer="And then?")

    run.append(record)
    async with client() as session:
        await session.call_tool(
            "research", {"question": "Then?", "continue_from": "r-1", "max_steps": 7}
        )
        await session.call_tool("research", {"question": "Then?", "continue_from": "last"})
        await session.call_tool("research", {"question": "Fresh?"})
    default = tool.call_settings(OPTIONS, {}, 200_000).agent.max_steps
    assert asked == [("r-1", 7), (None, default)] and seen == [carried, carried, None]


@pytest.mark.filterwarnings("ignore:The experimental tasks API:DeprecationWarning")
async def test_the_servers_limits_reach_its_tasks(run: list[Run]) -> None:
    """--max-concurrent and --task-ttl (McpConfig) are the task runner's."""
    import asyncio

    from mcp.shared.memory import create_connected_server_and_client_session

    from deepsearch.mcp_server.app import McpConfig, build_server
    from tests.mcp_server.test_mcp_blindspots import OPTIONS

    release = asyncio.Event()

    async def held(session: ResearchSession) -> Any:
        await release.wait()
        return _result(session, answer="Done.")

    run.append(held)
    config = McpConfig(options=OPTIONS, max_budget=200_000, max_concurrent=1, task_ttl=60)
    async with create_connected_server_and_client_session(build_server(config)) as session:
        tasks = session.experimental
        first = await tasks.call_tool_as_task("research", {"question": "One?"}, ttl=10**9)
        second = await tasks.call_tool_as_task("research", {"question": "Two?"})
        for _ in range(1000):
            waiting = await tasks.get_task(second.task.taskId)
            if waiting.statusMessage:
                break
            await asyncio.sleep(0)
        release.set()
    assert first.task.ttl == 60_000 and second.task.ttl == 60_000
    assert waiting.statusMessage == "waiting for a research slot (all 1 busy)"


def test_the_schema_says_what_continue_from_and_max_cost_take() -> None:
    from deepsearch.commands.research_options import OPTIONS as TABLE
    from deepsearch.mcp_server import tool

    props = tool.input_schema()["properties"]
    assert props["continue_from"] == {
        "type": "string",
        "description": 'The run_id of an earlier result (or "last"): a follow-up question, '
        "researched with that run's knowledge in hand (nothing it read is fetched again).",
    }
    help_of = {row.name: row.help for row in TABLE}
    assert props["max_cost"] == {
        "type": "number", "description": help_of["max_cost"], "exclusiveMinimum": 0,
    }  # fmt: skip
