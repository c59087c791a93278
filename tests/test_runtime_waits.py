"""A run's parts tell the live view why an LLM call waits (issue 36, item 10): a retry's
pause is a notice while the run's stack is open, and each call's phase (no first token
yet, retrying, generating: llm/call_watch.py) is an LlmPhase event, the call named as the
view names it."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from deepsearch import runtime
from deepsearch.agent.events import LlmPhase, Notice
from deepsearch.llm.call_watch import waiting, watched_call
from deepsearch.llm.waits import announce
from tests.test_runtime import Probe, settings
from tests.test_runtime import probe as probe  # noqa: F401 - the fixture


async def test_a_retry_pause_is_a_notice_while_the_run_is_open(probe: Probe) -> None:  # noqa: F811
    events: list[Any] = []
    async with AsyncExitStack() as stack:
        deps = await runtime.build_deps(settings(), stack=stack, emit=events.append, trace=None)
        announce("the LLM server rate limited the call (HTTP 429), retrying in 4 s")
        with watched_call("evaluator", "QuestionEval"):
            waiting(600.0)
        assert deps.calls is not None and deps.calls.clock is deps.clock
    announce("after the run: told to nobody")
    with watched_call("agent", "AgentStep"):
        waiting(600.0)  # after the run: watched by nobody
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == ["the LLM server rate limited the call (HTTP 429), retrying in 4 s"]
    phases = [(e.tool, e.phase, e.limit_s) for e in events if isinstance(e, LlmPhase)]
    assert phases == [("classifier", "waiting", 600.0)]
