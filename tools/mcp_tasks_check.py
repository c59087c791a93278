"""By hand, not in `make test`: the TypeScript MCP SDK's tasks client against
`deepsearch mcp` (issue 35), every request with a 4 s timeout, each research 10-30 s.

Starts the suite's loopback fakes (the HotpotQA pages, a SearXNG-shaped search, the
OpenAI-compatible LLM answering each question SEARCH, VISIT, ANSWER as
tests/cli/test_end_to_end.py does, every reply held `--delay` seconds), then runs
tools/mcp_tasks_client.mjs with node, which starts `deepsearch mcp` over stdio. Prints
what the client printed and, per question, the LLM requests and when they came, so that
"no LLM call after the cancel" is read from the fake's own log.

    mkdir -p /tmp/ts && cd /tmp/ts && npm install @modelcontextprotocol/sdk
    .venv/bin/python -m tools.mcp_tasks_check --node-dir /tmp/ts
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    FIXTURE,
    SEARCH,
    SECRET,
    VISIT,
    page_html,
    router,
    schema_name,
    slug,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, _text

ROOT = Path(__file__).resolve().parents[1]


class SlowScript:
    """Each question its own SEARCH, VISIT, ANSWER; every reply held `delay` seconds;
    every request logged as (wall time, question tag)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.routers: dict[str, Any] = {}
        self.log: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        text = json.dumps(body)
        tag = next((f"Q{n}" for n in range(1, 10) if f"Q{n} " in text), "?")
        key = body["messages"][-1]["content"] if schema_name(body) == "AgentStep" else ""
        with self.lock:
            self.log.append((time.time(), tag))
            if key not in self.routers:
                self.routers[key] = router([SEARCH, VISIT, ANSWER_STEP] if key else [])
            route = self.routers[key]
        time.sleep(self.delay)
        return route(body)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-dir", required=True, help="where @modelcontextprotocol/sdk is")
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per LLM reply")
    parser.add_argument("--http", action="store_true", help="over --transport http, a key")
    args = parser.parse_args(argv)
    client = Path(args.node_dir) / "mcp_tasks_client.mjs"
    shutil.copy(ROOT / "tools" / "mcp_tasks_client.mjs", client)
    script = SlowScript(args.delay)
    routes = {
        f"/wiki/{slug(t)}": _text(page_html(t, p), "text/html; charset=utf-8")
        for t, p in FIXTURE["paragraphs"].items()
    }
    with (
        LoopbackServer(routes=routes) as web,
        FakeSearchServers() as search,
        FakeOpenAIServer(script) as llm,
        tempfile.TemporaryDirectory() as home,
    ):
        results = [
            {"title": t, "url": web.url(f"/wiki/{slug(t)}"), "content": p.split(". ")[0] + "."}
            for t, p in FIXTURE["paragraphs"].items()
        ]
        results.sort(key=lambda r: r["title"] not in FIXTURE["gold"])
        search.always("searxng", 200, {"results": results})
        command = [
            str(Path(sys.executable).parent / "deepsearch"), "mcp", "--llm-provider", "openai",
            "--search-provider", "searxng", "--searxng-url", search.base_url("searxng"),
            "--allow-private-urls", "--no-cache",
        ]  # fmt: skip
        env = {
            **os.environ, "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url,
            "HOME": home, "NO_COLOR": "1", "DEEPSEARCH_MCP_COMMAND": json.dumps(command),
        }  # fmt: skip
        server = None
        if args.http:  # the server first, on a free port; its banner says which
            env["DEEPSEARCH_SERVER_KEY"] = "http-check-key-0123456789"
            http = [*command, "--transport", "http", "--port", "0"]
            server = subprocess.Popen(http, env=env, stderr=subprocess.PIPE, text=True)
            assert server.stderr is not None
            banner = server.stderr.readline()
            env["DEEPSEARCH_MCP_URL"] = banner.split("listening on ")[1].split()[0]
        done = subprocess.run(
            ["node", str(client)], env=env, capture_output=True, text=True, timeout=300
        )
        stopped = ""
        if server is not None:  # Q6 still runs: the server stops
            sigterm = time.time()
            server.send_signal(signal.SIGTERM)
            rest = server.communicate(timeout=30)[1]
            stopped = f"{banner}{rest}server exit code: {server.returncode}\n"
            stopped += f"SIGTERM_AT_EPOCH_MS={sigterm * 1000:.0f}\n"
        time.sleep(3 * args.delay)  # any request a run still had in it arrives
    print(done.stdout + done.stderr)
    print(f"node exit code: {done.returncode}\n{stopped}")
    lines = (done.stdout + stopped).splitlines()
    marks = dict(line.split("=", 1) for line in lines if "_EPOCH_MS=" in line)
    report(script.log, {k: float(v) / 1000 for k, v in marks.items()})
    return done.returncode


def report(log: list[tuple[float, str]], marks: dict[str, float]) -> None:
    start = log[0][0] if log else 0.0
    for tag in sorted({t for _, t in log}):
        times = [t for t, q in log if q == tag]
        print(f"LLM requests for {tag}: {len(times)}, "
              f"from {times[0] - start:.1f}s to {times[-1] - start:.1f}s")  # fmt: skip
    marked = (
        ("CANCEL_AT_EPOCH_MS", "Q4"),
        ("CLOSE_AT_EPOCH_MS", "Q6"),
        ("SIGTERM_AT_EPOCH_MS", "Q6"),
    )
    for mark, tag in marked:
        if mark in marks:
            after = [t for t, q in log if q == tag and t > marks[mark]]
            print(f"LLM requests for {tag} after {mark} ({marks[mark] - start:.1f}s): {len(after)}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
