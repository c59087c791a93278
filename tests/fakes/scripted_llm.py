"""A scripted LLM provider for tests and bench/ (not shipped: the wheel holds only
what a run uses, tests/test_wheel_contents.py).

`ScriptedProvider(fn)` calls `fn(request)` for every LLM call; `fn` decides the
reply (in the spirit of pydantic-ai's FunctionModel). It may return a string (raw
model text), a dict or pydantic model (serialized to JSON), a `Completion`, or
raise an exception to simulate a provider failure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from deepsearch.config import ProviderName, Settings, load_config
from deepsearch.config.loading import DEFAULT_USER_CONFIG
from deepsearch.llm.base import Completion, CompletionRequest, Usage
from deepsearch.llm.client import LLMClient, TraceFn
from deepsearch.llm.tracker import TokenTracker

Reply = str | dict[str, Any] | BaseModel | Completion
ReplyFn = Callable[[CompletionRequest], Reply]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, fn: ReplyFn, *, usage: Usage | None = None) -> None:
        self._fn = fn
        self._usage = usage
        self.calls: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls.append(request)
        reply = self._fn(request)
        if isinstance(reply, Completion):
            return reply
        if isinstance(reply, BaseModel):
            text = reply.model_dump_json(by_alias=True)
        elif isinstance(reply, dict):
            text = json.dumps(reply)
        else:
            text = reply
        return Completion(text=text, usage=self._usage, mode="json_schema")

    async def ping(self) -> None:
        """Always answers: a scripted provider has no endpoint to prove."""
        return None

    async def aclose(self) -> None:
        return None

    def calls_for(self, tool: str) -> list[CompletionRequest]:
        return [c for c in self.calls if c.tool == tool]


_DEFAULTS: list[dict[str, Any]] = []  # the shipped defaults, loaded once per process


def offline_settings(**overrides: Any) -> Settings:
    """The shipped defaults with no environment, plus dotted-key overrides.

    Without overrides (most callers: every scripted client's default) the defaults are
    loaded once per process and each call validates a fresh copy of them (~0.08 ms of
    CPU, not ~0.35). Loaded anew under mutmut (a mutant of the loading must meet every
    test) and where a user config file exists (a test's own HOME may hold one)."""
    if overrides or "MUTANT_UNDER_TEST" in os.environ or DEFAULT_USER_CONFIG.expanduser().is_file():
        return load_config(environ={}, overrides=overrides, config_file=None).settings
    if not _DEFAULTS:
        _DEFAULTS.append(load_config(environ={}, config_file=None).settings.model_dump())
    return Settings.model_validate(_DEFAULTS[0])


def scripted_client(
    fn: ReplyFn,
    *,
    budget: int = 1_000_000,
    settings: Settings | None = None,
    provider_name: ProviderName = "openai",
    usage: Usage | None = None,
    trace: TraceFn | None = None,
) -> tuple[LLMClient, ScriptedProvider]:
    provider = ScriptedProvider(fn, usage=usage)
    client = LLMClient(
        provider=provider,
        provider_name=provider_name,
        settings=settings or offline_settings(),
        tracker=TokenTracker(budget),
        trace=trace,
    )
    return client, provider


QueuedReply = Reply | ReplyFn


class UnexpectedCall(AssertionError):
    """A tool was called with no reply queued for it: the run did something the
    script did not foresee."""


class ToolQueues:
    """A strict script: one FIFO queue of replies per tool (agent, evaluator, …).

    Use it as the `fn` of `ScriptedProvider`/`scripted_client`. A call to a tool
    whose queue is empty or missing raises `UnexpectedCall` naming the tool and the
    request. The error is also remembered, because the agent loop catches broad
    exceptions to save a partial answer and would otherwise hide it: call
    `assert_complete()` at the end of a test to fail on any unexpected call and on
    any reply that was queued but never consumed. A queued reply may be a callable
    `request -> reply` for replies that echo the request (the finalizer's)."""

    def __init__(self, queues: dict[str, list[QueuedReply]] | None = None) -> None:
        self._queues: dict[str, list[QueuedReply]] = {
            tool: list(replies) for tool, replies in (queues or {}).items()
        }
        self.unexpected: list[str] = []

    def add(self, tool: str, *replies: QueuedReply) -> ToolQueues:
        self._queues.setdefault(tool, []).extend(replies)
        return self

    def __call__(self, request: CompletionRequest) -> Reply:
        queue = self._queues.get(request.tool)
        if not queue:
            problem = _describe_unexpected(request, "missing" if queue is None else "empty")
            self.unexpected.append(problem)
            raise UnexpectedCall(problem)
        reply = queue.pop(0)
        return reply(request) if callable(reply) else reply

    def leftovers(self) -> dict[str, int]:
        return {tool: len(queue) for tool, queue in self._queues.items() if queue}

    def assert_complete(self) -> None:
        problems = list(self.unexpected)
        problems += [
            f"{n} queued repl{'y' if n == 1 else 'ies'} for tool {tool!r} never used"
            for tool, n in self.leftovers().items()
        ]
        if problems:
            raise AssertionError("scripted LLM: " + "; ".join(problems))


def _describe_unexpected(request: CompletionRequest, why: str) -> str:
    last = request.messages[-1].content if request.messages else ""
    excerpt = last if len(last) <= 160 else last[:157] + "..."
    return (
        f"unexpected call to tool {request.tool!r} (its queue is {why}); last message: {excerpt!r}"
    )
