"""Fake SearXNG, Jina, Brave and Serper endpoints on loopback, speaking their JSON shapes.

One stdlib `ThreadingHTTPServer` on 127.0.0.1 (random port) serves all four under
their own path prefix, records every request (method, path, query, headers, JSON
body) and answers either with a queued reply or with results derived from the query:

    with FakeSearchServers() as srv:
        srv.base_url("brave")               # -> value for settings.search.brave_url
        srv.queue("serper", 429)            # next serper call gets HTTP 429
        srv.always("jina", 500)             # every jina call fails
        srv.requests_for("brave")[0].headers["x-subscription-token"]
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import QuietHTTPServer

PROVIDERS = ("searxng", "jina", "brave", "serper")
_BASE_PATH = {
    "searxng": "/searxng",  # the client appends /search
    "jina": "/jina",  # the client appends /
    "brave": "/brave/res/v1/web/search",
    "serper": "/serper/search",
}


@dataclass
class Recorded:
    provider: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any = None

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class Reply:
    status: int
    body: Any = None
    raw: bytes | None = None  # sent as is (for "not JSON" cases)


def _hits(provider: str, q: str, n: int) -> list[dict[str, str]]:
    slug = "-".join(q.split()[:3]).lower() or "empty"
    return [
        {
            "title": f"<b>{q}</b> &amp; result {i}",
            # www., a tracking parameter and a fragment: the client must normalize them.
            "url": f"https://www.site{i}.org/{provider}/{slug}/?utm_source=fake&id={i}#top",
            "snippet": f"About <em>{q}</em>: finding number {i} from {provider}.",
        }
        for i in range(1, n + 1)
    ]


def default_body(provider: str, q: str, n: int = 3) -> dict[str, Any]:
    """A successful answer in the provider's real response shape."""
    hits = _hits(provider, q, n)
    if provider == "searxng":
        return {
            "query": q,
            "number_of_results": len(hits),
            "results": [
                {
                    "url": h["url"],
                    "title": h["title"],
                    "content": h["snippet"],
                    "engine": "duckduckgo",
                    "engines": ["duckduckgo"],
                    "score": 1.0,
                    "category": "general",
                    "publishedDate": "2025-05-01T00:00:00" if i == 0 else None,
                }
                for i, h in enumerate(hits)
            ],
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
    if provider == "jina":
        return {
            "code": 200,
            "status": 20000,
            "data": [
                {
                    "title": h["title"],
                    "url": h["url"],
                    "description": h["snippet"],
                    "date": "May 1, 2025" if i == 0 else "",
                    "usage": {"tokens": 40},
                }
                for i, h in enumerate(hits)
            ],
            "meta": {"usage": {"tokens": 10000}},
        }
    if provider == "brave":
        return {
            "type": "search",
            "query": {"original": q, "more_results_available": True},
            "mixed": {"type": "mixed", "main": []},
            "web": {
                "type": "search",
                "family_friendly": True,
                "results": [
                    {
                        "title": h["title"],
                        "url": h["url"],
                        "is_source_local": False,
                        "description": h["snippet"],
                        "page_age": "2025-05-01T00:00:00" if i == 0 else None,
                        "age": "May 1, 2025" if i == 0 else None,
                        "language": "en",
                        "profile": {"name": f"site{i + 1}", "url": h["url"]},
                    }
                    for i, h in enumerate(hits)
                ],
            },
        }
    if provider == "serper":
        return {
            "searchParameters": {"q": q, "type": "search", "engine": "google"},
            "organic": [
                {
                    "title": h["title"],
                    "link": h["url"],
                    "snippet": h["snippet"],
                    "position": i + 1,
                    **({"date": "May 1, 2025"} if i == 0 else {}),
                }
                for i, h in enumerate(hits)
            ],
            "credits": 1,
        }
    raise ValueError(provider)


def empty_body(provider: str) -> dict[str, Any]:
    return {
        "searxng": {"query": "", "number_of_results": 0, "results": []},
        "jina": {"code": 200, "status": 20000, "data": []},
        "brave": {"type": "search", "web": {"type": "search", "results": []}},
        "serper": {"searchParameters": {}, "organic": []},
    }[provider]


@dataclass
class _State:
    requests: list[Recorded] = field(default_factory=list)
    queued: dict[str, list[Reply]] = field(default_factory=dict)
    sticky: dict[str, Reply] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    state: _State
    # Headers and body are two writes: with Nagle on, the body can wait for the
    # client's delayed ACK (~40 ms on loopback), which no real search API adds.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _provider(self, path: str) -> str | None:
        for name, prefix in _BASE_PATH.items():
            if path == prefix or path.startswith(prefix + "/"):
                return name
        return None

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        provider = self._provider(parts.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("latin-1")
        query = parse_qs(parts.query, keep_blank_values=True)
        if provider is None:
            self._send(Reply(404, {"error": "no such endpoint"}))
            return
        record = Recorded(
            provider,
            method,
            parts.path,
            query,
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        with self.state.lock:
            self.state.requests.append(record)
            queue = self.state.queued.get(provider) or []
            reply = queue.pop(0) if queue else self.state.sticky.get(provider)
        if reply is None:
            q = (body or {}).get("q", "") if isinstance(body, dict) else record.param("q") or ""
            n = int((body or {}).get("num", 3)) if isinstance(body, dict) else 3
            reply = Reply(200, default_body(provider, q, min(n, 3)))
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


class FakeSearchServers:
    def __init__(self) -> None:
        self._state = _State()
        handler = type("Handler", (_Handler,), {"state": self._state})
        self._server = QuietHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def base_url(self, provider: str) -> str:
        return self.root + _BASE_PATH[provider]

    def queue(
        self, provider: str, status: int, body: Any = None, *, raw: bytes | None = None
    ) -> None:
        """The next call to `provider` gets this reply (then back to normal)."""
        if body is None and raw is None:
            body = empty_body(provider) if status == 200 else {"error": f"HTTP {status}"}
        with self._state.lock:
            self._state.queued.setdefault(provider, []).append(Reply(status, body, raw))

    def always(self, provider: str, status: int, body: Any = None) -> None:
        """Every call to `provider` gets this reply from now on."""
        if body is None:
            body = empty_body(provider) if status == 200 else {"error": f"HTTP {status}"}
        with self._state.lock:
            self._state.sticky[provider] = Reply(status, body)

    @property
    def requests(self) -> list[Recorded]:
        with self._state.lock:
            return list(self._state.requests)

    def requests_for(self, provider: str) -> list[Recorded]:
        return [r for r in self.requests if r.provider == provider]

    def start(self) -> FakeSearchServers:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeSearchServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
