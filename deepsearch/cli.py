"""The command line. Commands parse flags and delegate; this file is the single place
where deepsearch errors become one-line messages and exit codes.

Exit codes: 0 answered and accepted; 3 forced (Beast Mode or a limit such as --timeout);
4 not found (no supported answer, also when a limit ends a run that found none); 2 usage or configuration error; 1 runtime failure; 130 / 143 / 129 interrupted
(Ctrl-C / SIGTERM / SIGHUP); 141 stdout closed early.

`route()` decides what a command line means before Typer sees it: a question (one
word or many, unquoted), a command, `help`/`version`, or `-` / piped stdin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from typer._click.exceptions import ClickException, UsageError

from deepsearch.commands.common import COMMAND_HELP, SUBCOMMANDS
from deepsearch.errors import DeepsearchError
from deepsearch.version import __version__


@contextmanager
def error_boundary() -> Iterator[None]:
    """The one catch site of the project's errors: a DeepsearchError becomes its one
    line on stderr and the exit code it carries (a typer.Exit, which click returns)."""
    try:
        yield
    except DeepsearchError as exc:
        from deepsearch.config.redaction import redact_userinfo

        _error_line(redact_userinfo(str(exc)))  # a URL's password never reaches the screen
        raise typer.Exit(exc.exit_code) from None


class _Deepsearch(TyperGroup):
    """The root command: every subcommand runs inside the error boundary, whoever
    invokes the app (the console script, or a test's CliRunner)."""

    def invoke(self, ctx: Any) -> Any:
        with error_boundary():
            return super().invoke(ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        """No `<bool>` beside --version and --help (as PlainSwitchesCommand's)."""
        params: list[Any] = super().get_params(ctx)
        for param in params:
            param.display_type_rich = lambda ctx: None
        return params


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


def make_app(*, full: bool = True, only: str | None = None) -> typer.Typer:
    """A fresh Typer app. `full=False` registers placeholders only: root --help and
    --version then import neither the commands nor pydantic (fast start-up); `only`
    registers that one command (the one a command line runs)."""
    app = typer.Typer(
        name="deepsearch",
        cls=_Deepsearch,
        help=(
            "Hunt down one correct, cited answer.\n\n"
            'Run: deepsearch "your question"   (see: deepsearch research --help)'
        ),
        no_args_is_help=True,
        add_completion=False,
        # One help style for the root and every command: rich panels, wrapped to the width.
        rich_markup_mode="rich",
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    if full:
        from deepsearch.commands import register

        register(app, only)
    else:
        for name, text in COMMAND_HELP.items():
            # short_help: click would cut a help line at 45 characters, mid-sentence.
            app.command(name, help=text, short_help=text)(_listing_only)
    return app


ROOT_FLAGS = {"--help", "-h", "--version", "-V"}
WORD_FLAGS = {"help": "--help", "version": "--version"}  # the whole argument only


def route(args: list[str], *, stdin_is_tty: bool) -> list[str]:
    """The argument list Typer runs: `deepsearch "question"` (or unquoted words, or `-`,
    or nothing with a question piped on stdin) means `deepsearch research ...`."""
    if len(args) == 1 and args[0] in WORD_FLAGS:
        return [WORD_FLAGS[args[0]]]
    if len(args) == 2 and args[0] == "help" and args[1] in SUBCOMMANDS:
        return [args[1], "--help"]  # as `git help commit`: that command's help, no run
    if len(args) == 2 and args[0] == "help" and args[1] in WORD_FLAGS:
        return ["--help"]  # `help help`, `help version`: the root help
    if not args:
        return [] if stdin_is_tty else ["research"]  # bare on a terminal: the help
    if args[0] in ROOT_FLAGS or args[0] in SUBCOMMANDS:
        return args
    if (moved := _command_after_options(args)) is not None:
        return moved
    return ["research", *args]


def _with_continue(args: list[str]) -> list[str]:
    """A research line's `-c` given its value (commands/continuation.py)."""
    if args[:1] != ["research"]:
        return args
    from deepsearch.commands.continuation import expand_continue

    return expand_continue(args)


def _command_after_options(args: list[str]) -> list[str] | None:
    """`deepsearch --config F config`: options typed before the command, moved after
    it (every command takes them there). The command is the first word that is not an
    option or an option's value; None when that word is not a command (a question)."""
    if not args[0].startswith("-") or not (SUBCOMMANDS | set(WORD_FLAGS)).intersection(args):
        return None
    takes_value = _value_flags()
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        flag = args[index]
        index += 2 if flag in takes_value else 1
    if index < len(args) and args[index] in SUBCOMMANDS:
        return [args[index], *args[:index], *args[index + 1 :]]
    if index < len(args) and args[index] in WORD_FLAGS:
        # `--quiet help`, `--json help serve`: the help word after options (no question).
        rest = route(args[index:], stdin_is_tty=True)
        return rest if rest and rest[0] != "research" else None
    return None


def _value_flags() -> set[str]:
    """Every option of every command that takes a value (`--config`, `--budget`,
    `--port`, ...); switches (`--json`) and `--flag=value` take none after them."""
    command = typer.main.get_command(make_app(full=True))
    flags: set[str] = set()
    for sub in getattr(command, "commands", {}).values():
        for param in sub.params:
            if param.param_type_name == "option" and not getattr(param, "is_flag", False):
                flags.update(param.opts)
    return flags


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: `deepsearch "question"` means `deepsearch research "question"`."""
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(argv: list[str]) -> int:
    """Run one command line; the exit code. A deepsearch error is one line and the code
    it carries (error_boundary); a usage error gets a hint; a write error on stdout
    (help to a full disk, a closed pipe) is never a traceback."""
    from deepsearch.commands import streams
    from deepsearch.commands.stdout import EXIT_BROKEN_PIPE, guarded_stdout

    ClickException, NoArgsIsHelpError, UsageError = _click_errors()

    if os.environ.get("_DEEPSEARCH_COMPLETE"):  # a Tab: `deepsearch completion`'s script
        from deepsearch.commands.completion_cmd import complete

        return complete(typer.main.get_command(make_app(full=True)))
    args = _with_continue(route(argv, stdin_is_tty=_stdin_is_tty()))
    full = bool(args) and args[0] in SUBCOMMANDS
    if streams.mend(args[0] if args else None):  # stdout closed (`>&-`): no traceback
        _error_line(streams.STDOUT_CLOSED)
        return EXIT_BROKEN_PIPE
    # Only the command this line runs is registered (its modules alone imported).
    command = typer.main.get_command(make_app(full=full, only=args[0] if full else None))
    try:
        # The boundary again for guarded_stdout's own error (help to a full disk).
        with error_boundary(), guarded_stdout():
            code = command.main(args=args, prog_name="deepsearch", standalone_mode=False)
    except typer.Exit as done:  # from the boundary, or guarded_stdout (a closed pipe)
        return done.exit_code
    except NoArgsIsHelpError as exc:
        exc.show()
        return exc.exit_code
    except UsageError as exc:
        return _usage_error(exc)
    except ClickException as exc:
        _error_line(exc.format_message())
        return exc.exit_code
    except typer.Abort:
        return 130
    return code if isinstance(code, int) else 0


def _click_errors() -> tuple[type[ClickException], type[UsageError], type[UsageError]]:
    """Recent Typer releases vendor their own click and raise its exceptions, not the
    `click` package's; older releases raise click's own. (ClickException, the
    no-arguments-is-help error (a UsageError; older ones have none), UsageError.)"""
    try:
        from typer._click import exceptions
    except ImportError:  # an older Typer on top of click
        from click import exceptions  # type: ignore[no-redef]
    no_args = getattr(exceptions, "NoArgsIsHelpError", exceptions.UsageError)
    return exceptions.ClickException, no_args, exceptions.UsageError


def _usage_error(exc: UsageError) -> int:
    """`error: No such option: --jsn (did you mean --json?)` plus where to look."""
    ctx = exc.ctx
    where = ctx.command_path if ctx is not None else "deepsearch"
    _error_line(f"{exc.format_message()}  (see: {where} --help)")
    return exc.exit_code


def _error_line(message: str) -> None:
    """`error: ...` on stderr, one line whatever the message holds."""
    from rich.console import Console
    from rich.markup import escape

    # escape(): a message may contain brackets ("[^1]", "[key]") that are not markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(' '.join(message.split()))}"
    )


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed stdin
        return False
