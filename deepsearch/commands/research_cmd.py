"""`deepsearch "question"`: run the research loop and print one cited answer.

The command's parameters come from the option table (frontend/options.py), rendered
for Typer by research_options.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from deepsearch.agent.handover import Carryover
    from deepsearch.config import Settings

from deepsearch.commands.common import PlainSwitchesCommand
from deepsearch.commands.research_options import signature
from deepsearch.errors import UsageError
from deepsearch.frontend.options import FLAG_OF, cassette_spec, overrides


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
    earlier = _earlier(settings, params["continue_from"])
    code = run_research(
        text, settings, as_json=params["as_json"], quiet=params["quiet"], trace_path=trace,
        cassette=spec, earlier=earlier,
    )  # fmt: skip
    raise typer.Exit(code)


# inspect.signature() (and so Typer) reads __signature__; typeshed's FunctionType does
# not declare the attribute, hence the ignore.
research.__signature__ = signature()  # type: ignore[attr-defined]


def _earlier(settings: Settings, continue_from: str | None) -> Carryover | None:
    """The run `-c` continues (None without -c); none there is exit 2, one line."""
    if continue_from is None:
        return None
    from deepsearch.commands.continuation import LAST
    from deepsearch.history import earlier_run

    wanted = continue_from.strip()
    if not wanted:
        raise UsageError("--continue needs a run id (or nothing: the last run)")
    return earlier_run(settings, None if wanted == LAST else wanted)


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
