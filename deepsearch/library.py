"""The Python API: `deepsearch.research(question, **options)` and
`await deepsearch.aresearch(question, **options)`.

The options are the research options table's names (frontend/options.py:
`budget`, `effort`, `max_steps`, `search_provider`, `llm_provider`, `corpus`, …, and
`config` for a config file; `continue_from=run_id` or `"last"` follows up a run of
the history, docs/history.md), applied through the same override path as the command
line's flags; an unknown keyword is a TypeError naming it, raised before anything runs.
A run is a deepsearch.session.ResearchSession, as the CLI's is.

Errors raise DeepsearchError subclasses, never SystemExit: ConfigError for a
configuration that cannot work (a bad value, no provider, a rejected key, an unknown
model), UsageError for a call that cannot be made (an empty question, inside a running
event loop), ResearchFailed (with `.result`, the partial answer) for a run that could
not go on. Forced and not-found answers are results (`.status` says which). Nothing is
printed and no signal handler is installed; each call builds its own settings, clients
and state, so concurrent `aresearch` calls share nothing mutable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepsearch.errors import ConfigError, RunError, UsageError
from deepsearch.text import MAX_QUESTION_CHARS

if TYPE_CHECKING:
    from deepsearch.agent.events import AgentEvent
    from deepsearch.agent.handover import Carryover
    from deepsearch.agent.result import ResearchResult
    from deepsearch.config import Settings
    from deepsearch.frontend.options import ResearchOption


class ResearchFailed(RunError):
    """A run that could not go on (the LLM or search failed, a replay missed); `result`
    holds what it had found. Here, not in errors.py: the error tree stays below the
    result it would otherwise import."""

    def __init__(self, message: str, result: ResearchResult) -> None:
        super().__init__(message)
        self.result = result


# Rows of the table that only shape terminal output: no meaning for a function.
OUTPUT_ONLY = frozenset({"as_json", "quiet"})


def _rows() -> dict[str, ResearchOption]:
    from deepsearch.frontend.options import OPTIONS

    return {row.name: row for row in OPTIONS if row.name not in OUTPUT_ONLY}


def check_options(options: Mapping[str, Any], *, caller: str = "research") -> None:
    """TypeError for a keyword that is no research option, or a value of the wrong type."""
    rows = _rows()
    for name, value in options.items():
        row = rows.get(name)
        if row is None and name != "config":
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
        if value is None or row is None:
            continue
        wanted: tuple[type, ...] = (str, Path) if row.kind is Path else (row.kind,)
        if row.kind is float:
            wanted = (int, float)
        if not isinstance(value, wanted) or (row.kind is not bool and isinstance(value, bool)):
            raise TypeError(
                f"{caller}() argument {name!r} must be {row.kind.__name__}, "
                f"not {type(value).__name__}"
            )


def load_settings(
    options: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
) -> Settings:
    """The settings of these options, as `deepsearch research` with the same flags
    would load them (config file < environment < options). A bad value is a
    ConfigError naming the option (or `labels`' name for its configuration key)."""
    from deepsearch.config import load_config
    from deepsearch.frontend.options import overrides

    rows = _rows()
    params: dict[str, Any] = {n: (False if row.kind is bool else None) for n, row in rows.items()}
    params.update({k: v for k, v in options.items() if v is not None})
    for name, row in rows.items():
        if row.kind is Path and params[name] is not None:
            params[name] = Path(params[name])
    corpus: Path | None = params["corpus"]
    if corpus is not None and not corpus.is_dir():
        raise UsageError(f"{corpus}: corpus must be a directory")
    named = labels or {row.config_key: row.name for row in rows.values() if row.config_key}
    loaded = load_config(
        config_file=params.get("config"), overrides=overrides(params), override_labels=named
    )
    return loaded.settings


async def aresearch(
    question: str,
    *,
    on_event: Callable[[AgentEvent], None] | None = None,
    **options: Any,
) -> ResearchResult:
    """Research `question` and return the result `--json` prints (see the module)."""
    check_options(options, caller="aresearch")
    return await _run(question, on_event, options)


def research(
    question: str,
    *,
    on_event: Callable[[AgentEvent], None] | None = None,
    **options: Any,
) -> ResearchResult:
    """`aresearch` for code without an event loop (a script, a notebook cell)."""
    check_options(options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_run(question, on_event, options))
    raise UsageError("research() cannot run inside an event loop: use await aresearch()")


async def _run(
    question: str, on_event: Callable[[AgentEvent], None] | None, options: Mapping[str, Any]
) -> ResearchResult:
    from deepsearch.frontend.options import cassette_spec
    from deepsearch.session import ResearchSession

    if not isinstance(question, str) or not question.strip():
        raise UsageError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is longer than {MAX_QUESTION_CHARS:,} characters")
    settings = load_settings(options)
    paths = {k: Path(options[k]) if options.get(k) else None for k in _CASSETTE_KEYS}
    trace = options.get("trace")
    session = ResearchSession(
        " ".join(question.split()),
        settings,
        emit=on_event or _ignore,
        trace_path=Path(trace) if trace else None,
        cassette=cassette_spec(**paths),
        earlier=_earlier(settings, options.get("continue_from")),
    )
    return raise_for(await session.execute())


_CASSETTE_KEYS = ("record", "replay", "replay_lenient")


def _earlier(settings: Settings, continue_from: str | None) -> Carryover | None:
    """`continue_from=run_id` (or "last"): the history's run a follow-up starts from;
    a run not there is a UsageError."""
    if continue_from is None:
        return None
    from deepsearch.history import earlier_run

    return earlier_run(settings, None if continue_from == "last" else continue_from)


def raise_for(result: ResearchResult) -> ResearchResult:
    """The result, or the error a caller of a function expects for it."""
    if result.error_kind == "configuration":
        raise ConfigError(result.error or "configuration error")
    if result.status == "failed" or result.error_kind == "fatal":
        raise ResearchFailed(result.error or "the research failed", result)
    return result


def _ignore(_: object) -> None:
    return None
