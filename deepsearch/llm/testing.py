"""Fakes shipped with the package: a scripted provider for offline runs and tests.

`ScriptedProvider(fn)` calls `fn(request)` for every LLM call; `fn` decides the
reply (in the spirit of pydantic-ai's FunctionModel). It may return a string (raw
model text), a dict or pydantic model (serialized to JSON), a `Completion`, or
raise an exception to simulate a provider failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from deepsearch.config import ProviderName, Settings, load_config
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


def offline_settings(**overrides: Any) -> Settings:
    """The shipped defaults with no environment, plus dotted-key overrides."""
    return load_config(environ={}, overrides=overrides, config_file=None).settings


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
