"""`deepsearch mcp` over stdio, as one real subprocess spoken to in JSON-RPC lines (what
the SDK's stdio client writes): it lists the tool, gives the gold answer with progress,
an error result for a call without a question; stdout carries JSON-RPC only and
closing stdin ends it. The SDK client's session (tools, progress, errors, a cancel
mid-run) runs over HTTP in process (test_http.py): the same server session, so one
interpreter here is enough."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_end_to_end import DEEPSEARCH, QUESTION, cli_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.mcp_server.conftest import server_flags


@pytest.mark.timeout(60)
def test_stdout_is_json_rpc_only_and_closing_stdin_ends_the_server(
    llm: FakeOpenAIServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "research", "arguments": {"question": QUESTION},
            "_meta": {"progressToken": "p"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "research", "arguments": {}}},
    ]  # fmt: skip
    # A whole research, then stdin closes: the server must end by itself, exit 0.
    proc = subprocess.Popen(
        [str(DEEPSEARCH), "mcp", *server_flags(search)], env=cli_env(llm, tmp_path),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    lines, answered = [], {}
    while not {3, 4} <= answered.keys():
        line = proc.stdout.readline()
        assert line, "the server ended before answering"
        lines.append(json.loads(line))  # every line of stdout is one JSON-RPC message
        if "id" in lines[-1]:
            answered[lines[-1]["id"]] = lines[-1]
    rest, errors = proc.communicate(timeout=30)  # closes stdin
    assert proc.returncode == 0, errors
    assert rest == ""
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    [tool] = answered[2]["result"]["tools"]
    assert tool["name"] == "research" and tool["inputSchema"]["required"] == ["question"]
    answer = answered[3]["result"]
    assert not answer["isError"] and "Stephen King" in answer["content"][0]["text"]
    assert "[^1]:" in answer["content"][0]["text"]
    assert answer["structuredContent"]["references"][0]["url"].startswith("http://127.0.0.1")
    missing = answered[4]["result"]
    assert missing["isError"] and "question" in missing["content"][0]["text"]
    progress = [m["params"]["message"].split()[:2] for m in lines if "method" in m]
    assert progress == [["1", "search"], ["2", "visit"], ["3", "answer"]]
    assert "Traceback" not in errors
    # One log line per call (issue 36, item 13), the question never in them; a piped
    # stdin is no terminal: no "start me from an MCP client".
    calls = [line for line in errors.splitlines() if line.startswith("deepsearch mcp: call ")]
    assert len(calls) == 2 and QUESTION not in errors
    # The two calls run at once: the refused one logs first.
    assert sorted(line.split()[4] for line in calls) == ["status=answered", "status=rejected"]
    assert "start me from an MCP client" not in errors
