"""`deepsearch completion SHELL`: the shell completion script (Typer's) for bash, zsh or
fish. The script calls `deepsearch` back with `_DEEPSEARCH_COMPLETE` set at each Tab;
cli.run answers that call (`complete`) with the commands' names and options."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deepsearch.errors import UsageError

COMPLETE_VAR = "_DEEPSEARCH_COMPLETE"
SHELLS = ("bash", "zsh", "fish")

HELP = """Print the shell completion script for bash, zsh or fish.

Install it once: bash, in ~/.bashrc: eval "$(deepsearch completion bash)"; zsh, in
~/.zshrc: eval "$(deepsearch completion zsh)"; fish: deepsearch completion fish >
~/.config/fish/completions/deepsearch.fish"""


def completion(
    shell: Annotated[
        str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.", show_default=False)
    ],
) -> None:
    """The completion script of `shell` on stdout."""
    if shell not in SHELLS:
        raise UsageError(f"{shell!r}: completion is for {', '.join(SHELLS)}")
    from typer.completion import get_completion_script

    typer.echo(
        get_completion_script(prog_name="deepsearch", complete_var=COMPLETE_VAR, shell=shell)
    )


def complete(command: Any) -> int:
    """Answer the completion script's call (the variable set): the words that may come
    next, as Typer's completion classes print them; nothing is researched."""
    from typer.completion import completion_init

    completion_init()
    try:
        command.main(args=[], prog_name="deepsearch", complete_var=COMPLETE_VAR)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0
    return 0
