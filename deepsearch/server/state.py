"""What the server keeps across requests: its configuration (`ServerConfig`) and the
runs in flight (`ServerState`), in a module of their own so that the app (`app`) and
the response it hands each request (`stream`) both import them and not each other."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from deepsearch.config import Settings, redact_secrets
from deepsearch.server.deadline import READ_DEADLINE_S


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Stoppable(Protocol):
    def stop(self, why: str) -> None: ...


@dataclass
class ServerConfig:
    settings: Settings  # the defaults of every run: the research flags and config
    max_budget: int
    api_key: str | None = None
    max_concurrent: int = 4
    trace: Path | None = None
    log: Callable[[str], None] = _stderr
    secrets: list[str] = field(default_factory=list)
    # Bound to a loopback address: only loopback Host names are answered (server/guard.py).
    loopback: bool = True
    # Seconds a connection has to send a whole request (server/deadline.py).
    read_deadline_s: float = READ_DEADLINE_S

    def __post_init__(self) -> None:
        own = [self.api_key] if self.api_key else []
        self.secrets = [s for s in (*self.settings.secret_values(), *own) if s]

    def mask(self, text: str) -> str:
        return redact_secrets(text, self.secrets)


class ServerState:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.active = 0
        self.stopping = False
        self.in_flight: set[Stoppable] = set()  # the responses whose runs are going

    def stop_all(self, why: str) -> int:
        """The server is shutting down: every run in flight is cancelled now (as a
        disconnect cancels one) and its client answered; how many there were."""
        self.stopping = True
        for response in list(self.in_flight):
            response.stop(why)
        return len(self.in_flight)

    def log(
        self,
        request_id: str,
        status: int,
        started: float,
        *,
        outcome: str = "-",
        tokens: int = 0,
        question: str | None = None,
    ) -> None:
        line = (
            f"deepsearch serve: {request_id} status={status} run={outcome} "
            f"tokens={tokens} seconds={time.monotonic() - started:.2f}"
        )
        if question is not None and self.config.trace is not None:
            line += f" question={json.dumps(self.config.mask(question), ensure_ascii=False)}"
        self.config.log(line)
