"""A counting relay between deepsearch and a real local LLM server (issue 17, item 7).

It forwards every request unchanged to the upstream server and, for each chat
completion, records which output-mode rung the request used (`response_format.type`,
whether a schema came with it, Ollama's native `format`), the HTTP status the server
returned, whether a 200 reply's content parsed as JSON and validated against the schema
that was sent, and the completion tokens used against `max_tokens`. Streamed replies
(`"stream": true`) are passed through chunk by chunk, so a client that hangs up also
closes the upstream request (a server that stops generating then can).

The schema check covers the JSON Schema subset deepsearch's wire schemas use (type,
enum, const, properties, required, additionalProperties, items, anyOf/oneOf/allOf,
$ref into $defs, length, item-count and number bounds): no outside dependency.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.loopback import QuietHTTPServer

_HOP_HEADERS = {"content-length", "connection", "transfer-encoding", "accept-encoding"}
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "integer": (int,),
    "number": (int, float),
}


@dataclass
class Call:
    """One chat completion as it crossed the relay."""

    rung: str
    status: int | str  # an HTTP status, or what went wrong before one arrived
    seconds: float
    max_tokens: int | None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    parsed: bool | None = None  # None: no 200 reply
    valid: bool | None = None  # None: no 200 reply, or no schema sent
    error: str = ""  # the first bytes of a non-200 body, or the first schema error

    @property
    def ran_to_max(self) -> bool:
        if self.finish_reason == "length":
            return True
        return bool(self.max_tokens and (self.completion_tokens or 0) >= self.max_tokens)


def rung_of(body: dict[str, Any]) -> str:
    """The output-mode rung a request used, as a short label."""
    if "format" in body:  # Ollama's native structured output
        return "ollama format (schema)" if isinstance(body["format"], dict) else "ollama format"
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return "no response_format"
    kind = str(fmt.get("type"))
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        strict = " strict" if isinstance(spec, dict) and spec.get("strict") else ""
        return f"json_schema{strict}"
    if kind == "json_object":
        return "json_object + schema" if "schema" in fmt else "json_object"
    return kind


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asked the reply to follow, if any."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict):
        spec = fmt.get("json_schema")
        if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
            return spec["schema"]
        if isinstance(fmt.get("schema"), dict):
            return fmt["schema"]
    return body["format"] if isinstance(body.get("format"), dict) else None


def schema_errors(
    value: Any, node: dict[str, Any], root: dict[str, Any], at: str = "$"
) -> list[str]:
    """Where `value` breaks `node` (empty: it validates)."""
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        target = (root.get("$defs") or root.get("definitions") or {}).get(name, {})
        return schema_errors(value, target, root, at)
    for key in ("anyOf", "oneOf"):
        if key in node and not any(not schema_errors(value, b, root, at) for b in node[key]):
            return [f"{at}: matches no branch of {key}"]
    errors = [e for b in node.get("allOf", []) for e in schema_errors(value, b, root, at)]
    kinds = node.get("type")
    if kinds is not None:
        names = kinds if isinstance(kinds, list) else [kinds]
        ok = any(
            isinstance(value, _TYPES.get(n, ()))
            and not (isinstance(value, bool) and n in ("integer", "number"))
            for n in names
        )
        if not ok:
            return [*errors, f"{at}: {type(value).__name__} is not {kinds}"]
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{at}: {value!r} not in enum")
    if "const" in node and value != node["const"]:
        errors.append(f"{at}: {value!r} is not {node['const']!r}")
    return errors + _bounds(value, node, at) + _children(value, node, root, at)


def _bounds(value: Any, node: dict[str, Any], at: str) -> list[str]:
    size = len(value) if isinstance(value, str | list) else None
    checks = [
        ("minLength", size if isinstance(value, str) else None, lambda v, b: v >= b),
        ("maxLength", size if isinstance(value, str) else None, lambda v, b: v <= b),
        ("minItems", size if isinstance(value, list) else None, lambda v, b: v >= b),
        ("maxItems", size if isinstance(value, list) else None, lambda v, b: v <= b),
    ]
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    checks += [("minimum", number, lambda v, b: v >= b), ("maximum", number, lambda v, b: v <= b)]
    return [
        f"{at}: {key} {node[key]} broken ({measured})"
        for key, measured, holds in checks
        if key in node and measured is not None and not holds(measured, node[key])
    ]


def _children(value: Any, node: dict[str, Any], root: dict[str, Any], at: str) -> list[str]:
    errors: list[str] = []
    if isinstance(value, dict):
        props = node.get("properties") or {}
        errors += [f"{at}: missing {k!r}" for k in node.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                errors += schema_errors(item, props[key], root, f"{at}.{key}")
            elif node.get("additionalProperties") is False:
                errors.append(f"{at}: unexpected {key!r}")
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            errors += schema_errors(item, node["items"], root, f"{at}[{i}]")
    return errors


def judge(call: Call, content: str | None, schema: dict[str, Any] | None) -> None:
    """Fill in whether a 200 reply's content parsed and validated."""
    try:
        value = json.loads(content or "")
    except ValueError:
        call.parsed, call.valid = False, False if schema is not None else None
        call.error = f"not JSON: {(content or '')[:80]!r}"
        return
    call.parsed = True
    if schema is not None:
        errors = schema_errors(value, schema, schema)
        call.valid = not errors
        call.error = errors[0][:160] if errors else ""


