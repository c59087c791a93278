"""What every command shares: the command names, common options, help without noise.

Kept apart from cli.py so commands and the entry point do not import each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

SUBCOMMANDS = {
    "research", "config", "doctor", "eval", "serve", "mcp", "cost", "history", "show", "completion"
}  # fmt: skip

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
        params: list[Any] = super().get_params(ctx)  # Typer's params: display_type_rich
        for param in params:
            if getattr(param, "is_flag", False) or "--help" in getattr(param, "opts", []):
                param.display_type_rich = lambda ctx: None
        return params


# One-line help per subcommand, so the root --help lists them without importing them.
COMMAND_HELP = {
    "research": "Research a question and print one cited answer.",
    "config": "Print the effective configuration and where each value came from.",
    "doctor": "Check each configured provider and print a table.",
    "eval": "Run a benchmark file of questions, grade the answers, print a summary.",
    "serve": "Serve research as an OpenAI-compatible chat-completions endpoint.",
    "mcp": "Serve research as a Model Context Protocol tool (stdio or HTTP).",
    "cost": "Estimate what a research would cost at these settings, before running it.",
    "history": "List the runs kept in the history, newest first (see: docs/history.md).",
    "show": "Print a run kept in the history as it was printed (--json: its JSON).",
    "completion": "Print the shell completion script for bash, zsh or fish.",
}
