"""Who may talk to a local server (`serve`, `mcp --transport http`): its own clients.

A web page the user opens can send requests to 127.0.0.1 from the browser. Without a
key, that page could start research runs on the user's LLM key. `RequestGuard`, an
ASGI middleware in front of both servers, refuses:

- on a loopback address, a `Host` that is not a loopback name (`localhost`,
  127.0.0.0/8, `::1`): a DNS-rebinding page reaches 127.0.0.1 under its own name
  (421, as the MCP SDK answers);
- a foreign `Origin`: on a loopback address only a loopback name with the server's own
  port, elsewhere only the request's own `Host`; `Origin: null` never (403);
- a POST whose `Content-Type` is not `application/json`: a cross-site `text/plain`
  POST needs no CORS preflight, so it is the form a page would use (415);
- with `max_body` set (mcp: the SDK reads any size), a body larger than that (413)
  or JSON nested deeper than MAX_JSON_DEPTH (400, `json_depth_problem`); serve's
  own reader applies the same two rules to its body.

Every refusal is one JSON error object (OpenAI's shape) and starts nothing. Slow
clients are the transport's business: `deadline.read_deadline_protocol`.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deepsearch.server.shapes import error_body

MAX_JSON_DEPTH = 64
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback_name(host: str) -> bool:
    """`localhost` (and `localhost.`), an address in 127.0.0.0/8, or `::1`."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str, default_port: int | None) -> tuple[str, int | None]:
    """(host name, port) of a `Host` header or an origin's netloc; ("", None) if bad."""
    try:
        parts = urlsplit(f"//{value}")
        return parts.hostname or "", parts.port or default_port
    except ValueError:
        return "", None


def origin_allowed(origin: str, host: str, own_port: int | None, *, loopback: bool) -> bool:
    """`origin` may call this server: a loopback name with its own port (loopback), or
    the request's own `Host` (any other address)."""
    parts = urlsplit(origin)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return False  # "null" (a sandboxed frame, a file://) and anything odd
    name, port = split_host(parts.netloc, _DEFAULT_PORTS[parts.scheme])
    if loopback:
        return is_loopback_name(name) and port == own_port
    host_name, host_port = split_host(host, _DEFAULT_PORTS[parts.scheme])
    return bool(name) and (name, port) == (host_name, host_port)


def too_deep(limit: int = MAX_JSON_DEPTH) -> str:
    return f"the request body nests JSON deeper than {limit} levels"


def nesting_problem(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why parsed JSON is refused for its nesting (None: it is not), measured without
    recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return too_deep(limit)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return None


def json_depth_problem(body: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why a JSON body is refused for its nesting (None: it is not, or it is no JSON,
    which the app's reader reports itself). The C parser's recursion stops with
    RecursionError, caught here: it was a 500 with a traceback."""
    try:
        value = json.loads(body)
    except RecursionError:
        return too_deep(limit)
    except ValueError:
        return None
    return nesting_problem(value, limit)


def refusal(scope: Scope, *, loopback: bool) -> tuple[int, str, str] | None:
    """(HTTP status, code, message) for a request this server does not answer."""
    headers = Headers(scope=scope)
    host = headers.get("host", "")
    server = scope.get("server") or (None, None)
    own_port = server[1] if isinstance(server[1], int) else None
    if loopback and host and not is_loopback_name(split_host(host, None)[0]):
        shown = host[:100]  # the client's own words, shortened
        return 421, "host_not_allowed", f"this server answers only to localhost, not {shown!r}"
    origin = headers.get("origin")
    if origin is not None and not origin_allowed(origin, host, own_port, loopback=loopback):
        return 403, "origin_not_allowed", f"requests from the origin {origin[:100]!r} are refused"
    media = headers.get("content-type", "").split(";")[0].strip().lower()
    if scope.get("method") == "POST" and media != "application/json":
        shown = media[:100] or "none"
        return 415, "unsupported_media_type", f"Content-Type must be application/json ({shown})"
    return None


class RequestGuard:
    """The middleware: `refusal`'s rules, then (with `max_body`) the body's size and
    depth, the body then replayed to the app. Later receives (a client hanging up)
    reach the app as they come."""

    def __init__(self, app: ASGIApp, *, loopback: bool, max_body: int | None = None) -> None:
        self.app = app
        self.loopback = loopback
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = refusal(scope, loopback=self.loopback)
        if refused is None and self.max_body is not None and scope.get("method") == "POST":
            body, refused = await self._read(receive)
            receive = _replay(body, receive)
        if refused is not None:
            status, code, message = refused
            await JSONResponse(error_body(message, code=code), status_code=status)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    async def _read(self, receive: Receive) -> tuple[bytes, tuple[int, str, str] | None]:
        assert self.max_body is not None
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"", (400, "client_gone", "the client went away")
            size += len(message.get("body", b""))
            if size > self.max_body:
                return b"", (
                    413,
                    "too_large",
                    f"the request body is larger than {self.max_body} bytes",
                )
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(parts)
        deep = json_depth_problem(body)
        return body, ((400, "too_deep", deep) if deep else None)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
