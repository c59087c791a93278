"""Command implementations, registered on the Typer app lazily (keeps --help fast)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from deepsearch.commands import (
        config_cmd,
        doctor_cmd,
        eval_cmd,
        mcp_cmd,
        research_cmd,
        serve_cmd,
    )
    from deepsearch.commands.common import PlainSwitchesCommand
    from deepsearch.commands.flags import PASS_THROUGH

    app.command("research", help=research_cmd.HELP, cls=research_cmd.ResearchCommand)(
        research_cmd.research
    )
    # config, doctor, eval, serve and mcp take the research flags: passed through unparsed.
    for name, text, cls, function in (
        ("config", config_cmd.HELP, PlainSwitchesCommand, config_cmd.show_config),
        ("doctor", doctor_cmd.HELP, PlainSwitchesCommand, doctor_cmd.doctor),
        ("eval", eval_cmd.HELP, eval_cmd.EvalCommand, eval_cmd.eval_command),
        ("serve", serve_cmd.HELP, PlainSwitchesCommand, serve_cmd.serve),
        ("mcp", mcp_cmd.HELP, PlainSwitchesCommand, mcp_cmd.mcp_command),
    ):
        app.command(name, help=text, cls=cls, context_settings=PASS_THROUGH)(function)
