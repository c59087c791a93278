"""`deepsearch mcp` typed by hand says what it is; each tool call is one stderr line
(status, tokens, seconds), never the question (issue 36, item 13)."""

from __future__ import annotations

import io
import sys

import pytest

from deepsearch.agent.result import UsageReport, result_so_far
from deepsearch.commands import mcp_cmd

QUESTION = "Which secret project is the user asking about?"


class _Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [True, False])
def test_stdio_typed_by_hand_says_so_once(
    tty: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(tty))
    mcp_cmd.say_stdio_on_a_terminal()
    captured = capsys.readouterr()
    assert captured.out == ""
    expected = [mcp_cmd.STDIO_ON_A_TERMINAL] if tty else []
    assert captured.err.splitlines() == expected
    if tty:
        assert "speaking MCP on stdio; start me from an MCP client" in captured.err


def test_a_call_line_has_status_tokens_seconds_and_no_question() -> None:
    from deepsearch.mcp_server.call_log import call_line

    usage = UsageReport(prompt_tokens=9000, completion_tokens=345, total_tokens=9345, budget=10**5)
    result = result_so_far(QUESTION, "forced", usage, elapsed_s=41.204, answer="Somewhere.")
    line = call_line(result)
    assert line.startswith("deepsearch mcp: call ")
    assert line.endswith(" status=forced tokens=9345 seconds=41.20")
    failed = result_so_far(QUESTION, "failed", usage, error="boom", kind="fatal")
    assert call_line(failed).endswith(" error=fatal")
    assert QUESTION not in line + call_line(failed)


async def test_each_call_logs_one_line_even_when_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    config = McpConfig(options={}, max_budget=100_000)
    result = await call_research(config, {"question": QUESTION, "budget": "lots"}, Progress(None))
    assert result.isError
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("deepsearch mcp: call ")
    assert line.endswith("status=rejected (bad arguments) tokens=0 seconds=0.00")
    assert QUESTION not in line


def test_a_line_typed_by_hand_is_one_line_not_a_validation_dump() -> None:
    import logging

    def record(text: str) -> logging.LogRecord:
        return logging.LogRecord("mcp.server.lowlevel.server", logging.ERROR, "", 0, text, (), None)

    dump = record(
        "Received exception from stream: 1 validation error for JSONRPCMessage\n"
        "  Invalid JSON: expected value at line 1 column 1 [type=json_invalid, ...]"
    )
    assert mcp_cmd.OneLineForBadInput().filter(dump)
    assert dump.getMessage() == mcp_cmd.NOT_JSON_RPC
    other = record("Received exception from stream: a real failure")
    mcp_cmd.OneLineForBadInput().filter(other)
    assert other.getMessage() == "Received exception from stream: a real failure"
