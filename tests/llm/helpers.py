"""Small builders shared by the LLM tests."""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepsearch.config import Settings
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.llm.gemini_provider import GeminiProvider
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.scripted_llm import offline_settings

SECRET = "sk-test-DO-NOT-PRINT-1234567890"
ASK = [Message(role="user", content="What is the answer?")]


class Answer(BaseModel):
    answer: str
    confidence: float = Field(ge=0, le=1)


def openai_client(
    base_url: str,
    *,
    max_retries: int = 0,
    budget: int = 1_000_000,
    settings: Settings | None = None,
    name: str = "openai",
    strict_subset: bool | None = True,
) -> tuple[LLMClient, OpenAIProvider]:
    """A client over the fake at `base_url`, which stands for OpenAI's own API
    (`strict_subset=True`) unless told otherwise (None: decided by the host)."""
    provider = OpenAIProvider(
        strict_subset=strict_subset,
        api_key="ollama" if name == "ollama" else SECRET,
        base_url=base_url,
        max_retries=max_retries,
        timeout_s=5,
        name=name,
        key_env="" if name == "ollama" else "OPENAI_API_KEY",
    )
    client = LLMClient(
        provider=provider,
        provider_name="ollama" if name == "ollama" else "openai",
        settings=settings or offline_settings(),
        tracker=TokenTracker(budget),
    )
    return client, provider


def gemini_client(
    base_url: str, *, max_retries: int = 0, budget: int = 1_000_000
) -> tuple[LLMClient, GeminiProvider]:
    provider = GeminiProvider(
        api_key=SECRET,
        base_url=base_url,
        max_retries=max_retries,
        timeout_s=5,
        retry_initial_delay_s=0.01,
    )
    client = LLMClient(
        provider=provider,
        provider_name="gemini",
        settings=offline_settings(),
        tracker=TokenTracker(budget),
    )
    return client, provider


def record_waits(provider: OpenAIProvider) -> list[float]:
    """The provider's retry pauses, recorded instead of waited (no wall clock)."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    provider.wire.sleep = sleep
    return waits
