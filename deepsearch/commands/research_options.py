"""The option table (frontend/options.py) as the research command's Typer parameters:
each row becomes `Annotated[kind (| None), typer.Option(...)] = default`, so the
command's `--help` and parser come from the same rows the other front ends read."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer

from deepsearch.commands.common import ConfigOption
from deepsearch.frontend.options import OPTIONS, ResearchOption


def _bad_parameter(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """The row's parser, its ValueError as Click's own message for a bad value."""

    def parsed(value: Any) -> Any:
        if not isinstance(value, str):  # a default, or a value already parsed
            return value
        try:
            return parse(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parsed


def parameter(option: ResearchOption) -> inspect.Parameter:
    """The Typer parameter of one row."""
    switch = option.kind is bool
    info = typer.Option(
        *option.flags,
        rich_help_panel=option.panel,
        metavar=option.metavar,
        help=option.help_line(),
        parser=_bad_parameter(option.parse) if option.parse else None,
    )
    # A type built at run time: mypy cannot check a variable inside Annotated[].
    annotation = Annotated[option.kind if switch else option.kind | None, info]  # type: ignore[valid-type]
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=False if switch else None,
        annotation=annotation,
    )


QUESTION = inspect.Parameter(
    "question",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    default=None,
    annotation=Annotated[
        list[str] | None,
        typer.Argument(
            help="The question (quotes optional; '-' or a pipe: read it from stdin).",
            show_default=False,
            metavar="QUESTION",
        ),
    ],
)
CONFIG = inspect.Parameter(
    "config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOption
)


def signature(options: Iterable[ResearchOption] = OPTIONS) -> inspect.Signature:
    """The research command's signature: the question, every option, --config."""
    params = [QUESTION, *(parameter(option) for option in options), CONFIG]
    return inspect.Signature(params, return_annotation=None)
