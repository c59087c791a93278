"""Command implementations, registered on the Typer app lazily (keeps --help fast)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from deepsearch.commands import config_cmd, doctor_cmd, research_cmd
    from deepsearch.commands.common import COMMAND_HELP

    app.command("research", help=research_cmd.HELP)(research_cmd.research)
    app.command("config", help=COMMAND_HELP["config"])(config_cmd.show_config)
    app.command("doctor", help=COMMAND_HELP["doctor"])(doctor_cmd.doctor)
