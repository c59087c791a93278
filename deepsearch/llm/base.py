"""Plain data types and the one-method provider protocol the LLM layer is built on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from deepsearch.config import ModelSettings

OutputMode = Literal["json_schema", "json_object_schema", "json_object", "prompted", "text"]


class Message(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class Usage(BaseModel):
    """Tokens of one call (or a sum). `estimated` is set when the server gave no counts.
    `cached_prompt_tokens` is the part of `prompt_tokens` the server read from its
    prompt cache (billed at the cached-input price, llm/prices.py)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    cached_prompt_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            estimated=self.estimated or other.estimated,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


class CompletionRequest(BaseModel):
    """Everything a provider needs for one call."""

    tool: str
    settings: ModelSettings
    system: str
    messages: list[Message]
    # JSON schema of the wanted object, or None for free text.
    json_schema: dict[str, Any] | None = None
    schema_name: str = "response"
    max_tokens: int | None = Field(None, description="overrides settings.max_tokens (budget cap)")


class Completion(BaseModel):
    """A provider's raw answer: text to be parsed by the client, and usage if reported."""

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    mode: OutputMode = "text"
    # Whether the provider enforced the schema (OpenAI strict mode), for the trace:
    # the request record holds the project's schema, not the rewritten wire form.
    strict: bool | None = None


@runtime_checkable
class LLMProvider(Protocol):
    """One transport: sends a request, returns raw text. No parsing, no retries of bad JSON."""

    name: str

    async def complete(self, request: CompletionRequest) -> Completion: ...

    async def ping(self) -> None:
        """The cheapest call proving endpoint and key work (e.g. list models).

        Raises the provider's typed ProviderError (ProviderAuthError for a bad key).
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class EmbeddingProvider(Protocol):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
