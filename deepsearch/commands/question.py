"""What the user typed as the question: unquoted words joined, `-` or a pipe read from
stdin, and single words that are a command name mistyped (`confg`) caught before a paid
research run starts."""

from __future__ import annotations

import sys

from deepsearch.commands.common import SUBCOMMANDS
from deepsearch.errors import UsageError
from deepsearch.text import MAX_QUESTION_CHARS

COMMAND_WORDS = (*sorted(SUBCOMMANDS), "help", "version")
MAX_STDIN_CHARS = MAX_QUESTION_CHARS  # one cap, an argument's too (checked_text)


def question_text(words: list[str] | None) -> str:
    """The question: the words joined by spaces, or stdin for `-` / no words at all."""
    words = list(words or [])
    if words in ([], ["-"]):
        return checked_text(_read_stdin(), "on stdin")
    if "-" in words:
        raise UsageError("'-' (read the question from stdin) must be the only word")
    return checked_text(" ".join(w.strip() for w in words if w.strip()), "")


def checked_text(text: str, where: str) -> str:
    """`text` when it is text a request can carry; a UsageError (exit 2, before any
    call) for bytes that are no UTF-8 (a Latin-1 argument, arriving as surrogates) or
    that are binary (NUL bytes)."""
    where = f" {where}" if where else ""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"the question{where} is not UTF-8 text (convert it, e.g. with iconv -t UTF-8)"
        ) from None
    if "\x00" in text:
        raise UsageError(f"the question{where} is binary data (it holds NUL bytes), not text")
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question{where} is longer than {MAX_QUESTION_CHARS:,} characters")
    return text


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or _is_tty(stream):
        raise UsageError('no question: deepsearch "your question" (or pipe it on stdin)')
    try:
        text = stream.read(MAX_STDIN_CHARS + 1)
    except UnicodeDecodeError:
        raise UsageError(
            "the question on stdin is not UTF-8 text (convert it, e.g. with iconv -t UTF-8)"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read the question from stdin ({type(exc).__name__})") from None
    if len(text) > MAX_STDIN_CHARS:
        raise UsageError(f"the question on stdin is longer than {MAX_STDIN_CHARS:,} characters")
    return " ".join(text.split())


def _is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insert, delete, substitute, swap two neighbours."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def near_command(question: str) -> str | None:
    """The command a one-word "question" most likely meant, if it is that close to one:
    one edit for short words, two for words of six letters or more."""
    word = question.strip().lower()
    if not word.isalpha():
        return None  # "config?", "doctors'", two words: a real question
    allowed = 1 if len(word) <= 5 else 2
    best = min(COMMAND_WORDS, key=lambda name: edit_distance(word, name))
    if edit_distance(word, best) > allowed:
        return None
    return f"--{best}" if best in ("help", "version") else best


def help_topic_problem(question: str) -> str | None:
    """`deepsearch help <word>` where the word is no command (`help researh`, `help
    nosuch`): what to say instead of researching "help researh" (as `git help` does).
    None for anything else, and for a real question (`help me find ...`, `help?`)."""
    words = question.split()
    if len(words) != 2 or words[0].lower() != "help" or not words[1].isalpha():
        return None
    topic = words[1].lower()
    near = near_command(topic)
    commands = ", ".join(sorted(SUBCOMMANDS))
    hint = f"did you mean `deepsearch help {near.lstrip('-')}`? " if near else ""
    return (
        f"{words[1]!r} is not a command ({commands}); {hint}"
        f'(to research it, add a question mark: deepsearch "{question}?")'
    )
