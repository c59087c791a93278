"""Command implementations, registered on the Typer app lazily (keeps --help fast)."""

from __future__ import annotations

from importlib import import_module

import typer

# command name -> (module, function, its command class or None: PlainSwitchesCommand);
# each module has HELP.
_PASSED_THROUGH = {
    "config": ("config_cmd", "show_config", None),
    "doctor": ("doctor_cmd", "doctor", None),
    "eval": ("eval_cmd", "eval_command", "EvalCommand"),
    "serve": ("serve_cmd", "serve", None),
    "mcp": ("mcp_cmd", "mcp_command", None),
    "cost": ("cost_cmd", "cost_command", None),
}


def register(app: typer.Typer, only: str | None = None) -> None:
    """Every command, or `only` the one a command line runs: a run of `research`
    never imports eval's, serve's or doctor's modules."""
    from deepsearch.commands.common import PlainSwitchesCommand
    from deepsearch.commands.flags import PASS_THROUGH

    if only in (None, "research"):
        from deepsearch.commands import research_cmd

        app.command("research", help=research_cmd.HELP, cls=research_cmd.ResearchCommand)(
            research_cmd.research
        )
    if only in (None, "history", "show"):  # the history's own commands (no research flags)
        from deepsearch.commands import history_cmd

        for word, run, text in (
            ("history", history_cmd.history, history_cmd.HISTORY_HELP),
            ("show", history_cmd.show, history_cmd.SHOW_HELP),
        ):
            if only in (None, word):
                app.command(word, help=text, cls=PlainSwitchesCommand)(run)
    if only in (None, "completion"):
        from deepsearch.commands import completion_cmd

        app.command("completion", help=completion_cmd.HELP, cls=PlainSwitchesCommand)(
            completion_cmd.completion
        )
    # config, doctor, eval, serve, mcp and cost take the research flags: passed through unparsed.
    for name, (module_name, function, cls_name) in _PASSED_THROUGH.items():
        if only not in (None, name):
            continue
        module = import_module(f"deepsearch.commands.{module_name}")
        cls = getattr(module, cls_name) if cls_name else PlainSwitchesCommand
        command = app.command(name, help=module.HELP, cls=cls, context_settings=PASS_THROUGH)
        command(getattr(module, function))
