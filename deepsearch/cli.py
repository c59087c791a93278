"""The command line. Commands parse flags and delegate; this file is the single place
where deepsearch errors become one-line messages and exit codes.

Exit codes: 0 answered and accepted; 3 forced (Beast Mode or a limit);
2 usage or configuration error; 1 runtime failure; 130 interrupted.

`route()` decides what a command line means before Typer sees it: a question (one
word or many, unquoted), a command, `help`/`version`, or `-` / piped stdin.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from deepsearch import __version__
from deepsearch.commands.common import COMMAND_HELP, SUBCOMMANDS


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"deepsearch {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version_callback,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """Hunt down one correct, cited answer."""


def _listing_only() -> None:
    """Placeholder: root help and --version never run a command."""


def make_app(*, full: bool = True) -> typer.Typer:
    """A fresh Typer app. `full=False` registers placeholders only: root --help and
    --version then import neither the commands nor pydantic (fast start-up)."""
    app = typer.Typer(
        name="deepsearch",
        help=(
            "Hunt down one correct, cited answer.\n\n"
            'Run: deepsearch "your question"   (see: deepsearch research --help)'
        ),
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode="rich" if full else None,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    if full:
        from deepsearch.commands import register

        register(app)
    else:
        for name, text in COMMAND_HELP.items():
            app.command(name, help=text)(_listing_only)
    return app


ROOT_FLAGS = {"--help", "-h", "--version", "-V"}
WORD_FLAGS = {"help": "--help", "version": "--version"}  # the whole argument only


def route(args: list[str], *, stdin_is_tty: bool) -> list[str]:
    """The argument list Typer runs: `deepsearch "question"` (or unquoted words, or `-`,
    or nothing with a question piped on stdin) means `deepsearch research ...`."""
    if len(args) == 1 and args[0] in WORD_FLAGS:
        return [WORD_FLAGS[args[0]]]
    if not args:
        return [] if stdin_is_tty else ["research"]  # bare on a terminal: the help
    if args[0] in ROOT_FLAGS or args[0] in SUBCOMMANDS:
        return args
    return ["research", *args]


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: `deepsearch "question"` means `deepsearch research "question"`."""
    args = route(list(sys.argv[1:] if argv is None else argv), stdin_is_tty=_stdin_is_tty())
    full = bool(args) and args[0] in SUBCOMMANDS
    make_app(full=full)(args=args, prog_name="deepsearch")


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed stdin
        return False
