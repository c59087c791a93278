"""Command implementations, registered on the Typer app lazily (keeps --help fast)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from deepsearch.commands import config_cmd, doctor_cmd, research_cmd, serve_cmd
    from deepsearch.commands.flags import PASS_THROUGH

    app.command("research", help=research_cmd.HELP, cls=research_cmd.ResearchCommand)(
        research_cmd.research
    )
    app.command("config", help=config_cmd.HELP, context_settings=PASS_THROUGH)(
        config_cmd.show_config
    )
    app.command("doctor", help=doctor_cmd.HELP, context_settings=PASS_THROUGH)(doctor_cmd.doctor)
    app.command("serve", help=serve_cmd.HELP, context_settings=PASS_THROUGH)(serve_cmd.serve)
