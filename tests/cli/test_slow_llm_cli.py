"""`--timeout` against an LLM server that never finishes (issue 17, item 4), through
the command in process: the run always ends with the best answer so far, exit 3
(forced) or 4 (not found) as `--help` promises, never `failed` / exit 1, and the
streams it abandons are closed, so the server stops generating.

The run's deadline is on its Clock (agent/deadline.py): the command gets a FakeClock,
and the test moves it past the limit once the runaway step is on the wire, so a
ten-minute --timeout takes no real time and is reached exactly where the test says."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import deepsearch.clock
from deepsearch.llm.call_watch import CallState, CallWatch, Moved
from tests.cli.test_end_to_end import (  # noqa: F401  (fixtures)
    ANSWER,
    ANSWER_STEP,
    SEARCH,
    VISIT,
    agent_steps_seen,
    router,
    run_in_process,
    search,
    wait_until,
    web,
)
from tests.fakes.clock import FakeClock
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers

# A model that starts a step and never stops (the server streams without end).
RUNAWAY = Reply(content='{"think": "', runaway=True, token_delay_s=0.01)


def test_help_promises_exit_3_and_4_for_a_limit() -> None:
    from deepsearch.commands.research_cmd import HELP

    text = " ".join(HELP.split())
    assert "3 forced (Beast Mode or a limit" in text
    assert "4 not found" in text and "limit" in text.split("4 not found", 1)[1]


# Ten minutes of --timeout: reached in no real time only because the deadline is on
# the clock (were it in real time, the suite's own per-test limit would end the test).
TIMEOUT_S = 600.0


@pytest.fixture
def run_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock the command's run gets (runtime builds its one clock from
    deepsearch.clock.SystemClock when the run starts)."""
    clock = FakeClock()
    monkeypatch.setattr(deepsearch.clock, "SystemClock", lambda: clock)
    return clock


@pytest.fixture
def phases(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(reply schema, phase) of each move of the run's LLM calls (llm/call_watch.py), as
    the client makes it: a test can wait for a call to be where it wants it."""
    seen: list[tuple[str, str]] = []
    move = CallWatch.move

    def recording(self: CallWatch, call: CallState, phase: Moved) -> None:
        move(self, call, phase)
        seen.append((call.schema, phase))

    monkeypatch.setattr(CallWatch, "move", recording)
    return seen


def agent_calls_in(phases: list[tuple[str, str]], phase: str) -> Callable[[int], bool]:
    """Whether the nth agent step's call (Beast Mode's included) has entered `phase`."""
    return lambda n: phases.count(("AgentStep", phase)) >= n


@contextmanager
def time_passes_at(
    llm: FakeOpenAIServer, clock: FakeClock, step: int, ready: Callable[[int], bool] | None = None
) -> Iterator[None]:
    """Once agent step `step` is on the wire (or `ready(step)`), move the clock past the
    research share of --timeout; once the next one (Beast Mode's) is, past the whole of
    it. The steps run away (or stall) meanwhile: only the deadline can end them."""
    running = threading.Event()
    running.set()

    def on_the_wire(n: int) -> bool:
        return agent_steps_seen(llm) >= n

    there = ready or on_the_wire

    def drive() -> None:
        for seen, to in ((step, 0.9), (step + 1, 1.1)):
            wait_until(lambda n=seen: there(n), alive=running.is_set, what=f"step {seen}")
            clock.advance(TIMEOUT_S * to - clock.reading())

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    try:
        yield
    finally:
        running.clear()
        driver.join(timeout=5)


def test_timeout_with_a_runaway_model_and_nothing_found_is_not_found_exit_4(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    run_clock: FakeClock,
    phases: list[tuple[str, str]],
) -> None:
    # Exactly two steps, both running away: the first research step, then Beast Mode's,
    # each cut once it is generating.
    with FakeOpenAIServer(router([RUNAWAY, RUNAWAY])) as llm:
        with time_passes_at(llm, run_clock, 1, agent_calls_in(phases, "generating")):
            done = run_in_process(llm, search, "--timeout", f"{TIMEOUT_S:g}", tmp=tmp_path)
        steps = agent_steps_seen(llm)
        # The server notices at its next write; wait for what it records (no fixed sleep).
        wait_until(lambda: llm.closed_streams >= steps, alive=lambda: True, what="closed streams")
        closed = llm.closed_streams
    assert done.returncode == 4, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "not_found" and out["answer"].startswith("**Not found.**")
    # A model writing until the limit is no stalled server: no error, only the limit
    # (a stalled or rate-limited one is named: test_timeout_cause_cli.py).
    assert out["error"] is None and "Traceback" not in done.stderr
    assert out["stop_reason"] == "time limit reached"
    assert out["elapsed_s"] >= TIMEOUT_S, "the run's time is the clock's"
    assert steps == 2 and closed == steps, "every abandoned stream was closed"


def test_timeout_with_a_runaway_model_after_a_candidate_is_forced_exit_3(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    run_clock: FakeClock,
    phases: list[tuple[str, str]],
) -> None:
    # The answer is rejected (strict fails); then the next step runs away, Beast Mode's too.
    steps = [SEARCH, VISIT, ANSWER_STEP, RUNAWAY, RUNAWAY]
    with FakeOpenAIServer(router(steps, strict_pass=False)) as llm:
        with time_passes_at(llm, run_clock, 4, agent_calls_in(phases, "generating")):
            done = run_in_process(llm, search, "--timeout", f"{TIMEOUT_S:g}", tmp=tmp_path)
    assert done.returncode == 3, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "forced" and ANSWER.split()[0] in out["answer"]
    assert [s["action"] for s in out["steps"]][:3] == ["search", "visit", "answer"]
    assert out["error"] is None
