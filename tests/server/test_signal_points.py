"""A SIGTERM at the worst moments of a server's start-up (`deepsearch serve`, `deepsearch
mcp --transport http`), each placed exactly: the server stops with 143, no traceback,
and without needing a second signal.

Each point broke the old handler, which raised KeyboardInterrupt wherever the signal
landed (found by signalling the real command at every traced line after its banner,
then by 200 runs at load: 1 exit 1, 1 exit 0, and once in 64 suite runs a server that
kept serving):
- the instant asyncio.run installs its Ctrl-C handler: a CancelledError traceback;
- inside logging's handler lock while uvicorn configures its logging: "cannot release
  un-acquired lock", exit 1;
- inside a finalizer (`__del__`), where Python swallows exceptions: the server kept
  serving, and the next SIGTERM was ignored too (uvicorn's, later, ended it with 0).

In process (each start ~50 ms): the points are patched here, and a watchdog sends the
second SIGTERM a server still serving would need, so the old code fails, not hangs.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
from typing import Any

import pytest
import typer

from deepsearch.cli import run

DEAD = "http://127.0.0.1:9"  # nothing listens: the servers never call out before a request
FLAGS = ["--llm-provider", "openai", "--search-provider", "searxng", "--searxng-url", DEAD]
COMMANDS = {
    "serve": ["serve", "--port", "0", *FLAGS],
    "mcp": ["mcp", "--transport", "http", "--port", "0", *FLAGS],
}
WATCHDOG_S = 5.0
# The `mcp` command imports the MCP SDK and neither command the openai SDK: these run
# on the MCP SDK's worker (tests/conftest.py, _sdk_group), which pays that import once.
pytestmark = pytest.mark.xdist_group("mcp-sdk")


def _sigterm() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


class _Finalized:
    """An object whose finalizer is where the signal's handler runs."""

    def __del__(self) -> None:
        _sigterm()
        list(range(3))  # more code after the kill: the handler runs in here, not later


