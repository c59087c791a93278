"""What every command shares: exit codes, the one-line error, common options.

Kept apart from cli.py so commands and the entry point do not import each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

SUBCOMMANDS = {"research", "config", "doctor", "eval", "serve"}
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_FORCED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_NOT_FOUND = 4  # the run ended without a supported answer (status "not_found")

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="User config file (else $DEEPSEARCH_CONFIG, else ~/.config/deepsearch/config.json).",
    ),
]


class PlainSwitchesCommand(TyperCommand):
    """Help without a value placeholder where there is no value: Typer shows a type
    for every parameter (`--json <bool>`, `--help <bool>`), noise on a switch."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) or "--help" in getattr(param, "opts", []):
                param.display_type_rich = lambda ctx: None
        return params


def fail(message: str, code: int) -> typer.Exit:
    """Print one line to stderr and return the Exit to raise."""
    from rich.console import Console
    from rich.markup import escape

    # escape(): a message may contain brackets ("[^1]", "[key]") that are not markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(message)}"
    )
    return typer.Exit(code)


# One-line help per subcommand, so the root --help lists them without importing them.
COMMAND_HELP = {
    "research": "Research a question and print one cited answer.",
    "config": "Print the effective configuration and where each value came from.",
    "doctor": "Check each configured provider and print a table.",
    "eval": "Run a benchmark file of questions, grade the answers, print a summary.",
    "serve": "Serve research as an OpenAI-compatible chat-completions endpoint.",
}
