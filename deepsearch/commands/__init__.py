"""Command implementations, registered on the Typer app lazily (keeps --help fast)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from deepsearch.commands import config_cmd, doctor_cmd, eval_cmd, research_cmd, serve_cmd
    from deepsearch.commands.common import PlainSwitchesCommand
    from deepsearch.commands.flags import PASS_THROUGH

    app.command("research", help=research_cmd.HELP, cls=research_cmd.ResearchCommand)(
        research_cmd.research
    )
    plain = {"context_settings": PASS_THROUGH, "cls": PlainSwitchesCommand}
    app.command("config", help=config_cmd.HELP, **plain)(config_cmd.show_config)
    app.command("doctor", help=doctor_cmd.HELP, **plain)(doctor_cmd.doctor)
    app.command(
        "eval", help=eval_cmd.HELP, cls=eval_cmd.EvalCommand, context_settings=PASS_THROUGH
    )(eval_cmd.eval_command)
    app.command("serve", help=serve_cmd.HELP, **plain)(serve_cmd.serve)
