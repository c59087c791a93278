"""`deepsearch eval` under SIGTERM / SIGHUP and in a log (issue 22, items 3 and 4): a
real signal to this process while `cli.run` (the console script's own entry, with its
signal handlers) runs the eval, stderr not a terminal as in CI. The signal ends it as
Ctrl-C does (the lines written stay whole, the resume hint, 128+n); the log has a
plain line for each finished question from the start; a resume says what was done.
In process, not a subprocess: the same handlers and unwinding, without paying an
interpreter and the SDK imports twice per signal."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.cli.test_end_to_end import wait_until
from tests.evaluation.helpers import (
    SECRET,
    Router,
    eval_args,
    write_questions,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers

STALLED = "Country3"  # its agent step never returns: the signal finds it in flight


class StallOne(Router):
    def __call__(self, body: dict[str, Any]) -> Any:
        reply = super().__call__(body)
        if STALLED in body["messages"][-1]["content"] and isinstance(reply, Reply):
            return Reply(content=reply.content, delay_s=60)
        return reply


def results(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    if not path.is_file():
        return []
    text = path.read_text("utf-8")
    assert text == "" or text.endswith("\n"), "a half-written line"
    return [json.loads(line) for line in text.splitlines()]


def run_eval(llm: FakeOpenAIServer, args: list[str], tmp: Path) -> Outcome:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url, "HOME": str(tmp),
           "DEEPSEARCH_CACHE_DIR": str(tmp / "cache"), "NO_COLOR": "1"}  # fmt: skip
    return run_cli_in_process("eval", *args, env=env)


def stalled_in_flight(llm: FakeOpenAIServer) -> bool:
    return any(STALLED in json.dumps(r.body) for r in llm.chat_requests)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["sigterm", "sighup"]
)
def test_a_signal_stops_the_eval_like_ctrl_c_and_a_log_gets_plain_lines(
    searx: FakeSearchServers, tmp_path: Path, signum: int, code: int
) -> None:
    questions, out = write_questions(tmp_path / "q.jsonl", n=4), tmp_path / "out"
    args = [str(questions), "--out", str(out), "--grader", "exact", "--concurrency", "1",
            *[a for a in eval_args(searx) if a != "--quiet"]]  # fmt: skip
    running = threading.Event()

    def signal_when_question_3_is_in_flight() -> None:
        wait_until(lambda: stalled_in_flight(llm) and len(results(out)) == 2,
                   alive=running.is_set, what="question 3 in flight")  # fmt: skip
        os.kill(os.getpid(), signum)

    with FakeOpenAIServer(StallOne(direct=True)) as llm:
        sender = threading.Thread(target=signal_when_question_3_is_in_flight, daemon=True)
        running.set()
        sender.start()
        try:
            done = run_eval(llm, args, tmp_path)
        finally:
            running.clear()
            sender.join(timeout=5)
    stderr = done.stderr
    assert done.returncode == code, stderr
    assert [row["id"] for row in results(out)] == ["c01", "c02"], "no line for c03"
    assert "run the same command again to resume" in stderr and str(out) in stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("eval  ")]
    assert [line.split()[1] for line in lines] == ["1/4", "2/4"], stderr
    assert "accuracy 100% (2/2)" in lines[1] and "c02 correct" in lines[1]
    assert "━" not in stderr, "no progress bar in a log"

    with FakeOpenAIServer(Router(direct=True)) as llm:
        done = run_eval(llm, args, tmp_path)
    stderr = done.stderr
    assert done.returncode == 0, stderr
    assert "resuming, 2 of 4 already done" in stderr
    assert [line.split()[1] for line in stderr.splitlines() if line.startswith("eval  ")] == [
        "3/4",
        "4/4",
    ]
    assert len(results(out)) == 4
