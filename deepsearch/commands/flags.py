"""The research flags, accepted by `config` and `doctor` too: `deepsearch doctor
--search-provider searxng --searxng-url …` checks exactly the command about to run.

The flags are parsed by the research command's own parser (same names, types, limits
and error messages), so the three commands can never disagree about a flag.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from deepsearch.errors import UsageError

# Extra arguments reach config/doctor unparsed, then go through research's parser.
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def parse_research_args(args: list[str], command: str) -> dict[str, Any]:
    """Every research parameter from `args`, by research's own parser (words that are
    no flag land in "question")."""
    return dict(_research_parser().make_context(f"deepsearch {command}", list(args)).params)


@functools.cache
def _research_parser() -> Any:
    """research's parser, built once a process: Typer converts its ~50 options (~3 ms),
    and nothing in it depends on the arguments."""
    import typer

    from deepsearch.commands import research_cmd

    app = typer.Typer(add_completion=False)
    app.command()(research_cmd.research)
    return typer.main.get_command(app)


def overrides_of(params: dict[str, Any]) -> dict[str, Any]:
    """The configuration overrides of parsed research parameters."""
    from deepsearch.frontend.options import overrides

    return overrides(params)


def research_flags(args: list[str], command: str) -> tuple[dict[str, Any], Path | None]:
    """(configuration overrides, --config path) from research flags given to `command`."""
    params = parse_research_args(args, command)
    if params.get("question"):
        words = " ".join(params["question"])
        raise UsageError(f"deepsearch {command} takes no question (got {words!r})")
    return overrides_of(params), params.get("config")
