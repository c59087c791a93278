"""`deepsearch mcp`: the Model Context Protocol server (deepsearch.mcp_server).

Takes the research flags (parsed by the research command's own parser) as every
call's defaults, plus the server's own options, with serve's rules: refused at start,
exit 2 with one line, for a bad flag or configuration, a provider that cannot be built,
a port that cannot be bound, and a non-loopback address without an API key (unless
--insecure-no-auth). stdio by default: stdout then carries JSON-RPC only.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from deepsearch.commands.common import ConfigOption
from deepsearch.commands.serve_cmd import (
    KEY_ENV,
    ApiKeyOption,
    ConcurrencyOption,
    HostOption,
    MaxBudgetOption,
    NoAuthOption,
    PortOption,
)
from deepsearch.errors import EXIT_INTERRUPTED, UsageError
from deepsearch.frontend.units import tokens

if TYPE_CHECKING:
    from deepsearch.commands.signals import Caught

HELP = (
    "Serve research as a Model Context Protocol tool ('research') over stdio, or "
    "streamable HTTP with --transport http. Accepts the research flags as every call's "
    "defaults (see: deepsearch research --help)."
)
# Research flags of the command line's own output: meaningless for a server.
NOT_HERE = ("--json", "--quiet", "-q", "--trace", "--record", "--replay", "--replay-lenient")

TaskTtlOption = Annotated[
    float,
    typer.Option(
        "--task-ttl",
        metavar="SECONDS",
        min=1,
        max=7 * 86400,
        help="Keep a finished task's result this long at most (a client may ask less).",
    ),
]
TransportOption = Annotated[
    str,
    typer.Option("--transport", metavar="stdio|http", help="stdio (default) or http."),
]


def mcp_command(
    ctx: typer.Context,
    transport: TransportOption = "stdio",
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    max_budget: MaxBudgetOption = None,
    max_concurrent: ConcurrencyOption = 4,
    task_ttl: TaskTtlOption = 3600,
    api_key: ApiKeyOption = None,
    insecure_no_auth: NoAuthOption = False,
    config: ConfigOption = None,
) -> None:
    from deepsearch.commands.serve_cmd import server_key

    mode = _transport(transport)
    limits = {"max_concurrent": max_concurrent, "task_ttl": task_ttl}
    if mode == "stdio":  # its stdin closing ends it; Ctrl-C is its signal
        key = api_key or os.environ.get(KEY_ENV) or None
        built = _config(_options(ctx.args, config), max_budget, key, limits)
        say_stdio_on_a_terminal()
        _run_stdio(built)
        return
    from deepsearch.commands.signals import served_until_signal

    # From the start: a supervisor's SIGTERM during the preflight is the signal's code too.
    with served_until_signal() as caught:
        options = _options(ctx.args, config)
        key = server_key(api_key, host, insecure_no_auth=insecure_no_auth)
        _serve_http(_config(options, max_budget, key, limits), host, port, key, caught)


STDIO_ON_A_TERMINAL = (
    "deepsearch mcp: speaking MCP on stdio; start me from an MCP client "
    "(see: deepsearch help mcp; Ctrl-D or Ctrl-C ends me)"
)


NOT_JSON_RPC = (
    "deepsearch mcp: a line on stdin is not a JSON-RPC message (ignored); "
    "start me from an MCP client"
)


class OneLineForBadInput(logging.Filter):
    """The SDK logs a line typed by hand (`hello`) as a pydantic validation error over
    three lines; it becomes one line saying what happened."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("Received exception from stream:") and "JSONRPCMessage" in text:
            record.msg, record.args = NOT_JSON_RPC, ()
        return True


def say_stdio_on_a_terminal() -> None:
    """Typed by hand, the stdio server would wait in silence for JSON-RPC: say so once."""
    try:
        typed = sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # a closed stdin
        typed = False
    if typed:
        typer.echo(STDIO_ON_A_TERMINAL, err=True)


def _transport(value: str) -> Literal["stdio", "http"]:
    if value not in ("stdio", "http"):
        raise UsageError(f"--transport: {value!r} is not stdio or http")
    return "stdio" if value == "stdio" else "http"


def _options(args: list[str], config: Any) -> dict[str, Any]:
    """The research flags as options (deepsearch.library's names), `--config` among them."""
    from deepsearch.commands.flags import parse_research_args

    for flag in NOT_HERE:
        if flag in args:
            raise UsageError(f"{flag} is the command line's; deepsearch mcp answers over MCP")
    params = parse_research_args(args, "mcp")
    if params.get("question"):
        raise UsageError(f"deepsearch mcp takes no question (got {' '.join(params['question'])!r})")
    names = ("question", "as_json", "quiet", "trace", "record", "replay", "replay_lenient")
    options = {
        k: v for k, v in params.items() if k not in names and v is not None and v is not False
    }
    if config is not None or params.get("config") is not None:
        options["config"] = config or params["config"]
    return options


def _config(
    options: dict[str, Any], max_budget: int | None, key: str | None, limits: dict[str, Any]
) -> Any:
    """The provider resolved and a run's parts built once (as serve does), so a
    configuration that cannot work fails now, not at the first call."""
    from deepsearch.commands.serve_cmd import _preflight
    from deepsearch.library import load_settings
    from deepsearch.mcp_server.app import McpConfig

    settings = _preflight(load_settings(options, labels=_flag_labels()))
    pinned = {**options, "llm_provider": settings.llm.provider}
    secrets = [*settings.secret_values(), *([key] if key else [])]
    cap = max_budget or settings.agent.token_budget
    return McpConfig(options=pinned, max_budget=cap, api_key=key, secrets=secrets, **limits)


def _flag_labels() -> dict[str, str]:
    from deepsearch.frontend.options import FLAG_OF

    return dict(FLAG_OF)


def _run_stdio(config: Any) -> None:
    import asyncio

    from deepsearch.mcp_server.app import serve_stdio

    logging.getLogger("mcp.server.lowlevel.server").addFilter(OneLineForBadInput())
    try:
        asyncio.run(serve_stdio(config))
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _serve_http(config: Any, host: str, port: int, key: str | None, caught: Caught) -> None:
    """Bind, print the banner and serve until Ctrl-C, SIGTERM or SIGHUP (the caller's
    `served_until_signal` turns it into the exit code, as for `deepsearch serve`)."""
    import uvicorn

    from deepsearch.commands.serve_cmd import _bind, _is_loopback, _url_host
    from deepsearch.commands.signals import EarlySignalStops, checkpoint

    sock = _bind(host, port)

    from deepsearch.mcp_server.app import http_app
    from deepsearch.server.deadline import read_deadline_protocol

    bound = sock.getsockname()[1]
    app = http_app(config, loopback=_is_loopback(host), port=bound)
    checkpoint()  # stopped already: never say "listening"
    typer.echo(
        f"deepsearch mcp: listening on http://{_url_host(host)}:{bound}/mcp "
        f"(auth {'on' if key else 'off'}, {config.max_concurrent} at once, "
        f"at most {tokens(config.max_budget)} tokens a call)",
        err=True,
    )

    class Server(EarlySignalStops, uvicorn.Server):
        pass

    server = Server(
        uvicorn.Config(
            app,
            http=read_deadline_protocol(),  # slow clients cut (server/deadline.py)
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
    )
    server.caught = caught
    server.run(sockets=[sock])
