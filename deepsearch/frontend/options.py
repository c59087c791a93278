"""The research options, one table, and what a front end makes of them.

Each row is one flag: its names, value type, help line, help panel and the
configuration key it sets (and how its value becomes that key's). A row declares no
limits: they are its key's, declared once on the configuration field (config.key_bounds)
and checked when the configuration is validated, so a flag, a config file, serve's
knobs, MCP's arguments and the library's keywords share one bound and one message. Everything else is
derived from `OPTIONS`: the CLI's research command's parameters
(commands/research_options.py renders each row as a Typer option, so its `--help` and
its parser, which config, doctor, eval and serve reuse through flags.py), the library's
keywords, MCP's tool arguments, the configuration overrides (`overrides`), `FLAG_OF`
(the flag a bad value is reported as) and the docs check (tests/cli/test_option_table.py).

Every front end (CLI, library, serve, MCP) builds its run from here: the rows, the
overrides and the cassette choice (`cassette_spec`), so none imports another's code.

Adding a research option is one row here, plus its line in docs/configuration.md's
"Research options"; the command receives it as `params[row.name]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepsearch.config import Bounds, key_bounds
from deepsearch.errors import UsageError
from deepsearch.frontend.units import parse_seconds, parse_tokens

if TYPE_CHECKING:
    from deepsearch.cassettes import CassetteMode, CassetteSpec

PANEL_PROVIDERS = "Providers"
PANEL_LIMITS = "Limits"
PANEL_OUTPUT = "Output"
PANEL_WEB = "Web and sources"
PANEL_HISTORY = "History"


def _as_given(value: Any) -> Any:
    return value


def hosts(value: str | None) -> list[str] | None:
    """A comma-separated list ("a.org, b.org,"), empty items dropped; None stays None."""
    if value is None:
        return None
    return [h.strip() for h in value.split(",") if h.strip()]


def _false_when_set(on: bool) -> bool | None:
    return False if on else None  # an unset switch leaves the key to the config


def _true_when_set(on: bool) -> bool | None:
    return True if on else None


def _resolved(path: Path | None) -> str | None:
    return str(path.resolve()) if path else None


@dataclass(frozen=True)
class ResearchOption:
    """One research flag. `kind` bool is a switch (default off); any other kind is an
    optional value (default None: the configuration decides)."""

    name: str  # the command's parameter name
    flags: tuple[str, ...]  # the first one is named in errors and in docs/configuration.md
    kind: type
    help: str
    panel: str
    metavar: str = ""
    config_key: str | None = None  # None: the command itself uses the value
    to_config: Callable[[Any], Any] = _as_given
    # Off for keys whose value cannot be invalid (a switch's constant, a folder checked
    # before): their source then reads "flag", as `deepsearch config` always showed.
    names_errors: bool = True
    # How the command line reads the value, where more than the kind's own syntax is
    # accepted (`200k` tokens, `5m`); the library and MCP take the kind itself.
    parse: Callable[[str], Any] | None = None

    @property
    def flag(self) -> str:
        return self.flags[0]

    @property
    def bounds(self) -> Bounds:
        """Its configuration key's bounds (none for a key-less or non-numeric row)."""
        if self.config_key is None or self.kind not in (int, float):
            return Bounds()
        return key_bounds(self.config_key)

    def help_line(self) -> str:
        """The help line, with the key's range as Typer shows one (`[1<=x<=8]`)."""
        b = self.bounds
        low = f"{b.ge:g}<=" if b.ge is not None else f"{b.gt:g}<" if b.gt is not None else ""
        high = f"<={b.le:g}" if b.le is not None else f"<{b.lt:g}" if b.lt is not None else ""
        if not high and low:  # `x>=1`, `x>0`, as Typer writes a lower bound alone
            low, high = "", (">=" if low.endswith("<=") else ">") + low.rstrip("<=")
        # `\\[`: the help is rich markup, where `[x>=1]` would read as a style tag.
        return f"{self.help} \\[{low}x{high}]" if low or high else self.help


