"""OpenAI-compatible provider: chat completions over httpx, the rest on the `openai` SDK.

One class serves OpenAI, Ollama (`<ollama_url>/v1`), vLLM, LM Studio, llama.cpp,
OpenRouter and DeepSeek: only the base URL and key differ. Structured output climbs
the shared ladder (`output_modes`). On OpenAI's own API: `response_format`
json_schema in strict mode (the schema rewritten into the strict subset, see
`schema_dialects`), JSON mode with the schema in the system prompt, then plain
prompted JSON. On any other server: json_schema with the full schema (`GRAMMAR`
dialect: length limits kept, for the server's grammar), then
`{"type": "json_object", "schema": S}` (llama-cpp-python's form), then JSON mode,
then prompted JSON. Ollama's /v1 endpoint turns a json_schema `response_format` into
its native `format: <schema>` (Ollama's OpenAI-compatibility docs).

A server refuses a mode with a 4xx, or -- llama-cpp-python -- a 500, whose body names
the structured-output request (`response_format`, `json_schema`, `schema`, `strict`,
"not supported"): the next rung is tried at once, never retried (`openai_wire`), so a
refused rung costs exactly one request.
Every chat completion is one streamed POST spoken by `openai_wire` over httpx, with
the SDK's retry rules (connection errors, 408/409/429/5xx, Retry-After, jittered
backoff, `max_retries`), read under the call's limits (`call_limits`, `streaming`):
the transport's own read timeout is set above them so that a timed-out call is never
retried, and closing the stream stops the server generating. A research run thus
imports no `openai` module: the SDK's import alone (its pydantic types) cost about a
second of CPU a run (issue 21). The SDK stays a dependency for what is off that path,
`ping` (models.list) and embeddings, imported lazily there; its errors and the
wire's are mapped alike (`_map_error`).
A keyless server (vLLM, LM Studio) needs only OPENAI_BASE_URL (a placeholder key is
sent). An HTML page for an answer, or an exhausted quota, is `EndpointUnusable` (exit 2).

Ollama's context window is NOT set from here: its OpenAI-compatible endpoint has no
per-request `options`/`num_ctx` field (unknown fields are dropped), so a prompt
longer than the server's window (4k by default on small GPUs) is truncated silently.
The user sets it on the server: `OLLAMA_CONTEXT_LENGTH=32768 ollama serve` (or a
Modelfile `PARAMETER num_ctx`), matching llm.providers.ollama.context_window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, CompletionRequest, OutputMode
from deepsearch.llm.call_limits import CONNECT_TIMEOUT_S, CallLimits, call_limits
from deepsearch.llm.openai_wire import ChatWire, WireUnusable, transport_failure
from deepsearch.llm.output_modes import NATIVE_MODES, ModeRejected, OutputModeLadder, system_for
from deepsearch.llm.provider_common import (
    Embeddings,
    ErrorWording,
    cached_tokens,
    endpoint_label,
    make_usage,
    no_embedding_model,
    one_line,
    url_secrets,
)
from deepsearch.llm.refusals import names_structured_output
from deepsearch.llm.schema_dialects import (
    GRAMMAR,
    OPENAI_STRICT,
    Dialect,
    UnsupportedSchema,
    to_dialect,
)
from deepsearch.llm.streaming import CallTimedOut, StreamCutOff, StreamedReply

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI

    from deepsearch.clock import Clock
    from deepsearch.config import ProviderName, Settings
    from deepsearch.llm.rung_memory import RungMemory

# OpenAI's own API (and Azure's): the strict subset, no json_object + schema rung.
_OFFICIAL_LADDER: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompted")
_LADDER: tuple[OutputMode, ...] = ("json_schema", "json_object_schema", "json_object", "prompted")
_OFFICIAL_HOSTS = ("api.openai.com", ".openai.azure.com")
# Statuses a refusal may come with: any client error but auth / rate limit, and the
# 500s of servers whose request validation fails as a server error.
_NOT_REFUSALS = frozenset({401, 403, 408, 409, 429})
_CONTEXT_HINTS = ("context_length_exceeded", "maximum context length", "context length", "too long")
# Sent when OPENAI_BASE_URL names a server that needs no key: the SDK refuses an empty one.
KEYLESS_PLACEHOLDER = "not-needed"


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:  # OpenAI's own API
    """The strict-mode form of `schema` (see `schema_dialects`), or None if impossible.

    Only a schema strict mode cannot express at all (a free-form object, a
    recursive model) is sent non-strict, unchanged.
    """
    try:
        return to_dialect(schema, OPENAI_STRICT)
    except UnsupportedSchema:
        return None


class OpenAIProvider:
    """`LLMProvider` (and `EmbeddingProvider`) over any OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout_s: float = 300.0,
        first_token_s: float | None = None,
        max_retries: int = 3,
        name: str = "openai",
        key_env: str = "OPENAI_API_KEY",
        embedding_model: str | None = None,
        client: AsyncOpenAI | None = None,
        http_client: httpx.AsyncClient | None = None,
        strict_subset: bool | None = None,
        rung_memory: RungMemory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self.clock = clock  # the call limits' (streaming.collect); None: real time
        self.base_url = base_url or "https://api.openai.com/v1"
        self.key_env = key_env
        self.embedding_model = embedding_model
        self._api_key = api_key or ""
        # timeout_s: the whole call; first_token_s: until its first chunk (see call_limits).
        self.limits = CallLimits(min(first_token_s or timeout_s, timeout_s), timeout_s)
        self._max_retries = max_retries
        self._client = client  # the SDK's, for ping and embeddings
        self._http_client = http_client  # the chat completions' (openai_wire)
        self._wire: ChatWire | None = None
        # None: decided by the host (OpenAI's own API speaks only the strict subset).
        self.strict_subset = self._is_official if strict_subset is None else strict_subset
        rungs = _OFFICIAL_LADDER if self.strict_subset else _LADDER
        self.output_modes = OutputModeLadder(rungs, memory=rung_memory, server=self.base_url)

    @classmethod
    def from_settings(cls, settings: Settings, name: ProviderName) -> OpenAIProvider:
        from deepsearch.llm.rung_memory import RungMemory

        llm = settings.llm
        memory = RungMemory.for_settings(settings)
        if name == "ollama":
            # Ollama ignores the key, but the SDK insists on one.
            base_url = llm.ollama_url.rstrip("/").removesuffix("/v1") + "/v1"
            limits = call_limits(llm, name, base_url)
            return cls(
                api_key="ollama",
                base_url=base_url,
                timeout_s=limits.total_s,
                first_token_s=limits.first_token_s,
                max_retries=llm.max_retries,
                name="ollama",
                key_env="",
                embedding_model=llm.embedding_model,
                rung_memory=memory,
            )
        key = settings.keys.openai_api_key
        api_key = key.get_secret_value().strip() if key else ""
        if not api_key and llm.openai_base_url:
            api_key = KEYLESS_PLACEHOLDER
        limits = call_limits(llm, name, llm.openai_base_url)
        return cls(
            api_key=api_key or None,
            base_url=llm.openai_base_url,
            timeout_s=limits.total_s,
            first_token_s=limits.first_token_s,
            max_retries=llm.max_retries,
            embedding_model=llm.embedding_model,
            rung_memory=memory,
        )

    def prepare(self) -> None:
        """Import httpx and build the chat client now (a first request goes before tokenizing)."""
        _ = self.wire.client

    # ------------------------------------------------------------ protocol

    @property
    def client(self) -> AsyncOpenAI:
        """The SDK's client: `ping` and embeddings only (chat goes over `wire`), on the
        process's one TLS context (its own loaded the CA bundle per client: web/tls.py)."""
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient, Timeout

            from deepsearch.web.tls import client_context

            self._client = AsyncOpenAI(
                api_key=self._api_key or "missing",
                base_url=self.base_url,
                timeout=Timeout(self.limits.sdk_read_timeout_s, connect=CONNECT_TIMEOUT_S),
                max_retries=self._max_retries,
                http_client=DefaultAsyncHttpxClient(verify=client_context()),
            )
        return self._client

    @property
    def wire(self) -> ChatWire:
        """The chat completions' client: one streamed POST over httpx (`openai_wire`)."""
        if self._wire is None:
            self._wire = ChatWire(
                base_url=self.base_url,
                api_key=self._api_key or "missing",
                read_timeout_s=self.limits.sdk_read_timeout_s,
                connect_timeout_s=CONNECT_TIMEOUT_S,
                max_retries=self._max_retries,
                http_client=self._http_client,
            )
        return self._wire

    async def complete(self, request: CompletionRequest) -> Completion:
        return await self.output_modes.complete(request, lambda mode: self._send(request, mode))

    async def ping(self) -> None:
        """List the models: proves the endpoint answers and accepts the key."""
        try:
            await self.client.models.list(timeout=self._quick_timeout())
        except Exception as exc:  # any SDK/transport failure becomes a typed ProviderError
            raise self._map_error(exc, "") from None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors

    async def embed_with_usage(self, texts: Sequence[str]) -> Embeddings:
        """One embeddings request; the server's token count when it reports one."""
        if not self.embedding_model:
            raise no_embedding_model(self.name)
        try:
            resp = await self.client.embeddings.create(
                model=self.embedding_model, input=list(texts), timeout=self._quick_timeout()
            )
        except Exception as exc:  # any SDK/transport failure becomes a typed ProviderError
            raise self._map_error(exc, self.embedding_model) from None
        data = getattr(resp, "data", None) or []
        vectors = [list(item.embedding) for item in sorted(data, key=lambda d: d.index)]
        tokens = getattr(getattr(resp, "usage", None), "prompt_tokens", None)
        reported = tokens if isinstance(tokens, int) and tokens > 0 else None
        return Embeddings(vectors=vectors, prompt_tokens=reported)

    async def aclose(self) -> None:
        if self._wire is not None:
            await self._wire.aclose()
        if self._client is not None:
            await self._client.close()

    # ------------------------------------------------------------ internals

    def _build_kwargs(self, request: CompletionRequest, mode: OutputMode) -> dict[str, Any]:
        system = system_for(request, mode)
        kwargs: dict[str, Any] = {}
        schema = request.json_schema
        if mode == "json_schema" and schema is not None:
            wire = self.wire_schema(schema)
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(request.schema_name),
                    "schema": wire if wire is not None else schema,
                    "strict": self.strict_subset and wire is not None,
                },
            }
        elif mode == "json_object_schema" and schema is not None:
            wire = self.wire_schema(schema)
            kwargs["response_format"] = {"type": "json_object", "schema": wire or schema}
        elif mode == "json_object" and schema is not None:
            kwargs["response_format"] = {"type": "json_object"}
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        max_tokens = request.max_tokens or request.settings.max_tokens
        # The official API wants max_completion_tokens (reasoning models reject
        # max_tokens); most compatible servers only know max_tokens.
        token_field = "max_completion_tokens" if self._is_official else "max_tokens"
        kwargs.update(
            model=request.settings.model,
            messages=messages,
            temperature=request.settings.temperature,
            **{token_field: max_tokens},
        )
        return kwargs

    @property
    def _is_official(self) -> bool:
        from urllib.parse import urlsplit

        host = (urlsplit(self.base_url).hostname or "").lower()
        return any(host == h or (h.startswith(".") and host.endswith(h)) for h in _OFFICIAL_HOSTS)

    @property
    def dialect(self) -> Dialect:
        return OPENAI_STRICT if self.strict_subset else GRAMMAR

    def wire_schema(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """`schema` as this server's dialect takes it, or None if it cannot say it."""
        try:
            return to_dialect(schema, self.dialect)
        except UnsupportedSchema:
            return None

    async def _send(self, request: CompletionRequest, mode: OutputMode) -> Completion:
        kwargs = self._build_kwargs(request, mode)
        try:
            body = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
            resp = await self.wire.reply(body, self.limits, self.clock)
        except Exception as exc:  # any wire/transport failure becomes a typed ProviderError
            error = self._map_error(exc, request.settings.model)
            if mode in NATIVE_MODES | {"json_object"} and _is_mode_rejection(exc):
                raise ModeRejected(error, getattr(exc, "status_code", None)) from None
            raise error from None
        completion = _to_completion(resp, mode)
        response_format = kwargs.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            completion.strict = bool(response_format["json_schema"]["strict"])
        return completion

    def _map_error(self, exc: Exception, model: str) -> ProviderError:
        """A typed error for a failure of the wire (chat) or of the SDK (ping, embeddings)."""
        wording = ErrorWording(self.name, model, endpoint_label(self.name, self.base_url))
        status = getattr(exc, "status_code", None)
        message = one_line(_error_text(exc), secrets=self._secrets())
        transport = transport_failure(exc)
        if status in (401, 403):
            if self.name == "ollama":
                hint = "Ollama needs no API key: check that llm.ollama_url points at Ollama"
            else:
                hint = f"set {self.key_env} to a valid key for this endpoint"
            return wording.auth(status, hint)
        if status in (400, 413) and _is_context_error(exc):
            return wording.context(message)
        if isinstance(exc, CallTimedOut):
            return wording.call_limit(exc.limit, exc.seconds, exc.answered, exc.retries)
        if isinstance(exc, WireUnusable):  # not the API, or no quota: no retry can help
            return wording.unusable(str(exc))
        if isinstance(exc, StreamCutOff):
            return wording.cut_off(str(exc))
        if transport == "timeout":
            return wording.timeout(self.limits.first_token_s)
        if transport == "unreachable":
            return wording.unreachable(message)
        if status is not None:
            return wording.http(status, message)
        return wording.failed(exc, message)

    def _quick_timeout(self) -> Any:
        """A call that generates nothing (models, embeddings): the first-token allowance."""
        from openai import Timeout

        return Timeout(self.limits.first_token_s, connect=CONNECT_TIMEOUT_S)

    def _secrets(self) -> list[str]:
        # Placeholders ("ollama", "not-needed") are not secrets: masking them would
        # garble server messages such as "try `ollama pull ...`".
        placeholder = self.name == "ollama" or self._api_key == KEYLESS_PLACEHOLDER
        return url_secrets(self.base_url) + ([] if placeholder else [self._api_key])


def _schema_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return cleaned or "response"


def _error_text(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", None) or exc)


def _error_blob(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    parts = [str(getattr(exc, "code", "") or ""), _error_text(exc)]
    if body is not None:
        parts.append(json.dumps(body, default=str))
    return " ".join(parts).lower()


def _is_context_error(exc: Exception) -> bool:
    blob = _error_blob(exc)
    return any(hint in blob for hint in _CONTEXT_HINTS)


def _is_mode_rejection(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status < 400 or status in _NOT_REFUSALS:
        return False
    return not _is_context_error(exc) and names_structured_output(_error_blob(exc), status=status)


def _to_completion(resp: StreamedReply, mode: OutputMode) -> Completion:
    """Defensive: nothing validates a server's chunks (usage may be anything)."""
    choice = resp.choices[0]
    text = choice.message.content or choice.message.refusal or ""
    raw = resp.usage if isinstance(resp.usage, dict) else {}
    usage = make_usage(raw.get("prompt_tokens"), raw.get("completion_tokens"), cached_tokens(raw))
    return Completion(text=text, usage=usage, finish_reason=choice.finish_reason, mode=mode)
