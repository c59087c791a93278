"""Saying why an LLM call waits: a retry's pause (rate limited, a server error, no
connection) is told to whoever listens in this context (the run's live view, through
runtime.py), so a run paused by a 429 does not look hung.

A context variable rather than a parameter: the wire (openai_wire.py) is built once per
provider, deep below the run; the listener is set by the run that owns the context, and
every task it starts (each LLM call) inherits it. Without a listener, nothing happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_listener: ContextVar[Callable[[str], None] | None] = ContextVar("llm_waits", default=None)


def retry_words(status: int | None, wait_s: float) -> str:
    """`rate limited (HTTP 429), retrying in 4 s` and its kin."""
    seconds = f"{wait_s:.0f}" if wait_s >= 1 else f"{wait_s:.1f}"
    if status == 429:
        why = "the LLM server rate limited the call (HTTP 429)"
    elif status is None:
        why = "the LLM server could not be reached"
    else:
        why = f"the LLM server answered HTTP {status}"
    return f"{why}, retrying in {seconds} s"


def announce(text: str) -> None:
    listener = _listener.get()
    if listener is not None:
        try:
            listener(text)
        except Exception:  # a listener's failure never fails the call
            pass


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Within the block (and the tasks started in it), waits are told to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
