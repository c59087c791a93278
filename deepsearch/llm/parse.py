"""The lenient parse ladder: raw model text -> a JSON value, or a clear failure.

Steps: strip reasoning blocks (`<think>…</think>` and friends), code fences and
surrounding prose -> `json.loads` -> `hjson` -> `json_repair`. Validation against
the pydantic schema happens in the client, never here: this module only finds JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

import hjson
import json_repair

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "analysis")
_CLOSED_BLOCK = re.compile(
    r"<(?P<tag>" + "|".join(_REASONING_TAGS) + r")\b[^>]*>.*?</(?P=tag)\s*>",
    re.DOTALL | re.IGNORECASE,
)
_DANGLING_CLOSE = re.compile(r"^.*?</(?:" + "|".join(_REASONING_TAGS) + r")\s*>", re.DOTALL | re.I)
_UNCLOSED_OPEN = re.compile(r"<(?:" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)


class ParseFailure(ValueError):
    """No JSON value could be recovered from the text."""


def strip_reasoning(text: str) -> str:
    """Remove reasoning blocks, including a close tag whose opener was cut off."""
    text = _CLOSED_BLOCK.sub("", text)
    if _DANGLING_CLOSE.search(text):  # "...</think>{json}": the opener was never sent
        text = _DANGLING_CLOSE.sub("", text, count=1)
    match = _UNCLOSED_OPEN.search(text)
    if match:  # "<think> reasoning ... {json}" with no close: keep what looks like JSON
        tail = text[match.end() :]
        brace = min((i for i in (tail.find("{"), tail.find("[")) if i >= 0), default=-1)
        text = text[: match.start()] + (tail[brace:] if brace >= 0 else "")
    return text.strip()


def _from_fences(text: str) -> str | None:
    for lang, body in _FENCE.findall(text):
        if lang.lower() in ("", "json", "jsonc", "json5", "hjson", "javascript", "js"):
            body = body.strip()
            if body.startswith(("{", "[")):
                return body
    return None


def _outermost_json(text: str) -> str | None:
    """The span from the first `{`/`[` to its matching closer (or the end, if cut off)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return text[start : pos + 1]
    return text[start:]  # truncated output: let the repair step close it


def extract_json_text(text: str) -> str:
    """The most plausible JSON substring of a model reply."""
    cleaned = strip_reasoning(text)
    fenced = _from_fences(cleaned)
    if fenced is not None:
        return fenced
    if cleaned.startswith(("{", "[")):
        return cleaned
    return _outermost_json(cleaned) or cleaned


def parse_json_lenient(text: str, *, require_object: bool = True) -> Any:
    """Run the ladder. With `require_object`, only a JSON object counts as success."""
    if text is None or not text.strip():
        raise ParseFailure("the model returned no text")
    candidate = extract_json_text(text)

    def acceptable(value: Any) -> bool:
        return isinstance(value, dict) if require_object else True

    for loader in (json.loads, hjson.loads):
        try:
            value = loader(candidate)
        except (ValueError, RecursionError, TypeError):
            continue
        if acceptable(value):
            return value
    try:
        value = json_repair.loads(candidate)
    except (ValueError, RecursionError, TypeError):
        value = None
    if acceptable(value) and value not in ("", None):
        return value
    raise ParseFailure(f"no JSON object found in the reply ({len(text)} chars)")
