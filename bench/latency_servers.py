"""Loopback servers with simulated latency for the wall-time benchmark.

Three stdlib HTTP/1.1 servers on 127.0.0.1, each answering after a simulated
delay, and one shared `Timeline` recording every simulated wait as a
[start, end] interval on the bench process's monotonic clock:

- an OpenAI-compatible chat-completions server (the real wire format the `openai`
  SDK parses): delay = 600 ms to the first token + 8 ms per output token;
- a SearXNG JSON API: 400–900 ms per search, pseudo-random but fixed per query;
- the article site: 100–900 ms per page, fixed per path.

A wait starts when the request has been read; the fake's own work (the policy,
token counting, rendering) happens inside the wait, as a real server's does.
`scale` multiplies every delay (0 for a fast test of the instrument itself).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.latency_site import Site, stable_fraction, title_of, wiki_path
from deepsearch.llm.tokens import count_tokens
from tests.fakes.loopback import QuietHTTPServer
from tests.fakes.sse import completion_chunks, sse, wants_stream, wants_usage

FIRST_TOKEN_S = 0.6
PER_TOKEN_S = 0.008
SEARCH_S = (0.4, 0.9)
PAGE_S = (0.1, 0.9)


@dataclass(frozen=True)
class Wait:
    kind: str  # "llm" | "search" | "page"
    start: float
    end: float
    label: str = ""


@dataclass
class Timeline:
    waits: list[Wait] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, wait: Wait) -> None:
        with self.lock:
            self.waits.append(wait)

    def take(self) -> list[Wait]:
        """The waits recorded so far, and a fresh start for the next run."""
        with self.lock:
            waits, self.waits = self.waits, []
        return sorted(waits, key=lambda w: w.start)


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


Handler = Callable[[str, str, bytes], tuple[Answer, float, str]]


class LatencyServer:
    """One threaded loopback server; `handle(method, path_and_query, body)` returns the
    answer, its simulated delay (s) and a label; the wait is recorded on the timeline."""

    kind = "?"

    def __init__(self, timeline: Timeline, *, scale: float = 1.0) -> None:
        self.timeline = timeline
        self.scale = scale
        self._server = QuietHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it, three servers per bench.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LatencyServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(self, method: str, target: str, body: bytes) -> tuple[Answer, float, str]:
        raise NotImplementedError

    def _serve(self, method: str, target: str, body: bytes) -> Answer:
        started = time.perf_counter()
        answer, delay, label = self.handle(method, target, body)
        end = started + delay * self.scale
        time.sleep(max(0.0, end - time.perf_counter()))
        self.timeline.add(Wait(self.kind, started, time.perf_counter(), label))
        return answer

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real APIs and sites
            # Headers and body are two writes: with Nagle on, the body waits ~40 ms for
            # the client's delayed ACK, a cost no real API adds to every reply.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _do(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                answer = outer._serve(method, self.path, raw)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def do_GET(self) -> None:
                self._do("GET")

            def do_POST(self) -> None:
                self._do("POST")

        return _H


def _json(status: int, payload: Any) -> Answer:
    return Answer(status, json.dumps(payload).encode("utf-8"))


def _spread(key: str, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return low + (high - low) * stable_fraction(key)


# A policy maps a chat-completions request body to the assistant's reply text.
Policy = Callable[[dict[str, Any]], str]


class FakeLLMServer(LatencyServer):
    kind = "llm"

    def __init__(self, timeline: Timeline, policy: Policy, *, scale: float = 1.0) -> None:
        super().__init__(timeline, scale=scale)
        self.policy = policy
        self.requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def handle(self, method: str, target: str, body: bytes) -> tuple[Answer, float, str]:
        path = urlsplit(target).path
        if method == "GET" and path.endswith("/models"):
            return _json(200, {"object": "list", "data": [{"id": "bench-model"}]}), 0.0, "models"
        if not path.endswith("/chat/completions"):
            return _json(404, {"error": {"message": f"no route {path}"}}), 0.0, path
        request = json.loads(body or b"{}")
        self.requests.append(request)
        content = self.policy(request)
        prompt = sum(count_tokens(str(m.get("content") or "")) + 4 for m in request["messages"])
        completion = count_tokens(content)
        payload = {
            "id": f"chatcmpl-bench-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "bench-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        delay = FIRST_TOKEN_S + PER_TOKEN_S * completion
        name = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        label = name or "free text (finalizer)"
        if wants_stream(request):  # the whole stream at once, after the same delay
            chunks = completion_chunks(payload, include_usage=wants_usage(request))
            return Answer(200, b"".join(sse(chunks)), "text/event-stream"), delay, label
        return _json(200, payload), delay, label


class FakeSearxng(LatencyServer):
    kind = "search"

    def __init__(self, timeline: Timeline, site: Site, pages_url: str, **kw: float) -> None:
        super().__init__(timeline, **kw)
        self.site = site
        self.pages_url = pages_url
        self.queries: list[str] = []

    def handle(self, method: str, target: str, body: bytes) -> tuple[Answer, float, str]:
        parts = urlsplit(target)
        if not parts.path.rstrip("/").endswith("/search"):
            return _json(404, {"error": "no such endpoint"}), 0.0, parts.path
        q = (parse_qs(parts.query).get("q") or [""])[0]
        self.queries.append(q)
        results = [
            {
                "url": self.pages_url + wiki_path(title),
                "title": f"{title} - Open Encyclopedia",
                "content": snippet,
                "engine": "bing",
                "engines": ["bing", "duckduckgo"],
                "score": round(2.0 - i * 0.1, 2),
                "category": "general",
                "publishedDate": None,
            }
            for i, (title, snippet) in enumerate(self.site.search(q))
        ]
        payload = {
            "query": q,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return _json(200, payload), _spread("search|" + q, SEARCH_S), q


class FakeArticleSite(LatencyServer):
    kind = "page"

    def __init__(self, timeline: Timeline, site: Site, **kw: float) -> None:
        super().__init__(timeline, **kw)
        self.site = site
        self.paths: list[str] = []

    def handle(self, method: str, target: str, body: bytes) -> tuple[Answer, float, str]:
        path = urlsplit(target).path
        self.paths.append(path)
        delay = _spread("page|" + path, PAGE_S)
        if not path.startswith("/wiki/"):
            return Answer(404, b"<html><body>Not found</body></html>", "text/html"), delay, path
        page = self.site.page(title_of(path)).encode("utf-8")
        return Answer(200, page, "text/html; charset=utf-8"), delay, path
