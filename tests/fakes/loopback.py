"""A stdlib loopback JSON server the provider fakes are built on.

`LoopbackJSONServer` runs a `ThreadingHTTPServer` on 127.0.0.1:<random port> in a
daemon thread, records every request, and hands each one to `respond()`, which
subclasses implement. Use it as a context manager.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit


class QuietHTTPServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (a cancelled read, a killed process) is part of
    what the tests do, not an error to print a traceback for."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None


@dataclass
class HTTPReply:
    """A raw reply: status, JSON (or text) body, extra headers, optional delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class LoopbackJSONServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: with Nagle on, the body waits for
            # the client's delayed ACK (~40 ms a reply on loopback; no real server waits).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return None

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                parts = urlsplit(self.path)
                recorded = RecordedRequest(
                    method=self.command,
                    path=parts.path,
                    query=parts.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with owner._lock:
                    owner.requests.append(recorded)
                try:
                    reply = owner.respond(recorded)
                except Exception as exc:  # a broken test script shows up as a 500
                    reply = HTTPReply(500, {"error": {"message": f"fake crashed: {exc!r}"}})
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _handle

        self._server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ behaviour

    def respond(self, request: RecordedRequest) -> HTTPReply:
        raise NotImplementedError

    def requests_to(self, fragment: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if fragment in r.path]
