"""A signal the moment a server says "listening" (`deepsearch serve` and `deepsearch mcp
--transport http`): a supervisor that waits for the banner may stop the server before
uvicorn runs. The exit code must still be the signal's (143 for SIGTERM, 129 for
SIGHUP), with no traceback. Before, such a SIGTERM killed the process (-15) or ended it
as a Ctrl-C (130): the handlers were installed only around uvicorn's own loop.

Each server is the console script, signalled as soon as its banner is read (on the old
code: -15 or 130, by how far the start-up had got): the real thing, a process each. The
clean-up path itself (`served_until_signal`) is checked in process below, and signals
placed exactly at the start-up's worst points in test_signal_points.py. (In-process
servers stopped by a signal used to leave later MCP streams of the worker dead:
sse-starlette's process-wide exit flag, now cleared after each test in conftest.)"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

DEAD = "http://127.0.0.1:9"  # nothing listens: the servers never call out before a request
ENV = {"OPENAI_API_KEY": "sk-early-signal-0123456789", "OPENAI_BASE_URL": f"{DEAD}/v1"}
FLAGS = ["--llm-provider", "openai", "--search-provider", "searxng", "--searxng-url", DEAD]


@pytest.fixture
def escaped() -> Iterator[list[int]]:
    """Signals that reached the test's handler instead of the command's."""
    seen: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield seen
    for sig, old in previous.items():
        signal.signal(sig, old)


async def _serve() -> None:
    """A coroutine with uvicorn's name for it (Server.serve)."""


_serve.__qualname__ = "Server.serve"


def _run_like_uvicorn() -> None:
    """uvicorn's `Server.run`: the coroutine made, then a signal before it runs."""
    pending = _serve()
    os.kill(os.getpid(), signal.SIGTERM)
    asyncio.run(pending)  # never reached: the handler raises first


def test_a_server_cut_before_its_coroutine_ran_says_nothing_of_it(escaped: list[int]) -> None:
    """uvicorn's `run` makes its coroutine, then runs it: a signal between the two must
    not print Python's "coroutine ... was never awaited" on the way out."""
    import gc
    import warnings

    import typer

    from deepsearch.commands.signals import served_until_signal

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(typer.Exit) as done:
            with served_until_signal():
                _run_like_uvicorn()
        code = done.value.exit_code
        del done  # the last reference to the exception and its frames
        gc.collect()
    assert code == 143 and escaped == []
    assert not [w for w in seen if "never awaited" in str(w.message)], [
        str(w.message) for w in seen
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]], ids=" ".join)
def test_sigterm_as_soon_as_a_server_says_listening_exits_143(
    command: list[str], tmp_path: Path
) -> None:
    script = Path(sys.executable).parent / "deepsearch"
    env = {**os.environ, **ENV, "HOME": str(tmp_path)}
    with subprocess.Popen([str(script), *command, "--port", "0", *FLAGS], env=env,
                          stderr=subprocess.PIPE, text=True) as child:  # fmt: skip
        assert child.stderr is not None
        banner = child.stderr.readline()
        child.send_signal(signal.SIGTERM)
        try:
            rest = child.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            # Seen once in 64 runs (mcp over http): the signal was taken and the server
            # kept serving. Fail, and do not wait forever in Popen's exit for it.
            child.kill()
            rest = child.communicate()[1]
            pytest.fail(f"still serving 30 s after SIGTERM: {banner}{rest}")
    assert "listening on" in banner, banner + rest
    assert child.returncode == 143, rest
    assert "Traceback" not in rest and "never awaited" not in rest, rest
