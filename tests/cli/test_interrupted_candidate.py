"""Interrupted while the answer is being evaluated (issue 36, item 2): the candidate
under evaluation is printed, marked unverified, and the exit code is the signal's.
In process: a SIGTERM (unwound as Ctrl-C is, commands/signals.py) sent once the
evaluator's request is at the fake server, which holds it."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.cli import test_end_to_end as e2e
from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    VISIT,
    cli_args,
    cli_env,
    router,
    schema_name,
    wait_until,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer

web, search = e2e.web, e2e.search  # the end-to-end tests' fixtures


def _stalled_evaluator(steps: list) -> tuple[object, threading.Event]:
    route = router(steps)
    asked = threading.Event()

    def slow(body: dict) -> object:
        if schema_name(body) in ("DefinitiveEval", "StrictEval", "CompletenessEval"):
            asked.set()
            return Reply(content="{}", delay_s=30)
        return route(body)

    return slow, asked


def _interrupted(tmp_path: Path, search: FakeSearchServers, *, as_json: bool) -> Outcome:
    route, asked = _stalled_evaluator([SEARCH, VISIT, ANSWER_STEP])
    running = threading.Event()

    def send() -> None:
        wait_until(asked.is_set, alive=running.is_set, what="the evaluator's request")
        os.kill(os.getpid(), signal.SIGTERM)

    with FakeOpenAIServer(route) as llm:
        sender = threading.Thread(target=send, daemon=True)
        running.set()
        sender.start()
        try:
            flags = [a for a in cli_args(search) if as_json or a != "--json"]
            return run_cli_in_process(QUESTION, *flags, env=cli_env(llm, tmp_path))
        finally:
            running.clear()
            sender.join(timeout=5)


@pytest.mark.timeout(60)
def test_a_run_interrupted_while_evaluating_prints_the_candidate_marked_unverified(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    done = _interrupted(tmp_path, search, as_json=True)
    assert done.returncode == 143, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "interrupted"
    assert out["answer"].startswith("The film was Maximum Overdrive")
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(60)
def test_the_plain_answer_of_an_interrupted_run_says_it_is_unverified(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    done = _interrupted(tmp_path, search, as_json=False)
    assert done.returncode == 143, done.stderr
    assert "The film was Maximum Overdrive" in done.stdout
    assert "unverified" in done.stdout.lower()
