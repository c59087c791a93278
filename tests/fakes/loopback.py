"""A stdlib loopback JSON server the provider fakes are built on.

`LoopbackJSONServer` runs a `ThreadingHTTPServer` on 127.0.0.1:<random port> in a
daemon thread, records every request, and hands each one to `respond()`, which
subclasses implement. Use it as a context manager. A reply with `stream` set is sent
as a chunked `text/event-stream`, one chunk per item (`chunk_delay_s` before each, as a
server generating tokens); a client that hangs up mid-stream ends it at the next write,
as a real server notices, and is counted in `closed_streams`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit


class PromptShutdown:
    """`shutdown()` without waiting out the serving loop's poll interval, and a backlog
    that does not drop connections.

    `socketserver` notices a shutdown request only when its select() returns: after the
    poll interval (20-50 ms here), a few hundred times a suite. A throwaway connection
    wakes it at once; one that arrives before the request is seen is an empty request,
    which the handler drops without recording it.
    """

    server_address: tuple[str, int] | tuple[str, int, int, int]
    # socketserver listens with a backlog of 5: a run that opens more connections at
    # once than the serving thread accepts (two concurrent runs reading pages on a busy
    # machine) had its SYN dropped, and the client's kernel sent it again 1 s later.
    request_queue_size = 128

    def shutdown(self) -> None:
        stopper = threading.Thread(target=super().shutdown, daemon=True)  # type: ignore[misc]
        stopper.start()
        while stopper.is_alive():
            # A test that turns every socket off (tests/cassettes: an AssertionError)
            # leaves the loop to notice at its next poll, as without this class.
            with contextlib.suppress(OSError, AssertionError):
                socket.create_connection(self.server_address[:2], timeout=1).close()
            stopper.join(0.002)


class QuietHTTPServer(PromptShutdown, ThreadingHTTPServer):
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
    """A raw reply: status, JSON (or text) body, extra headers, optional delay; or
    a stream of byte chunks (Server-Sent Events) sent `chunk_delay_s` apart."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stream: Iterable[bytes] | None = None
    chunk_delay_s: float = 0.0


def _write_stream(handler: BaseHTTPRequestHandler, reply: HTTPReply) -> bool:
    """Send `reply.stream` chunked; False when the client hung up before its end."""
    handler.send_response(reply.status)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("transfer-encoding", "chunked")
    for key, value in reply.headers.items():
        handler.send_header(key, value)
    handler.end_headers()
    try:
        for chunk in reply.stream or ():
            if reply.chunk_delay_s:
                time.sleep(reply.chunk_delay_s)
            handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionError):
        return False
    return True


class LoopbackJSONServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.closed_streams = 0  # streams the client closed before their end
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
                if reply.stream is not None:
                    self._stream(reply)
                    return
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

            def _stream(self, reply: HTTPReply) -> None:
                if not _write_stream(self, reply):
                    with owner._lock:
                        owner.closed_streams += 1
                    self.close_connection = True

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