def _row(name: str, flags: str | tuple[str, ...], kind: type, panel: str, metavar: str,
         help: str, **more: Any) -> ResearchOption:  # fmt: skip
    names = (flags,) if isinstance(flags, str) else flags
    return ResearchOption(name, names, kind, help, panel, metavar="" if kind is bool else metavar,
                          **more)  # fmt: skip


# The order is the order of `--help` within each panel.
OPTIONS: tuple[ResearchOption, ...] = (
    _row("as_json", "--json", bool, PANEL_OUTPUT, "",
         "Print one JSON object (schema_version 2) on stdout."),
    _row("quiet", ("--quiet", "-q"), bool, PANEL_OUTPUT, "", "No live view on stderr."),
    _row("trace", "--trace", Path, PANEL_OUTPUT, "FILE",
         "Write JSON Lines of every LLM and web call here."),
    _row("record", "--record", Path, PANEL_OUTPUT, "DIR",
         "Write every LLM, search and read call and the result to a cassette here."),
    _row("replay", "--replay", Path, PANEL_OUTPUT, "DIR",
         "Answer every call from a cassette (no network, no key); a call not in it is exit 1."),
    _row("replay_lenient", "--replay-lenient", Path, PANEL_OUTPUT, "DIR",
         "Like --replay, but calls that differ get the recorded ones in order "
         "(re-scoring after a prompt change)."),
    _row("budget", "--budget", int, PANEL_LIMITS, "TOKENS",
         "Token budget, e.g. 200000 or 200k (overrides --effort).", config_key="agent.budget",
         parse=parse_tokens),
    _row("max_cost", "--max-cost", float, PANEL_LIMITS, "USD",
         "Cost limit in US dollars: Beast Mode answers at 85%, never more is spent "
         "(docs/cost.md).", config_key="agent.max_cost"),
    _row("effort", "--effort", str, PANEL_LIMITS, "LEVEL",
         "low | medium | high: a preset of budget (100k / 500k / 1M), steps, attempts, reflect, team, re-check.", config_key="agent.effort"),
    _row("max_steps", "--max-steps", int, PANEL_LIMITS, "N",
         "Stop researching after this many steps (default 100).",
         config_key="agent.max_steps"),
    _row("timeout", "--timeout", float, PANEL_LIMITS, "SECONDS",
         "Wall-clock limit: seconds, or 90s, 5m, 1h, 1m30s.", config_key="agent.timeout_s",
         parse=parse_seconds),
    _row("max_bad_attempts", "--max-bad-attempts", int, PANEL_LIMITS, "N",
         "Failures allowed per evaluation check (default 2).",
         config_key="agent.max_bad_attempts"),
    _row("team_size", "--team-size", int, PANEL_LIMITS, "N",
         "Split a multi-part question into up to N concurrent sub-researches (default 1).",
         config_key="agent.team_size"),
    _row("no_direct_answer", "--no-direct-answer", bool, PANEL_LIMITS, "",
         "Never accept an unevaluated answer at step 1.", config_key="agent.direct_answer",
         to_config=_false_when_set, names_errors=False),
    _row("boost_hostnames", "--boost-hostnames", str, PANEL_WEB, "HOSTS",
         "Comma-separated hosts ranked higher.", config_key="agent.boost_hostnames",
         to_config=hosts),
    _row("bad_hostnames", "--bad-hostnames", str, PANEL_WEB, "HOSTS",
         "Comma-separated hosts never read.", config_key="agent.bad_hostnames", to_config=hosts),
    _row("only_hostnames", "--only-hostnames", str, PANEL_WEB, "HOSTS",
         "Comma-separated hosts: search and read only these.",
         config_key="agent.only_hostnames", to_config=hosts),
    _row("max_references", "--max-references", int, PANEL_OUTPUT, "N",
         "Most citations to attach (default 10).", config_key="agent.max_references"),
    _row("min_confidence", "--min-confidence", float, PANEL_LIMITS, "X",
         "Report a forced answer below this confidence (0-1) as not found (exit 4).",
         config_key="agent.min_confidence"),
    _row("language", "--language", str, PANEL_OUTPUT, "LANG",
         "Answer language (default: the question's).", config_key="agent.language"),
    # --corpus joins this chain too: overrides() fuses the two.
    _row("search_provider", "--search-provider", str, PANEL_PROVIDERS, "CHAIN",
         "Comma-separated chain: duckduckgo, searxng, jina, brave, serper, local.",
         config_key="search.providers", to_config=hosts),
    _row("llm_provider", "--llm-provider", str, PANEL_PROVIDERS, "NAME", "gemini | openai | ollama.",
         config_key="llm.provider"),
    _row("model", "--model", str, PANEL_PROVIDERS, "MODEL",
         "Model name for every tool of the provider.", config_key="llm.model"),
    _row("corpus", "--corpus", Path, PANEL_WEB, "DIR",
         "Search a local folder of .md/.txt/.html/.pdf files (with --search-provider: "
         "the web too, results fused).", config_key="search.corpus_dir", to_config=_resolved,
         names_errors=False),
    _row("searxng_url", "--searxng-url", str, PANEL_PROVIDERS, "URL", "SearXNG instance URL.",
         config_key="search.searxng_url"),
    _row("allow_private_urls", "--allow-private-urls", bool, PANEL_WEB, "",
         "Let the reader fetch loopback/private addresses (intranets).",
         config_key="reader.allow_private_urls", to_config=_true_when_set, names_errors=False),
    _row("no_cache", "--no-cache", bool, PANEL_WEB, "",
         "Neither read nor write the search/page cache.", config_key="cache.enabled",
         to_config=_false_when_set, names_errors=False),
    # `-c` alone means the last run: cli.route writes it as `--continue=last`.
    _row("continue_from", ("--continue", "-c"), str, PANEL_HISTORY, "[RUN_ID]",
         "Follow up the last run (or RUN_ID): start from what it read, fetch none of it again."),
    _row("no_history", "--no-history", bool, PANEL_HISTORY, "",
         "Keep nothing of this run in the history (deepsearch history).",
         config_key="history.enabled", to_config=_false_when_set, names_errors=False),
)  # fmt: skip


