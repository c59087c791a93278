"""The command line. Commands parse flags and delegate; this file is the single place
where deepsearch errors become one-line messages and exit codes.

Exit codes: 0 answered and accepted; 3 forced (Beast Mode or a limit);
2 usage or configuration error; 1 runtime failure; 130 interrupted.
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


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: `deepsearch "question"` means `deepsearch research "question"`."""
    args = list(sys.argv[1:] if argv is None else argv)
    first_positional = next((a for a in args if not a.startswith("-")), None)
    wants_root = any(a in ("--help", "-h", "--version") for a in args[:1])
    has_command = any(a in SUBCOMMANDS for a in args)  # also after root options' values
    if first_positional is not None and not has_command and not wants_root:
        args.insert(0, "research")
    full = any(a in SUBCOMMANDS for a in args)
    make_app(full=full)(args=args, prog_name="deepsearch")
