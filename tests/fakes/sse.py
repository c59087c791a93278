"""Server-Sent Events as OpenAI-compatible servers stream a chat completion.

`completion_chunks(payload)` turns a non-streamed `chat.completion` body into the
`chat.completion.chunk` objects a server streams for it: a role chunk, the content in
a few pieces, a last chunk with `finish_reason`, and (when the request asked for it
with `stream_options.include_usage`) a usage chunk with no choices. `sse(chunks)` is
the wire form, ending with `data: [DONE]`. Used by the test fakes and the benchmark's
latency server, so both speak what the `openai` SDK parses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def wants_stream(request: dict[str, Any]) -> bool:
    return bool(request.get("stream"))


def wants_usage(request: dict[str, Any]) -> bool:
    return bool((request.get("stream_options") or {}).get("include_usage"))


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def completion_chunks(
    payload: dict[str, Any], *, include_usage: bool, pieces: int = 3
) -> list[dict[str, Any]]:
    base = {k: payload.get(k) for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choices = payload.get("choices")
    if not isinstance(choices, list):  # a malformed reply stays malformed
        return [{**base, "choices": choices}]
    chunks: list[dict[str, Any]] = []
    for index, choice in enumerate(choices):
        message = choice.get("message") or {}
        at = choice.get("index", index)
        chunks.append({**base, "choices": [{"index": at, "delta": {"role": "assistant"}}]})
        for piece in _pieces(message.get("content") or "", pieces):
            chunks.append({**base, "choices": [{"index": at, "delta": {"content": piece}}]})
        if message.get("refusal"):
            delta = {"refusal": message["refusal"]}
            chunks.append({**base, "choices": [{"index": at, "delta": delta}]})
        finish = {"index": at, "delta": {}, "finish_reason": choice.get("finish_reason")}
        chunks.append({**base, "choices": [finish]})
    if include_usage and payload.get("usage") is not None:
        chunks.append({**base, "choices": [], "usage": payload["usage"]})
    return chunks


def content_chunk(model: str, text: str) -> dict[str, Any]:
    """One more piece of content (a runaway generation streams these forever)."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": {"content": text}}],
    }


def sse(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> Iterator[bytes]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    if done:
        yield b"data: [DONE]\n\n"
