"""A run whose --timeout ran out while the LLM was stalled or rate limited says so
(issue 36, item 25): `--json`'s `error` names the cause, `error_kind` is "runtime", and
the exit code stays a limit's (4: nothing found); a 429 is a rate limit, never "no first
token … slow server". (A model that writes until the limit is no stalled server: its
run's error stays null, tests/cli/test_slow_llm_cli.py.)

Through the command in process on the run's FakeClock (test_slow_llm_cli's fixtures):
the clock is moved past the limit once the step's call is where the test wants it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_end_to_end import (  # noqa: F401  (fixtures)
    agent_steps_seen,
    router,
    run_in_process,
    search,
    web,
)
from tests.cli.test_slow_llm_cli import (  # noqa: F401  (fixtures)
    TIMEOUT_S,
    agent_calls_in,
    phases,
    run_clock,
    time_passes_at,
)
from tests.fakes.clock import FakeClock
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.steps import forever

# No first token: the server reads the prompt for longer than the test lasts (real time;
# the run's clock is past its limit long before).
STALLED = Reply(content='{"think": "', delay_s=30.0)
# Rate limited, the retry due in 30 s (cut short by the limit: no real wait).
RATE_LIMITED = Reply.error(429, "slow down", headers={"retry-after": "30"})


@pytest.mark.parametrize(
    ("reply", "phase", "cause"),
    [
        (
            STALLED,
            "waiting",
            "time limit of 600 s reached: the LLM server sent no first token in 540 s "
            "(limit 600 s to the first token)",
        ),
        (
            RATE_LIMITED,
            "retrying",
            "time limit of 600 s reached: the LLM server rate limited the call (HTTP 429)",
        ),
    ],
    ids=["no-first-token", "rate-limited"],
)
def test_a_limit_that_cut_a_stalled_llm_names_the_cause(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    run_clock: FakeClock,  # noqa: F811
    phases: list[tuple[str, str]],  # noqa: F811
    reply: Reply,
    phase: str,
    cause: str,
) -> None:
    # The research step and Beast Mode's both stall; each is cut once the server has it
    # and the client's call is in `phase` (a stalled reply is taken after the cut, hence
    # `forever`: two steps are asserted below).
    in_phase = agent_calls_in(phases, phase)
    with FakeOpenAIServer(router([forever(reply)])) as llm:
        ready = lambda n: in_phase(n) and agent_steps_seen(llm) >= n  # noqa: E731
        with time_passes_at(llm, run_clock, 1, ready):
            done = run_in_process(llm, search, "--timeout", f"{TIMEOUT_S:g}", tmp=tmp_path)
        steps = agent_steps_seen(llm)
    assert steps == 2, "the research step and Beast Mode's"
    assert done.returncode == 4, done.stderr  # not found: a limit's code, as documented
    out = json.loads(done.stdout)
    assert (out["status"], out["error_kind"]) == ("not_found", "runtime")
    assert out["error"] == cause
    assert out["stop_reason"] == "time limit reached"
