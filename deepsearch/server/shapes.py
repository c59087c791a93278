"""OpenAI-shaped bodies: `chat.completion`, `chat.completion.chunk`, the error object,
and `url_citation` annotations.

An annotation's span is the reference's `[^n]` marker in the content:
`content[start_index:end_index] == "[^n]"` (Python string indices, i.e. Unicode code
points; end exclusive). The marker sits right after the sentence the quote supports.
Beside OpenAI's fields a completion carries node-DeepResearch's `visitedURLs`,
`readURLs` and `numURLs`, plus this run's `status` and token `budget`.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from deepsearch.agent.result import ResearchResult
from deepsearch.agent.types import Reference

MODEL_ID = "deepsearch"
MODEL_IDS = (MODEL_ID,)  # what /v1/models lists: the only names a request may give
ANSWER_CHUNK_CHARS = 400  # content deltas: whole lines, about this long


def url_annotations(content: str, references: list[Reference]) -> list[dict[str, Any]]:
    """One `url_citation` per reference, spanning its `[^n]` marker in the body (its
    definition line when the body has no marker for it)."""
    out = []
    for n, ref in enumerate(references, start=1):
        span = _marker_span(content, n)
        if span is None:
            continue
        out.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "url": ref.url,
                    "title": ref.title or ref.url,
                    "start_index": span[0],
                    "end_index": span[1],
                },
            }
        )
    return out


def _marker_span(content: str, n: int) -> tuple[int, int] | None:
    marker = re.escape(f"[^{n}]")
    found = re.search(marker + r"(?!:)", content)  # not the definition line "[^n]: ..."
    if found is None:
        found = re.search(rf"^{marker}:[^\n]*", content, re.MULTILINE)
    return (found.start(), found.end()) if found else None


def usage(result: ResearchResult) -> dict[str, int | float | None]:
    u = result.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
        "cost_usd": u.cost_usd,  # an extra field: US dollars, null when unknown
    }


def finish_reason(result: ResearchResult) -> str:
    """`stop` for a finished answer (accepted, or an honest "not found": `status`
    tells them apart); `length` when a limit forced it (Beast Mode)."""
    return "stop" if result.status in ("answered", "not_found") else "length"


def extras(result: ResearchResult, max_urls: int) -> dict[str, Any]:
    return {
        "visitedURLs": result.visited_urls[:max_urls],
        "readURLs": result.read_urls,
        "numURLs": len(result.visited_urls),
        "status": result.status,
        "budget": result.usage.budget,
    }


def completion(
    request_id: str, result: ResearchResult, *, reasoning: str, max_urls: int
) -> dict[str, Any]:
    content = result.answer
    message = {
        "role": "assistant",
        "content": content,
        "reasoning_content": reasoning,
        "annotations": url_annotations(content, result.references),
        "refusal": None,
    }
    return {
        "id": request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(result),
                "logprobs": None,
            }
        ],
        "usage": usage(result),
        **extras(result, max_urls),
    }


def chunk(
    request_id: str,
    created: int,
    delta: dict[str, Any],
    *,
    finish: str | None = None,
    **top: Any,
) -> bytes:
    """One SSE event holding a `chat.completion.chunk`."""
    body = {
        "id": request_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **top,
    }
    return sse(body)


def usage_chunk(request_id: str, created: int, result: ResearchResult) -> bytes:
    """`stream_options.include_usage`'s last chunk before `[DONE]`: no choices, the usage."""
    body = {
        "id": request_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "choices": [],
        "usage": usage(result),
    }
    return sse(body)


def sse(body: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


def answer_pieces(content: str) -> list[str]:
    """The answer cut into content deltas of whole lines (about ANSWER_CHUNK_CHARS)."""
    pieces: list[str] = []
    current = ""
    for line in content.splitlines(keepends=True):
        if current and len(current) + len(line) > ANSWER_CHUNK_CHARS:
            pieces.append(current)
            current = ""
        current += line
    if current:
        pieces.append(current)
    return pieces


def error_body(
    message: str,
    *,
    kind: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """OpenAI's error object; `extra` (e.g. `partial_answer`) goes beside its fields."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code, **extra}}


def models_list() -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": 0, "owned_by": "deepsearch"}
            for model in MODEL_IDS
        ],
    }


def stopping_body(message: str, **extra: Any) -> dict[str, Any]:
    """The 503 of a server shutting down (a run it cut short: `partial_answer`)."""
    return error_body(message, kind="server_error", code="server_shutting_down", **extra)
