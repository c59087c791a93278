"""`deepsearch config`: the effective configuration, its sources, secrets masked."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from deepsearch.commands.common import EXIT_USAGE, ConfigOption, fail
from deepsearch.commands.output import guarded_stdout
from deepsearch.config import LoadedConfig, effective_items, effective_values, load_config
from deepsearch.errors import ConfigError


def show_config(
    config: ConfigOption = None,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    try:
        loaded = load_config(config_file=config)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    with guarded_stdout():
        _print(loaded, as_json=as_json)


def _print(loaded: LoadedConfig, *, as_json: bool) -> None:
    if as_json:
        values = effective_values(loaded)
        payload = {
            key: {"value": value, "source": source} for key, (value, source) in values.items()
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    rows = effective_items(loaded)
    console = Console(soft_wrap=False)
    if not console.is_terminal:  # piped: whole lines a script can grep, not a wrapped table
        for key, value, source in rows:
            typer.echo(f"{key} = {value}  ({source})")
        return
    table = Table(title="deepsearch configuration", title_justify="left")
    table.add_column("key", style="cyan", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim")
    for key, value, source in rows:
        table.add_row(key, value, source)
    console.print(table)