class Points:
    """Sends one SIGTERM at the chosen point, once the banner is out."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.banner = False
        self.sent = False

    def fire(self, point: str) -> None:
        if self.point == point and self.banner and not self.sent:
            self.sent = True
            _sigterm()

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_echo, real_signal = typer.echo, signal.signal
        real_acquire = logging.Handler.acquire

        def echo(message: Any = None, *args: Any, **kwargs: Any) -> None:
            real_echo(message, *args, **kwargs)
            if "listening on" in str(message):
                self.banner = True
                if self.point == "finalizer":
                    self.sent = True
                    _Finalized()  # made and dropped: its __del__ runs now

        def install(sig: int, handler: Any) -> Any:
            old = real_signal(sig, handler)
            # asyncio.run's Ctrl-C handler (a partial of its runner's method), just set
            if sig == signal.SIGINT and isinstance(handler, functools.partial):
                self.fire("asyncio")
            return old

        def acquire(handler: logging.Handler) -> None:
            self.fire("logging lock")  # uvicorn's dictConfig closing the old handlers
            real_acquire(handler)

        monkeypatch.setattr(typer, "echo", echo)
        monkeypatch.setattr(signal, "signal", install)
        monkeypatch.setattr(logging.Handler, "acquire", acquire)


def _run_with_watchdog(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`run(argv)` in process; a second SIGTERM after WATCHDOG_S fails the test."""
    done, needed = threading.Event(), threading.Event()

    def watch() -> None:
        if not done.wait(WATCHDOG_S):
            needed.set()
            _sigterm()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        code = run(list(argv))
    finally:
        done.set()
        thread.join()
    err = capsys.readouterr().err
    assert not needed.is_set(), f"still running {WATCHDOG_S} s after the SIGTERM: {err}"
    return code, err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("point", ["asyncio", "logging lock", "finalizer"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_sigterm_at_any_point_of_the_start_up_stops_the_server_with_143(
    command: str,
    point: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-signal-points-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{DEAD}/v1")
    points = Points(point)
    points.patch(monkeypatch)
    code, err = _run_with_watchdog(COMMANDS[command], capsys)
    assert points.sent, f"the point {point!r} was never reached"
    assert code == 143, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_signal_in_plain_code_waits_for_the_next_safe_point() -> None:
    """Outside an event loop the signal is only recorded: the code it landed in runs on
    (nothing is raised into it), and the command stops at its next `checkpoint()`."""
    from deepsearch.commands.signals import checkpoint, served_until_signal

    seen: list[str] = []
    with pytest.raises(typer.Exit) as done, served_until_signal() as caught:
        signal.raise_signal(signal.SIGHUP)
        seen.append("ran on")
        assert caught.signum == signal.SIGHUP
        checkpoint()
        seen.append("past the checkpoint")
    assert seen == ["ran on"] and done.value.exit_code == 129


def test_a_signal_after_the_last_safe_point_still_sets_the_exit_code() -> None:
    from deepsearch.commands.signals import served_until_signal

    with pytest.raises(typer.Exit) as done, served_until_signal():
        signal.raise_signal(signal.SIGTERM)
    assert done.value.exit_code == 143


def test_a_second_signal_before_the_first_took_effect_stops_at_once() -> None:
    """A command stuck in plain code (a slow name lookup before the bind) is stopped by
    the supervisor's second signal, with the first signal's code."""
    from deepsearch.commands.signals import served_until_signal

    seen: list[str] = []
    with pytest.raises(typer.Exit) as done, served_until_signal():
        signal.raise_signal(signal.SIGTERM)
        seen.append("first recorded")
        signal.raise_signal(signal.SIGHUP)
        seen.append("ran past the second")
    assert seen == ["first recorded"] and done.value.exit_code == 143


def test_outside_a_served_command_a_checkpoint_does_nothing() -> None:
    from deepsearch.commands.signals import checkpoint

    checkpoint()  # the stdio MCP server and the library share the preflight


@pytest.mark.timeout(30)
@pytest.mark.parametrize("when", ["before its loop", "inside its loop"])
def test_a_sigterm_during_a_preflight_that_would_never_end_stops_it(
    when: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preflight builds a run's parts in an event loop (a slow provider can hold
    it): a signal before that loop runs stops it as it starts; one inside is the
    loop's cancellation, as Ctrl-C's."""
    import asyncio

    from deepsearch import runtime
    from deepsearch.llm import factory

    monkeypatch.setenv("OPENAI_API_KEY", "sk-signal-points-0123456789")
    real_resolve = factory.resolve_provider
    reached: list[str] = []

    def resolve(*args: Any, **kwargs: Any) -> Any:
        if when == "before its loop":
            _sigterm()
        return real_resolve(*args, **kwargs)

    async def never_built(*args: Any, **kwargs: Any) -> Any:
        reached.append("preflight loop")
        if when == "inside its loop":
            _sigterm()
        await asyncio.Event().wait()

    monkeypatch.setattr(factory, "resolve_provider", resolve)
    monkeypatch.setattr(runtime, "build_deps", never_built)
    code, err = _run_with_watchdog(COMMANDS["mcp"], capsys)
    assert code == 143, err
    assert reached == ([] if when == "before its loop" else ["preflight loop"])
    assert "listening" not in err and "Traceback" not in err, err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_server_signalled_before_its_banner_never_says_listening(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A supervisor that reads "listening" must be able to trust it: a server signalled
    while it binds stops there."""
    from deepsearch.commands import serve_cmd

    monkeypatch.setenv("OPENAI_API_KEY", "sk-signal-points-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{DEAD}/v1")
    real_bind = serve_cmd._bind

    def bind(*args: Any) -> Any:
        _sigterm()
        return real_bind(*args)

    monkeypatch.setattr(serve_cmd, "_bind", bind)
    code, err = _run_with_watchdog(COMMANDS[command], capsys)
    assert code == 143 and "listening" not in err, err


def test_a_finished_main_task_is_not_cancelled_again() -> None:
    """In the last turn of asyncio.run's loop, its main task done, the runner's Ctrl-C
    handler would raise KeyboardInterrupt into the clean-up: the signal is only
    recorded then (the command stops at its next safe point)."""
    import asyncio
    import functools

    from deepsearch.commands.signals import _cancel_the_running_loop

    calls: list[str] = []

    def runner_handler(signum: int, frame: Any, main_task: asyncio.Future[None]) -> None:
        calls.append("runner's handler")

    async def main() -> list[bool]:
        finished = asyncio.get_running_loop().create_future()
        finished.set_result(None)
        running = asyncio.get_running_loop().create_future()
        handed = []
        for task in (finished, running):
            with _sigint(functools.partial(runner_handler, main_task=task)):
                handed.append(_cancel_the_running_loop(None))
        return handed

    assert asyncio.run(main()) == [False, True] and calls == ["runner's handler"]


class _sigint:
    """SIGINT's handler replaced for a block (restored after, as conftest checks)."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def __enter__(self) -> None:
        self.old = signal.signal(signal.SIGINT, self.handler)

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self.old)


def test_ctrl_c_is_exit_130() -> None:
    from deepsearch.commands.signals import Caught

    assert Caught().exit_code() == 130 and Caught(signal.SIGHUP).exit_code() == 129


def test_a_server_started_with_ctrl_c_ignored_still_stops_on_sigterm() -> None:
    """A background job of a shell without job control starts with SIGINT ignored:
    asyncio.run then installs no handler of its own, and there is nothing to hand the
    signal to; it is recorded, and the command stops at its end."""
    import asyncio

    from deepsearch.commands.signals import served_until_signal

    async def serving() -> str:
        signal.raise_signal(signal.SIGTERM)
        await asyncio.sleep(0)
        return "served"

    seen: list[str] = []
    with _sigint(signal.SIG_IGN):
        with pytest.raises(typer.Exit) as done, served_until_signal():
            seen.append(asyncio.run(serving()))
    assert seen == ["served"] and done.value.exit_code == 143
