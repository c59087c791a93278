"""What the SDK-backed LLM providers share: prompt addenda, error messages, usage.

Each provider classifies its SDK's exceptions itself (the SDKs differ); the typed
errors it then raises are built here so that every provider words them alike and
never leaks its key. No SDK is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from deepsearch.config import redact_secrets, redact_userinfo
from deepsearch.errors import (
    ContextLengthError,
    EndpointUnusable,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
)
from deepsearch.llm.base import Usage


def schema_instruction(json_schema: dict[str, Any]) -> str:
    """The system-prompt addendum used whenever the schema cannot be sent natively."""
    return (
        "\n\nReply with only one JSON object (no prose, no code fence) that matches this "
        f"JSON schema:\n{json.dumps(json_schema, ensure_ascii=False)}"
    )


def one_line(text: str, *, limit: int = 240, secrets: Sequence[str] = ()) -> str:
    """A single line, cut to `limit`, with every known secret replaced
    (`redact_secrets`: only values long enough to be secrets)."""
    text = " ".join(redact_secrets(text, secrets).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_usage(prompt_tokens: Any, completion_tokens: Any, cached: Any = None) -> Usage | None:
    """Usage when the server reported both counts as integers, else None; `cached`
    (the prompt tokens read from the server's cache) counts when it is an integer
    within the prompt's."""
    if isinstance(prompt_tokens, int) and isinstance(completion_tokens, int):
        ok = isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0
        return Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached_prompt_tokens=min(cached, prompt_tokens) if ok else 0,
        )
    return None


def cached_tokens(usage: dict[str, Any]) -> Any:
    """Prompt tokens served from the cache, in an OpenAI-compatible usage object:
    OpenAI's `prompt_tokens_details.cached_tokens`, DeepSeek's `prompt_cache_hit_tokens`."""
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        return details["cached_tokens"]
    return usage.get("prompt_cache_hit_tokens")


class Embeddings(NamedTuple):
    """Vectors of one embedding request, in input order, and the tokens the server
    reported for it (None when it reported none: the caller estimates)."""

    vectors: list[list[float]]
    prompt_tokens: int | None = None


def endpoint_label(provider: str, base_url: str) -> str:
    """`<provider> at <url>` for messages, with any password in the URL masked."""
    return f"{provider} at {redact_userinfo(base_url)}"


def url_secrets(url: str) -> list[str]:
    """The password embedded in `url` and the `Basic` credential derived from it
    (config.redaction.url_secrets), to scrub from echoed error text."""
    from deepsearch.config.redaction import url_secrets as secrets_of

    return secrets_of(url)


def no_embedding_model(provider: str) -> ProviderError:
    return ProviderError("no llm.embedding_model configured", provider=provider)


@dataclass(frozen=True)
class ErrorWording:
    """Builds the typed errors of one failed call: `where` names provider and endpoint.

    Build `where` with `endpoint_label`: a base URL may carry a password. `model` is
    "" for a call that names no model (a ping).
    """

    provider: str
    model: str
    where: str

    def auth(self, status: Any, hint: str) -> ProviderAuthError:
        return ProviderAuthError(
            f"{self.where} rejected the credentials (HTTP {status}): {hint}",
            provider=self.provider,
            model=self.model,
        )

    def context(self, message: str) -> ContextLengthError:
        return ContextLengthError(
            f"{self.where}: the prompt is longer than {self.model}'s context window ({message})",
            provider=self.provider,
            model=self.model,
        )

    def timeout(self, timeout_s: float) -> ProviderError:
        model = f" (model {self.model})" if self.model else ""
        return self._error(f"{self.where} timed out after {timeout_s:g}s{model}")

    def call_limit(
        self, limit: str, seconds: float, answered: int | None = None, retries: int = 0
    ) -> ProviderError:
        """A call cut by its first-token allowance or whole-call limit (call_limits);
        `answered`: the error status the server kept answering while it was retried
        (a rate limit is no slow server)."""
        model = f" (model {self.model})" if self.model else ""
        if limit == "first token" and answered is not None:
            what = "rate limited" if answered == 429 else "failing"
            return self._error(
                f"{self.where} kept answering HTTP {answered} ({what}){model}: "
                f"{retries} {'retry' if retries == 1 else 'retries'} within the "
                f"{seconds:g}s first-token allowance, then the call was given up"
            )
        if limit == "first token":
            return self._error(
                f"{self.where} sent no first token within {seconds:g}s{model}; the request "
                "was closed (a slow server needs a larger llm.first_token_timeout_s)"
            )
        return self._error(
            f"{self.where} did not finish its reply within {seconds:g}s{model}; the stream "
            "was closed, which stops the server generating (llm.timeout_s sets the limit)"
        )

    def cut_off(self, message: str) -> ProviderError:
        """A reply stream that ended before the reply did, after the retries."""
        return self._error(
            f"{self.where} left its reply incomplete{self._for_model}: {message}; "
            "the partial reply was not used"
        )

    def unusable(self, message: str) -> EndpointUnusable:
        """An endpoint no retry can help (`openai_wire.WireUnusable`): exit 2."""
        return EndpointUnusable(
            f"{self.where}: {message}", provider=self.provider, model=self.model
        )

    def unreachable(self, message: str) -> ProviderError:
        return self._error(f"cannot reach {self.where}: {message}")

    def http(self, status: Any, message: str) -> ProviderError:
        text = f"{self.where} answered HTTP {status}{self._for_model}: {message}"
        if status == 404 and self.model:  # no such model (or no such path): configuration
            return ModelNotFoundError(
                f"{text} (check --model / DEEPSEARCH_MODEL and the endpoint URL)",
                provider=self.provider,
                model=self.model,
            )
        return self._error(text)

    def failed(self, exc: Exception, message: str) -> ProviderError:
        return self._error(f"{self.where} failed{self._for_model}: {type(exc).__name__}: {message}")

    @property
    def _for_model(self) -> str:
        # Empty for calls that name no model (a ping lists models).
        return f" for model {self.model}" if self.model else ""

    def _error(self, text: str) -> ProviderError:
        return ProviderError(text, provider=self.provider, model=self.model)
