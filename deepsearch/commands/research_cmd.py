"""`deepsearch "question"`: run the research loop and print one cited answer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from deepsearch.cassettes import CassetteSpec

from deepsearch.commands.common import (
    EXIT_USAGE,
    ConfigOption,
    PlainSwitchesCommand,
    fail,
)
from deepsearch.config import MIN_BUDGET


class ResearchCommand(PlainSwitchesCommand):
    """The usage line as users type it: `deepsearch [OPTIONS] "QUESTION"` (the console
    script inserts `research` itself); no `<list[str]>` beside QUESTION either."""

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage("deepsearch", '[OPTIONS] "QUESTION"')

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if param.param_type_name == "argument":
                param.display_type_rich = lambda ctx: None
        return params


HELP = """Research a question and print one cited answer.

Exit codes: 0 answered and accepted; 3 forced (Beast Mode or a limit);
4 not found (no supported answer, or forced below --min-confidence); 2 usage or configuration error (a rejected key or unknown model included);
1 runtime failure; 130 / 143 / 129 interrupted by Ctrl-C / SIGTERM / SIGHUP."""


PANEL_PROVIDERS = "Providers"
PANEL_LIMITS = "Limits"
PANEL_OUTPUT = "Output"
PANEL_WEB = "Web and sources"

# The flag behind each configuration key, so a bad value is reported as the user typed it.
FLAG_OF = {
    "agent.budget": "--budget",
    "agent.effort": "--effort",
    "agent.max_steps": "--max-steps",
    "agent.timeout_s": "--timeout",
    "agent.max_bad_attempts": "--max-bad-attempts",
    "agent.team_size": "--team-size",
    "agent.boost_hostnames": "--boost-hostnames",
    "agent.bad_hostnames": "--bad-hostnames",
    "agent.only_hostnames": "--only-hostnames",
    "agent.max_references": "--max-references",
    "agent.min_confidence": "--min-confidence",
    "agent.language": "--language",
    "search.providers": "--search-provider",
    "search.searxng_url": "--searxng-url",
    "llm.provider": "--llm-provider",
    "llm.model": "--model",
}


def _hosts(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [h.strip() for h in value.split(",") if h.strip()]


def research(
    question: Annotated[
        list[str] | None,
        typer.Argument(
            help="The question (quotes optional; '-' or a pipe: read it from stdin).",
            show_default=False,
            metavar="QUESTION",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            rich_help_panel=PANEL_OUTPUT,
            metavar="",
            help="Print one JSON object (schema_version 2) on stdout.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            rich_help_panel=PANEL_OUTPUT,
            metavar="",
            help="No live view on stderr.",
        ),
    ] = False,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            rich_help_panel=PANEL_OUTPUT,
            metavar="FILE",
            help="Write JSON Lines of every LLM and web call here.",
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            rich_help_panel=PANEL_OUTPUT,
            metavar="DIR",
            help="Write every LLM, search and read call and the result to a cassette here.",
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            rich_help_panel=PANEL_OUTPUT,
            metavar="DIR",
            help="Answer every call from a cassette (no network, no key); "
            "a call not in it is exit 1.",
        ),
    ] = None,
    replay_lenient: Annotated[
        Path | None,
        typer.Option(
            "--replay-lenient",
            rich_help_panel=PANEL_OUTPUT,
            metavar="DIR",
            help="Like --replay, but calls that differ get the recorded ones in order "
            "(re-scoring after a prompt change).",
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            rich_help_panel=PANEL_LIMITS,
            metavar="TOKENS",
            help="Token budget (overrides --effort).",
            min=MIN_BUDGET,
        ),
    ] = None,
    effort: Annotated[
        str | None,
        typer.Option(
            "--effort",
            rich_help_panel=PANEL_LIMITS,
            metavar="LEVEL",
            help="low | medium | high = 100k / 500k / 1M tokens.",
        ),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(
            "--max-steps",
            rich_help_panel=PANEL_LIMITS,
            metavar="N",
            help="Stop researching after this many steps (default 100).",
            min=1,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            rich_help_panel=PANEL_LIMITS,
            metavar="SECONDS",
            help="Wall-clock limit in seconds.",
            min=1,
        ),
    ] = None,
    max_bad_attempts: Annotated[
        int | None,
        typer.Option(
            "--max-bad-attempts",
            rich_help_panel=PANEL_LIMITS,
            metavar="N",
            help="Failures allowed per evaluation check (default 2).",
            min=1,
        ),
    ] = None,
    team_size: Annotated[
        int | None,
        typer.Option(
            "--team-size",
            rich_help_panel=PANEL_LIMITS,
            metavar="N",
            help="Split a multi-part question into up to N concurrent sub-researches (default 1).",
        ),
    ] = None,
    no_direct_answer: Annotated[
        bool,
        typer.Option(
            "--no-direct-answer",
            rich_help_panel=PANEL_LIMITS,
            metavar="",
            help="Never accept an unevaluated answer at step 1.",
        ),
    ] = False,
    boost_hostnames: Annotated[
        str | None,
        typer.Option(
            "--boost-hostnames",
            rich_help_panel=PANEL_WEB,
            metavar="HOSTS",
            help="Comma-separated hosts ranked higher.",
        ),
    ] = None,
    bad_hostnames: Annotated[
        str | None,
        typer.Option(
            "--bad-hostnames",
            rich_help_panel=PANEL_WEB,
            metavar="HOSTS",
            help="Comma-separated hosts never read.",
        ),
    ] = None,
    only_hostnames: Annotated[
        str | None,
        typer.Option(
            "--only-hostnames",
            rich_help_panel=PANEL_WEB,
            metavar="HOSTS",
            help="Comma-separated hosts: search and read only these.",
        ),
    ] = None,
    max_references: Annotated[
        int | None,
        typer.Option(
            "--max-references",
            rich_help_panel=PANEL_OUTPUT,
            metavar="N",
            help="Most citations to attach (default 10).",
            min=0,
        ),
    ] = None,
    min_confidence: Annotated[
        float | None,
        typer.Option(
            "--min-confidence",
            rich_help_panel=PANEL_LIMITS,
            metavar="X",
            help="Report a forced answer below this confidence (0-1) as not found (exit 4).",
            min=0.0,
            max=1.0,
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            rich_help_panel=PANEL_OUTPUT,
            metavar="LANG",
            help="Answer language (default: the question's).",
        ),
    ] = None,
    search_provider: Annotated[
        str | None,
        typer.Option(
            "--search-provider",
            rich_help_panel=PANEL_PROVIDERS,
            metavar="CHAIN",
            help="Comma-separated chain: duckduckgo, searxng, jina, brave, serper, local.",
        ),
    ] = None,
    llm_provider: Annotated[
        str | None,
        typer.Option(
            "--llm-provider",
            rich_help_panel=PANEL_PROVIDERS,
            metavar="NAME",
            help="gemini | openai | ollama.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            rich_help_panel=PANEL_PROVIDERS,
            metavar="MODEL",
            help="Model name for every tool of the provider.",
        ),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            rich_help_panel=PANEL_WEB,
            metavar="DIR",
            help="Search a local folder of .md/.txt/.html/.pdf files (with --search-provider: "
            "the web too, results fused).",
        ),
    ] = None,
    searxng_url: Annotated[
        str | None,
        typer.Option(
            "--searxng-url",
            rich_help_panel=PANEL_PROVIDERS,
            metavar="URL",
            help="SearXNG instance URL.",
        ),
    ] = None,
    allow_private_urls: Annotated[
        bool,
        typer.Option(
            "--allow-private-urls",
            rich_help_panel=PANEL_WEB,
            metavar="",
            help="Let the reader fetch loopback/private addresses (intranets).",
        ),
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            rich_help_panel=PANEL_WEB,
            metavar="",
            help="Neither read nor write the search/page cache.",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    from deepsearch.commands.question import question_text
    from deepsearch.config import load_config
    from deepsearch.errors import ConfigError

    text = question_text(question)
    _check_usage(text, search_provider=search_provider, model=model, corpus=corpus)
    flags = overrides(
        budget=budget,
        effort=effort,
        max_steps=max_steps,
        timeout=timeout,
        max_bad_attempts=max_bad_attempts,
        team_size=team_size,
        no_direct_answer=no_direct_answer,
        boost_hostnames=boost_hostnames,
        bad_hostnames=bad_hostnames,
        only_hostnames=only_hostnames,
        max_references=max_references,
        min_confidence=min_confidence,
        language=language,
        search_provider=search_provider,
        corpus=corpus,
        searxng_url=searxng_url,
        llm_provider=llm_provider,
        model=model,
        allow_private_urls=allow_private_urls,
        no_cache=no_cache,
    )
    try:
        settings = load_config(
            config_file=config, overrides=flags, override_labels=FLAG_OF
        ).settings
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if trace is not None and (trace.is_dir() or not trace.parent.is_dir()):
        raise fail(
            f"{trace}: cannot write the trace there (not a file in an existing folder)", EXIT_USAGE
        )
    from deepsearch.commands.run_research import run_research

    spec = cassette_spec(record=record, replay=replay, replay_lenient=replay_lenient)
    code = run_research(
        text, settings, as_json=as_json, quiet=quiet, trace_path=trace, cassette=spec
    )
    raise typer.Exit(code)


def cassette_spec(
    *, record: Path | None, replay: Path | None, replay_lenient: Path | None
) -> CassetteSpec | None:
    """--record / --replay / --replay-lenient: at most one; a replayed one must exist."""
    from deepsearch.cassettes import CassetteSpec

    given = [
        (flag, mode, path)
        for flag, mode, path in (
            ("--record", "record", record),
            ("--replay", "replay", replay),
            ("--replay-lenient", "lenient", replay_lenient),
        )
        if path is not None
    ]
    if not given:
        return None
    if len(given) > 1:
        raise fail(f"{' and '.join(g[0] for g in given)} cannot be used together", EXIT_USAGE)
    flag, mode, path = given[0]
    if mode != "record" and not (path / "run.json").is_file():
        raise fail(f"{path}: {flag} needs a cassette folder (no run.json there)", EXIT_USAGE)
    if mode == "record" and path.exists() and not path.is_dir():
        raise fail(f"{path}: --record needs a folder", EXIT_USAGE)
    return CassetteSpec(mode=mode, directory=path)  # type: ignore[arg-type]


def _check_usage(
    question: str, *, search_provider: str | None, model: str | None, corpus: Path | None
) -> None:
    """Usage errors the option parser cannot see."""
    if not question.strip():
        raise fail("the question is empty", EXIT_USAGE)
    from deepsearch.commands.question import near_command

    if (command := near_command(question)) is not None:
        raise fail(
            f"{question!r} is not a question; did you mean `deepsearch {command}`? "
            f'(to research the word itself, add a question mark: deepsearch "{question}?")',
            EXIT_USAGE,
        )
    for flag, value in (("--search-provider", search_provider), ("--model", model)):
        if value is not None and not value.strip(" ,"):
            raise fail(f"{flag} needs a value", EXIT_USAGE)
    if corpus is not None and not corpus.is_dir():
        raise fail(f"{corpus}: --corpus must be a directory", EXIT_USAGE)


def _providers(search_provider: str | None, corpus: Path | None) -> list[str] | None:
    """--search-provider's chain; --corpus adds `local` to it (the web and the notes,
    fused) or, alone, means the corpus only."""
    chain = _hosts(search_provider)
    if corpus is None:
        return chain
    if not chain:
        return ["local"]
    return chain if "local" in chain else [*chain, "local"]


def overrides(
    *,
    budget: int | None,
    effort: str | None,
    max_steps: int | None,
    timeout: float | None,
    max_bad_attempts: int | None,
    team_size: int | None,
    no_direct_answer: bool,
    boost_hostnames: str | None,
    bad_hostnames: str | None,
    only_hostnames: str | None,
    max_references: int | None,
    min_confidence: float | None,
    language: str | None,
    search_provider: str | None,
    corpus: Path | None,
    searxng_url: str | None,
    llm_provider: str | None,
    model: str | None,
    allow_private_urls: bool,
    no_cache: bool,
) -> dict[str, Any]:
    """The command-line flags as configuration keys; None leaves the key to the config."""
    return {
        "agent.budget": budget,
        "agent.effort": effort,
        "agent.max_steps": max_steps,
        "agent.timeout_s": timeout,
        "agent.max_bad_attempts": max_bad_attempts,
        "agent.team_size": team_size,
        "agent.direct_answer": False if no_direct_answer else None,
        "agent.boost_hostnames": _hosts(boost_hostnames),
        "agent.bad_hostnames": _hosts(bad_hostnames),
        "agent.only_hostnames": _hosts(only_hostnames),
        "agent.max_references": max_references,
        "agent.min_confidence": min_confidence,
        "agent.language": language,
        "search.providers": _providers(search_provider, corpus),
        "search.corpus_dir": str(corpus.resolve()) if corpus else None,
        "search.searxng_url": searxng_url,
        "llm.provider": llm_provider,
        "llm.model": model,
        "reader.allow_private_urls": True if allow_private_urls else None,
        "cache.enabled": False if no_cache else None,
    }
