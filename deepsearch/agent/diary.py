"""The diary's wording, and the questions knowledge items answer: named one-line
templates in prompts/diary.toml and prompts/knowledge.toml.

`AgentState.note(kind, **values)` is the one writer of diary lines; it renders
`line(kind, ...)`. A line's optional pieces (failures, pages read) are `part(kind, ...)`.
Unknown kinds and a variable missing or left over are `DiaryError` (a PromptError, so
a KeyError), so a template and the code that fills it cannot drift apart silently. A
TOML table of one-liners rather than a file per line: the lines are many and short,
and `{answer:.300}` says in the template where a long value is cut.
"""

from __future__ import annotations

import tomllib
from functools import cache
from string import Formatter

from deepsearch.prompts import PromptError
from deepsearch.resources import prompts_dir

DIARY_FILE = "diary.toml"
KNOWLEDGE_FILE = "knowledge.toml"


class DiaryError(PromptError):
    """An unknown diary template, or one rendered with the wrong variables."""


@cache
def templates() -> dict[str, dict[str, str]]:
    """{"lines": {kind: template}, "parts": {kind: template}, "questions": {...}}."""
    tables: dict[str, dict[str, str]] = {}
    for name in (DIARY_FILE, KNOWLEDGE_FILE):
        with (prompts_dir() / name).open("rb") as file:
            loaded = tomllib.load(file)
        tables.update({t: {k: str(v) for k, v in rows.items()} for t, rows in loaded.items()})
    return tables


def variables(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def _render(table: str, kind: str, values: dict[str, object]) -> str:
    try:
        template = templates()[table][kind]
    except KeyError:
        raise DiaryError(f"no diary {table[:-1]} named {kind!r}") from None
    expected, given = variables(template), set(values)
    if expected != given:
        missing, unknown = sorted(expected - given), sorted(given - expected)
        raise DiaryError(f"diary {kind!r}: missing {missing}, unknown {unknown}")
    return template.format(**values)


def line(kind: str, **values: object) -> str:
    return _render("lines", kind, values)


def part(kind: str, **values: object) -> str:
    return _render("parts", kind, values)


def question(kind: str, **values: object) -> str:
    """The question a knowledge item of this kind answers (prompts/knowledge.toml)."""
    return _render("questions", kind, values)
