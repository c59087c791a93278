"""`deepsearch serve` and SIGTERM with requests in flight (issue 22, item 5): a real
signal to the installed script. It stops at once instead of waiting out uvicorn's
graceful timeout: each run in flight is cancelled as a disconnect cancels it, a whole
request gets a 503 in OpenAI's error shape, a stream an error event then `[DONE]`,
each request is logged once in the server's own format, and the exit code is 143 (129
for SIGHUP)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.test_end_to_end import DEEPSEARCH, QUESTION, SEARCH, SECRET, router, wait_until
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.server.test_command import flags

# One run searches then stalls at step 2, the other stalls at step 1 (a shared queue).
STALL = Reply(content=json.dumps(SEARCH), delay_s=120)


class Lines:
    """The server's stderr, read line by line in a thread (the banner, the log)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.reader.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def base_url(self) -> str:
        banner = next(line for line in self.lines if "listening on" in line)
        return banner.split("listening on ")[1].split()[0]


def ask(base_url: str, *, stream: bool, into: list[Any]) -> None:
    body = {"model": "deepsearch", "messages": [{"role": "user", "content": QUESTION}],
            "stream": stream}  # fmt: skip
    try:
        with httpx.stream("POST", base_url + "/chat/completions", json=body, timeout=60) as r:
            into.append((r.status_code, [line for line in r.iter_lines() if line]))
    except Exception as exc:  # what the test reports: the client got no answer
        into.append(exc)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["sigterm", "sighup"]
)
def test_a_signal_answers_the_requests_in_flight_and_exits_128_plus_n(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    signum: int,
    code: int,
) -> None:
    whole: list[Any] = []
    streamed: list[Any] = []
    with FakeOpenAIServer(router([SEARCH, STALL])) as llm:
        env = {**os.environ, "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url,
               "HOME": str(tmp_path), "NO_COLOR": "1"}  # fmt: skip
        proc = subprocess.Popen(
            [str(DEEPSEARCH), "serve", "--port", "0", "--budget", "200000", *flags(search)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        out = Lines(proc)
        try:
            wait_until(lambda: any("listening on" in line for line in out.lines),
                       alive=lambda: proc.poll() is None, what="the banner")  # fmt: skip
            clients = [
                threading.Thread(target=ask, args=(out.base_url(),),
                                 kwargs={"stream": s, "into": into}, daemon=True)
                for s, into in ((False, whole), (True, streamed))
            ]  # fmt: skip
            for client in clients:
                client.start()
            wait_until(lambda: _steps(llm) >= 3, alive=lambda: proc.poll() is None,
                       what="both runs stalled")  # fmt: skip
            proc.send_signal(signum)
            returncode = proc.wait(timeout=60)
            for client in clients:
                client.join(timeout=30)
            out.reader.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert returncode == code, out.lines

    [(status, lines)] = whole
    assert status == 503, lines
    error = json.loads(lines[0])["error"]
    assert error["type"] == "server_error" and error["code"] == "server_shutting_down"
    assert error["status"] == "interrupted" and "partial_answer" in error

    [(status, events)] = streamed
    assert status == 200 and events[-1] == "data: [DONE]", events
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["error"]["code"] == "server_shutting_down", last

    log = out.lines[1:]  # after the banner
    assert not any("Traceback" in line or line.startswith("ERROR") for line in log), log
    assert all(line.startswith("deepsearch serve: ") for line in log if line.strip()), log
    requests = [line for line in log if "chatcmpl-" in line]
    assert sorted(line.split("status=")[1].split()[0] for line in requests) == ["200", "503"]
    assert all("run=interrupted" in line for line in requests), requests
    name = signal.Signals(signum).name
    assert any(f"shutting down ({name}: 2 runs in flight cut short)" in line for line in log), log


def _steps(llm: FakeOpenAIServer) -> int:
    from tests.cli.test_end_to_end import schema_name

    return sum(schema_name(r.body) == "AgentStep" for r in llm.chat_requests)