@dataclass
class Relay:
    """A loopback relay to `upstream` (an origin such as http://127.0.0.1:8081)."""

    upstream: str
    calls: list[Call] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)
    in_flight: int = 0

    def __post_init__(self) -> None:
        handler = type("Handler", (_RelayHandler,), {"relay": self})
        self._server = QuietHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Relay:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def connect(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.upstream)
        return http.client.HTTPConnection(parts.hostname or "", parts.port or 80, timeout=900)

    def take(self, wait_s: float = 10.0) -> list[Call]:
        """The calls recorded so far, in the order they arrived, once none is in flight
        (a call is complete just after its reply's last byte left, so the client can be
        ahead of the record, and the next call's record ahead of this one's)."""
        with self.lock:
            self.lock.wait_for(lambda: self.in_flight == 0, timeout=wait_s)
            calls, self.calls = self.calls, []
        return calls

    def begin(self, call: Call) -> None:
        """`call` takes its place now, before any byte of its reply leaves."""
        with self.lock:
            self.calls.append(call)
            self.in_flight += 1

    def record(self, call: Call) -> None:
        """`call` (begun) is complete."""
        with self.lock:
            self.in_flight -= 1
            self.lock.notify_all()


class _RelayHandler(BaseHTTPRequestHandler):
    relay: Relay  # set on the subclass each Relay makes
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._forward("GET", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._forward("POST", self.rfile.read(length) if length else b"")

    def _forward(self, method: str, raw: bytes) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
        headers["Accept-Encoding"] = "identity"  # bytes pass through as they came
        upstream = self.relay.connect()
        upstream.request(method, self.path, body=raw or None, headers=headers)
        body = _json_body(raw) if urlsplit(self.path).path.endswith("/chat/completions") else None
        try:
            if body is None:
                reply = upstream.getresponse()
                data = reply.read()
                self._head(reply.status, reply.getheader("Content-Type", ""), len(data))
                self.wfile.write(data)
            else:
                self._completion(upstream, body)
        finally:
            upstream.close()

    def _head(self, status: int, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type or "application/json")
        if length is None:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _completion(self, upstream: http.client.HTTPConnection, body: dict[str, Any]) -> None:
        call = Call(rung_of(body), "no reply", 0.0, _max_tokens(body))
        started = time.perf_counter()
        watch = _Watch(self.connection, upstream)
        self.relay.begin(call)  # before any reply byte leaves: take() waits for its record
        try:
            content = self._relay_reply(upstream, call, bool(body.get("stream")))
            if call.status == 200 and not call.error:
                judge(call, content, schema_of(body))
        except (http.client.HTTPException, OSError) as exc:
            call.error = "client hung up" if watch.left else f"{exc!r}"[:160]
        finally:
            watch.stop()
            call.seconds = time.perf_counter() - started
            self.relay.record(call)

    def _relay_reply(
        self, upstream: http.client.HTTPConnection, call: Call, stream: bool
    ) -> str | None:
        reply = upstream.getresponse()
        call.status = reply.status
        if not stream or reply.status != 200:
            data = reply.read()
            if reply.status != 200:
                call.error = data[:300].decode("utf-8", "replace")
            content = _from_reply(data, call)
            self._head(reply.status, reply.getheader("Content-Type", ""), len(data))
            self.wfile.write(data)
            return content
        self._head(200, reply.getheader("Content-Type", "text/event-stream"), None)
        seen: list[bytes] = []
        while chunk := reply.read1(65536):
            seen.append(chunk)
            try:
                self.wfile.write(chunk)
                self.wfile.flush()
            except OSError:  # the client left: closing the upstream ends that call
                _from_stream(b"".join(seen), call)
                call.error = "client hung up mid-reply"
                return None
        return _from_stream(b"".join(seen), call)


class _Watch:
    """Closes the upstream request when the client hangs up while waiting, as the
    server itself would see without the relay (some stop generating then)."""

    def __init__(self, client: socket.socket, upstream: http.client.HTTPConnection) -> None:
        self.client, self.upstream = client, upstream
        self.left = False
        self._done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                readable, _, _ = select.select([self.client], [], [], 0.25)
            except (OSError, ValueError):  # the server closed the socket under the watch
                return
            if not readable:
                continue
            try:
                gone = not self.client.recv(1, socket.MSG_PEEK)
            except OSError:
                gone = True
            if gone and not self._done.is_set() and self.upstream.sock is not None:
                self.left = True
                with contextlib.suppress(OSError):
                    self.upstream.sock.shutdown(socket.SHUT_RDWR)
            return  # closed, or the client sent more: nothing left to watch

    def stop(self) -> None:
        self._done.set()


def _json_body(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _max_tokens(body: dict[str, Any]) -> int | None:
    for key in ("max_tokens", "max_completion_tokens"):
        if isinstance(body.get(key), int):
            return int(body[key])
    options = body.get("options")  # Ollama's native num_predict
    return options.get("num_predict") if isinstance(options, dict) else None


def _from_reply(data: bytes, call: Call) -> str | None:
    try:
        payload = json.loads(data)
        choice = payload["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    call.finish_reason = choice.get("finish_reason")
    call.completion_tokens = (payload.get("usage") or {}).get("completion_tokens")
    content = (choice.get("message") or {}).get("content")
    return content if isinstance(content, str) else None


def _from_stream(data: bytes, call: Call) -> str:
    parts: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        usage = event.get("usage") or {}
        call.completion_tokens = usage.get("completion_tokens", call.completion_tokens)
        for choice in event.get("choices") or []:
            parts.append(str((choice.get("delta") or {}).get("content") or ""))
            call.finish_reason = choice.get("finish_reason") or call.finish_reason
    return "".join(parts)
