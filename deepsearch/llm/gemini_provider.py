"""Gemini provider on `google-genai` (async), with a native JSON response schema.

Structured output sends `response_mime_type="application/json"` plus
`response_json_schema`, rewritten into Gemini's documented subset (`schema_dialects`);
if the API rejects the schema, the shared ladder (`output_modes`) repeats the call
with JSON mode and the schema in the system instruction, and remembers that per model
for the rest of the run. Retries on 408/429/5xx are the SDK's own (`HttpRetryOptions`, exponential
backoff with jitter; it ignores any Retry-After header, see `client`). The SDK is
imported lazily, and the client is kept alive on the instance: a garbage-collected
genai client closes its HTTP connection pool under a pending request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, CompletionRequest, OutputMode
from deepsearch.llm.call_limits import call_limits
from deepsearch.llm.output_modes import ModeRejected, OutputModeLadder, system_for
from deepsearch.llm.provider_common import (
    Embeddings,
    ErrorWording,
    endpoint_label,
    make_usage,
    no_embedding_model,
    one_line,
    url_secrets,
)
from deepsearch.llm.schema_dialects import GEMINI, UnsupportedSchema, to_dialect

if TYPE_CHECKING:
    from google import genai

    from deepsearch.config import Settings

RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)
_FINISH_MAP = {"MAX_TOKENS": "length", "STOP": "stop", "SAFETY": "content_filter"}
_CONTEXT_HINTS = ("exceeds the maximum number of tokens", "input token count", "context length")
_SCHEMA_HINTS = ("response_json_schema", "response_schema", "responsejsonschema", "schema")
_LADDER: tuple[OutputMode, ...] = ("json_schema", "json_object")


class GeminiProvider:
    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        embedding_model: str | None = None,
        retry_initial_delay_s: float = 1.0,
    ) -> None:
        self.base_url = base_url or "https://generativelanguage.googleapis.com"
        self.embedding_model = embedding_model
        self._custom_base = base_url
        self._api_key = api_key or ""
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._retry_initial_delay_s = retry_initial_delay_s
        self._client: genai.Client | None = None
        self.output_modes = OutputModeLadder(_LADDER)

    @classmethod
    def from_settings(cls, settings: Settings) -> GeminiProvider:
        key = settings.keys.gemini_api_key
        return cls(
            api_key=key.get_secret_value() if key else None,
            base_url=settings.llm.gemini_base_url,
            timeout_s=call_limits(settings.llm, "gemini", settings.llm.gemini_base_url).total_s,
            max_retries=settings.llm.max_retries,
            embedding_model=settings.llm.embedding_model,
        )

    @property
    def client(self) -> genai.Client:
        if self._client is None:
            from google import genai
            from google.genai import types

            # The SDK's retry (tenacity) backs off exponentially with jitter but does NOT
            # honour a 429's Retry-After header (nor RetryInfo.retryDelay in the body):
            # a long server-requested pause is cut short and the retries can all land
            # inside it. The OpenAI SDK, by contrast, waits as told (up to 120 s).
            options = types.HttpOptions(
                timeout=int(self._timeout_s * 1000),  # milliseconds
                retry_options=types.HttpRetryOptions(
                    attempts=self._max_retries + 1,
                    initial_delay=self._retry_initial_delay_s,
                    jitter=min(1.0, self._retry_initial_delay_s),
                    http_status_codes=list(RETRY_STATUS_CODES),
                ),
            )
            if self._custom_base:
                options.base_url = self._custom_base
                options.api_version = "v1beta"
            self._client = genai.Client(api_key=self._api_key or "missing", http_options=options)
        return self._client

    def prepare(self) -> None:
        """Import the SDK and build the client now (the client calls this before a
        first request it sends without waiting for the tokenizer)."""
        _ = self.client.aio.models

    # ------------------------------------------------------------ protocol

    async def complete(self, request: CompletionRequest) -> Completion:
        # A schema Gemini's subset cannot express goes in the prompt, without marking
        # the model as one that rejects schemas.
        native = request.json_schema is None or gemini_schema(request.json_schema) is not None
        return await self.output_modes.complete(
            request, lambda mode: self._send(request, mode), native=native
        )

    async def ping(self) -> None:
        """List one page of models: proves the endpoint answers and accepts the key."""
        try:
            await self.client.aio.models.list(config={"page_size": 1})
        except Exception as exc:  # any SDK/transport failure becomes a typed ProviderError
            raise self._map_error(exc, "") from None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors

    async def embed_with_usage(self, texts: Sequence[str]) -> Embeddings:
        """One (batch) embedding request. The Gemini API reports no token count for
        embeddings, so `prompt_tokens` is always None and the caller estimates."""
        if not self.embedding_model:
            raise no_embedding_model(self.name)
        try:
            resp = await self.client.aio.models.embed_content(
                model=self.embedding_model, contents=list(texts)
            )
        except Exception as exc:  # any SDK/transport failure becomes a typed ProviderError
            raise self._map_error(exc, self.embedding_model) from None
        vectors = [list(e.values or []) for e in (resp.embeddings or [])]
        return Embeddings(vectors=vectors, prompt_tokens=None)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aio.aclose()

    # ------------------------------------------------------------ internals

    def _config(self, request: CompletionRequest, mode: OutputMode) -> Any:
        from google.genai import types

        system = system_for(request, mode)
        extra: dict[str, Any] = {}
        if request.json_schema is not None:
            extra["response_mime_type"] = "application/json"
            native = gemini_schema(request.json_schema) if mode == "json_schema" else None
            if native is not None:
                extra["response_json_schema"] = native
        return types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=request.settings.temperature,
            max_output_tokens=request.max_tokens or request.settings.max_tokens,
            **extra,
        )

    async def _send(self, request: CompletionRequest, mode: OutputMode) -> Completion:
        from google.genai import types

        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in request.messages
        ]
        try:
            resp = await self.client.aio.models.generate_content(
                model=request.settings.model,
                contents=contents,
                config=self._config(request, mode),
            )
        except Exception as exc:  # any SDK/transport failure becomes a typed ProviderError
            error = self._map_error(exc, request.settings.model)
            if mode == "json_schema" and _is_schema_rejection(exc):
                raise ModeRejected(error) from None
            raise error from None
        return _to_completion(resp, mode)

    def _map_error(self, exc: Exception, model: str) -> ProviderError:
        from google.genai import errors

        wording = ErrorWording(self.name, model, endpoint_label(self.name, self.base_url))
        secrets = [self._api_key, *url_secrets(self.base_url)]
        message = one_line(_error_text(exc), secrets=secrets)
        if isinstance(exc, errors.APIError):
            code = exc.code
            if code in (401, 403) or (code == 400 and "api_key_invalid" in _blob(exc)):
                return wording.auth(code, "set GEMINI_API_KEY to a valid key")
            if code == 400 and any(h in _blob(exc) for h in _CONTEXT_HINTS):
                return wording.context(message)
            return wording.http(code, message)
        if "timeout" in type(exc).__name__.lower():
            return wording.timeout(self._timeout_s)
        return wording.failed(exc, message)


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` in Gemini's documented responseJsonSchema subset, or None if impossible."""
    try:
        return to_dialect(schema, GEMINI)
    except UnsupportedSchema:
        return None


