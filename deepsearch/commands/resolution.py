"""What a research run would use, and why: the provider, model, endpoint, search chain
and limits, each with the key, flag or default that decided it. `config` shows this
first; `doctor` names the provider the same way."""

from __future__ import annotations

from typing import Any, NamedTuple

from deepsearch.config import LoadedConfig, ProviderName, Settings, redact_userinfo
from deepsearch.errors import ConfigError
from deepsearch.frontend.units import tokens

# Where a provider's SDK sends its calls when no base URL is configured.
DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}


class Decision(NamedTuple):
    """One row: `what` and `value` are the table's text; `key` and `data` are the same
    for a script (`config --json`): a snake_case name (the flag's or key's own, as
    `max_steps`) and the typed value (`500000`, not "500k tokens"; null for none)."""

    what: str
    value: str
    why: str
    key: str = ""
    data: Any = None

    @property
    def json_key(self) -> str:
        return self.key or self.what.replace(" ", "_")


def provider_reason(settings: Settings, name: ProviderName, sources: dict[str, str]) -> str:
    """Why `name` is the provider: the flag or variable that chose it, or the key found."""
    if settings.llm.provider is not None:
        return f"llm.provider from {sources.get('llm.provider', 'config')}"
    if name == "ollama":
        return f"no key set; a local Ollama answers at {redact_userinfo(settings.llm.ollama_url)}"
    if name == "gemini":
        return "GEMINI_API_KEY is set (checked first)"
    key = settings.keys.openai_api_key
    if key is not None and key.get_secret_value().strip():
        return "OPENAI_API_KEY is set"
    url = redact_userinfo(settings.llm.openai_base_url or "")
    return f"keyless server at {url} (OPENAI_BASE_URL is set, no OPENAI_API_KEY)"


def _llm(loaded: LoadedConfig) -> list[Decision]:
    from deepsearch.llm.factory import resolve_provider

    settings, sources = loaded.settings, loaded.sources
    try:
        name = resolve_provider(settings)
    except ConfigError as exc:
        return [Decision("llm provider", "none", str(exc), "llm_provider", None)]
    model = settings.tool_settings(name, "agent").model
    if settings.llm.model:
        model_why = f"llm.model from {sources.get('llm.model', 'config')}"
    else:
        key = f"llm.providers.{name}.default.model"
        model_why = f"{key} ({sources.get(key, 'built-in')})"
    base = {"openai": settings.llm.openai_base_url, "gemini": settings.llm.gemini_base_url}
    endpoint = settings.llm.ollama_url if name == "ollama" else base.get(name)
    endpoint_key = {"openai": "llm.openai_base_url", "gemini": "llm.gemini_base_url"}.get(
        name, "llm.ollama_url"
    )
    endpoint_why = f"{endpoint_key} from {sources.get(endpoint_key, 'config')}"
    if endpoint is None:  # the SDK's own: say where that is
        endpoint_why = "the provider's default"
    return [
        Decision(
            "llm provider", name, provider_reason(settings, name, sources), "llm_provider", name
        ),  # fmt: skip
        Decision("model", model, model_why, "model", model),
        Decision(
            "endpoint",
            redact_userinfo(endpoint or DEFAULT_ENDPOINTS.get(name, "")),
            endpoint_why,
            "endpoint",
            redact_userinfo(endpoint) if endpoint else None,
        ),  # fmt: skip
        _call_limits(loaded, name, endpoint),
    ]


def _call_limits(loaded: LoadedConfig, name: ProviderName, endpoint: str | None) -> Decision:
    """Each LLM call's two limits, and whether they are the configured or the
    endpoint's defaults (a local server gets longer ones: llm/call_limits.py)."""
    from deepsearch.llm.call_limits import call_limits, is_local_endpoint

    llm, sources = loaded.settings.llm, loaded.sources
    limits = call_limits(llm, name, endpoint)
    keys = ("first_token_timeout_s", "timeout_s")
    configured = [f"llm.{k} from {sources.get(f'llm.{k}', 'config')}" for k in keys
                  if getattr(llm, k) is not None]  # fmt: skip
    where = "a local server" if is_local_endpoint(name, endpoint) else "a hosted API"
    value = f"{limits.first_token_s:g} s to the first token, {limits.total_s:g} s a call"
    why = "; ".join(configured) or f"defaults for {where}"
    data = {"first_token_s": limits.first_token_s, "total_s": limits.total_s}
    return Decision("llm call limits", value, why, "llm_call_limits", data)


def _search(loaded: LoadedConfig) -> list[Decision]:
    settings, sources = loaded.settings, loaded.sources
    chain = list(dict.fromkeys(settings.search.providers))
    web = [p for p in chain if p != "local"]
    shown = " → ".join(web) if web else ""
    if "local" in chain:
        shown = f"{shown} + local corpus (fused)" if web else "local corpus"
    rows = [
        Decision(
            "search",
            shown,
            f"search.providers from {sources.get('search.providers', 'built-in')}",
            "search",
            chain,
        )
    ]
    if settings.search.corpus_dir:
        rows.append(
            Decision(
                "corpus",
                settings.search.corpus_dir,
                sources.get("search.corpus_dir", ""),
                "corpus",
                settings.search.corpus_dir,
            )
        )
    return rows


def _limits(loaded: LoadedConfig) -> list[Decision]:
    agent, sources = loaded.settings.agent, loaded.sources
    if agent.budget is not None:
        budget_why = f"agent.budget from {sources.get('agent.budget', 'config')}"
    else:
        budget_why = f"effort {agent.effort} ({sources.get('agent.effort', 'built-in')})"
    timeout = f"{agent.timeout_s:g} s" if agent.timeout_s else "none"

    def why(key: str) -> str:
        return sources.get(f"agent.{key}", "built-in")

    return [
        Decision(
            "budget",
            f"{tokens(agent.token_budget)} tokens",
            budget_why,
            "budget",
            agent.token_budget,
        ),  # fmt: skip
        Decision(
            "max steps", str(agent.max_steps), why("max_steps"), "max_steps", agent.max_steps
        ),  # fmt: skip
        Decision("timeout", timeout, why("timeout_s"), "timeout_s", agent.timeout_s or None),
        Decision(
            "team size", _team(agent.team_size), why("team_size"), "team_size", agent.team_size
        ),  # fmt: skip
    ]


def _team(size: int) -> str:
    return "1 (no split)" if size == 1 else f"up to {size} sub-researches"


def run_decisions(loaded: LoadedConfig) -> list[Decision]:
    """Everything a research run with this configuration would use, and why."""
    return [*_llm(loaded), *_search(loaded), *_limits(loaded)]
