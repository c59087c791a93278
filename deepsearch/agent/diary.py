"""The diary's wording: the named one-line templates of prompts/diary.toml.

`AgentState.note(kind, **values)` is the one writer of diary lines; it renders
`line(kind, ...)`. A line's optional pieces (failures, pages read) are `part(kind, ...)`.
The renderer, and its errors for an unknown kind or a wrong variable, are
agent/wording.py's (which also renders the knowledge items' questions).
"""

from __future__ import annotations

from deepsearch.agent.wording import WordingError, render_line

DiaryError = WordingError  # an unknown diary template, or the wrong variables


def line(kind: str, **values: object) -> str:
    return render_line("lines", kind, values)


def part(kind: str, **values: object) -> str:
    return render_line("parts", kind, values)
