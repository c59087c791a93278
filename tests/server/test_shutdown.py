"""`deepsearch serve` and SIGTERM with requests in flight (issue 22, item 5): a real
signal to this process while `cli.run` (the script's entry, its handlers) serves. It stops at once instead of waiting out uvicorn's
graceful timeout: each run in flight is cancelled as a disconnect cancels it, a whole
request gets a 503 in OpenAI's error shape, a stream an error event then `[DONE]`,
each request is logged once in the server's own format, and the exit code is 143 (129
for SIGHUP). In process, not a subprocess: the same handlers and uvicorn, without an
interpreter and the SDK imports per signal."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import QUESTION, SEARCH, SECRET, router, wait_until
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.server.test_command import flags

# One run searches then stalls at step 2, the other stalls at step 1 (one script for
# both, in the order the steps are asked for: three steps in all).
STALL = Reply(content=json.dumps(SEARCH), delay_s=120)


def base_url(err: io.StringIO) -> str:
    return err.getvalue().split("listening on ")[1].split()[0]


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
    err = io.StringIO()
    serving = threading.Event()

    def ask_both_then_signal() -> None:
        wait_until(lambda: "listening on" in err.getvalue(), alive=serving.is_set,
                   what="the banner")  # fmt: skip
        for stream, into in ((False, whole), (True, streamed)):
            threading.Thread(target=ask, args=(base_url(err),),
                             kwargs={"stream": stream, "into": into}, daemon=True).start()  # fmt: skip
        wait_until(lambda: _steps(llm) >= 3, alive=serving.is_set, what="both runs stalled")
        os.kill(os.getpid(), signum)

    with FakeOpenAIServer(router([SEARCH, STALL, STALL])) as llm:
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url,
               "HOME": str(tmp_path), "NO_COLOR": "1"}  # fmt: skip
        sender = threading.Thread(target=ask_both_then_signal, daemon=True)
        serving.set()
        sender.start()
        try:
            args = ["serve", "--port", "0", "--budget", "200000", *flags(search)]
            returncode = run_cli_in_process(*args, env=env, stderr=err).returncode
        finally:
            serving.clear()
            sender.join(timeout=10)
        wait_until(lambda: len(whole) == len(streamed) == 1, alive=lambda: True,
                   what="both clients answered")  # fmt: skip
    printed = err.getvalue().splitlines()
    assert returncode == code, printed

    [(status, lines)] = whole
    assert status == 503, lines
    error = json.loads(lines[0])["error"]
    assert error["type"] == "server_error" and error["code"] == "server_shutting_down"
    assert error["status"] == "interrupted" and "partial_answer" in error

    [(status, events)] = streamed
    assert status == 200 and events[-1] == "data: [DONE]", events
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["error"]["code"] == "server_shutting_down", last

    log = printed[1:]  # after the banner
    assert not any("Traceback" in line or line.startswith("ERROR") for line in log), log
    assert all(line.startswith("deepsearch serve: ") for line in log if line.strip()), log
    requests = [line for line in log if "chatcmpl-" in line]
    assert sorted(line.split("status=")[1].split()[0] for line in requests) == ["200", "503"], log
    assert all("run=interrupted" in line for line in requests), requests
    name = signal.Signals(signum).name
    assert any(f"shutting down ({name}: 2 runs in flight cut short)" in line for line in log), log


def _steps(llm: FakeOpenAIServer) -> int:
    from tests.cli.test_end_to_end import schema_name

    return sum(schema_name(r.body) == "AgentStep" for r in llm.chat_requests)
