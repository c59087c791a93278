"""`deepsearch mcp` over stdio, as a real subprocess: the SDK's client lists the tool,
gets the gold answer with references and progress, an error result for a call without
a question, and cancels a call mid-run; stdout carries JSON-RPC only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.cli.test_end_to_end import DEEPSEARCH, QUESTION, cli_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.mcp_server.conftest import Script, cancel_mid_run, progress_sink, server_flags


@pytest.mark.timeout(120)
async def test_the_sdk_client_over_stdio(
    llm: FakeOpenAIServer, search: FakeSearchServers, script: Script, tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=str(DEEPSEARCH), args=["mcp", *server_flags(search)], env=cli_env(llm, tmp_path)
    )
    with (tmp_path / "stderr.txt").open("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert [t.name for t in tools] == ["research"]
                assert tools[0].inputSchema["required"] == ["question"]

                messages: list[str] = []
                result = await session.call_tool(
                    "research", {"question": QUESTION}, progress_callback=progress_sink(messages)
                )
                assert not result.isError, result.content
                text = result.content[0].text  # type: ignore[union-attr]
                assert "Stephen King" in text and "[^1]:" in text
                structured = result.structuredContent or {}
                assert structured["status"] == "answered" and structured["references"]
                assert structured["references"][0]["url"].startswith("http://127.0.0.1")
                assert [m.split()[:2] for m in messages] == [
                    ["1", "search"], ["2", "visit"], ["3", "answer"],
                ]  # fmt: skip

                missing = await session.call_tool("research", {})
                assert missing.isError
                assert "question" in missing.content[0].text  # type: ignore[union-attr]

                at_cancel, later = await cancel_mid_run(session, script, llm)
                assert later == at_cancel, "an LLM call after the cancellation"
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


@pytest.mark.timeout(60)
def test_stdout_is_json_rpc_only_and_closing_stdin_ends_the_server(
    llm: FakeOpenAIServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "research", "arguments": {"question": QUESTION},
            "_meta": {"progressToken": "p"}}},
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
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, "the server ended before answering"
        lines.append(json.loads(line))  # every line of stdout is one JSON-RPC message
        if lines[-1].get("id") == 2:
            break
    rest, errors = proc.communicate(timeout=30)  # closes stdin
    assert proc.returncode == 0, errors
    assert rest == ""
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert "Stephen King" in lines[-1]["result"]["content"][0]["text"]
    assert [m["method"] for m in lines[1:-1]] == ["notifications/progress"] * 3
