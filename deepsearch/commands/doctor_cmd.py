"""`deepsearch doctor`: check each configured provider and print a table.

For the LLM provider (resolved exactly as a run would): the key is present, the
endpoint answers, and a tiny structured-output round trip validates. For search
providers only the configuration is checked here (key or URL present). Exit 0
when every check passes, 1 otherwise, 2 on a configuration error. No secret is
ever printed: keys are shown as "set, N chars".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from deepsearch.cli import EXIT_RUNTIME, EXIT_USAGE, ConfigOption, fail
from deepsearch.config import ProviderName, Settings, load_config
from deepsearch.errors import ConfigError, DeepsearchError

if TYPE_CHECKING:
    from deepsearch.llm.base import Message
    from deepsearch.llm.client import LLMClient

DOCTOR_TIMEOUT_S = 30.0
DOCTOR_BUDGET = 50_000
SEARCH_KEYS = {"jina": "JINA_API_KEY", "brave": "BRAVE_API_KEY", "serper": "SERPER_API_KEY"}


class Check(NamedTuple):
    name: str
    ok: bool
    detail: str


def doctor(config: ConfigOption = None) -> None:
    import asyncio  # here, not at the top: `deepsearch --help` must stay fast

    try:
        settings = load_config(config_file=config).settings
        from deepsearch.llm.factory import resolve_provider

        provider_name = resolve_provider(settings)
        checks = asyncio.run(llm_checks(settings, provider_name)) + search_checks(settings)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    _print_table(checks)
    if not all(check.ok for check in checks):
        raise fail(f"{sum(not c.ok for c in checks)} of {len(checks)} checks failed", EXIT_RUNTIME)


# ---------------------------------------------------------------- LLM


def _key_check(settings: Settings, name: ProviderName) -> Check:
    if name == "ollama":
        return Check(name="llm key", ok=True, detail="not needed for Ollama")
    from deepsearch.config import mask_secret
    from deepsearch.llm.factory import KEY_ENV

    key = getattr(settings.keys, f"{name}_api_key")
    value = key.get_secret_value() if key else ""
    if not value:
        return Check(name="llm key", ok=False, detail=f"{KEY_ENV[name]} is not set")
    return Check(name="llm key", ok=True, detail=f"{KEY_ENV[name]}: {mask_secret(value)}")


async def _endpoint_check(client: LLMClient, name: ProviderName) -> Check:
    provider = client.provider
    where = getattr(provider, "base_url", "")
    try:
        if name == "gemini":
            pager = await provider.client.aio.models.list(config={"page_size": 1})  # type: ignore[attr-defined]
            del pager
        else:
            await provider.client.models.list()  # type: ignore[attr-defined]
    except Exception as exc:
        error = provider._map_error(exc, client.model_for("agent"))  # type: ignore[attr-defined]
        return Check(name="llm endpoint", ok=False, detail=str(error))
    return Check(name="llm endpoint", ok=True, detail=f"{where} answers")


async def _round_trip_check(client: LLMClient) -> Check:
    from pydantic import BaseModel, Field

    class Ping(BaseModel):
        """The doctor's round-trip object: one field, trivially satisfiable."""

        ok: bool = Field(description="always true")

    model = client.model_for("agent")
    try:
        result = await client.generate_object(
            "agent",
            Ping,
            "You are a health check. Reply with the JSON object the user asks for.",
            [_user('Reply with exactly {"ok": true}')],
        )
    except DeepsearchError as exc:
        return Check(name="structured output", ok=False, detail=f"{model}: {exc}")
    usage = result.usage
    estimated = ", estimated" if usage.estimated else ""
    detail = (
        f"{model}: valid {Ping.__name__} in {result.attempts} attempt(s), "
        f"{usage.total_tokens} tokens{estimated}"
    )
    return Check(name="structured output", ok=result.value.ok, detail=detail)


def _user(text: str) -> Message:
    from deepsearch.llm.base import Message

    return Message(role="user", content=text)


async def llm_checks(settings: Settings, name: ProviderName) -> list[Check]:
    from deepsearch.llm.factory import build_llm_client
    from deepsearch.llm.tracker import TokenTracker

    llm = settings.llm.model_copy(
        update={
            "timeout_s": min(settings.llm.timeout_s, DOCTOR_TIMEOUT_S),
            "max_retries": min(settings.llm.max_retries, 1),
        }
    )
    settings = settings.model_copy(update={"llm": llm})
    checks = [
        Check(name="llm provider", ok=True, detail=_provider_reason(settings, name)),
        _key_check(settings, name),
    ]
    if not checks[-1].ok:
        checks.append(Check(name="llm endpoint", ok=False, detail="skipped: no key"))
        return checks
    client = build_llm_client(settings, TokenTracker(DOCTOR_BUDGET), provider_name=name)
    try:
        endpoint = await _endpoint_check(client, name)
        checks.append(endpoint)
        if endpoint.ok:
            checks.append(await _round_trip_check(client))
        else:
            checks.append(
                Check(name="structured output", ok=False, detail="skipped: endpoint failed")
            )
    finally:
        await client.aclose()
    return checks


def _provider_reason(settings: Settings, name: ProviderName) -> str:
    if settings.llm.provider is not None:
        return f"{name} (llm.provider)"
    if name == "ollama":
        return f"ollama (local server at {settings.llm.ollama_url})"
    return f"{name} (found {'GEMINI_API_KEY' if name == 'gemini' else 'OPENAI_API_KEY'})"


# ---------------------------------------------------------------- search


def search_checks(settings: Settings) -> list[Check]:
    """Configuration presence only; the web layer may add live checks later."""
    from pathlib import Path

    from deepsearch.config import mask_secret

    checks: list[Check] = []
    for name in settings.search.providers:
        label = f"search {name}"
        if name == "duckduckgo":
            checks.append(Check(name=label, ok=True, detail="no key needed"))
        elif name == "searxng":
            url = settings.search.searxng_url
            checks.append(Check(name=label, ok=bool(url), detail=url or "SEARXNG_URL is not set"))
        elif name == "local":
            corpus = settings.search.corpus_dir
            ok = bool(corpus) and Path(corpus or "").expanduser().is_dir()
            detail = corpus if ok else f"search.corpus_dir is not a directory: {corpus or '-'}"
            checks.append(Check(name=label, ok=ok, detail=str(detail)))
        else:
            env = SEARCH_KEYS[name]
            key = getattr(settings.keys, f"{name}_api_key")
            value = key.get_secret_value() if key else ""
            detail = f"{env}: {mask_secret(value)}" if value else f"{env} is not set"
            checks.append(Check(name=label, ok=bool(value), detail=detail))
    return checks


def _print_table(checks: list[Check]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="deepsearch doctor", title_justify="left")
    table.add_column("check", style="cyan", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for check in checks:
        status = "[green]ok[/]" if check.ok else "[bold red]FAIL[/]"
        # Text(): an error message with [brackets] must not be read as markup
        table.add_row(check.name, status, Text(check.detail))
    Console(soft_wrap=False).print(table)
