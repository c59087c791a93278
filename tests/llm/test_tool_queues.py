"""The strict scripted LLM: a queue per tool, a clear error on an unexpected call,
and `assert_complete()` for replies that were queued but never used."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from deepsearch.llm.base import Message
from tests.fakes.scripted_llm import ToolQueues, UnexpectedCall, scripted_client


class Pick(BaseModel):
    choice: str


async def ask(script: ToolQueues, tool: str, text: str = "hello") -> Pick:
    client, _ = scripted_client(script)
    result = await client.generate_object(
        tool, Pick, "system", [Message(role="user", content=text)]
    )
    return result.value


async def test_each_tool_gets_its_own_replies_in_order() -> None:
    script = ToolQueues({"agent": [{"choice": "a1"}, {"choice": "a2"}]})
    script.add("evaluator", {"choice": "e1"})
    assert (await ask(script, "agent")).choice == "a1"
    assert (await ask(script, "evaluator")).choice == "e1"
    assert (await ask(script, "agent")).choice == "a2"
    script.assert_complete()


async def test_a_callable_reply_sees_the_request() -> None:
    script = ToolQueues({"finalizer": [lambda req: {"choice": req.messages[-1].content}]})
    assert (await ask(script, "finalizer", "echo me")).choice == "echo me"
    script.assert_complete()


async def test_a_tool_with_no_queue_raises_naming_the_tool_and_the_request() -> None:
    script = ToolQueues({"agent": [{"choice": "a"}]})
    with pytest.raises(UnexpectedCall, match=r"'evaluator'.*missing.*'is it true\?'"):
        await ask(script, "evaluator", "is it true?")


async def test_an_emptied_queue_raises_on_the_next_call() -> None:
    script = ToolQueues({"agent": [{"choice": "a"}]})
    await ask(script, "agent")
    with pytest.raises(UnexpectedCall, match=r"'agent'.*empty"):
        await ask(script, "agent", "again")


async def test_an_unexpected_call_swallowed_by_the_caller_still_fails_assert_complete() -> None:
    script = ToolQueues()
    with pytest.raises(UnexpectedCall):
        await ask(script, "query_rewriter")  # the agent loop catches broad errors like this
    with pytest.raises(AssertionError, match=r"unexpected call to tool 'query_rewriter'"):
        script.assert_complete()


def test_a_reply_never_consumed_fails_assert_complete() -> None:
    script = ToolQueues({"agent": [{"choice": "a"}, {"choice": "b"}], "evaluator": []})
    with pytest.raises(AssertionError, match=r"2 queued replies for tool 'agent' never used"):
        script.assert_complete()
    assert script.leftovers() == {"agent": 2}


def test_an_empty_script_is_complete() -> None:
    ToolQueues({"agent": []}).assert_complete()
