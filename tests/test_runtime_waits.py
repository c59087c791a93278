"""A run's parts tell the live view why an LLM call waits (issue 36, item 10): a retry's
pause is a notice while the run's stack is open, and the LLM tap knows the client's
first-token limit (the spinner's "no reply yet after 40 s (limit 600 s ...)")."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from deepsearch import runtime
from deepsearch.agent.events import Notice
from deepsearch.llm.waits import announce
from tests.test_runtime import Probe, settings
from tests.test_runtime import probe as probe  # noqa: F401 - the fixture


async def test_a_retry_pause_is_a_notice_while_the_run_is_open(probe: Probe) -> None:  # noqa: F811
    events: list[Any] = []
    async with AsyncExitStack() as stack:
        deps = await runtime.build_deps(settings(), stack=stack, emit=events.append, trace=None)
        announce("the LLM server rate limited the call (HTTP 429), retrying in 4 s")
        tap = deps.llm._trace
        assert isinstance(tap, runtime.LlmTap)
        assert tap.first_token_s == 600.0  # a loopback endpoint: a local server's limit
    announce("after the run: told to nobody")
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == ["the LLM server rate limited the call (HTTP 429), retrying in 4 s"]


def test_the_tap_sends_the_limit_with_each_request() -> None:
    from deepsearch.llm.tracker import TokenTracker

    events: list[Any] = []
    tap = runtime.llm_tap(events.append, TokenTracker(1000), None)
    tap.first_token_s = 120.0
    tap("llm_request", {"tool": "agent", "schema_name": "AgentStep"})
    tap("llm_response", {"tool": "agent"})
    assert [(e.tool, e.delta, e.detail) for e in events] == [("agent", 1, "120"), ("agent", -1, "")]
