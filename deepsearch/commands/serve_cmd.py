"""`deepsearch serve`: the OpenAI-compatible chat-completions server (deepsearch.server).

Takes the research flags (parsed by the research command's own parser, see flags.py)
as every run's defaults, plus the server's own options. Refused at start, exit 2 with
one line: a bad flag or configuration, a provider that cannot be built, a port that
cannot be bound, and a non-loopback address without an API key (unless
--insecure-no-auth). Starlette and uvicorn are imported only here, when it runs.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from deepsearch.commands.common import ConfigOption
from deepsearch.config import MIN_BUDGET
from deepsearch.errors import UsageError
from deepsearch.frontend.units import parse_tokens, tokens

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from deepsearch.commands.signals import Caught
    from deepsearch.config import Settings

HELP = (
    "Serve research as an OpenAI-compatible /v1/chat/completions endpoint (model "
    "'deepsearch'). Accepts the research flags as every run's defaults "
    "(see: deepsearch research --help)."
)
KEY_ENV = "DEEPSEARCH_SERVER_KEY"
# Research flags that only shape terminal output: meaningless for a server.
OUTPUT_ONLY = ("--json", "--quiet", "-q")


# The server's own options (the research flags come through ctx.args).
HostOption = Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Address to bind.")]
PortOption = Annotated[
    int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="Port (0: any free).")
]


def _budget_cap(value: str | int) -> int:
    """--max-budget as --budget reads it (`200k`), at least the smallest budget a run
    can spend."""
    if isinstance(value, int):
        return value
    try:
        cap = parse_tokens(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if cap < MIN_BUDGET:
        raise typer.BadParameter(f"{value} is below the smallest budget, {tokens(MIN_BUDGET)}")
    return cap


MaxBudgetOption = Annotated[
    int | None,
    typer.Option(
        "--max-budget",
        metavar="TOKENS",
        parser=_budget_cap,
        help="Most tokens one request may spend, e.g. 200k (default: the run budget of the flags).",
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        metavar="KEY",
        help=f"Require 'Authorization: Bearer KEY' (or set ${KEY_ENV}).",
        show_default=False,
    ),
]
NoAuthOption = Annotated[
    bool,
    typer.Option(
        "--insecure-no-auth", metavar="", help="Allow a non-loopback address without a key."
    ),
]
ConcurrencyOption = Annotated[
    int, typer.Option("--max-concurrent", metavar="N", min=1, max=256, help="Researches at once.")
]
TraceOption = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        metavar="FILE",
        help="Append JSON Lines of every LLM and web call here; log each question.",
    ),
]


def serve(
    ctx: typer.Context,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    max_budget: MaxBudgetOption = None,
    api_key: ApiKeyOption = None,
    insecure_no_auth: NoAuthOption = False,
    max_concurrent: ConcurrencyOption = 4,
    trace: TraceOption = None,
    config: ConfigOption = None,
) -> None:
    from deepsearch.commands.signals import served_until_signal

    # From the start: a supervisor's SIGTERM during the preflight is the signal's code too.
    with served_until_signal() as caught:
        settings = _settings(ctx.args, config)
        key = server_key(api_key, host, insecure_no_auth=insecure_no_auth)
        if trace is not None and (trace.is_dir() or not trace.parent.is_dir()):
            raise UsageError(
                f"{trace}: cannot write the trace there (not a file in an existing folder)"
            )
        settings = _preflight(settings)
        _serve(settings, host, port, key, max_budget, max_concurrent, trace, caught)


def server_key(api_key: str | None, host: str, *, insecure_no_auth: bool) -> str | None:
    """The bearer key (--api-key, else $DEEPSEARCH_SERVER_KEY), refusing an
    address beyond loopback without one unless --insecure-no-auth says so."""
    key = api_key or os.environ.get(KEY_ENV) or None
    if not _is_loopback(host) and key is None and not insecure_no_auth:
        raise UsageError(
            f"refusing to serve on {host} without an API key: set --api-key or ${KEY_ENV} "
            "(or pass --insecure-no-auth)"
        )
    return key


def _serve(
    settings: Settings,
    host: str,
    port: int,
    key: str | None,
    max_budget: int | None,
    max_concurrent: int,
    trace: Path | None,
    caught: Caught,
) -> None:
    """Bind, build the app, print the banner and serve until Ctrl-C, SIGTERM or SIGHUP
    (`served_until_signal`, the caller's, turns it into the exit code). Then uvicorn
    stops accepting, and every run in flight is cut short at once and its client
    answered (a 503, or an error event in a stream: ResearchResponse), instead of
    uvicorn waiting out its graceful timeout and dropping the connections."""
    sock = _bind(host, port)
    from deepsearch.commands.signals import checkpoint
    from deepsearch.server.app import ServerConfig, create_app

    budget_cap = max_budget or settings.agent.token_budget
    app = create_app(
        ServerConfig(
            settings=settings,
            max_budget=budget_cap,
            api_key=key,
            max_concurrent=max_concurrent,
            trace=trace,
            loopback=_is_loopback(host),
        )
    )
    bound = sock.getsockname()[1]
    checkpoint()  # stopped already: never say "listening"
    typer.echo(
        f"deepsearch serve: listening on http://{_url_host(host)}:{bound}/v1 "
        f"(auth {'on' if key else 'off'}, {max_concurrent} at once, "
        f"at most {tokens(budget_cap)} tokens a request)",
        err=True,
    )
    _run(app, sock, caught)


def _run(app: Starlette, sock: socket.socket, caught: Caught) -> None:
    """uvicorn serving on the bound socket, until the signal that `caught` records."""
    _server(app, caught).run(sockets=[sock])


def _settings(args: list[str], config: Path | None) -> Settings:
    from deepsearch.commands.flags import research_flags
    from deepsearch.config import load_config
    from deepsearch.frontend.options import FLAG_OF

    for flag in OUTPUT_ONLY:
        if flag in args:
            raise UsageError(f"{flag} shapes terminal output; deepsearch serve answers over HTTP")
    flags, flag_config = research_flags(args, "serve")
    loaded = load_config(
        config_file=config or flag_config, overrides=flags, override_labels=FLAG_OF
    )
    corpus = loaded.settings.search.corpus_dir
    if corpus is not None and not Path(corpus).is_dir():
        raise UsageError(f"{corpus}: --corpus must be a directory")
    return loaded.settings


def _preflight(settings: Settings) -> Settings:
    """The provider resolved once (every request then uses the same one) and a run's
    dependencies built once, so a configuration that cannot work fails now."""
    import asyncio
    from contextlib import AsyncExitStack

    from deepsearch.commands.signals import checkpoint
    from deepsearch.llm.factory import resolve_provider
    from deepsearch.runtime import build_deps

    async def build(pinned: Settings) -> None:
        checkpoint()  # a signal before this loop ran (signals.served_until_signal)
        async with AsyncExitStack() as stack:
            await build_deps(pinned, stack=stack, emit=lambda _: None, trace=None)

    provider = resolve_provider(settings)
    pinned = settings.model_copy(
        update={"llm": settings.llm.model_copy(update={"provider": provider})}
    )
    asyncio.run(build(pinned))
    return pinned


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)  # before the banner: a client that reads it can connect at once
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _server(app: Starlette, caught: Caught) -> uvicorn.Server:
    """uvicorn's server, whose shutdown first cuts short every run in flight."""
    import uvicorn

    from deepsearch.commands.signals import EarlySignalStops
    from deepsearch.server.app import ServerState
    from deepsearch.server.deadline import read_deadline_protocol

    state: ServerState = app.state.deepsearch

    class Server(EarlySignalStops, uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            name = _signal_name(caught.signum, self)
            how = f"{name}: " if name else ""
            cut = state.stop_all("the server is shutting down")
            runs = f"{cut} run{'' if cut == 1 else 's'} in flight cut short" if cut else "idle"
            state.config.log(f"deepsearch serve: shutting down ({how}{runs})")
            await super().shutdown(sockets)

    server = Server(
        uvicorn.Config(
            app,
            http=read_deadline_protocol(state.config.read_deadline_s),  # slow clients cut
            log_level="warning",
            access_log=False,  # the app logs one line per request itself
            lifespan="off",
            timeout_graceful_shutdown=5,  # a safety net: the runs end at once (stop_all)
        )
    )
    server.caught = caught
    return server


def _signal_name(ours: int | None, server: uvicorn.Server) -> str:
    """The signal that stops the server: SIGHUP reaches uvicorn as its SIGINT."""
    import signal

    captured: list[int] = getattr(server, "_captured_signals", [])
    first = ours if ours is not None else (captured[0] if captured else None)
    return signal.Signals(first).name if first is not None else ""
