"""`--timeout` against an LLM server that never finishes (issue 17, item 4), through
the command in process: the run always ends with the best answer so far, exit 3
(forced) or 4 (not found) as `--help` promises, never `failed` / exit 1, and the
streams it abandons are closed, so the server stops generating."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli.test_end_to_end import (  # noqa: F401  (fixtures)
    ANSWER,
    ANSWER_STEP,
    SEARCH,
    VISIT,
    router,
    run_in_process,
    schema_name,
    search,
    web,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.steps import forever

# A model that starts a step and never stops (the server streams without end).
RUNAWAY = Reply(content='{"think": "', runaway=True, token_delay_s=0.05)


def test_help_promises_exit_3_and_4_for_a_limit() -> None:
    from deepsearch.commands.research_cmd import HELP

    text = " ".join(HELP.split())
    assert "3 forced (Beast Mode or a limit" in text
    assert "4 not found" in text and "limit" in text.split("4 not found", 1)[1]


@pytest.mark.timeout(90)
def test_timeout_with_a_runaway_model_and_nothing_found_is_not_found_exit_4(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(router([forever(RUNAWAY)])) as llm:  # every step runs away
        # Long enough for the first agent step to be on the wire even on a loaded
        # machine (the run's first call also loads the SDK and the tokenizer).
        done = run_in_process(llm, search, "--timeout", "10", tmp=tmp_path)
        steps = sum(schema_name(r.body) == "AgentStep" for r in llm.chat_requests)
        # The server notices at its next write; poll what it records (no fixed sleep).
        deadline = time.monotonic() + 30
        while llm.closed_streams < steps and time.monotonic() < deadline:
            time.sleep(0.01)
        closed = llm.closed_streams
    assert done.returncode == 4, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "not_found" and out["answer"].startswith("**Not found.**")
    assert out["error"] is None and "Traceback" not in done.stderr
    assert steps >= 1, "the runaway step was asked for"
    assert closed == steps, "every abandoned stream was closed: the server stops generating"


@pytest.mark.timeout(90)
def test_timeout_with_a_runaway_model_after_a_candidate_is_forced_exit_3(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    # The answer is rejected (strict fails); then every step runs away, Beast Mode's too.
    steps = [SEARCH, VISIT, ANSWER_STEP, forever(RUNAWAY)]
    with FakeOpenAIServer(router(steps, strict_pass=False)) as llm:
        done = run_in_process(llm, search, "--timeout", "10", tmp=tmp_path)
    assert done.returncode == 3, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "forced" and ANSWER.split()[0] in out["answer"]
