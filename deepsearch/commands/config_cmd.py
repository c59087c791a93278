"""`deepsearch config`: what a research run would use and why (the config file read,
the cache folder included), then the effective configuration with each value's source
(compact; `--all` adds the per-tool model tables of every provider). Takes the research
flags, secrets always masked. `config paths` lists the files and folders a run uses;
`config init` writes a starter config file (config_files.py)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from deepsearch.commands.common import ConfigOption
from deepsearch.commands.config_files import (
    cache_decision,
    config_file_decision,
    path_rows,
    starter_path,
    write_starter,
)
from deepsearch.commands.flags import research_flags
from deepsearch.commands.resolution import run_decisions
from deepsearch.commands.stdout import guarded_stdout
from deepsearch.config import LoadedConfig, effective_items, effective_values, load_config

HELP = (
    "Show what a research run would use and why, then every setting and its source. "
    "Accepts the research flags (see: deepsearch research --help). "
    "`deepsearch config paths`: the config file, cache and state files a run uses; "
    "`deepsearch config init`: write a starter config file (never over an existing one)."
)
ACTIONS = ("paths", "init")


def show_config(
    ctx: typer.Context,
    config: ConfigOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of a table.")
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list every provider's per-tool model table.")
    ] = False,
) -> None:
    from deepsearch.frontend.options import FLAG_OF

    args = list(ctx.args)
    action = args.pop(0) if args and args[0] in ACTIONS else None
    flags, flag_config = research_flags(args, "config")
    if action == "init":
        path = starter_path(config or flag_config)
        write_starter(path)
        typer.echo(f"wrote a starter config to {path} (edit it; `deepsearch config` shows it)")
        return
    loaded = load_config(
        config_file=config or flag_config, overrides=flags, override_labels=FLAG_OF
    )
    with guarded_stdout():
        if action == "paths":
            _print_paths(loaded, as_json=as_json)
        else:
            _print(loaded, as_json=as_json, show_all=show_all)


def _print_paths(loaded: LoadedConfig, *, as_json: bool) -> None:
    rows = path_rows(loaded)
    if as_json:
        typer.echo(json.dumps({what.replace(" ", "_"): path for what, path in rows}, indent=2))
        return
    width = max(len(what) for what, _ in rows)
    for what, path in rows:
        typer.echo(f"{what:<{width}}  {path}")


def _compact(key: str, used: str | None) -> bool:
    """Rows kept without --all: everything but the model tables of providers not in use
    and the per-tool overrides (the `run` table says which model is used)."""
    if not key.startswith("llm.providers."):
        return True
    return ".tools." not in key and key.split(".")[2] == used


def _print(loaded: LoadedConfig, *, as_json: bool, show_all: bool) -> None:
    decisions = [*run_decisions(loaded), config_file_decision(loaded), cache_decision(loaded)]
    if as_json:  # always complete: a script should not need --all
        payload: dict[str, object] = {
            "run": {d.json_key: {"value": d.data, "why": d.why} for d in decisions}
        }
        for key, (value, source) in effective_values(loaded).items():
            payload[key] = {"value": value, "source": source}
        typer.echo(json.dumps(payload, indent=2))
        return
    used = next((d.value for d in decisions if d.what == "llm provider"), None)
    rows = [r for r in effective_items(loaded) if show_all or _compact(r[0], used)]
    console = Console(soft_wrap=False)
    if not console.is_terminal:  # piped: whole lines a script can grep, not a wrapped table
        for d in decisions:
            typer.echo(f"run: {d.what} = {d.value}" + (f"  ({d.why})" if d.why else ""))
        for key, value, source in rows:
            typer.echo(f"{key} = {value}  ({source})")
        return
    run = Table(title="a research run would use", title_justify="left")
    for name, style in (("what", "cyan"), ("value", "bold"), ("why", "dim")):
        run.add_column(name, style=style, overflow="fold")
    for d in decisions:
        run.add_row(d.what, d.value, d.why)
    console.print(run)
    table = Table(title="settings" + ("" if show_all else " (--all for every model table)"),
                  title_justify="left")  # fmt: skip
    table.add_column("key", style="cyan", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim")
    for key, value, source in rows:
        table.add_row(key, value, source)
    console.print(table)
