"""The run's one-line wording: named templates in TOML tables, rendered with
str.format. prompts/diary.toml holds the diary's lines and their optional parts
(written through `diary.line` / `diary.part`, by `AgentState.note`);
prompts/knowledge.toml the question each kind of knowledge item answers
(`knowledge_question`), as the model reads it in the prompt.

An unknown kind and a variable missing or left over are `WordingError` (a
PromptError, so a KeyError), so a template and the code that fills it cannot drift
apart silently. TOML tables of one-liners rather than a file per line: the lines are
many and short, and `{answer:.300}` says in the template where a long value is cut.
"""

from __future__ import annotations

import tomllib
from functools import cache
from string import Formatter

from deepsearch.prompts import PromptError
from deepsearch.resources import prompts_dir

FILES = ("diary.toml", "knowledge.toml")
# What each table's entries are, for the error that names an unknown one.
NAMES = {"lines": "diary line", "parts": "diary part", "questions": "knowledge question"}


class WordingError(PromptError):
    """An unknown one-line template, or one rendered with the wrong variables."""


@cache
def templates() -> dict[str, dict[str, str]]:
    """{"lines": {kind: template}, "parts": {kind: template}, "questions": {...}}."""
    tables: dict[str, dict[str, str]] = {}
    for name in FILES:
        with (prompts_dir() / name).open("rb") as file:
            loaded = tomllib.load(file)
        tables.update({t: {k: str(v) for k, v in rows.items()} for t, rows in loaded.items()})
    return tables


def variables(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def render_line(table: str, kind: str, values: dict[str, object]) -> str:
    """The `kind` template of `table`, filled with exactly its variables."""
    try:
        template = templates()[table][kind]
    except KeyError:
        raise WordingError(f"no {NAMES.get(table, table)} named {kind!r}") from None
    expected, given = variables(template), set(values)
    if expected != given:
        missing, unknown = sorted(expected - given), sorted(given - expected)
        raise WordingError(
            f"{NAMES.get(table, table)} {kind!r}: missing {missing}, unknown {unknown}"
        )
    return template.format(**values)


def knowledge_question(kind: str, **values: object) -> str:
    """The question a knowledge item of this kind answers (prompts/knowledge.toml)."""
    return render_line("questions", kind, values)
