"""Output that cannot hurt: no terminal escapes from sources (every front end's output).

* Titles, quotes, file names and URLs come from pages and files nobody vetted: a
  heading holding `ESC]0;…BEL` would retitle the terminal, `ESC[2J` clear it. C0 and C1
  control characters are removed from everything printed (markdown, JSON, the live
  view); JSON would escape them, but the program reading it may print them raw.
* The CLI's writes to stdout are guarded in commands/stdout.py.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from deepsearch.agent.result import ResearchResult

# C0 (but tab and newline), DEL and C1; "line" text loses tab and newline too.
_CONTROL_BLOCK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def clean_block(text: str) -> str:
    """Multi-line text (an answer, a quote) without control characters."""
    return _CONTROL_BLOCK.sub("", text)


def clean_line(text: str) -> str:
    """One-line text (a title, a URL, a file name): controls gone, breaks become spaces."""
    return _CONTROL_LINE.sub(lambda m: " " if m.group(0).strip("\t\n\r") == "" else "", text)


_FILE_LINK = re.compile(r"\]\((file://(?:localhost)?/[^)\s]*)\)")
_FILE_URL = re.compile(r"file://(?:localhost)?(/[^\s,;)>\]\"']*)")


def display_path(url: str) -> str:
    """A local source as the path a person types (not `file:///my%20notes/a.md`)."""
    match = _FILE_URL.fullmatch(url.strip())
    return clean_line(unquote(match.group(1))) if match else url


def paths_in_text(text: str, *, markdown: bool = False) -> str:
    """Every `file://` URL in `text` shown as its path; markdown link targets become
    `<path>` (CommonMark's form for a destination with spaces), still a valid link."""
    if markdown:
        text = _FILE_LINK.sub(lambda m: f"](<{display_path(m.group(1))}>)", text)
    return _FILE_URL.sub(lambda m: clean_line(unquote(m.group(1))), text)


def _clean_tree(value: Any) -> Any:
    if isinstance(value, str):
        return clean_block(value)
    if isinstance(value, list):
        return [_clean_tree(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean_tree(v) for k, v in value.items()}
    return value


def safe_result(result: ResearchResult) -> ResearchResult:
    """The result with every string cleaned; titles and URLs kept to one line."""
    data = _clean_tree(result.model_dump(mode="python"))
    for ref in data.get("references", []):
        for key in ("title", "url"):
            if isinstance(ref.get(key), str):
                ref[key] = clean_line(ref[key])
    for key in ("visited_urls", "read_urls"):
        data[key] = [clean_line(u) for u in data.get(key, [])]
    return type(result).model_validate(data)


# What makes rich decide for itself whether a stream is a terminal.
RICH_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def plain_stream(stream: Any) -> bool:
    """`stream` is a pipe or a file, as rich too would see it: no variable makes rich
    take it for a terminal, and it is no tty. What is written there needs no rich
    (whose import costs ~0.1 s of CPU, issue 21)."""
    if any(name in os.environ for name in RICH_TERMINAL_VARIABLES) or "IPython" in sys.modules:
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one: rich decides
        return False
