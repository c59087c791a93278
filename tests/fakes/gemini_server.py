"""A fake Gemini API on loopback, driven through the real `google-genai` SDK.

    with FakeGeminiServer() as srv:                  # or the `gemini_server` fixture
        srv.enqueue('{"answer": "42"}')
        srv.enqueue(GeminiReply.error(429, "RESOURCE_EXHAUSTED", "slow down"))
        provider = GeminiProvider(api_key="k", base_url=srv.url, max_retries=0)

Serves POST /{v1,v1beta}/models/{model}:generateContent and :embedContent /
:batchEmbedContents. A reply (queued, or from `handler(request_json)`) may be a
`str` (the candidate text), a dict with "candidates" (the raw body), any other dict
(JSON-encoded as the text), or a `GeminiReply`. `reject_json_schema=True` answers
400 INVALID_ARGUMENT to requests carrying a responseJsonSchema; so does any
responseJsonSchema outside Gemini's documented subset (tests/llm/gemini_rules.py),
which is also listed in `schema_rejections`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fakes.loopback import HTTPReply, LoopbackJSONServer, RecordedRequest
from tests.llm.gemini_rules import violations

DEFAULT_USAGE = {"promptTokenCount": 17, "candidatesTokenCount": 6, "totalTokenCount": 23}


@dataclass
class GeminiReply:
    text: str | None = "{}"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str = "STOP"
    body: Any = None

    @classmethod
    def error(
        cls, status: int, grpc_status: str, message: str, *, reason: str | None = None
    ) -> GeminiReply:
        err: dict[str, Any] = {"code": status, "message": message, "status": grpc_status}
        if reason:
            err["details"] = [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}
            ]
        return cls(status=status, body={"error": err})


ReplyLike = str | dict[str, Any] | GeminiReply
Router = Callable[[dict[str, Any]], ReplyLike]


def _as_reply(value: ReplyLike) -> GeminiReply:
    if isinstance(value, GeminiReply):
        return value
    if isinstance(value, str):
        return GeminiReply(text=value)
    if "candidates" in value:
        return GeminiReply(body=value)
    return GeminiReply(text=json.dumps(value))


class FakeGeminiServer(LoopbackJSONServer):
    def __init__(self, handler: Router | None = None, *, reject_json_schema: bool = False) -> None:
        super().__init__()
        self.handler = handler
        self.reject_json_schema = reject_json_schema
        self.queue: deque[ReplyLike] = deque()
        self.schema_rejections: list[str] = []

    def enqueue(self, *replies: ReplyLike) -> None:
        self.queue.extend(replies)

    @property
    def generate_requests(self) -> list[RecordedRequest]:
        return self.requests_to(":generateContent")

    def respond(self, request: RecordedRequest) -> HTTPReply:
        path = request.path
        body = request.body if isinstance(request.body, dict) else {}
        if path.endswith(":generateContent"):
            return self._generate(body)
        if path.endswith(":embedContent") or path.endswith(":batchEmbedContents"):
            return self._embed(body)
        if request.method == "GET" and "/models" in path:
            return HTTPReply(200, {"models": [{"name": "models/fake"}]})
        return HTTPReply(404, {"error": {"code": 404, "message": f"no route {path}"}})

    def _generate(self, body: dict[str, Any]) -> HTTPReply:
        config = body.get("generationConfig") or {}
        if self.reject_json_schema and "responseJsonSchema" in config:
            return HTTPReply(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "Invalid JSON payload: unsupported field in response_json_schema",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            )
        if "responseJsonSchema" in config and (found := violations(config["responseJsonSchema"])):
            self.schema_rejections.append(found[0])
            err = {
                "code": 400,
                "message": f"Invalid value at 'generation_config.response_json_schema': {found[0]}",
                "status": "INVALID_ARGUMENT",
            }
            return HTTPReply(400, {"error": err})
        if self.queue:
            reply = _as_reply(self.queue.popleft())
        elif self.handler is not None:
            reply = _as_reply(self.handler(body))
        else:
            reply = GeminiReply()
        if reply.body is not None:
            return HTTPReply(reply.status, reply.body, reply.headers)
        payload: dict[str, Any] = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": reply.text}]},
                    "finishReason": reply.finish_reason,
                    "index": 0,
                }
            ],
            "modelVersion": "fake",
        }
        if reply.usage is not None:
            payload["usageMetadata"] = reply.usage
        return HTTPReply(reply.status, payload, reply.headers)

    def _embed(self, body: dict[str, Any]) -> HTTPReply:
        items = body.get("requests") or [body]
        embeddings = []
        for item in items:
            parts = (item.get("content") or {}).get("parts") or []
            text = "".join(p.get("text", "") for p in parts)
            embeddings.append({"values": [float(len(text)), 1.0]})
        return HTTPReply(200, {"embeddings": embeddings})


@pytest.fixture
def gemini_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as server:
        yield server
