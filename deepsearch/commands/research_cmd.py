"""`deepsearch "question"`: run the research loop and print one cited answer.

The command's parameters come from the option table (research_options.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from deepsearch.cassettes import CassetteMode, CassetteSpec

from deepsearch.commands.common import PlainSwitchesCommand
from deepsearch.commands.research_options import FLAG_OF, config_values, hosts, signature
from deepsearch.errors import UsageError


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

Exit codes: 0 answered and accepted; 3 forced (Beast Mode or a limit such as --timeout:
the best answer so far); 4 not found (no supported answer, also when a limit ends a run
that found none, or forced below --min-confidence); 2 usage or configuration error (a
rejected key or unknown model included); 1 runtime failure; 130 / 143 / 129 interrupted
by Ctrl-C / SIGTERM / SIGHUP."""


def research(**params: Any) -> None:
    """The research command; its parameters are `signature()`'s (question, every row of
    the option table, config), so Typer parses and documents them from the table."""
    from deepsearch.commands.question import question_text
    from deepsearch.commands.run_research import run_research
    from deepsearch.config import load_config

    text = question_text(params["question"])
    _check_usage(text, params)
    settings = load_config(
        config_file=params["config"], overrides=overrides(params), override_labels=FLAG_OF
    ).settings
    trace: Path | None = params["trace"]
    if trace is not None and str(trace) == "-":  # it made a file named "-"
        raise UsageError("--trace -: give a file name (stdout carries the answer)")
    if trace is not None and (trace.is_dir() or not trace.parent.is_dir()):
        raise UsageError(
            f"{trace}: cannot write the trace there (not a file in an existing folder)"
        )
    spec = cassette_spec(
        record=params["record"], replay=params["replay"], replay_lenient=params["replay_lenient"]
    )
    code = run_research(
        text, settings, as_json=params["as_json"], quiet=params["quiet"], trace_path=trace,
        cassette=spec,
    )  # fmt: skip
    raise typer.Exit(code)


# inspect.signature() (and so Typer) reads __signature__; typeshed's FunctionType does
# not declare the attribute, hence the ignore.
research.__signature__ = signature()  # type: ignore[attr-defined]


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


def _check_usage(question: str, params: Mapping[str, Any]) -> None:
    """Usage errors the option parser cannot see."""
    if not question.strip():
        raise UsageError("the question is empty")
    from deepsearch.commands.question import help_topic_problem, near_command

    if (problem := help_topic_problem(question)) is not None:
        raise UsageError(problem)
    if (command := near_command(question)) is not None:
        raise UsageError(
            f"{question!r} is not a question; did you mean `deepsearch {command}`? "
            f'(to research the word itself, add a question mark: deepsearch "{question}?")'
        )
    for flag, name in (("--search-provider", "search_provider"), ("--model", "model")):
        value = params[name]
        if value is not None and not value.strip(" ,"):
            raise UsageError(f"{flag} needs a value")
    corpus: Path | None = params["corpus"]
    if corpus is not None and not corpus.is_dir():
        raise UsageError(f"{corpus}: --corpus must be a directory")


def _providers(search_provider: str | None, corpus: Path | None) -> list[str] | None:
    """--search-provider's chain; --corpus adds `local` to it (the web and the notes,
    fused) or, alone, means the corpus only."""
    chain = hosts(search_provider)
    if corpus is None:
        return chain
    if not chain:
        return ["local"]
    return chain if "local" in chain else [*chain, "local"]


def overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The command-line flags as configuration keys; None leaves the key to the config."""
    values = config_values(params)
    values["search.providers"] = _providers(params["search_provider"], params["corpus"])
    return values