def config_values(
    params: Mapping[str, Any], options: Iterable[ResearchOption] = OPTIONS
) -> dict[str, Any]:
    """Each option's configuration key and value (None leaves the key to the config)."""
    return {
        option.config_key: option.to_config(params[option.name])
        for option in options
        if option.config_key is not None
    }


# The flag behind each configuration key, so a bad value is reported as the user typed it.
FLAG_OF: dict[str, str] = {
    option.config_key: option.flag
    for option in OPTIONS
    if option.config_key is not None and option.names_errors
}


def providers(search_provider: str | None, corpus: Path | None) -> list[str] | None:
    """--search-provider's chain; --corpus adds `local` to it (the web and the notes,
    fused) or, alone, means the corpus only."""
    chain = hosts(search_provider)
    if corpus is None:
        return chain
    if not chain:
        return ["local"]
    return chain if "local" in chain else [*chain, "local"]


def overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The options as configuration keys; None leaves the key to the config."""
    values = config_values(params)
    values["search.providers"] = providers(params["search_provider"], params["corpus"])
    return values


def cassette_spec(
    *, record: Path | None, replay: Path | None, replay_lenient: Path | None
) -> CassetteSpec | None:
    """--record / --replay / --replay-lenient: at most one; a replayed one must exist."""
    choices: tuple[tuple[str, CassetteMode, Path | None], ...] = (
        ("--record", "record", record),
        ("--replay", "replay", replay),
        ("--replay-lenient", "lenient", replay_lenient),
    )
    given = [(flag, mode, path) for flag, mode, path in choices if path is not None]
    if not given:
        return None
    if len(given) > 1:
        raise UsageError(f"{' and '.join(g[0] for g in given)} cannot be used together")
    flag, mode, path = given[0]
    if mode != "record" and not (path / "run.json").is_file():
        raise UsageError(f"{path}: {flag} needs a cassette folder (no run.json there)")
    if mode == "record" and path.exists() and not path.is_dir():
        raise UsageError(f"{path}: --record needs a folder")
    from deepsearch.cassettes import CassetteSpec  # only with a cassette: not on a plain run

    return CassetteSpec(mode=mode, directory=path)
