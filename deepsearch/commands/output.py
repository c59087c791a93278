"""Output that cannot hurt: no terminal escapes from sources, no traceback on a full disk
or a closed pipe.

* Titles, quotes, file names and URLs come from pages and files nobody vetted: a
  heading holding `ESC]0;…BEL` would retitle the terminal, `ESC[2J` clear it. C0 and C1
  control characters are removed from everything printed (markdown, JSON, the live
  view); JSON would escape them, but the program reading it may print them raw.
* A write error on stdout ends the command with one line on stderr (full disk) or,
  for a closed pipe (`| head -1`), quietly with 141 = 128 + SIGPIPE, as a shell would.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import typer

from deepsearch.errors import CommandFailed

if TYPE_CHECKING:
    from deepsearch.agent.result import ResearchResult

EXIT_BROKEN_PIPE = 141
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


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real fd (a test runner's buffer)
        pass


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run the block's writes to stdout (and a final flush) with write errors handled."""
    try:
        yield
        sys.stdout.flush()
    except OSError as exc:
        if exc.filename is not None:  # a file the command uses, not stdout: name it
            raise CommandFailed(f"{exc.filename}: {exc.strerror or exc}") from None
        _silence_stdout()
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        reason = exc.strerror or type(exc).__name__
        raise CommandFailed(f"cannot write the output to stdout: {reason}") from None
