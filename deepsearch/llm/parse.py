"""The lenient parse ladder: raw model text -> a JSON value, or a clear failure.

Steps: strip reasoning blocks (`<think>…</think>` and friends), code fences and
surrounding prose -> `json.loads` -> `hjson` -> `json_repair`. Validation against
the pydantic schema happens in the client, never here: this module only finds JSON.

Leniency has limits: text glued to the end of the JSON (`{"a":2}foo`), a bare word
before it (`callback {}`), a lone bracket after prose, and repairs that would invent
a value for a key the reply did not finish (`{"a",`, `{"a": 1, "b":`, `{"a": }`)
are failures, not guesses: the client asks again, as for a cut-off reply
(bench/parse_ladder.py measures both).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "analysis")
_CLOSED_BLOCK = re.compile(
    r"<(?P<tag>" + "|".join(_REASONING_TAGS) + r")\b[^>]*>.*?</(?P=tag)\s*>",
    re.DOTALL | re.IGNORECASE,
)
_DANGLING_CLOSE = re.compile(r"^.*?</(?:" + "|".join(_REASONING_TAGS) + r")\s*>", re.DOTALL | re.I)
_UNCLOSED_OPEN = re.compile(r"<(?:" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)
# A fence closes only at the start of a line (as in CommonMark): backticks inside a
# JSON string value (`"code": "```py ..."`) are never at a line start, since JSON
# strings cannot hold a raw newline. A closing fence glued to the last line
# (`{...}````) leaves the backticks in the body, which the repair rung drops.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:\n[ \t]{0,3}```|\Z)", re.DOTALL)


# fullmatch, not match with "$": "$" also matches before a trailing newline, which
# wrongly flagged prose like "Sure \n{...}" as a bare word glued to the JSON.
_BARE_WORD_PREFIX = re.compile(r"\s*[A-Za-z_$][\w$]*[ \t]+")
_SWALLOWED = ('"', "\u201c", "\u201d", "/*")
_MISSED_COLON = "missed a : after a key"
_COLON_BEFORE_KEY = "found a : before a key"
_NOTHING: Any = object()


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


def _outermost_span(text: str) -> tuple[int, int] | None:
    """(start, end) of the first `{`/`[` to its matching closer, or to the end if cut off."""
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
                return start, pos + 1
    return start, len(text)  # truncated output: let the repair step close it


def _locate(cleaned: str) -> tuple[str, str, str]:
    """(prose before, JSON candidate, text after) of a reply without reasoning blocks."""
    fenced = _from_fences(cleaned)
    if fenced is not None:
        return "", fenced, ""
    span = _outermost_span(cleaned)
    if span is None:
        return "", cleaned, ""
    start, end = span
    return cleaned[:start], cleaned[start:end], cleaned[end:]


def extract_json_text(text: str) -> str:
    """The most plausible JSON substring of a model reply."""
    return _locate(strip_reasoning(text))[1]


def _ambiguity(prefix: str, candidate: str, suffix: str) -> str | None:
    """Why a located candidate must not be trusted, or None.

    Prose around JSON is normal for models, but three shapes mean the text is not
    a JSON reply at all, and guessing would hand the agent an invented object.
    """
    if suffix and (suffix[0].isalnum() or suffix[0] in '{["_'):
        return "text is glued to the end of the JSON value"
    if _BARE_WORD_PREFIX.fullmatch(prefix):
        return "a bare word precedes the JSON value (JSONP without parentheses?)"
    if prefix.strip() and candidate.strip() in ("{", "["):
        return "only an opening bracket follows the prose"
    return None


def _suspicious_hjson(value: Any) -> bool:
    """Hjson's quoteless strings swallow the punctuation a model got wrong
    (`"b,"c"` becomes the string `b,` and the key `c"`); such a reading is
    worse than json_repair's."""
    if isinstance(value, dict):
        return any(_suspicious_hjson(k) or _suspicious_hjson(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_suspicious_hjson(v) for v in value)
    if isinstance(value, str):
        return any(mark in value for mark in _SWALLOWED) or value.rstrip().endswith(",")
    return False


def _repair(candidate: str) -> Any:
    """json_repair, refusing repairs that invent structure (a key with no value)."""
    import json_repair  # only malformed replies get here: kept off start-up

    try:
        value, log = json_repair.repair_json(candidate, return_objects=True, logging=True)
    except Exception:  # a library bug on odd input must not crash a run
        return _NOTHING
    messages = [str(e.get("text", "")) if isinstance(e, dict) else str(e) for e in log]
    if any(_COLON_BEFORE_KEY in m for m in messages):
        return _NOTHING
    # `{"a" "b"}` is a fixable missing colon; `{"a",` only "repairs" by inventing a value.
    if any(_MISSED_COLON in m for m in messages) and _has_empty_string(value):
        return _NOTHING
    return _NOTHING if value == "" else value


def _skip_string(text: str, pos: int) -> int:
    """Index just past the string opening at `pos` (or the end if it never closes)."""
    quote = text[pos]
    pos += 1
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        if text[pos] == quote:
            return pos + 1
        pos += 1
    return pos


def _skip_comment(text: str, pos: int) -> int:
    if text.startswith("//", pos):
        end = text.find("\n", pos)
        return len(text) if end < 0 else end
    end = text.find("*/", pos + 2)
    return len(text) if end < 0 else end + 2


def _tokens(text: str) -> list[tuple[str, str, bool]]:
    """(kind, text, inside an object) of the significant tokens outside comments:
    kind is "str" (a quoted string, closed or not), "punct" (one of `{}[],:`) or
    "word" (anything else, read up to the next punctuation or quote)."""
    out: list[tuple[str, str, bool]] = []
    stack: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        in_object = bool(stack) and stack[-1] == "{"
        if char in "\"'":
            end = _skip_string(text, pos)
            out.append(("str", text[pos + 1 : end], in_object))
            pos = end
        elif text.startswith(("//", "/*"), pos):
            pos = _skip_comment(text, pos)
        elif char in "{}[],:":
            if char in "{[":
                stack.append(char)
            elif char in "}]" and stack:
                stack.pop()
            out.append(("punct", char, in_object))
            pos += 1
        elif char.isspace():
            pos += 1
        else:
            end = pos
            while end < len(text) and text[end] not in "{}[],:\"'" and not text[end].isspace():
                end += 1
            out.append(("word", text[pos:end], in_object))
            pos = end
    return out


def unfinished_key(candidate: str) -> str | None:
    """A quoted key the text gives no value for, or None. Two shapes: a colon with
    nothing after it but `,`, `}` or the end (`{"a": }`, `{"a":,`, a reply cut off
    after `"b":`), and a reply ending in a key (`{"a": 1, "b"`). Repairing either
    means inventing the value; unquoted prose values are left to the repair."""
    tokens = _tokens(candidate)
    for i, (kind, text, _) in enumerate(tokens):
        if kind != "punct" or text != ":" or i == 0 or tokens[i - 1][0] != "str":
            continue
        after = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if after is None or (tokens[i + 1][0] == "punct" and after in ",}"):
            return tokens[i - 1][1].rstrip("\"'")
    if len(tokens) >= 2:
        kind, text, in_object = tokens[-1]
        before = tokens[-2]
        # An unclosed `{"key:value}` is a key and value missing their quotes.
        unclosed_pair = not text.endswith(('"', "'")) and ":" in text
        if kind == "str" and in_object and before[0] == "punct" and before[1] in "{,":
            return None if unclosed_pair else text.rstrip("\"'")
    return None


def _has_empty_string(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_empty_string(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_empty_string(v) for v in value)
    return value == ""


def _strict(text: str, acceptable: Callable[[Any], bool]) -> Any:
    """`text` read as strict JSON when that gives an acceptable value, else _NOTHING."""
    try:
        value = json.loads(text)
    except ValueError:
        return _NOTHING
    return value if acceptable(value) else _NOTHING


def _hjson(candidate: str, acceptable: Callable[[Any], bool]) -> tuple[Any, Any]:
    """(trusted value, suspicious fallback) of the Hjson rung; _NOTHING for none."""
    import hjson  # only malformed replies get here: kept off start-up

    try:
        value = hjson.loads(candidate)
    except Exception:  # hjson raises assorted types on bad input; next rung instead
        return _NOTHING, _NOTHING
    if not acceptable(value):
        return _NOTHING, _NOTHING
    return (_NOTHING, value) if _suspicious_hjson(value) else (value, _NOTHING)


def parse_json_lenient(text: str, *, require_object: bool = True) -> Any:
    """Run the ladder. With `require_object`, only a JSON object counts as success."""
    if text is None or not text.strip():
        raise ParseFailure("the model returned no text")

    def acceptable(value: Any) -> bool:
        return value is not _NOTHING and (isinstance(value, dict) if require_object else True)

    cleaned = strip_reasoning(text)
    if not cleaned:
        raise ParseFailure("the reply held only a reasoning block")
    # The whole reply is JSON (also keeps '"{...}"' a string).
    if (value := _strict(cleaned, acceptable)) is not _NOTHING:
        return value
    prefix, candidate, suffix = _locate(cleaned)
    problem = _ambiguity(prefix, candidate, suffix)
    if problem is not None:
        raise ParseFailure(f"no trustworthy JSON in the reply: {problem}")
    if (value := _strict(candidate, acceptable)) is not _NOTHING:
        return value
    key = unfinished_key(candidate)
    if key is not None:
        raise ParseFailure(
            f"the reply ends or breaks off before the value of key {key!r} (cut off?); "
            "no value is invented for it"
        )
    # Hjson reads a braceless "key: value" root as an object; for an object reply
    # that would turn prose like "Note: none found" into data.
    fallback: Any = _NOTHING
    if not require_object or candidate.lstrip().startswith("{"):
        value, fallback = _hjson(candidate, acceptable)
        if value is not _NOTHING:
            return value
    for value in (_repair(candidate), fallback):
        if acceptable(value):
            return value
    raise ParseFailure(f"no JSON object found in the reply ({len(text)} chars)")