def _error_text(exc: Exception) -> str:
    return str(getattr(exc, "message", None) or exc)


def _blob(exc: Exception) -> str:
    return f"{getattr(exc, 'status', '')} {exc} {getattr(exc, 'details', '')}".lower()


def _is_schema_rejection(exc: Exception) -> bool:
    from google.genai import errors

    if not isinstance(exc, errors.APIError) or exc.code != 400:
        return False
    blob = _blob(exc)
    if "api_key" in blob or any(h in blob for h in _CONTEXT_HINTS):
        return False
    return any(h in blob for h in _SCHEMA_HINTS)


def _to_completion(resp: Any, mode: OutputMode) -> Completion:
    """Text of the first candidate, minus thought parts; never None."""
    candidates = getattr(resp, "candidates", None) or []
    text = ""
    finish: str | None = None
    if candidates:
        first = candidates[0]
        content = getattr(first, "content", None)
        parts = getattr(content, "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not p.thought)
        raw_finish = getattr(first, "finish_reason", None)
        if raw_finish is not None:
            name = getattr(raw_finish, "name", None) or str(raw_finish)
            finish = _FINISH_MAP.get(name, name.lower())
    usage = None
    meta = getattr(resp, "usage_metadata", None)
    if meta is not None:
        # Thought tokens count as completion tokens, as they are billed.
        completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
        cached = getattr(meta, "cached_content_token_count", None)
        usage = make_usage(meta.prompt_token_count, completion, cached)
    return Completion(text=text, usage=usage, finish_reason=finish, mode=mode)
