"""`deepsearch doctor`: check each configured provider and print a table.

For the LLM provider (resolved exactly as a run would): the key is present, the
endpoint answers, and a tiny structured-output round trip validates. For search:
the chain a run would build is asked one query per provider (short timeout, no
cache, no failover), one row each; a provider left out for a missing key or URL
gets a failing row saying what to set. Exit 0 when every check passes, 1
otherwise, 2 on a configuration error. No secret is ever printed: keys are shown
masked and passwords inside URLs as ****.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from deepsearch.commands.common import EXIT_RUNTIME, EXIT_USAGE, ConfigOption, fail
from deepsearch.config import KeysConfig, ProviderName, Settings, load_config, redact_userinfo
from deepsearch.errors import ConfigError, DeepsearchError, ProviderError

if TYPE_CHECKING:
    from deepsearch.llm.base import Message
    from deepsearch.llm.client import LLMClient
    from deepsearch.web.search import SearchChain

DOCTOR_TIMEOUT_S = 30.0
SEARCH_PROBE_TIMEOUT_S = 10.0
SEARCH_PROBE_QUERY = "python programming language"
DOCTOR_BUDGET = 50_000
# search provider -> the variable that sets its key
SEARCH_KEYS = {
    name: var for name, var in KeysConfig.env_vars().items() if name not in ("gemini", "openai")
}


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
        checks = asyncio.run(_all_checks(settings, provider_name))
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    from deepsearch.commands.output import guarded_stdout

    with guarded_stdout():
        _print_table(checks)
    if not all(check.ok for check in checks):
        raise fail(f"{sum(not c.ok for c in checks)} of {len(checks)} checks failed", EXIT_RUNTIME)


async def _all_checks(settings: Settings, provider_name: ProviderName) -> list[Check]:
    return (
        await llm_checks(settings, provider_name)
        + await search_checks(settings)
        + [await page_extraction_check()]
    )


async def page_extraction_check() -> Check:
    """A page shipped with the package, read through the real reader (no network)."""
    from deepsearch.web.selfcheck import check_page_extraction

    ok, detail = await check_page_extraction()
    return Check(name="page extraction", ok=ok, detail=detail)


# ---------------------------------------------------------------- LLM


def _key_check(settings: Settings, name: ProviderName) -> Check:
    if name == "ollama":
        return Check(name="llm key", ok=True, detail="not needed for Ollama")
    from deepsearch.config import mask_secret
    from deepsearch.llm.factory import KEY_ENV

    key = getattr(settings.keys, f"{name}_api_key")
    value = key.get_secret_value().strip() if key else ""
    base_url = settings.llm.openai_base_url if name == "openai" else None
    if not value and base_url:
        where = redact_userinfo(base_url)
        return Check(name="llm key", ok=True, detail=f"not set: none sent to {where}")
    if not value:
        return Check(name="llm key", ok=False, detail=f"{KEY_ENV[name]} is not set")
    return Check(name="llm key", ok=True, detail=f"{KEY_ENV[name]}: {mask_secret(value)}")


async def _endpoint_check(client: LLMClient) -> Check:
    where = redact_userinfo(getattr(client.provider, "base_url", ""))
    try:
        await client.ping()
    except ProviderError as exc:
        return Check(name="llm endpoint", ok=False, detail=str(exc))
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
        endpoint = await _endpoint_check(client)
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
        return f"ollama (local server at {redact_userinfo(settings.llm.ollama_url)})"
    if name == "gemini":
        return "gemini (found GEMINI_API_KEY)"
    key = settings.keys.openai_api_key
    if key is not None and key.get_secret_value().strip():
        return "openai (found OPENAI_API_KEY)"
    return f"openai (keyless server at {redact_userinfo(settings.llm.openai_base_url or '')})"


# ---------------------------------------------------------------- search


async def search_checks(settings: Settings) -> list[Check]:
    """Live probe of the configured search chain: one row per listed provider."""
    from deepsearch.web.search import build_search

    cfg = settings.search
    timeout_s = min(cfg.timeout_s, SEARCH_PROBE_TIMEOUT_S)
    short = settings.model_copy(update={"search": cfg.model_copy(update={"timeout_s": timeout_s})})
    try:
        chain = build_search(short)
    except ConfigError:  # nothing usable: say per provider what is missing
        return config_checks(settings)
    try:
        rows = await _probe_rows(chain, settings, timeout_s)
    finally:
        await chain.aclose()
    for status in chain.status():
        if status.state == "unconfigured":
            rows.append(Check(f"search {status.name}", False, _clean(status.reason, settings)))
    order = list(dict.fromkeys(f"search {name}" for name in cfg.providers))
    return sorted(rows, key=lambda row: order.index(row.name) if row.name in order else len(order))


async def _probe_rows(chain: SearchChain, settings: Settings, timeout_s: float) -> list[Check]:
    import asyncio

    names = [p.name for p in chain.providers]
    # Each provider has its own timeout; this outer one only guards against one hanging
    # past it (ddgs runs in a thread its own way).
    limit = timeout_s * len(names) + 5
    try:
        probes = await asyncio.wait_for(chain.probe(SEARCH_PROBE_QUERY), timeout=limit)
    except TimeoutError:
        why = f"failed: no answer within {limit:g}s"
        return [Check(f"search {name}", False, why) for name in names]
    rows = []
    for probe in probes:
        if probe.ok:
            detail = f"{probe.results} result(s) in {probe.elapsed_s:.2f}s"
            if probe.detail:
                detail += f" ({probe.detail})"
        else:
            detail = "failed: " + _clean(probe.detail or "no answer", settings)
        rows.append(Check(f"search {probe.name}", probe.ok, detail))
    return rows


def _clean(text: str, settings: Settings) -> str:
    """One line, URL passwords and every configured key masked."""
    from deepsearch.llm.provider_common import one_line

    return one_line(redact_userinfo(text), secrets=settings.keys.secret_values())


def config_checks(settings: Settings) -> list[Check]:
    """Configuration presence only (used when no provider could even be built)."""
    from pathlib import Path

    from deepsearch.config import mask_secret

    checks: list[Check] = []
    for name in settings.search.providers:
        label = f"search {name}"
        if name == "duckduckgo":
            checks.append(Check(name=label, ok=True, detail="no key needed"))
        elif name == "searxng":
            url = settings.search.searxng_url
            shown = redact_userinfo(url) if url else "SEARXNG_URL is not set"
            checks.append(Check(name=label, ok=bool(url), detail=shown))
        elif name == "local":
            corpus = settings.search.corpus_dir
            ok = bool(corpus) and Path(corpus or "").expanduser().is_dir()
            detail = (
                corpus
                if ok
                else f"not a directory: {corpus}"
                if corpus
                else "no corpus folder: pass --corpus DIR or set search.corpus_dir"
            )
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
