"""Loopback fakes of local model servers nobody here wrote, through the real `openai` SDK.

* `FakeLlamaCppPythonServer` behaves as llama-cpp-python's server (0.3.x) does: its
  request model accepts `response_format.type` "text" or "json_object" only (plus its
  own `schema` key), and its error handler reports the validation error as HTTP 500;
  `{"type": "json_object", "schema": S}` is honoured (S becomes a grammar).
* `FakeOllamaServer` behaves as Ollama's OpenAI-compatible endpoint does: a
  json_schema `response_format` becomes its native `format: <schema>` (strict is
  ignored), json_object becomes `format: "json"` (a `schema` next to it is dropped);
  its native `/api/chat` takes `format` directly.

Both answer as a weak model does (`weak_model.weaken`) under the schema the request
actually carried: null wherever it allows null. `handler(body)` says what the model
means (as for `FakeOpenAIServer`); `grammar_schemas` lists every schema enforced.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.loopback import HTTPReply
from tests.fakes.openai_server import DEFAULT_USAGE, FakeOpenAIServer, Reply, _as_reply
from tests.fakes.sse import wants_stream
from tests.fakes.weak_model import weaken

LITERAL_ERROR = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)


class _GrammarServer(FakeOpenAIServer):
    """Shared: answer `handler(body)` weakened under the grammar the request asks for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.grammar_schemas: list[dict[str, Any]] = []

    def grammar(self, body: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError

    def _answer(self, body: dict[str, Any], schema: dict[str, Any] | None) -> HTTPReply:
        if schema is not None:
            self.grammar_schemas.append(schema)
        if self.queue:
            reply = _as_reply(self.queue.popleft())
        else:
            reply = _as_reply(self.handler(body) if self.handler is not None else "{}")
        if reply.body is not None:
            return HTTPReply(reply.status, reply.body, reply.headers)
        content = reply.content
        if schema is not None and content is not None:
            try:
                intent = json.loads(content)
            except ValueError:
                intent = None
            content = json.dumps(weaken(intent, schema))
        payload = _completion(body, content, reply)
        if wants_stream(body) and reply.status == 200:  # as the real servers stream it
            return self._streamed(body, reply, payload)
        return HTTPReply(reply.status, payload)


class FakeLlamaCppPythonServer(_GrammarServer):
    def _chat(self, body: dict[str, Any]) -> HTTPReply:
        fmt = body.get("response_format") or {}
        if fmt.get("type") not in (None, "text", "json_object"):
            error = {"message": LITERAL_ERROR, "type": "internal_server_error"}
            return HTTPReply(500, {"error": {**error, "param": None, "code": None}})
        schema = fmt.get("schema") if fmt.get("type") == "json_object" else None
        return self._answer(body, schema)

    @property
    def refused_posts(self) -> int:
        """json_schema requests answered 500 (each one a POST the client paid for)."""
        rf = [(r.body or {}).get("response_format") or {} for r in self.chat_requests]
        return sum(f.get("type") == "json_schema" for f in rf)


class FakeOllamaServer(_GrammarServer):
    def respond(self, request: Any) -> HTTPReply:
        if request.path.endswith("/api/chat"):
            return self._native(request.body or {})
        return super().respond(request)

    def _chat(self, body: dict[str, Any]) -> HTTPReply:
        fmt = body.get("response_format") or {}
        schema = None
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
        return self._answer(body, schema)

    def _native(self, body: dict[str, Any]) -> HTTPReply:
        fmt = body.get("format")
        reply = self._answer(body, fmt if isinstance(fmt, dict) else None)
        content = reply.body["choices"][0]["message"]["content"]
        return HTTPReply(200, {"model": body.get("model"), "message": {"content": content}})


def _completion(body: dict[str, Any], content: str | None, reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "local-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": reply.usage or dict(DEFAULT_USAGE),
    }
