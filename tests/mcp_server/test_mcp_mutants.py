"""The MCP server's rules that mutation testing (`make mutate M=deepsearch/mcp_server`)
found unpinned, with a stubbed session (tests/mcp_server/test_mcp_blindspots.py): each
call's stderr line, written at once."""

from __future__ import annotations

import io
import sys
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
