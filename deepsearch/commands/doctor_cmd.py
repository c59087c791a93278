"""`deepsearch doctor`: check what a research run needs and print a table.

Rows, in order (CHECK_GROUPS; one more check = one more entry there): the LLM
provider (resolved exactly as a run would, or how to get one), its key, endpoint and
a tiny structured-output round trip; one live search probe per listed provider (the
corpus row says how many documents are indexed); a page shipped with the package read
through the real reader (page extraction works on this install); the cache folder is writable; the
coding sandbox is available. A check that cannot run because an earlier one failed
says "skipped". Takes the research flags (`doctor --search-provider searxng …` checks
that exact command) and `--json`. Exit 0 when nothing failed, 1 otherwise, 2 when the
configuration or flags cannot even be loaded. No secret is ever printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel, Field

from deepsearch.commands.checks import (
    Check,
    CheckGroup,
    cache_checks,
    page_extraction_checks,
    sandbox_checks,
    skipped,
)
from deepsearch.commands.common import ConfigOption
from deepsearch.config import KeysConfig, ProviderName, Settings, load_config, redact_userinfo
from deepsearch.errors import CommandFailed, ConfigError, DeepsearchError, ProviderError

if TYPE_CHECKING:
    from deepsearch.config import LoadedConfig
    from deepsearch.llm.base import Message
    from deepsearch.llm.client import LLMClient
    from deepsearch.web.search import SearchChain
    from deepsearch.web.search.fused import FusedSearch

HELP = (
    "Check the LLM, search, cache, sandbox and corpus a research run would use. "
    "Accepts the research flags (see: deepsearch research --help)."
)
DOCTOR_TIMEOUT_S = 30.0
DOCTOR_LOCAL_TIMEOUT_S = 120.0
SEARCH_PROBE_TIMEOUT_S = 10.0
SEARCH_PROBE_QUERY = "python programming language"
DOCTOR_BUDGET = 50_000
# search provider -> the variable that sets its key
SEARCH_KEYS = {
    name: var for name, var in KeysConfig.env_vars().items() if name not in ("gemini", "openai")
}


def doctor(
    ctx: typer.Context,
    config: ConfigOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of a table.")
    ] = False,
) -> None:
    import asyncio  # here, not at the top: `deepsearch --help` must stay fast

    from deepsearch.commands.flags import research_flags
    from deepsearch.commands.stdout import guarded_stdout
    from deepsearch.frontend.options import FLAG_OF

    flags, flag_config = research_flags(ctx.args, "doctor")
    loaded = load_config(
        config_file=config or flag_config, overrides=flags, override_labels=FLAG_OF
    )
    checks = asyncio.run(run_checks(loaded))
    with guarded_stdout():
        _print_json(checks) if as_json else _print_table(checks)
    failed = [c for c in checks if not c.ok]
    if failed:
        raise CommandFailed(f"{len(failed)} of {len(checks)} checks failed")


async def run_checks(loaded: LoadedConfig) -> list[Check]:
    rows: list[Check] = []
    for group in CHECK_GROUPS:
        try:
            rows += await group(loaded)
        except ConfigError as exc:  # a group that cannot even start: its own FAIL row
            rows.append(
                Check(name=group.__name__.removesuffix("_checks"), ok=False, detail=str(exc))
            )
    return rows


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


class Ping(BaseModel):
    """The doctor's round-trip object: one field, trivially satisfiable. One class for
    the process: its JSON schema is then generated once (llm.client.json_schema_of)."""

    ok: bool = Field(description="always true")


async def _round_trip_check(client: LLMClient) -> Check:
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
    # Judged on form, not content: a reply that parsed and validated proves the round
    # trip, whatever it says (a valid {"ok": false} is a pass).
    usage = result.usage
    estimated = ", estimated" if usage.estimated else ""
    detail = (
        f"{model}: valid {Ping.__name__} in {result.attempts} attempt(s), "
        f"{usage.total_tokens} tokens{estimated}{_rung_note(client, model)}"
    )
    return Check(name="structured output", ok=True, detail=detail)


def _rung_note(client: LLMClient, model: str) -> str:
    """`; refuses response_format json_schema (HTTP 500); using json_object + schema`:
    which output-mode rung the server accepted, and why (the provider's ladder)."""
    from deepsearch.llm.output_modes import RUNG_WORDS

    ladder = getattr(client.provider, "output_modes", None)
    if ladder is None or model not in ladder.remembered:
        return ""
    mode, why = ladder.remembered[model], ladder.why.get(model, "")
    using = f"using {RUNG_WORDS.get(mode, mode)}"
    return f"; {why}; {using}" if why and not why.startswith("accepts") else f"; {using}"


def _user(text: str) -> Message:
    from deepsearch.llm.base import Message

    return Message(role="user", content=text)


async def llm_checks(loaded: LoadedConfig) -> list[Check]:
    """Provider, key, endpoint and round trip; with no provider, how to get one."""
    from deepsearch.commands.resolution import provider_reason
    from deepsearch.llm.factory import resolve_provider

    try:
        name = resolve_provider(loaded.settings)
    except ConfigError as exc:
        return [
            Check(name="llm provider", ok=False, detail=str(exc)),
            skipped("llm endpoint", "skipped: no provider"),
            skipped("structured output", "skipped: no provider"),
        ]
    reason = provider_reason(loaded.settings, name, loaded.sources)
    return await _llm_rows(loaded.settings, name, f"{name} ({reason})")


async def _llm_rows(settings: Settings, name: ProviderName, reason: str) -> list[Check]:
    from deepsearch.llm.call_limits import call_limits, capped, is_local_endpoint
    from deepsearch.llm.factory import build_llm_client
    from deepsearch.llm.tracker import TokenTracker

    base_url = settings.llm.ollama_url if name == "ollama" else settings.llm.openai_base_url
    if name == "gemini":
        base_url = settings.llm.gemini_base_url
    # A local server may still be loading its model: it gets longer than an API.
    quick = DOCTOR_LOCAL_TIMEOUT_S if is_local_endpoint(name, base_url) else DOCTOR_TIMEOUT_S
    limits = capped(call_limits(settings.llm, name, base_url), quick)
    llm = settings.llm.model_copy(
        update={
            "timeout_s": limits.total_s,
            "first_token_timeout_s": limits.first_token_s,
            "max_retries": min(settings.llm.max_retries, 1),
        }
    )
    settings = settings.model_copy(update={"llm": llm})
    checks = [Check(name="llm provider", ok=True, detail=reason), _key_check(settings, name)]
    if not checks[-1].ok:
        checks.append(skipped("llm endpoint", "skipped: no key"))
        checks.append(skipped("structured output", "skipped: no key"))
        return checks
    client = build_llm_client(settings, TokenTracker(DOCTOR_BUDGET), provider_name=name)
    try:
        endpoint = await _endpoint_check(client)
        checks.append(endpoint)
        if endpoint.ok:
            checks.append(await _round_trip_check(client))
        else:
            checks.append(skipped("structured output", "skipped: the endpoint failed"))
    finally:
        await client.aclose()
    return checks


# ---------------------------------------------------------------- search


async def search_checks(loaded: LoadedConfig) -> list[Check]:
    """Live probe of the configured search chain: one row per listed provider."""
    from deepsearch.web.search import build_search

    settings = loaded.settings
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
    rows = [await _corpus_row(row, settings) if row.name == "search local" else row for row in rows]
    for status in chain.status():
        if status.state == "unconfigured":
            rows.append(Check(f"search {status.name}", False, _clean(status.reason, settings)))
    order = list(dict.fromkeys(f"search {name}" for name in cfg.providers))
    return sorted(rows, key=lambda row: order.index(row.name) if row.name in order else len(order))


async def _probe_rows(
    chain: SearchChain | FusedSearch, settings: Settings, timeout_s: float
) -> list[Check]:
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
            found = f"{probe.results} result{'' if probe.results == 1 else 's'}"
            detail = f"{found} in {probe.elapsed_s:.2f}s"
            if probe.detail:
                detail += f" ({probe.detail})"
        else:
            detail = "failed: " + _clean(probe.detail or "no answer", settings)
        rows.append(Check(f"search {probe.name}", probe.ok, detail))
    return rows


def _clean(text: str, settings: Settings) -> str:
    """One line, URL passwords and every configured key masked."""
    from deepsearch.llm.provider_common import one_line

    return one_line(redact_userinfo(text), secrets=settings.secret_values())


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


async def _corpus_row(probe_row: Check, settings: Settings) -> Check:
    """The corpus answers: say how many documents its index holds (not "0 results")."""
    import asyncio

    from deepsearch.web.search import local_corpus

    corpus = local_corpus(settings)
    if corpus is None or not probe_row.ok:
        return probe_row
    try:
        count = await asyncio.to_thread(corpus.require_documents)
    except ConfigError as exc:
        return Check(probe_row.name, False, str(exc))
    return Check(probe_row.name, True, f"{count} documents indexed in {corpus.root}")


# Every row group of the table, in order. One more check = one more entry here
# (an async function of the loaded configuration returning its Check rows).
CHECK_GROUPS: list[CheckGroup] = [
    llm_checks,
    search_checks,
    page_extraction_checks,
    cache_checks,
    sandbox_checks,
]


def _print_json(checks: list[Check]) -> None:
    import json

    rows = [{"name": c.name, "status": c.status.lower(), "detail": c.detail} for c in checks]
    failed = sum(not c.ok for c in checks)
    typer.echo(json.dumps({"ok": failed == 0, "failed": failed, "checks": rows}, indent=2))


def _print_table(checks: list[Check]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="deepsearch doctor", title_justify="left")
    table.add_column("check", style="cyan", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for check in checks:
        status = {"ok": "[green]ok[/]", "skipped": "[yellow]skipped[/]"}.get(
            check.status, "[bold red]FAIL[/]"
        )
        # Text(): an error message with [brackets] must not be read as markup
        table.add_row(check.name, status, Text(check.detail))
    Console(soft_wrap=False).print(table)
