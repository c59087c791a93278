"""Which LLM provider to use, and building the `LLMClient` for it.

Order: explicit `llm.provider`; else GEMINI_API_KEY; else OPENAI_API_KEY (with
OPENAI_BASE_URL honoured); else OPENAI_BASE_URL alone (a keyless vLLM / LM Studio
server); else a local OpenAI-compatible server answering at `llm.ollama_url`; else
one ConfigError saying how to set up each option.
SDKs are imported only when a provider is actually built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deepsearch.config import KeysConfig, ProviderName, Settings, redact_userinfo
from deepsearch.errors import ConfigError

if TYPE_CHECKING:
    from deepsearch.llm.base import LLMProvider
    from deepsearch.llm.client import LLMClient, TraceFn
    from deepsearch.llm.tracker import TokenTracker

Probe = Callable[[str], bool]
PROBE_TIMEOUT_S = 0.5
# The LLM providers that need a key, and the variable that sets it (Ollama needs none).
KEY_ENV: dict[str, str] = {
    name: var for name, var in KeysConfig.env_vars().items() if name in ("gemini", "openai")
}

NO_PROVIDER_MESSAGE = (
    "no LLM provider is configured. Choose one: "
    "(1) Gemini: export GEMINI_API_KEY=...; "
    "(2) OpenAI or any OpenAI-compatible server (vLLM, LM Studio, OpenRouter, DeepSeek): "
    "export OPENAI_API_KEY=... and, for a non-OpenAI server, OPENAI_BASE_URL=https://host/v1 "
    "(a server that needs no key needs only OPENAI_BASE_URL); "
    "(3) local Ollama: start it (`ollama serve`, then `ollama pull {model}`) so it answers at "
    "{ollama_url}, or set llm.ollama_url. "
    "Force a choice with DEEPSEARCH_LLM_PROVIDER=gemini|openai|ollama."
)


def probe_local_server(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True when an OpenAI-compatible (or Ollama) server answers at `base_url`."""
    import urllib.error
    import urllib.request

    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    for path in ("/v1/models", "/api/tags"):
        try:
            with urllib.request.urlopen(root + path, timeout=timeout_s) as resp:  # noqa: S310
                if 200 <= resp.status < 300:
                    return True
        except (urllib.error.URLError, OSError, ValueError):
            continue
    return False


def _has_key(settings: Settings, provider: ProviderName) -> bool:
    key = getattr(settings.keys, f"{provider}_api_key", None)
    return key is not None and bool(key.get_secret_value().strip())


def _has_base_url(settings: Settings) -> bool:
    return bool((settings.llm.openai_base_url or "").strip())


def resolve_provider(settings: Settings, *, probe: Probe = probe_local_server) -> ProviderName:
    """The provider this run will use, or a ConfigError explaining how to get one."""
    explicit = settings.llm.provider
    if explicit is not None:
        keyless_ok = explicit == "openai" and _has_base_url(settings)
        if explicit in KEY_ENV and not keyless_ok and not _has_key(settings, explicit):
            keyless = " (or OPENAI_BASE_URL for a server that needs no key)"
            raise ConfigError(
                f"llm.provider is {explicit!r} but {KEY_ENV[explicit]} is not set: "
                f"export {KEY_ENV[explicit]}=...{keyless if explicit == 'openai' else ''} "
                "or choose another provider"
            )
        return explicit
    if _has_key(settings, "gemini"):
        return "gemini"
    if _has_key(settings, "openai") or _has_base_url(settings):
        return "openai"
    if probe(settings.llm.ollama_url):
        return "ollama"
    model = (
        settings.tool_settings("ollama", "agent").model
        if "ollama" in settings.llm.providers
        else "qwen2.5:7b"
    )
    ollama_url = redact_userinfo(settings.llm.ollama_url)
    raise ConfigError(NO_PROVIDER_MESSAGE.format(model=model, ollama_url=ollama_url))


def build_provider(settings: Settings, provider_name: ProviderName) -> LLMProvider:
    if provider_name == "gemini":
        from deepsearch.llm.gemini_provider import GeminiProvider

        return GeminiProvider.from_settings(settings)
    from deepsearch.llm.openai_provider import OpenAIProvider

    return OpenAIProvider.from_settings(settings, provider_name)


def _embedder(settings: Settings, provider: LLMProvider) -> object | None:
    """The LLM provider's own embeddings (llm.embedding_model), else Jina's
    (llm.jina_embedding_model + JINA_API_KEY), else none: lexical similarity."""
    if settings.llm.embedding_model:
        return provider
    jina_key = settings.keys.jina_api_key
    if settings.llm.jina_embedding_model and jina_key is not None:
        from deepsearch.llm.call_limits import call_limits
        from deepsearch.llm.jina_embeddings import JinaEmbeddings

        return JinaEmbeddings(
            api_key=jina_key.get_secret_value(),
            model=settings.llm.jina_embedding_model,
            base_url=settings.llm.jina_embedding_url,
            timeout_s=call_limits(settings.llm, "jina", settings.llm.jina_embedding_url).total_s,
        )
    return None


def build_llm_client(
    settings: Settings,
    tracker: TokenTracker,
    *,
    trace: TraceFn | None = None,
    provider_name: ProviderName | None = None,
    probe: Probe = probe_local_server,
) -> LLMClient:
    """The client the agent uses; the provider (and its SDK) is built here, lazily."""
    from deepsearch.llm.client import LLMClient

    name = provider_name or resolve_provider(settings, probe=probe)
    provider = build_provider(settings, name)
    embedder = _embedder(settings, provider)
    return LLMClient(
        provider=provider,
        provider_name=name,
        settings=settings,
        tracker=tracker,
        embedder=embedder,  # type: ignore[arg-type]
        trace=trace,
    )
