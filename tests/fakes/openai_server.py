"""A fake OpenAI-compatible server on loopback, spoken to by our own wire client
(`llm/openai_wire.py`, chat completions) and the real `openai` SDK (model listing, embeddings).

    with FakeOpenAIServer() as srv:                 # or the `openai_server` fixture
        srv.enqueue('{"answer": "42"}')             # scripted replies, used in order
        srv.enqueue(Reply(status=429, headers={"retry-after": "1"}))
        srv.handler = lambda body: {"answer": "x"}  # or a router for every request
        provider = OpenAIProvider(api_key="k", base_url=srv.base_url, max_retries=0)
        srv.chat_requests[0].body["response_format"]

A reply (queued or returned by `handler(request_json)`) may be:
  * a `str`: the assistant message content;
  * a `dict` with a "choices" key: the full response body, sent verbatim;
  * any other `dict` / list: JSON-encoded as the message content;
  * a `Reply`: content plus status, headers, usage (None omits it), finish_reason,
    or a raw `body`.
When the queue is empty and no handler is set, the server answers "{}" content.
A request with `"stream": true` (the provider sends every completion so) gets the same
reply as Server-Sent Events (tests/fakes/sse.py), with the usage chunk when
`stream_options.include_usage` asks for it; an error status is plain JSON, as servers
answer. `Reply(token_delay_s=...)` paces the chunks like a slow server;
`Reply(runaway=True)` never finishes (a model generating without end) until the
client closes the stream, which `closed_streams` counts.
`api_key="..."` answers 401 to every request without that bearer token.
`reject_json_schema=True` makes json_schema requests fail with HTTP 400 the way
servers without structured-output support do; `reject_json_object` likewise.
Like the real API, a json_schema request with `strict: true` whose schema is outside
the documented strict subset (tests/llm/strict_rules.py) or whose name is not
`[a-zA-Z0-9_-]{1,64}` gets HTTP 400 `invalid_request_error` (param
"response_format"); such requests are also listed in `schema_rejections`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fakes.loopback import HTTPReply, LoopbackJSONServer, RecordedRequest
from tests.fakes.sse import completion_chunks, content_chunk, sse, wants_stream, wants_usage
from tests.llm.strict_rules import violations

_SCHEMA_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")

DEFAULT_USAGE = {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}


@dataclass
class Reply:
    content: str | None = "{}"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str | None = "stop"
    body: Any = None  # a raw body overrides everything above
    delay_s: float = 0.0  # before the first byte (the prompt being read)
    token_delay_s: float = 0.0  # before each streamed chunk
    runaway: bool = False  # streamed: the content, then more of it without end

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        err = {"message": message, "type": "invalid_request_error", "code": code}
        return cls(status=status, body={"error": err}, headers=headers or {})


ReplyLike = str | dict[str, Any] | list[Any] | Reply
Router = Callable[[dict[str, Any]], ReplyLike]


def _as_reply(value: ReplyLike) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    if isinstance(value, dict) and "choices" in value:
        return Reply(body=value)
    return Reply(content=json.dumps(value))


class FakeOpenAIServer(LoopbackJSONServer):
    def __init__(
        self,
        handler: Router | None = None,
        *,
        reject_json_schema: bool = False,
        reject_json_object: bool = False,
        models: tuple[str, ...] = ("fake-model",),
        api_key: str | None = None,
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.handler = handler
        self.reject_json_schema = reject_json_schema
        self.reject_json_object = reject_json_object
        self.models = models
        self.queue: deque[ReplyLike] = deque()
        # (schema name, the rule it broke) of every strict schema answered with 400.
        self.schema_rejections: list[tuple[str, str]] = []

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def enqueue(self, *replies: ReplyLike) -> None:
        self.queue.extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/chat/completions")

    # ------------------------------------------------------------ routing

    def respond(self, request: RecordedRequest) -> HTTPReply:
        path = request.path
        if self.api_key is not None:
            if request.headers.get("authorization") != f"Bearer {self.api_key}":
                err = {"message": "Incorrect API key provided", "code": "invalid_api_key"}
                return HTTPReply(401, {"error": err})
        if request.method == "GET" and path.endswith("/models"):
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]
            return HTTPReply(200, {"object": "list", "data": data})
        if request.method == "GET" and path.endswith("/api/tags"):
            return HTTPReply(200, {"models": [{"name": m} for m in self.models]})
        if path.endswith("/embeddings"):
            return self._embeddings(request.body or {})
        if path.endswith("/chat/completions"):
            return self._chat(request.body or {})
        return HTTPReply(404, {"error": {"message": f"no route {path}"}})

    def _chat(self, body: dict[str, Any]) -> HTTPReply:
        rf = (body.get("response_format") or {}).get("type")
        if (rf == "json_schema" and self.reject_json_schema) or (
            rf == "json_object" and self.reject_json_object
        ):
            return HTTPReply(
                400,
                {
                    "error": {
                        "message": f"response_format type '{rf}' is not supported by this server",
                        "type": "invalid_request_error",
                        "param": "response_format",
                    }
                },
            )
        if rf == "json_schema" and (invalid := self._strict_violation(body)) is not None:
            return invalid
        if self.queue:
            reply = _as_reply(self.queue.popleft())
        elif self.handler is not None:
            reply = _as_reply(self.handler(body))
        else:
            reply = Reply()
        if reply.body is not None:
            if wants_stream(body) and reply.status == 200 and isinstance(reply.body, dict):
                return self._streamed(body, reply, reply.body)
            return HTTPReply(reply.status, reply.body, reply.headers, reply.delay_s)
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage is not None:
            payload["usage"] = reply.usage
        if wants_stream(body) and reply.status == 200:
            return self._streamed(body, reply, payload)
        return HTTPReply(reply.status, payload, reply.headers, reply.delay_s)

    def _streamed(self, body: dict[str, Any], reply: Reply, payload: dict[str, Any]) -> HTTPReply:
        chunks: Iterator[dict[str, Any]] = iter(
            completion_chunks(payload, include_usage=wants_usage(body))
        )
        if reply.runaway:  # the content, then more without end: no finish, no [DONE]
            model = str(body.get("model", "fake-model"))
            start = completion_chunks(payload, include_usage=False)[:-1]
            chunks = itertools.chain(start, itertools.repeat(content_chunk(model, " and so on")))
        return HTTPReply(
            reply.status,
            headers=reply.headers,
            delay_s=reply.delay_s,
            stream=sse(chunks, done=not reply.runaway),
            chunk_delay_s=reply.token_delay_s,
        )

    def _strict_violation(self, body: dict[str, Any]) -> HTTPReply | None:
        """The 400 the real API gives a strict schema outside the subset, or None."""
        spec = body["response_format"].get("json_schema") or {}
        name = str(spec.get("name", ""))
        if not _SCHEMA_NAME.fullmatch(name):
            problem = f"Invalid 'response_format.json_schema.name': {name!r} must match [a-zA-Z0-9_-]{{1,64}}."
        elif spec.get("strict") is True and (found := violations(spec.get("schema"))):
            problem = f"Invalid schema for response_format '{name}': {found[0]}."
        else:
            return None
        self.schema_rejections.append((name, problem))
        err = {
            "message": problem,
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
        return HTTPReply(400, {"error": err})

    def _embeddings(self, body: dict[str, Any]) -> HTTPReply:
        inputs = body.get("input") or []
        if isinstance(inputs, str):
            inputs = [inputs]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.5]}
            for i, t in enumerate(inputs)
        ]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        return HTTPReply(200, {"object": "list", "data": data, "model": "e", "usage": usage})


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server
